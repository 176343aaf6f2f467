package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// TestSharePartitionForMatchesKafka checks the key and its partition are
// Kafka's: the values are ShareCoordinatorService.partitionFor's
// (Utils.abs(key.hashCode()) % n, computed with Java).
func TestSharePartitionForMatchesKafka(t *testing.T) {
	one := [16]byte{15: 1}
	var example [16]byte
	copy(example[:], "example-topic-id")
	for _, tc := range []struct {
		group     string
		topicID   [16]byte
		partition int32
		key       string
		of50, of4 int32
	}{
		{"g", one, 0, "g:AAAAAAAAAAAAAAAAAAAAAQ:0", 23, 3},
		{"g", one, 1, "g:AAAAAAAAAAAAAAAAAAAAAQ:1", 22, 2},
		{"share-group", example, 7, "share-group:ZXhhbXBsZS10b3BpYy1pZA:7", 8, 0},
		{"gé", one, 3, "gé:AAAAAAAAAAAAAAAAAAAAAQ:3", 13, 3},
	} {
		key := ShareKey(tc.group, tc.topicID, tc.partition)
		if key != tc.key {
			t.Errorf("key %q, want %q", key, tc.key)
		}
		if p := partitionFor(key, 50); p != tc.of50 {
			t.Errorf("%s: partition %d of 50, want %d", key, p, tc.of50)
		}
		if p := partitionFor(key, 4); p != tc.of4 {
			t.Errorf("%s: partition %d of 4, want %d", key, p, tc.of4)
		}
	}
}

// shareTestNode is a share coordinator over real logs in a directory, which
// a restart reopens.
type shareTestNode struct {
	dir   string
	logs  *storage.Manager
	coord *ShareCoordinator
	clock *clockwork.FakeClock
	topic [16]byte // t, 2 partitions
}

func openShareNode(t *testing.T, dir string) *shareTestNode {
	t.Helper()
	logs, err := storage.OpenManager(vfs.Default, dir, storage.DefaultConfig(), storage.ManagerOptions{Logger: zap.NewNop(), NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := &shareTestNode{dir: dir, logs: logs}
	if logs.Topic("t") == nil {
		if _, err := logs.CreateTopic("t", 2, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	n.topic = logs.Topic("t").ID
	cfg := DefaultShareConfig()
	n.clock = clockwork.NewFakeClockAt(scriptStart)
	cfg.StatePartitions, cfg.SnapshotUpdateRecords, cfg.Clock = 4, 2, n.clock
	cfg.PruneInterval, cfg.ColdSnapshotInterval = time.Minute, 10*time.Minute
	create := func(name string, partitions int32, configs map[string]string) (*storage.Topic, error) {
		st, err := logs.CreateTopic(name, partitions, configs, false)
		if err != nil {
			return nil, err
		}
		n.elect(st)
		return st, nil
	}
	n.coord = OpenShareCoordinator(logs, replicasOf(t, logs), create, cfg, zap.NewNop())
	if st := logs.Topic(ShareStateTopic); st != nil {
		n.elect(st)
	}
	return n
}

// elect makes this node the leader of every partition, as the publisher
// does from the metadata image.
func (n *shareTestNode) elect(st *storage.Topic) {
	for _, p := range st.Partitions() {
		n.coord.OnElected(p.Index, p.LeaderEpoch())
	}
}

func (n *shareTestNode) close() {
	n.coord.Close()
	_ = n.logs.Close()
}

func (n *shareTestNode) read(group string, partition, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = group
	r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: n.topic, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: partition, LeaderEpoch: leaderEpoch}}}}
	resp := n.coord.ReadState(r)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		panic("read: not one partition answered")
	}
	return resp.Topics[0].Partitions[0]
}

func (n *shareTestNode) initialize(group string, partition, stateEpoch int32, start int64) kmsg.InitializeShareGroupStateResponseTopicPartition {
	r := kmsg.NewPtrInitializeShareGroupStateRequest()
	r.GroupID = group
	r.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: n.topic, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: partition, StateEpoch: stateEpoch, StartOffset: start}}}}
	return n.coord.InitializeState(r).Topics[0].Partitions[0]
}

func (n *shareTestNode) write(group string, partition, leaderEpoch int32, start int64, batches ...kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch) kmsg.WriteShareGroupStateResponseTopicPartition {
	r := kmsg.NewPtrWriteShareGroupStateRequest()
	r.GroupID = group
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.StartOffset, p.StateBatches = partition, leaderEpoch, start, batches
	r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: n.topic, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
	return n.coord.WriteState(r).Topics[0].Partitions[0]
}

func stateBatch(first, last int64, state int8, count int16) kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
	return kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
}

