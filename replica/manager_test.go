package replica

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
