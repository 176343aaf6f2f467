package storage

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/storage/vfs"
)

// TestHighWatermarkCheckpoint checks replication-offset-checkpoint: written
// in Kafka's format (version 0, count, "topic partition offset" sorted)
// every interval while the broker runs, with each partition's high
// watermark and not its log end offset, and at Close; read at open, where a
// log recovered below its checkpointed high watermark is reported.
func TestHighWatermarkCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, replicationOffsetCheckpointFile)
	m, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{Logger: zap.NewNop(), HighWatermarkCheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := m.CreateTopic("orders", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := tp.Partitions()[0], tp.Partitions()[1]
	if _, err := leaderAppend(p0.Log, mgrTestBatch("a", "b", "c"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Log.Append(mgrTestBatch("unacknowledged"), 0); err != nil { // LEO 1, HW 0
		t.Fatal(err)
	}
	want := "0\n2\norders 0 3\norders 1 0\n"
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := os.ReadFile(path)
		if string(got) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("periodic checkpoint holds %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Close writes the last high watermarks (the periodic write is 5 s away).
	m, err = OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	p1 = m.Topic("orders").Partitions()[1]
	if _, err := leaderAppend(p1.Log, mgrTestBatch("d"), 0); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "0\n2\norders 0 3\norders 1 2\n" {
		t.Fatalf("checkpoint after Close %q, want orders-1 at 2", got)
	}

	// A checkpointed high watermark above what the log holds after recovery.
	if err := writeOffsetCheckpoint(vfs.Default, path, map[topicPartition]int64{{Topic: "orders", Partition: 0}: 9, {Topic: "orders", Partition: 1}: 1}); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.WarnLevel)
	m, err = OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	warned := logs.FilterMessage("partition log recovered below its checkpointed high watermark").All()
	if len(warned) != 1 || warned[0].ContextMap()["partition"] != "orders-0" {
		t.Fatalf("warnings %v, want one for orders-0", logs.All())
	}
}