func message(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestShareCoordinatorDriver drives the share coordinator over real logs:
// before __share_group_state exists every key is NOT_COORDINATOR; Ensure
// creates it with Kafka's configs; initialized and written state is read
// back, also after the node restarts (the partitions replayed); a loading
// partition is COORDINATOR_LOAD_IN_PROGRESS, a resigned one
// NOT_COORDINATOR, with Kafka's messages.
func TestShareCoordinatorDriver(t *testing.T) {
	dir := t.TempDir()
	n := openShareNode(t, dir)
	notCoordinator := "Unable to read share group state: This is not the correct coordinator."
	if p := n.read("g", 0, 0); p.ErrorCode != kerr.NotCoordinator.Code || message(p.ErrorMessage) != notCoordinator {
		t.Fatalf("before the topic: %d %q, want NOT_COORDINATOR %q", p.ErrorCode, message(p.ErrorMessage), notCoordinator)
	}
	if err := n.coord.Ensure(); err != nil {
		t.Fatal(err)
	}
	st := n.logs.Topic(ShareStateTopic)
	if st == nil || st.PartitionCount() != 4 {
		t.Fatalf("%s not created with 4 partitions", ShareStateTopic)
	}
	for k, want := range map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "104857600",
		"min.insync.replicas": "2", "compression.type": "producer"} {
		if got := st.Configs[k]; got != want {
			t.Errorf("%s %s=%q, want %q", ShareStateTopic, k, got, want)
		}
	}
	if p := n.read("g", 0, 0); p.ErrorCode != kerr.InvalidRequest.Code || message(p.ErrorMessage) != msgReadUninitialized {
		t.Fatalf("uninitialized read: %d %q", p.ErrorCode, message(p.ErrorMessage))
	}
	if p := n.initialize("g", 0, 0, 5); p.ErrorCode != 0 {
		t.Fatalf("initialize: %d %q", p.ErrorCode, message(p.ErrorMessage))
	}
	// Three writes: two updates, then (2 per snapshot) a snapshot.
	for i, b := range []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
		stateBatch(5, 9, 2, 1), stateBatch(10, 14, 0, 2), stateBatch(15, 15, 4, 5),
	} {
		if p := n.write("g", 0, 1, 5, b); p.ErrorCode != 0 {
			t.Fatalf("write %d: %d %q", i, p.ErrorCode, message(p.ErrorMessage))
		}
	}
	// As in Kafka, a read records its leader epoch, a write does not.
	if p := n.write("g", 0, 0, 5); p.ErrorCode != 0 {
		t.Fatalf("write at an older leader epoch before any read: %d %q", p.ErrorCode, message(p.ErrorMessage))
	}
	want := n.read("g", 0, 1)
	if want.ErrorCode != 0 || want.StartOffset != 5 || len(want.StateBatches) != 3 {
		t.Fatalf("read: %+v", want)
	}
	if p := n.write("g", 0, 0, 5); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("write at an older leader epoch than the read's: %d, want FENCED_LEADER_EPOCH", p.ErrorCode)
	}
	partition := n.coord.PartitionFor(ShareKey("g", n.topic, 0))
	if sp := st.Partition(partition); sp.Log.LogEndOffset() != 6 {
		t.Fatalf("%s-%d holds %d records, want the initialize, four writes and the read's leader epoch", ShareStateTopic, partition, sp.Log.LogEndOffset())
	}

	n.close()
	n = openShareNode(t, dir)
	defer n.close()
	waitFor(t, "the share coordinator to load", n.coord.Loaded)
	got := n.read("g", 0, 1)
	if got.ErrorCode != 0 || got.StartOffset != want.StartOffset || len(got.StateBatches) != len(want.StateBatches) {
		t.Fatalf("after restart read %+v, want %+v", got, want)
	}
	for i := range got.StateBatches {
		g, w := got.StateBatches[i], want.StateBatches[i]
		if g.FirstOffset != w.FirstOffset || g.LastOffset != w.LastOffset || g.DeliveryState != w.DeliveryState || g.DeliveryCount != w.DeliveryCount {
			t.Errorf("after restart batch %d is %+v, want %+v", i, g, w)
		}
	}
	if p := n.write("g", 0, 0, 5); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("after restart a write at an older leader epoch: %d, want FENCED_LEADER_EPOCH", p.ErrorCode)
	}

	n.coord.publish(&shareSlot{partition: partition, loading: true, sm: n.coord.newShard()})
	loading := "Unable to read share group state: The coordinator is loading and hence can't process requests."
	if p := n.read("g", 0, 1); p.ErrorCode != kerr.CoordinatorLoadInProgress.Code || message(p.ErrorMessage) != loading {
		t.Fatalf("loading: %d %q, want %q", p.ErrorCode, message(p.ErrorMessage), loading)
	}
	n.coord.OnResigned(partition)
	if p := n.read("g", 0, 1); p.ErrorCode != kerr.NotCoordinator.Code || message(p.ErrorMessage) != notCoordinator {
		t.Fatalf("resigned: %d %q", p.ErrorCode, message(p.ErrorMessage))
	}
}

