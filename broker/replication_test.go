package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// hosted is node's log of topic's partition p.
func (c *testCluster) hosted(t *testing.T, node int32, topic string, p int32) *storage.Partition {
	t.Helper()
	sp := lookupPartition(c.brokers[node-1].logs.Topic(topic), p)
	if sp == nil {
		t.Fatalf("node %d does not host %s-%d", node, topic, p)
	}
	return sp
}

// registration is the image's registration of topic's partition p.
func (c *testCluster) registration(t *testing.T, topic string, p int32) metadata.PartitionRegistration {
	t.Helper()
	ti := c.store.Image().Topics.ByName(topic)
	if ti == nil {
		t.Fatalf("no topic %s in the image", topic)
	}
	reg, ok := ti.Partition(p)
	if !ok {
		t.Fatalf("no partition %s-%d in the image", topic, p)
	}
	return reg
}

// moveLeader proposes leader, from isr, as the new leader of topic's
// partition p: a PartitionChangeRecord, which bumps the leader epoch, as
// Kafka's controller elects one.
func (c *testCluster) moveLeader(t *testing.T, topic string, p, leader int32, isr []int32) {
	t.Helper()
	id := c.store.Image().Topics.ByName(topic).ID
	if _, err := c.store.Propose(metadata.PartitionChangeRecord{TopicID: id, PartitionID: p, Leader: leader, ISR: isr}); err != nil {
		t.Fatalf("move the leader of %s-%d to %d: %v", topic, p, leader, err)
	}
}

// setTopicConfig proposes a topic config.
func (c *testCluster) setTopicConfig(t *testing.T, topic, name, value string) {
	t.Helper()
	if _, err := c.store.Propose(metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: topic, Name: name, Value: &value}); err != nil {
		t.Fatal(err)
	}
}

// batches copies sp's batches below its high watermark.
func batches(t *testing.T, sp *storage.Partition) [][]byte {
	t.Helper()
	var out [][]byte
	if err := sp.Log.ForEachBatch(0, func(b []byte) error {
		out = append(out, bytes.Clone(b))
		return nil
	}); err != nil {
		t.Fatalf("read %s-%d: %v", sp.Topic, sp.Index, err)
	}
	return out
}

// waitInSync waits until every running replica of topic-p holds the
// leader's log up to the leader's log end offset with the same high
// watermark, then checks their batches are byte for byte the leader's.
func (c *testCluster) waitInSync(t *testing.T, topic string, p int32) {
	t.Helper()
	reg := c.registration(t, topic, p)
	leader := c.hosted(t, reg.Leader, topic, p)
	waitUntil(t, 20*time.Second, func() (bool, string) {
		for _, id := range reg.Replicas {
			if c.brokers[id-1] == nil {
				continue
			}
			sp := c.hosted(t, id, topic, p)
			if sp.Log.LogEndOffset() != leader.Log.LogEndOffset() || sp.Log.HighWatermark() != leader.Log.HighWatermark() {
				return false, fmt.Sprintf("node %d: log end %d hw %d; leader %d: log end %d hw %d", id, sp.Log.LogEndOffset(),
					sp.Log.HighWatermark(), reg.Leader, leader.Log.LogEndOffset(), leader.Log.HighWatermark())
			}
		}
		return true, ""
	})
	want := batches(t, leader)
	for _, id := range reg.Replicas {
		if c.brokers[id-1] == nil || id == reg.Leader {
			continue
		}
		if got := batches(t, c.hosted(t, id, topic, p)); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("node %d's %d batches of %s-%d differ from the leader's %d", id, len(got), topic, p, len(want))
		}
	}
}

