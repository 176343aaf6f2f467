package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

func TestManagerLockRefusesSecondOpen(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 1)
	_, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{NodeID: 1})
	if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second open: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, _ := openTestManager(t, dir, 1) // the lock went with Close
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeForeignPartition fills dir/name with what another broker's
// partition holds, and returns a snapshot of its files.
func writeForeignPartition(t *testing.T, dir, name string) map[string]string {
	t.Helper()
	pdir := filepath.Join(dir, name)
	files := map[string]string{
		"00000000000000000000.log":   strings.Repeat("kafka's records ", 1000),
		"00000000000000000000.index": "idx",
		"partition.metadata":         "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n",
	}
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(pdir, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func checkUntouched(t *testing.T, pdir string, files map[string]string) {
	t.Helper()
	ents, err := os.ReadDir(pdir)
	if err != nil {
		t.Fatalf("foreign directory: %v", err)
	}
	if len(ents) != len(files) {
		t.Fatalf("foreign directory now has %d entries, want %d", len(ents), len(files))
	}
	for f, want := range files {
		got, err := os.ReadFile(filepath.Join(pdir, f))
		if err != nil || string(got) != want {
			t.Fatalf("foreign %s changed: %d bytes, %v", f, len(got), err)
		}
	}
}

func TestManagerNeverTouchesForeignPartitionDir(t *testing.T) {
	dir := t.TempDir()
	files := writeForeignPartition(t, dir, "orders-0")
	foreignCkpt := map[topicPartition]int64{{Topic: "orders", Partition: 0}: 16000}
	for _, f := range []string{recoveryPointCheckpointFile, logStartOffsetCheckpointFile} {
		if err := writeOffsetCheckpoint(vfs.Default, filepath.Join(dir, f), foreignCkpt); err != nil {
			t.Fatal(err)
		}
	}
	m, logs := openTestManager(t, dir, 1)
	if w := logs.FilterMessageSnippet("not Strata's").Len(); w != 1 {
		t.Fatalf("%d warnings about the foreign directory", w)
	}
	for _, parts := range []int32{1, 3} {
		if _, err := m.CreateTopic("orders", parts, nil, false); !errors.Is(err, kerr.InvalidTopicException) ||
			!strings.Contains(err.Error(), "orders-0") {
			t.Fatalf("create over a foreign dir with %d partitions: %v", parts, err)
		}
	}
	if m.Topic("orders") != nil {
		t.Fatal("topic created over a foreign directory")
	}
	// A topic next to it, created, grown and deleted, leaves it alone too.
	if _, err := m.CreateTopic("other", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := m.CreatePartitions("other", 2, false); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteTopic("other"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DeleteRecords("orders", 0, 0); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete records of a foreign partition: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	checkUntouched(t, filepath.Join(dir, "orders-0"), files)
	for _, f := range []string{recoveryPointCheckpointFile, logStartOffsetCheckpointFile} {
		cp, err := readOffsetCheckpoint(vfs.Default, filepath.Join(dir, f))
		if err != nil || cp[topicPartition{Topic: "orders", Partition: 0}] != 16000 {
			t.Fatalf("%s lost the foreign entry: %v %v", f, cp, err)
		}
	}
	m2, _ := openTestManager(t, dir, 1)
	defer m2.Close()
	if m2.Topic("orders") != nil {
		t.Fatal("foreign directory became a topic")
	}
	checkUntouched(t, filepath.Join(dir, "orders-0"), files)
}

func TestManagerFinishesInterruptedDeletionOnly(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 1)
	top, err := m.CreateTopic("gone", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, top.Partitions()[0].Log, makeBatch(batchOpts{records: 3}))
	// The deletion is decided (the registry lists it as deleted) and the
	// broker dies before renaming the directories.
	m.deleting = append(m.deleting, registryEntry(top, 2))
	if err := m.writeRegistry(m.registryWith(top, 0)); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Meanwhile an operator copied another topic's directory in under a
	// name the deleted topic also had.
	if err := os.RemoveAll(filepath.Join(dir, "gone-1")); err != nil {
		t.Fatal(err)
	}
	files := writeForeignPartition(t, dir, "gone-1")

	m2, _ := openTestManager(t, dir, 1)
	if _, err := os.Stat(filepath.Join(dir, "gone-0")); !os.IsNotExist(err) {
		t.Fatalf("deleted topic's directory kept: %v", err)
	}
	checkUntouched(t, filepath.Join(dir, "gone-1"), files)
	if _, err := m2.CreateTopic("gone", 1, nil, false); err != nil {
		t.Fatalf("gone-0 is free: %v", err)
	}
	if err := m2.CreatePartitions("gone", 2, false); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("partition 1 over a foreign directory: %v", err)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, deleted, err := readRegistry(vfs.Default, dir); err != nil || len(deleted) != 0 {
		t.Fatalf("registry still lists finished deletions: %v %v", deleted, err)
	}
	checkUntouched(t, filepath.Join(dir, "gone-1"), files)
}

// TestFailedLogRevives fills the disk (ENOSPC on every write), checks that
// what was acknowledged stays readable, that DeleteRecords still works on
// the failed log, and that the log takes writes again without a reopen once
// writes succeed.
func TestFailedLogRevives(t *testing.T) {
	dir := t.TempDir()
	efs := errorfs.Wrap(vfs.Default)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.FileDeleteDelayMs = 0
	m, err := OpenManager(efs, dir, cfg, ManagerOptions{Logger: zap.NewNop(), NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	top, err := m.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[0].Log
	var acked int64
	for range 20 {
		appendOK(t, l, makeBatch(batchOpts{records: 10, valueSize: 100}))
		acked += 10
	}
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, Sticky: true, Err: syscall.ENOSPC})
	_, err = leaderAppend(l, makeBatch(batchOpts{records: 10, valueSize: 100}), 0)
	if !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if got := m.OfflinePartitions(); len(got) != 1 || got[0].Topic != "t" {
		t.Fatalf("offline partitions: %v", got)
	}
	if got := readAll(t, l); int64(len(got)) != acked/10 {
		t.Fatalf("failed log reads %d batches, want %d", len(got), acked/10)
	}
	m.reviveFailed() // the probe write fails: nothing changes
	if l.Failed() == nil {
		t.Fatal("revived while writes still fail")
	}
	segsBefore := len(l.segs)
	low, err := m.DeleteRecords("t", 0, 100)
	if err != nil || low != 100 {
		t.Fatalf("DeleteRecords on a failed log: %d, %v", low, err)
	}
	if len(l.segs) >= segsBefore {
		t.Fatalf("DeleteRecords deleted no segment: %d -> %d", segsBefore, len(l.segs))
	}

	efs.Clear()
	m.reviveFailed()
	if err := l.Failed(); err != nil {
		t.Fatalf("not revived: %v", err)
	}
	if len(m.OfflinePartitions()) != 0 {
		t.Fatal("still offline")
	}
	res := appendOK(t, l, makeBatch(batchOpts{records: 10, valueSize: 100}))
	if res.BaseOffset != acked {
		t.Fatalf("append after revival at %d, want %d", res.BaseOffset, acked)
	}
	if l.LogStartOffset() != 100 {
		t.Fatalf("log start %d after revival, want 100", l.LogStartOffset())
	}
	// A config change after the revival reaches the recovered segments.
	cfg2 := l.Config()
	cfg2.SegmentBytes = 1 << 30
	l.SetConfig(cfg2)
	if l.active().cfg.SegmentBytes != 1<<30 {
		t.Fatal("the revived log's segments do not see its config")
	}
	if got := readAll(t, l); int64(len(got)) != (acked+10-100)/10 || got[0] != 100 {
		t.Fatalf("after revival the log reads %v", got)
	}
}

// TestDeletedSegmentsRemovedOnTime checks that a segment deleted by
// DeleteRecords is removed when its file.delete.delay.ms is up, not at the
// next retention check.
func TestDeletedSegmentsRemovedOnTime(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.FileDeleteDelayMs = 300
	cfg.RetentionCheckIntervalMs = 3600000
	m, err := OpenManager(vfs.Default, dir, cfg, ManagerOptions{Logger: zap.NewNop(), NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	top, err := m.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		appendOK(t, top.Partitions()[0].Log, makeBatch(batchOpts{records: 5, valueSize: 100}))
	}
	deleted := func() int {
		n, _ := filepath.Glob(filepath.Join(dir, "t-0", "*"+deletedExt))
		return len(n)
	}
	start := time.Now()
	if _, err := m.DeleteRecords("t", 0, -1); err != nil {
		t.Fatal(err)
	}
	if deleted() == 0 {
		t.Fatal("DeleteRecords renamed no segment")
	}
	for deleted() > 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%d .deleted files still there after 5 s (file.delete.delay.ms=300)", deleted())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("removed after %v, before file.delete.delay.ms", took)
	}
}

func TestDeleteTopicWithFailedLog(t *testing.T) {
	dir := t.TempDir()
	efs := errorfs.Wrap(vfs.Default)
	m, err := OpenManager(efs, dir, DefaultConfig(), ManagerOptions{Logger: zap.NewNop(), NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	top, err := m.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, top.Partitions()[0].Log, makeBatch(batchOpts{records: 3}))
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Sticky: true, Err: syscall.ENOSPC})
	if _, err := leaderAppend(top.Partitions()[0].Log, makeBatch(batchOpts{records: 3}), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append: %v", err)
	}
	if err := m.DeleteTopic("t"); err != nil {
		t.Fatalf("delete a topic whose log failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0")); !os.IsNotExist(err) {
		t.Fatalf("partition directory kept: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
