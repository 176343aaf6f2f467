package replica

import (
	"path/filepath"
	"testing"

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
