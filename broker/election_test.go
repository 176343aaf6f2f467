package broker

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
)

// otherBroker is the id of a broker registered in the image only: nothing
// listens at its address, and leadership moved to it is this node's to give
// up.
const otherBroker = 2

// moveLeader proposes the partition of topic to leader (a new leader
// epoch), with both brokers as its replicas, as the controller's
// PartitionChangeRecord.
func moveLeader(t *testing.T, b *Broker, topic string, partition, leader int32) {
	t.Helper()
	ti := b.meta.Image().Topics.ByName(topic)
	if ti == nil {
		t.Fatalf("%s is not in the image", topic)
	}
	both := []int32{testNodeID, otherBroker}
	if _, err := b.meta.Propose(metadata.PartitionChangeRecord{PartitionID: partition, TopicID: ti.ID,
		Leader: leader, ISR: both, Replicas: both}); err != nil {
		t.Fatalf("move %s-%d to broker %d: %v", topic, partition, leader, err)
	}
}

// rawClient sends the requests these tests build, at versions whose
// shapes they use (Kafka 2.8's: FindCoordinator v3, OffsetFetch v7, Fetch
// v12 by topic name), to this broker as it is, whoever coordinates.
func rawClient(t *testing.T, b *Broker) *kgo.Client {
	return newClient(t, b, kgo.MaxVersions(kversion.V2_8_0()))
}

// registerOtherBroker registers otherBroker at a port nothing listens on.
func registerOtherBroker(t *testing.T, b *Broker) {
	t.Helper()
	if _, err := b.meta.Propose(registerRecord(otherBroker, []metadata.Endpoint{{Listener: b.listeners[0].name, Host: "127.0.0.1", Port: 1}})); err != nil {
		t.Fatal(err)
	}
}

// findCoordinatorOn asks this broker (not a coordinator the client found)
// who coordinates key.
func findCoordinatorOn(t *testing.T, cl *kgo.Client, key string, keyType int8) *kmsg.FindCoordinatorResponse {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorType = key, keyType
	resp, err := req.RequestWith(testCtx(t), cl.Broker(testNodeID))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// fetchOffsetOn is the group's committed offset of topic-0 as this broker
// answers OffsetFetch (-1 when there is none), with the group's error.
func fetchOffsetOn(t *testing.T, cl *kgo.Client, group, topic string) (int64, *kerr.Error) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl.Broker(testNodeID))
	if err != nil {
		t.Fatal(err)
	}
	if e := kerr.TypedErrorForCode(resp.ErrorCode); e != nil {
		return -1, e
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return -1, nil
	}
	return resp.Topics[0].Partitions[0].Offset, nil
}

// batchesOn are the record batches of topic-partition from offset 0, as
// this broker's Fetch returns them (control batches too).
func batchesOn(t *testing.T, cl *kgo.Client, topic string, partition int32) []kmsg.RecordBatch {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = partition, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(testCtx(t), cl.Broker(testNodeID))
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if e := kerr.ErrorForCode(p.ErrorCode); e != nil {
		t.Fatalf("fetch %s-%d: %v", topic, partition, e)
	}
	var out []kmsg.RecordBatch
	for rest := p.RecordBatches; len(rest) >= 12; {
		n := 12 + int(binary.BigEndian.Uint32(rest[8:12]))
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(rest[:n]); err != nil {
			t.Fatalf("fetch %s-%d: batch: %v", topic, partition, err)
		}
		out = append(out, rb)
		rest = rest[n:]
	}
	return out
}