// clusterClient is a franz-go client seeded with every running broker.
func clusterClient(t *testing.T, c *testCluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.RetryTimeout(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestReplicationAcksAllReachesEveryReplica checks a partition of three
// replicas: an acks=all produce answers only once both followers' logs
// hold the batch, every replica ends with the leader's batches byte for
// byte at the same offsets and with the same high watermark, and the
// leader's high watermark is the smallest log end offset of the ISR.
func TestReplicationAcksAllReachesEveryReplica(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "r", [][]int32{{1, 2, 3}})
	cl := clusterClient(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("r"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 40 {
		r := &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		for _, node := range []int32{2, 3} {
			if end := c.hosted(t, node, "r", 0).Log.LogEndOffset(); end <= r.Offset {
				t.Fatalf("record %d acknowledged at offset %d while follower %d's log ends at %d", i, r.Offset, node, end)
			}
		}
	}
	c.waitInSync(t, "r", 0)
	leader := c.hosted(t, 1, "r", 0)
	if hw := leader.Log.HighWatermark(); hw != 40 {
		t.Fatalf("leader's high watermark %d, want 40", hw)
	}
	if got := batches(t, leader); len(got) != 40 {
		t.Fatalf("leader holds %d batches, want 40", len(got))
	}
}

// produceTo sends one batch to node's partition p of topic with acks and
// returns the partition's answer.
func produceTo(t *testing.T, c *testCluster, node int32, topic string, p int32, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return produceWithin(t, c, node, topic, p, acks, records, 10*time.Second)
}

// produceWithin is produceTo with the request's timeout.
func produceWithin(t *testing.T, c *testCluster, node int32, topic string, p int32, acks int16, records []byte, timeout time.Duration) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, int32(timeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	acksOpt := kgo.RequiredAcks(kgo.AllISRAcks())
	if acks == 1 {
		acksOpt = kgo.RequiredAcks(kgo.LeaderAck())
	}
	// The client sets a produce's acks to its own.
	cl := newClient(t, c.brokers[node-1], kgo.MaxVersions(kversion.V2_8_0()), acksOpt, kgo.DisableIdempotentWrite())
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("produce to node %d: %v", node, err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestReplicationISRShrinksAndExpands checks the ISR of a partition of
// three replicas with min.insync.replicas=2: a stopped follower leaves the
// ISR after replica.lag.time.max.ms and acks=all produces go on; with the
// second follower gone an acks=all produce written while it was still in
// the ISR times out, since the high watermark stops moving once the ISR
// is below min.insync.replicas (KIP-966, as Kafka 4), the next is
// NOT_ENOUGH_REPLICAS and not written, and acks=1 still is, not exposed;
// a follower started again on its log dir
// catches up, rejoins the ISR and acks=all is served again.
func TestReplicationISRShrinksAndExpands(t *testing.T) {
	const lag = time.Second
	c := startTestCluster(t, 3, func(cfg *Config) { cfg.Cluster.ReplicaLagTimeMax = lag })
	c.createTopic(t, "r", [][]int32{{1, 2, 3}})
	c.setTopicConfig(t, "r", "min.insync.replicas", "2")
	isr := func(want ...int32) {
		t.Helper()
		waitUntil(t, 20*time.Second, func() (bool, string) {
			got := slices.Sorted(slices.Values(c.registration(t, "r", 0).ISR))
			return slices.Equal(got, want), fmt.Sprintf("ISR %v, want %v", got, want)
		})
	}
	ok := func(acks int16) int64 {
		t.Helper()
		resp := produceTo(t, c, 1, "r", 0, acks, testBatch(t, 2))
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
		return resp.BaseOffset
	}
	ok(-1)
	c.waitInSync(t, "r", 0)

	c.stop(t, 3)
	isr(1, 2)
	ok(-1)
	c.waitInSync(t, "r", 0)
	c.stop(t, 2)
	if got := c.registration(t, "r", 0).ISR; len(got) != 2 {
		t.Fatalf("ISR %v a moment after stopping node 2, want [1 2] for %v", got, lag)
	}
	leader := c.hosted(t, 1, "r", 0)
	hw := leader.Log.HighWatermark()
	if resp := produceWithin(t, c, 1, "r", 0, -1, testBatch(t, 2), 3*lag); resp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("acks=all while the ISR shrank to [1]: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(resp.ErrorCode))
	}
	isr(1)
	if end, got := leader.Log.LogEndOffset(), leader.Log.HighWatermark(); end != hw+2 || got != hw {
		t.Fatalf("log end %d, high watermark %d; want the batch written up to %d and the high watermark kept at %d", end, got, hw+2, hw)
	}
	end := leader.Log.LogEndOffset()
	if resp := produceTo(t, c, 1, "r", 0, -1, testBatch(t, 2)); resp.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with the ISR [1] below min.insync.replicas 2: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(resp.ErrorCode))
	}
	if got := c.hosted(t, 1, "r", 0).Log.LogEndOffset(); got != end {
		t.Fatalf("a NOT_ENOUGH_REPLICAS produce was written: log end %d, was %d", got, end)
	}
	ok(1)
	if got := leader.Log.HighWatermark(); got != hw {
		t.Fatalf("high watermark %d after an acks=1 write under min.insync.replicas, want it kept at %d", got, hw)
	}

	c.start(t, 3)
	isr(1, 3)
	ok(-1)
	c.waitInSync(t, "r", 0)
}

// producerBatch is a v2 batch of values from producer id pid at epoch and
// first sequence seq, transactional when txn.
func producerBatch(pid int64, epoch int16, seq int32, txn bool, values ...string) []byte {
	now := time.Now().UnixMilli()
	var records []byte
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = []byte(v)
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	if txn {
		b.Attributes = 0x10
	}
	b.LastOffsetDelta = int32(len(values) - 1)
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = pid, epoch, seq
	b.NumRecords = int32(len(values))
	b.Records = records
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], castagnoli))
	return b.AppendTo(nil)
}