// TestShareCoordinatorEmptyRequests checks what Kafka answers with no
// results: no topics, a topic without partitions, no group id.
func TestShareCoordinatorEmptyRequests(t *testing.T) {
	n := openShareNode(t, t.TempDir())
	defer n.close()
	if err := n.coord.Ensure(); err != nil {
		t.Fatal(err)
	}
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = "g"
	if resp := n.coord.ReadState(r); len(resp.Topics) != 0 {
		t.Errorf("no topics: answered %+v", resp.Topics)
	}
	r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: n.topic, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}}}, {TopicID: n.topic}}
	if resp := n.coord.ReadState(r); len(resp.Topics) != 0 {
		t.Errorf("a topic without partitions: answered %+v", resp.Topics)
	}
	r.Topics, r.GroupID = r.Topics[:1], ""
	if resp := n.coord.ReadState(r); len(resp.Topics) != 0 {
		t.Errorf("no group: answered %+v", resp.Topics)
	}
}

// TestShareCoordinatorPrunesAndSnapshotsCold runs the two timers: each
// prune interval the records of a __share_group_state partition below
// its share-partitions' last snapshots are deleted; a share-partition
// whose last snapshot is a cold-snapshot interval old gets a copy, which
// lets the next prune go past its updates. A restart, which replays from
// the new log start, reads the same state.
func TestShareCoordinatorPrunesAndSnapshotsCold(t *testing.T) {
	dir := t.TempDir()
	n := openShareNode(t, dir)
	if err := n.coord.Ensure(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.clock.BlockUntilContext(ctx, 2); err != nil {
		t.Fatalf("the timers' tickers: %v", err)
	}
	if p := n.initialize("g", 0, 0, 5); p.ErrorCode != 0 {
		t.Fatalf("initialize: %d %q", p.ErrorCode, message(p.ErrorMessage))
	}
	// Offsets 1 and 2 are updates; 3 is a snapshot (2 updates per snapshot),
	// then 4 another update.
	for i, b := range []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
		stateBatch(5, 9, 2, 1), stateBatch(10, 14, 0, 2), stateBatch(15, 15, 4, 5), stateBatch(16, 16, 2, 1),
	} {
		if p := n.write("g", 0, 0, 5, b); p.ErrorCode != 0 {
			t.Fatalf("write %d: %d %q", i, p.ErrorCode, message(p.ErrorMessage))
		}
	}
	want := n.read("g", 0, 0)
	sp := n.logs.Topic(ShareStateTopic).Partition(n.coord.PartitionFor(ShareKey("g", n.topic, 0)))
	logStart := func(offset int64) func() bool {
		return func() bool { return sp.Log.LogStartOffset() == offset }
	}
	if sp.Log.LogStartOffset() != 0 || sp.Log.LogEndOffset() != 5 {
		t.Fatalf("log %d-%d before pruning, want 0-5", sp.Log.LogStartOffset(), sp.Log.LogEndOffset())
	}

	n.clock.Advance(time.Minute)
	waitFor(t, "pruning below the last snapshot, offset 3", logStart(3))

	// Ten minutes on, the snapshot at 3 is cold: a copy at 5, and the next
	// prune goes up to it.
	n.clock.Advance(9 * time.Minute)
	waitFor(t, "the cold-partition snapshot", func() bool { return sp.Log.LogEndOffset() == 6 })
	n.clock.Advance(time.Minute)
	waitFor(t, "pruning below the cold snapshot, offset 5", logStart(5))

	n.close()
	n = openShareNode(t, dir)
	defer n.close()
	waitFor(t, "the share coordinator to load", n.coord.Loaded)
	got := n.read("g", 0, 0)
	if got.ErrorCode != 0 || got.StartOffset != want.StartOffset || len(got.StateBatches) != len(want.StateBatches) {
		t.Fatalf("after pruning and a restart read %+v, want %+v", got, want)
	}
	for i := range got.StateBatches {
		g, w := got.StateBatches[i], want.StateBatches[i]
		if g.FirstOffset != w.FirstOffset || g.LastOffset != w.LastOffset || g.DeliveryState != w.DeliveryState || g.DeliveryCount != w.DeliveryCount {
			t.Errorf("after pruning and a restart batch %d is %+v, want %+v", i, g, w)
		}
	}
}
