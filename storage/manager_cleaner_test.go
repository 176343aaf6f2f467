package storage

import (
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/vfs"
)

func compactedTopicConfigs() map[string]string {
	return map[string]string{"cleanup.policy": "compact", "segment.bytes": "16384", "segment.index.bytes": "4096"}
}

func TestManagerCleanNowAndCheckpoints(t *testing.T) {
	dir := t.TempDir()
	defaults := testConfig()
	defaults.CleanerDisable = true
	m, err := OpenManager(vfs.Default, dir, defaults, ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	top, err := m.CreateTopic("__consumer_offsets", 2, compactedTopicConfigs(), false)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := m.CreateTopic("plain", 1, map[string]string{"segment.bytes": "16384"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[1].Log
	want := fillKeys(t, l, 5000, "g1", "g2", "g3")
	for i := 0; i < 1000; i++ {
		appendOK(t, plain.Partitions()[0].Log, makeBatch(batchOpts{records: 1, valueSize: 20}))
	}
	if n := m.CleanNow(); n != 1 {
		t.Fatalf("CleanNow cleaned %d logs, want 1", n)
	}
	if n := m.CleanNow(); n != 0 {
		t.Fatalf("second CleanNow cleaned %d logs, want 0", n)
	}
	firstDirty := l.FirstDirtyOffset()
	if firstDirty <= 0 || firstDirty > l.LogEndOffset() {
		t.Fatalf("first dirty offset %d", firstDirty)
	}
	cp, err := readOffsetCheckpoint(vfs.Default, filepath.Join(dir, cleanerCheckpointFile))
	if err != nil || cp[topicPartition{Topic: "__consumer_offsets", Partition: 1}] != firstDirty {
		t.Fatalf("cleaner checkpoint %v %v", cp, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(vfs.Default, dir, defaults, ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l = m.Topic("__consumer_offsets").Partitions()[1].Log
	if got := l.FirstDirtyOffset(); got != firstDirty {
		t.Fatalf("first dirty offset after reopen %d, want %d", got, firstDirty)
	}
	checkLatest(t, l, want)
}

// TestManagerCleanerGoroutine checks that the background cleaner runs on
// its own: the test polls until the log is cleaned, bounded by a deadline,
// so it does not depend on timing beyond the cleaner running at all.
func TestManagerCleanerGoroutine(t *testing.T) {
	dir := t.TempDir()
	defaults := testConfig()
	defaults.CleanerBackoffMs = 5
	m, err := OpenManager(vfs.Default, dir, defaults, ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	top, err := m.CreateTopic("compacted", 1, compactedTopicConfigs(), false)
	if err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[0].Log
	want := fillKeys(t, l, 3000, "a", "b")
	deadline := time.Now().Add(20 * time.Second)
	for l.FirstDirtyOffset() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the background cleaner did not clean the log")
		}
		time.Sleep(5 * time.Millisecond) // poll; the deadline bounds the wait
	}
	checkLatest(t, l, want)
}