// TestReplicationFailover checks a leader change: the old leader stopped
// and a follower from the ISR elected with a new leader epoch, an
// idempotent producer goes on on the new leader with no acknowledged
// record lost and none twice; the new leader, whose producer state and
// transaction state were rebuilt from what it fetched, answers a retried
// batch as the duplicate it is and keeps an open transaction's first
// offset as its last stable offset; the old leader, started again with
// records at the old epoch the others never had, truncates them when it
// fetches from the new leader and ends with the new leader's log.
func TestReplicationFailover(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "f", [][]int32{{1, 2, 3}})
	cl := clusterClient(t, c, kgo.DefaultProduceTopic("f"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acked := map[string]bool{}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			v := "v" + strconv.Itoa(i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			acked[v] = true
		}
	}
	produce(0, 20)
	retried := producerBatch(6000, 0, 0, false, "idempotent")
	first := produceTo(t, c, 1, "f", 0, -1, retried)
	if first.ErrorCode != 0 {
		t.Fatalf("idempotent batch: %v", kerr.ErrorForCode(first.ErrorCode))
	}
	acked["idempotent"] = true
	// A transaction left open: the produce path would verify it with the
	// coordinator, so the leader's replica takes its batch directly.
	sp1 := c.hosted(t, 1, "f", 0)
	lp, err := c.brokers[0].replicas.Partition(sp1)
	if err != nil {
		t.Fatal(err)
	}
	txn, err := lp.AppendAsLeader(producerBatch(7000, 0, 0, true, "open-txn"), -1, 10*time.Second)
	if err != nil {
		t.Fatalf("open transaction: %v", err)
	}
	produce(20, 25)
	c.waitInSync(t, "f", 0)
	if lso := c.hosted(t, 2, "f", 0).Log.LastStableOffset(); lso != txn.BaseOffset {
		t.Fatalf("follower 2's last stable offset %d, want the open transaction's first offset %d", lso, txn.BaseOffset)
	}

	c.stop(t, 1)
	c.moveLeader(t, "f", 0, 2, []int32{2, 3})
	if reg := c.registration(t, "f", 0); reg.Leader != 2 || reg.LeaderEpoch != 1 {
		t.Fatalf("registration %+v, want leader 2 at epoch 1", reg)
	}
	sp2 := c.hosted(t, 2, "f", 0)
	end := sp2.Log.LogEndOffset()
	again := produceTo(t, c, 2, "f", 0, -1, retried)
	if again.ErrorCode != 0 || again.BaseOffset != first.BaseOffset || sp2.Log.LogEndOffset() != end {
		t.Fatalf("a retried batch on the new leader: %v at %d (first at %d), log end %d (was %d); want the duplicate's answer and nothing written",
			kerr.ErrorForCode(again.ErrorCode), again.BaseOffset, first.BaseOffset, sp2.Log.LogEndOffset(), end)
	}
	if lso := sp2.Log.LastStableOffset(); lso != txn.BaseOffset {
		t.Fatalf("new leader's last stable offset %d, want the open transaction's first offset %d", lso, txn.BaseOffset)
	}
	lp2, err := c.brokers[1].replicas.Partition(sp2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lp2.AppendControl(7000, 0, false, 0, 10*time.Second); err != nil {
		t.Fatalf("abort the open transaction on the new leader: %v", err)
	}
	produce(25, 45)
	if e := sp2.Log.LatestEpoch(); e != 1 {
		t.Fatalf("new leader's latest epoch %d, want 1", e)
	}

	// The old leader had appended records at its epoch 0 that never reached
	// the others.
	logs, err := storage.OpenManager(vfs.Default, c.dirs[0], storage.DefaultConfig(), storage.ManagerOptions{Logger: zap.NewNop(), NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	old := logs.Topic("f").Partitions()[0]
	diverged := old.Log.LogEndOffset()
	for i := range 3 {
		if _, err := old.Log.Append(testBatchValues("tail-"+strconv.Itoa(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := logs.Close(); err != nil {
		t.Fatal(err)
	}
	c.start(t, 1)
	c.waitInSync(t, "f", 0)
	for _, b := range batches(t, c.hosted(t, 1, "f", 0)) {
		if bytes.Contains(b, []byte("tail-")) {
			t.Fatalf("the old leader kept a record of its divergent tail (from offset %d)", diverged)
		}
	}

	consumer := clusterClient(t, c, kgo.ConsumeTopics("f"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for len(seen) < len(acked) {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d distinct values of %d acknowledged: %v", len(seen), len(acked), err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acknowledged %s consumed %d times, want once", v, seen[v])
		}
	}
	for v, n := range seen {
		if !acked[v] || n != 1 {
			t.Fatalf("consumed %s %d times, acknowledged %v", v, n, acked[v])
		}
	}
}

// testBatchValues is a batch of values with no producer id.
func testBatchValues(values ...string) []byte { return producerBatch(-1, -1, -1, false, values...) }

// replicaFetch sends a follower's Fetch (v15) of topic-0 to node as
// replica from (-1: a consumer's), at fetchOffset with lastFetchedEpoch and
// currentEpoch, and returns the partition's answer.
func replicaFetch(t *testing.T, c *testCluster, node, from int32, topic string, fetchOffset int64, lastFetchedEpoch, currentEpoch int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	conn, err := net.Dial("tcp", c.brokers[node-1].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrFetchRequest()
	req.Version = replicaFetchVersion
	req.ReplicaState.ID, req.ReplicaState.Epoch = from, -1
	req.MaxBytes, req.SessionEpoch = 1<<20, finalFetchEpoch
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = c.store.Image().Topics.ByName(topic).ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.LastFetchedEpoch, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = fetchOffset, lastFetchedEpoch, currentEpoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, _, err := fetchRoundTrip(conn, req, 1, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestReplicaFetchAnswers checks what a leader answers a follower's fetch,
// as Kafka: from a broker that is not a replica UNKNOWN_LEADER_EPOCH
// (NOT_LEADER_OR_FOLLOWER with no leader epoch), NOT_LEADER_OR_FOLLOWER
// to a broker that is not the leader, FENCED_LEADER_EPOCH and
// UNKNOWN_LEADER_EPOCH for an older and a newer leader epoch,
// OFFSET_OUT_OF_RANGE for a last fetched epoch it cannot place, the end of
// the follower's last fetched epoch (DivergingEpoch) when its log goes on
// past it, and records past the high watermark up to the log end offset,
// the follower's next fetch offset moving the high watermark. A broker
// that is not one of a partition's replicas holds no log of it, and answers
// a consumer's fetch NOT_LEADER_OR_FOLLOWER; a follower serves it (v11+).
func TestReplicaFetchAnswers(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "a", [][]int32{{1, 2}})
	if resp := produceTo(t, c, 1, "a", 0, -1, testBatch(t, 3)); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	c.moveLeader(t, "a", 0, 1, nil) // epoch 1, same leader
	if resp := produceTo(t, c, 1, "a", 0, -1, testBatch(t, 2)); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	c.waitInSync(t, "a", 0)
	if sp := lookupPartition(c.brokers[2].logs.Topic("a"), 0); sp != nil {
		t.Fatalf("node 3, not a replica, holds a log of a-0 with %d records", sp.Log.LogEndOffset())
	}
	for _, tc := range []struct {
		name          string
		node, from    int32
		offset        int64
		last, current int32
		want          error
	}{
		{"from a broker that is not a replica, at the leader epoch", 1, 3, 5, 1, 1, kerr.UnknownLeaderEpoch},
		{"from a broker that is not a replica, with no leader epoch", 1, 3, 5, 1, -1, kerr.NotLeaderForPartition},
		{"a last fetched epoch the leader cannot tell", 1, 2, 5, 7, 1, kerr.OffsetOutOfRange},
		{"to a follower", 2, 1, 5, 1, 1, kerr.NotLeaderForPartition},
		{"an older leader epoch", 1, 2, 5, 1, 0, kerr.FencedLeaderEpoch},
		{"a newer leader epoch", 1, 2, 5, 1, 2, kerr.UnknownLeaderEpoch},
		{"a consumer's from a broker that is not a replica", 3, -1, 0, -1, -1, kerr.NotLeaderForPartition},
		{"a consumer's from a follower", 2, -1, 0, -1, -1, nil},
	} {
		if got := replicaFetch(t, c, tc.node, tc.from, "a", tc.offset, tc.last, tc.current); !errors.Is(kerr.ErrorForCode(got.ErrorCode), tc.want) || (tc.want == nil) != (got.ErrorCode == 0) {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got.ErrorCode), tc.want)
		}
	}
	got := replicaFetch(t, c, 1, 2, "a", 4, 0, 1)
	if got.ErrorCode != 0 || got.DivergingEpoch.Epoch != 0 || got.DivergingEpoch.EndOffset != 3 || len(got.RecordBatches) != 0 {
		t.Fatalf("a follower at 4 whose last epoch is 0: %v, diverging %+v, %d bytes; want epoch 0 ending at 3 and no records",
			kerr.ErrorForCode(got.ErrorCode), got.DivergingEpoch, len(got.RecordBatches))
	}

	// A batch the follower has not fetched yet is above the high
	// watermark, and the leader sends it to the follower.
	c.stop(t, 2)
	if resp := produceTo(t, c, 1, "a", 0, 1, testBatch(t, 1)); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	leader := c.hosted(t, 1, "a", 0)
	if hw, end := leader.Log.HighWatermark(), leader.Log.LogEndOffset(); hw != 5 || end != 6 {
		t.Fatalf("leader's high watermark %d, log end %d; want 5 and 6", hw, end)
	}
	got = replicaFetch(t, c, 1, 2, "a", 5, 1, 1)
	if got.ErrorCode != 0 || got.DivergingEpoch.EndOffset != -1 || len(got.RecordBatches) == 0 || got.HighWatermark != 5 {
		t.Fatalf("a follower at 5: %v, diverging %+v, %d bytes, hw %d; want the batch at 5 and hw 5",
			kerr.ErrorForCode(got.ErrorCode), got.DivergingEpoch, len(got.RecordBatches), got.HighWatermark)
	}
	if got = replicaFetch(t, c, 1, 2, "a", 6, 1, 1); got.ErrorCode != 0 || got.HighWatermark != 6 || leader.Log.HighWatermark() != 6 {
		t.Fatalf("a follower at 6: %v, hw %d, leader's hw %d; want 6", kerr.ErrorForCode(got.ErrorCode), got.HighWatermark, leader.Log.HighWatermark())
	}
}

// TestReplicationFollowerBehindLogStart checks the leader's log start
// offset on its follower: moved by DeleteRecords, it becomes the
// follower's; and a follower whose log ends below it (the leader deleted
// what the follower lacks while it was down) is OFFSET_OUT_OF_RANGE,
// empties its log and starts again at the leader's log start, as Kafka's
// truncateFullyAndStartAt, catches up and rejoins the ISR.
func TestReplicationFollowerBehindLogStart(t *testing.T) {
	c := startTestCluster(t, 2, func(cfg *Config) { cfg.Cluster.ReplicaLagTimeMax = 500 * time.Millisecond })
	c.createTopic(t, "b", [][]int32{{1, 2}})
	produce := func(n int) {
		t.Helper()
		for range n {
			if resp := produceTo(t, c, 1, "b", 0, -1, testBatch(t, 2)); resp.ErrorCode != 0 {
				t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
			}
		}
	}
	isr := func(want ...int32) {
		t.Helper()
		waitUntil(t, 20*time.Second, func() (bool, string) {
			got := slices.Sorted(slices.Values(c.registration(t, "b", 0).ISR))
			return slices.Equal(got, want), fmt.Sprintf("ISR %v, want %v", got, want)
		})
	}
	produce(3)
	c.waitInSync(t, "b", 0)
	if _, err := c.brokers[0].logs.DeleteRecords("b", 0, 2); err != nil {
		t.Fatal(err)
	}
	produce(1)
	waitUntil(t, 20*time.Second, func() (bool, string) {
		start := c.hosted(t, 2, "b", 0).Log.LogStartOffset()
		return start == 2, fmt.Sprintf("follower's log start offset %d, want the leader's 2", start)
	})
	c.stop(t, 2)
	isr(1)
	produce(3)
	if start, err := c.brokers[0].logs.DeleteRecords("b", 0, 10); err != nil || start != 10 {
		t.Fatalf("delete records below 10: log start %d, %v", start, err)
	}
	c.start(t, 2)
	isr(1, 2)
	c.waitInSync(t, "b", 0)
	if start, end := c.hosted(t, 2, "b", 0).Log.LogStartOffset(), c.hosted(t, 2, "b", 0).Log.LogEndOffset(); start != 10 || end != 14 {
		t.Fatalf("follower's log start %d, log end %d; want 10 and 14", start, end)
	}
}

// TestReplicationLeaderMovesUnderLoad checks leadership moved twice, as a
// controlled shutdown moves it, while an idempotent producer keeps
// producing: every acknowledged record is consumed once and no record
// twice, and every replica ends with the last leader's log.
func TestReplicationLeaderMovesUnderLoad(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "m", [][]int32{{1, 2, 3}})
	cl := clusterClient(t, c, kgo.DefaultProduceTopic("m"), kgo.ProducerLinger(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const total = 3000
	var (
		mu      sync.Mutex
		acked   = map[string]bool{}
		failed  error
		settled sync.WaitGroup
	)
	go func() {
		for i := range total {
			v := "v" + strconv.Itoa(i)
			settled.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer settled.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil && failed == nil {
					failed = fmt.Errorf("produce %s: %w", v, err)
				}
				if err == nil {
					acked[v] = true
				}
			})
			if i%100 == 0 {
				time.Sleep(time.Millisecond) // a steady stream, not one burst
			}
		}
	}()
	for _, step := range []struct {
		after  int
		leader int32
	}{{total / 4, 2}, {total / 2, 3}} {
		waitUntil(t, 30*time.Second, func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= step.after, fmt.Sprintf("%d records acknowledged, want %d before moving the leader", len(acked), step.after)
		})
		c.moveLeader(t, "m", 0, step.leader, []int32{1, 2, 3})
	}
	waitUntil(t, 30*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) == total || failed != nil, fmt.Sprintf("%d records acknowledged of %d", len(acked), total)
	})
	settled.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	if len(acked) != total {
		t.Fatalf("%d records acknowledged of %d", len(acked), total)
	}
	c.waitInSync(t, "m", 0)
	hw := c.hosted(t, 3, "m", 0).Log.HighWatermark()
	consumer := clusterClient(t, c, kgo.ConsumeTopics("m"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	for next := int64(0); next < hw; {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed up to %d of %d: %v", next, hw, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			next = r.Offset + 1
		})
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acknowledged %s is %d times in the log, want once", v, seen[v])
		}
	}
	if len(seen) != total || hw != total {
		t.Fatalf("the log holds %d distinct values in %d records, want %d", len(seen), hw, total)
	}
}

// TestReplicationLeaderThatAppendedNothing checks a replica elected leader
// and replaced before it appended anything: its epoch, recorded at its log
// end, is in no other log, and once it follows the next leader it drops
// that epoch and fetches on, as Kafka's truncateTo, instead of diverging
// at its log end forever.
func TestReplicationLeaderThatAppendedNothing(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "e", [][]int32{{1, 2, 3}})
	if resp := produceTo(t, c, 1, "e", 0, -1, testBatch(t, 2)); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	c.waitInSync(t, "e", 0)
	c.moveLeader(t, "e", 0, 2, []int32{1, 2, 3})
	c.moveLeader(t, "e", 0, 3, []int32{1, 2, 3})
	if resp := produceTo(t, c, 3, "e", 0, -1, testBatch(t, 2)); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	c.waitInSync(t, "e", 0)
	if e := c.hosted(t, 2, "e", 0).Log.LatestEpoch(); e != 2 {
		t.Fatalf("node 2's latest epoch %d, want the leader's 2", e)
	}
}

// TestReplicationDefaults checks that the replication settings a Config
// leaves zero take Kafka's defaults and the ones it sets are kept.
func TestReplicationDefaults(t *testing.T) {
	d := DefaultClusterConfig()
	if got := withReplicationDefaults(ClusterConfig{}); got.ReplicaLagTimeMax != d.ReplicaLagTimeMax ||
		got.ReplicaFetch != d.ReplicaFetch || got.InterBrokerListener != d.InterBrokerListener {
		t.Fatalf("zero config: %+v, want Kafka's defaults %+v", got, d)
	}
	set := ClusterConfig{InterBrokerListener: "REPLICATION", ReplicaLagTimeMax: time.Second,
		ReplicaFetch: ReplicaFetchConfig{MaxBytes: 1, ResponseMaxBytes: 2, MinBytes: 3, MaxWait: 4, Backoff: 5}}
	if got := withReplicationDefaults(set); !reflect.DeepEqual(got, set) {
		t.Fatalf("set config: %+v, want it kept %+v", got, set)
	}
}