// TestGroupCoordinatorFollowsLeadership checks that the group coordinator
// follows the image: moving a __consumer_offsets partition's leadership to
// another broker makes this node answer NOT_COORDINATOR for its groups and
// FindCoordinator name that broker, while the other partitions' groups are
// served; moving it back replays the partition (the committed offset is
// there again) and appends at the image's new leader epoch.
func TestGroupCoordinatorFollowsLeadership(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Groups.OffsetsTopicPartitions = 3 })
	cl := rawClient(t, b)
	adm := kadm.NewClient(newClient(t, b))
	createTopicN(t, b, "t", 1)
	const group = "moved"
	commit := func(offset int64) {
		t.Helper()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "t", Partition: 0, At: offset, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(testCtx(t), group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", offset, err)
		}
	}
	commit(7)
	part := b.groups.PartitionFor(group)
	stayed := "stayed"
	for i := 0; b.groups.PartitionFor(stayed) == part; i++ {
		stayed = "stayed" + string(rune('a'+i))
	}

	registerOtherBroker(t, b)
	moveLeader(t, b, coordinator.OffsetsTopic, part, otherBroker)
	if _, err := fetchOffsetOn(t, cl, group, "t"); err != kerr.NotCoordinator {
		t.Fatalf("OffsetFetch of a group whose partition moved: %v, want NOT_COORDINATOR", err)
	}
	if r := findCoordinatorOn(t, cl, group, 0); r.ErrorCode != 0 || r.NodeID != otherBroker || r.Port != 1 {
		t.Fatalf("FindCoordinator after the move: error %d node %d port %d, want broker %d at port 1", r.ErrorCode, r.NodeID, r.Port, otherBroker)
	}
	if _, err := fetchOffsetOn(t, cl, stayed, "t"); err != nil {
		t.Fatalf("OffsetFetch of a group on a partition still led here: %v", err)
	}

	moveLeader(t, b, coordinator.OffsetsTopic, part, testNodeID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		off, err := fetchOffsetOn(t, cl, group, "t")
		if err == nil {
			if off != 7 {
				t.Fatalf("offset after moving back: %d, want the replayed 7", off)
			}
			break
		}
		if err != kerr.CoordinatorLoadInProgress || time.Now().After(deadline) {
			t.Fatalf("OffsetFetch after moving back: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := findCoordinatorOn(t, cl, group, 0); r.ErrorCode != 0 || r.NodeID != testNodeID {
		t.Fatalf("FindCoordinator after moving back: error %d node %d", r.ErrorCode, r.NodeID)
	}
	commit(9)
	batches := batchesOn(t, cl, coordinator.OffsetsTopic, part)
	if len(batches) != 2 {
		t.Fatalf("%d batches in %s-%d, want the two commits", len(batches), coordinator.OffsetsTopic, part)
	}
	if e0, e1 := batches[0].PartitionLeaderEpoch, batches[1].PartitionLeaderEpoch; e0 != 0 || e1 != 2 {
		t.Fatalf("leader epochs of the commits %d, %d; want 0 before the moves and 2 after", e0, e1)
	}
}

// initProducerIDOn is InitProducerId for a transactional id as this
// broker answers it.
func initProducerIDOn(t *testing.T, cl *kgo.Client, id string) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(testCtx(t), cl.Broker(testNodeID))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestTxnCoordinatorFollowsLeadership checks the same for a
// __transaction_state partition: NOT_COORDINATOR and FindCoordinator
// naming the other broker while it leads; once back, the producer id is
// replayed (InitProducerId bumps its epoch) and the markers of a
// transaction carry the image's new leader epoch as their coordinator
// epoch.
func TestTxnCoordinatorFollowsLeadership(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Txns.StateLogPartitions = 3 })
	cl := rawClient(t, b)
	createTopicN(t, b, "t", 1)
	const id = "moved-txn"
	first := initProducerIDOn(t, cl, id)
	for first.ErrorCode == kerr.CoordinatorNotAvailable.Code || first.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
		first = initProducerIDOn(t, cl, id)
	}
	if first.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(first.ErrorCode))
	}
	part := b.txns.PartitionFor(id)

	registerOtherBroker(t, b)
	moveLeader(t, b, coordinator.TxnStateTopic, part, otherBroker)
	if r := initProducerIDOn(t, cl, id); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("InitProducerId on a partition that moved: %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := findCoordinatorOn(t, cl, id, 1); r.ErrorCode != 0 || r.NodeID != otherBroker {
		t.Fatalf("FindCoordinator after the move: error %d node %d, want broker %d", r.ErrorCode, r.NodeID, otherBroker)
	}

	moveLeader(t, b, coordinator.TxnStateTopic, part, testNodeID)
	deadline := time.Now().Add(10 * time.Second)
	again := initProducerIDOn(t, cl, id)
	for again.ErrorCode == kerr.CoordinatorLoadInProgress.Code && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		again = initProducerIDOn(t, cl, id)
	}
	if again.ErrorCode != 0 || again.ProducerID != first.ProducerID || again.ProducerEpoch != first.ProducerEpoch+1 {
		t.Fatalf("InitProducerId after moving back: error %v pid %d epoch %d, want pid %d epoch %d (replayed)",
			kerr.ErrorForCode(again.ErrorCode), again.ProducerID, again.ProducerEpoch, first.ProducerID, first.ProducerEpoch+1)
	}

	tx := newClient(t, b, kgo.TransactionalID(id), kgo.DefaultProduceTopic("t"))
	produceTxn(t, tx, "t", "v", 1, true)
	batches := batchesOn(t, cl, "t", 0)
	last := batches[len(batches)-1]
	if last.Attributes&0x20 == 0 || len(last.Records) < 6 {
		t.Fatalf("last batch of t-0 is not a control batch: attributes %#x", last.Attributes)
	}
	// A control batch holds one record: length, attributes, deltas, key
	// (version, type) and value (version, coordinator epoch); the epoch is
	// the value's last four bytes.
	if epoch := int32(binary.BigEndian.Uint32(last.Records[len(last.Records)-5:])); epoch != 2 {
		t.Fatalf("commit marker's coordinator epoch %d, want the leader epoch 2", epoch)
	}
}

