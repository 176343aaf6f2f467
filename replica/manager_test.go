package replica

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// TestManagerLeadsEveryPartition checks that NewManager makes this node the
// leader of every partition, moving a high watermark left behind its log
// end offset up to it, as Kafka's makeLeader; that a partition keeps one
// replica until StopReplicas drops it.
func TestManagerLeadsEveryPartition(t *testing.T) {
	logs, err := storage.OpenManager(vfs.Default, filepath.Join(t.TempDir(), "data"), storage.DefaultConfig(), storage.ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	top, err := logs.CreateTopic("orders", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	sp := top.Partitions()[1]
	if _, err := sp.Log.Append(recordBatch("a"), 0); err != nil {
		t.Fatal(err)
	}
	if hw := sp.Log.HighWatermark(); hw != 0 {
		t.Fatalf("hw %d after a bare Append, want 0", hw)
	}
	m, err := NewManager(logs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if hw := sp.Log.HighWatermark(); hw != 1 {
		t.Fatalf("hw %d once this node leads, want the log end 1", hw)
	}
	p, err := m.Partition(sp)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Partition(sp); again != p {
		t.Fatal("a second lookup made a second replica")
	}
	m.StopReplicas(top.Partitions())
	if again, _ := m.Partition(sp); again == p {
		t.Fatal("StopReplicas kept the replica")
	}
}

// TestManagerFollowsLeadership checks MakeFollower and MakeLeader: a
// partition another node leads refuses writers NOT_LEADER_OR_FOLLOWER
// (also on first use); led again at a newer epoch, the epoch is in the
// log's leader-epoch-checkpoint and on what is appended; leading again at
// the same epoch keeps the replica.
func TestManagerFollowsLeadership(t *testing.T) {
	logs, err := storage.OpenManager(vfs.Default, filepath.Join(t.TempDir(), "data"), storage.DefaultConfig(), storage.ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	m, err := NewManager(logs, 1)
	if err != nil {
		t.Fatal(err)
	}
	top, err := logs.CreateTopic("orders", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	sp := top.Partitions()[0]
	m.MakeFollower(sp, 0)
	if _, err := m.Partition(sp); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("a partition led elsewhere: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if err := m.MakeLeader(sp, 3, Leadership{}); err != nil {
		t.Fatal(err)
	}
	p, err := m.Partition(sp)
	if err != nil {
		t.Fatal(err)
	}
	if e := sp.Log.LatestEpoch(); e != 3 || sp.LeaderEpoch() != 3 {
		t.Fatalf("leader epoch: checkpoint %d, partition %d; want 3", e, sp.LeaderEpoch())
	}
	if _, err := p.AppendAsLeader(recordBatch("a"), AcksAll, time.Second); err != nil {
		t.Fatal(err)
	}
	if e, end := sp.Log.EndOffsetForEpoch(3); e != 3 || end != 1 {
		t.Fatalf("epoch 3 ends at %d (epoch %d), want the append's end 1", end, e)
	}
	if err := m.MakeLeader(sp, 3, Leadership{}); err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Partition(sp); again != p {
		t.Fatal("leading again at the same epoch made a second replica")
	}
}

// TestRetriedBatchWaitsForReplication checks a producer's retry of a batch
// the leader already holds: acks=all answers it only once the ISR holds
// the original (REQUEST_TIMED_OUT before), as Kafka's DelayedProduce
// waits for a duplicate's original offsets.
func TestRetriedBatchWaitsForReplication(t *testing.T) {
	logs, err := storage.OpenManager(vfs.Default, filepath.Join(t.TempDir(), "data"), storage.DefaultConfig(), storage.ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	top, err := logs.CreateTopic("orders", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	sp := top.Partitions()[0]
	p, err := NewLeaderOf(sp.Log, sp, 1, Leadership{Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := idempotentBatch(9, 0, 0, "a")
	if _, err := p.AppendAsLeader(b, AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	res, err := p.AppendAsLeader(b, AcksAll, 50*time.Millisecond)
	if !res.Duplicate || !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("retry before the follower fetched: duplicate %v, %v; want a duplicate and REQUEST_TIMED_OUT", res.Duplicate, err)
	}
	if err := p.UpdateFollower(2, 1, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if res, err := p.AppendAsLeader(b, AcksAll, time.Second); err != nil || !res.Duplicate || res.BaseOffset != 0 {
		t.Fatalf("retry once replicated: %+v, %v; want the duplicate at 0", res, err)
	}
}

// idempotentBatch is recordBatch from producer id pid at epoch, first
// sequence seq.
func idempotentBatch(pid int64, epoch int16, seq int32, value string) []byte {
	r := kmsg.Record{Value: []byte(value)}
	body := r.AppendTo(nil)[1:]
	r.Length = int32(len(body))
	recs := r.AppendTo(nil)
	b := kmsg.RecordBatch{Length: int32(batch.HeaderSize - batch.LogOverhead + len(recs)), PartitionLeaderEpoch: -1, Magic: 2,
		FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: recs}
	raw := b.AppendTo(nil)
	batch.Seal(raw)
	return raw
}

// TestLeaderChangesAnswerWaitingAppends checks the acks=all appends
// waiting for the ISR when leadership changes: a new leader epoch on the
// same leader keeps them waiting and the followers' fetches at the new
// epoch answer them, and when this node stops leading they are answered
// NOT_LEADER_OR_FOLLOWER at once, as Kafka completes its delayed produces.
func TestLeaderChangesAnswerWaitingAppends(t *testing.T) {
	logs, err := storage.OpenManager(vfs.Default, filepath.Join(t.TempDir(), "data"), storage.DefaultConfig(), storage.ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	top, err := logs.CreateTopic("orders", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	sp := top.Partitions()[0]
	m := NewClusterManager(1, 30*time.Second, time.Now)
	both := Leadership{Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	if err := m.MakeLeader(sp, 1, both); err != nil {
		t.Fatal(err)
	}
	p, err := m.Partition(sp)
	if err != nil {
		t.Fatal(err)
	}
	wait := func() chan error {
		done := make(chan error, 1)
		go func() {
			_, err := p.AppendAsLeader(recordBatch("a"), AcksAll, time.Minute)
			done <- err
		}()
		return done
	}
	first := wait()
	waitFor(t, func() bool { return sp.Log.LogEndOffset() == 1 })
	if err := m.MakeLeader(sp, 2, both); err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Partition(sp); again != p {
		t.Fatal("a new leader epoch made a second replica")
	}
	select {
	case err := <-first:
		t.Fatalf("a new leader epoch answered a waiting append: %v", err)
	default:
	}
	if err := p.UpdateFollower(2, 1, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("append replicated at the new epoch: %v", err)
	}
	second := wait()
	waitFor(t, func() bool { return sp.Log.LogEndOffset() == 2 })
	m.MakeFollower(sp, 3)
	select {
	case err := <-second:
		if !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("a waiting append once this node follows: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting append still waits after this node stopped leading")
	}
}