// TestLocalChanges checks the partitions a change hands this node or takes
// from it: a new topic's led partitions (at their epoch) and the ones led
// elsewhere it follows, a new leader epoch of a partition it keeps
// leading, an ISR change of one it leads (not a new election), an ISR
// change of one it follows (nothing), a partition moved away (followed
// now), a deleted topic's led partitions, and a partition it no longer
// is a replica of.
func TestLocalChanges(t *testing.T) {
	apply := func(base *metadata.Image, records ...metadata.Record) *metadata.Image {
		t.Helper()
		d := metadata.NewDelta(base)
		for _, r := range records {
			if err := d.Replay(r); err != nil {
				t.Fatal(err)
			}
		}
		return d.Apply()
	}
	type change struct {
		topic                                   string
		partition, epoch                        int32
		led, elected, resigned, follow, deleted bool
	}
	changes := func(old, new *metadata.Image) []change {
		var out []change
		for _, c := range localChanges(1, old, new) {
			out = append(out, change{c.topic, c.partition, c.epoch, c.led, c.elected, c.resigned, c.follow, c.deleted})
		}
		return out
	}
	a, b := [16]byte{1}, [16]byte{2}
	both := []int32{1, 2}
	first := apply(metadata.Empty,
		metadata.TopicRecord{Name: "a", TopicID: a},
		metadata.PartitionRecord{PartitionID: 0, TopicID: a, Replicas: both, ISR: both, Leader: 1, LeaderEpoch: 4},
		metadata.PartitionRecord{PartitionID: 1, TopicID: a, Replicas: both, ISR: both, Leader: 2},
		metadata.PartitionRecord{PartitionID: 2, TopicID: a, Replicas: both, ISR: both, Leader: 1},
		metadata.PartitionRecord{PartitionID: 3, TopicID: a, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
		metadata.TopicRecord{Name: "b", TopicID: b},
		metadata.PartitionRecord{PartitionID: 0, TopicID: b, Replicas: both, ISR: both, Leader: 1})
	want := []change{
		{topic: "a", partition: 0, epoch: 4, led: true, elected: true},
		{topic: "a", partition: 1, follow: true},
		{topic: "a", partition: 2, led: true, elected: true},
		{topic: "b", partition: 0, led: true, elected: true},
	}
	if got := changes(metadata.Empty, first); !slices.Equal(got, want) {
		t.Fatalf("first image: %+v, want %+v", got, want)
	}
	next := apply(first,
		metadata.PartitionChangeRecord{PartitionID: 0, TopicID: a, Leader: 1},
		metadata.PartitionChangeRecord{PartitionID: 1, TopicID: a, Leader: metadata.NoLeaderChange, ISR: []int32{2}},
		metadata.PartitionChangeRecord{PartitionID: 2, TopicID: a, Leader: 2},
		metadata.RemoveTopicRecord{TopicID: b})
	want = []change{
		{topic: "a", partition: 0, epoch: 5, led: true, elected: true},
		{topic: "a", partition: 2, epoch: 1, resigned: true, follow: true},
		{topic: "b", partition: 0, resigned: true, deleted: true},
	}
	if got := changes(first, next); !slices.Equal(got, want) {
		t.Fatalf("next image: %+v, want %+v", got, want)
	}
	if got := changes(next, next); len(got) != 0 {
		t.Fatalf("no change: %+v", got)
	}
	last := apply(next,
		metadata.PartitionChangeRecord{PartitionID: 0, TopicID: a, Leader: metadata.NoLeaderChange, ISR: []int32{1}},
		metadata.PartitionChangeRecord{PartitionID: 2, TopicID: a, Leader: metadata.NoLeaderChange, Replicas: []int32{2}, ISR: []int32{2}})
	want = []change{
		{topic: "a", partition: 0, epoch: 5, led: true},
		{topic: "a", partition: 2, epoch: 1},
	}
	if got := changes(next, last); !slices.Equal(got, want) {
		t.Fatalf("ISR and replicas changes: %+v, want %+v", got, want)
	}
}

// TestProduceFollowsLeadership checks that a partition whose leadership
// moved to another broker refuses Produce NOT_LEADER_OR_FOLLOWER, and
// once back takes it at the image's new leader epoch.
func TestProduceFollowsLeadership(t *testing.T) {
	b := startBroker(t, nil)
	cl := rawClient(t, b)
	createTopicN(t, b, "t", 1)
	produce := func() *kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = testBatch(t, 1)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl.Broker(testNodeID))
		if err != nil {
			t.Fatal(err)
		}
		return &resp.Topics[0].Partitions[0]
	}
	registerOtherBroker(t, b)
	moveLeader(t, b, "t", 0, otherBroker)
	if p := produce(); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a partition led elsewhere: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(p.ErrorCode))
	}
	moveLeader(t, b, "t", 0, testNodeID)
	if p := produce(); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce once led here again: %v at %d, want offset 0", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	batches := batchesOn(t, cl, "t", 0)
	if len(batches) != 1 {
		t.Fatalf("%d batches in t-0, want the one produced", len(batches))
	}
	if e := batches[0].PartitionLeaderEpoch; e != 2 {
		t.Fatalf("the batch's leader epoch %d, want 2", e)
	}
}
