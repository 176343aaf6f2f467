package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/storage/vfs"
)

func openRetentionManager(t *testing.T, dir string, clock *clockwork.FakeClock, defaults Config) *Manager {
	t.Helper()
	m, err := OpenManager(vfs.Default, dir, defaults, ManagerOptions{Logger: zap.NewNop(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// retentionDefaults: small segments, cleaner off, a check interval the
// tests never reach (they call RetainNow).
func retentionDefaults() Config {
	c := testConfig()
	c.CleanerDisable = true
	c.RetentionCheckIntervalMs = int64(time.Hour / time.Millisecond)
	return c
}

func deletedFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), deletedExt) {
			out = append(out, e.Name())
		}
	}
	return out
}

// fillSegments appends n one-record batches of about 200 bytes with
// timestamps ts, ts+1, ... to l (segment.bytes 1000: four batches each).
func fillSegments(t *testing.T, l *Log, n int, ts int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		appendOK(t, l, makeBatch(batchOpts{records: 1, valueSize: 150, ts: ts + int64(i)}))
	}
}

func TestRetentionByTime(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(10_000_000_000))
	m := openRetentionManager(t, dir, clock, retentionDefaults())
	top, err := m.CreateTopic("t", 1, map[string]string{"segment.bytes": "1000", "retention.ms": "3600000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[0].Log
	old := clock.Now().UnixMilli()
	fillSegments(t, l, 20, old) // offsets 0-19, about five segments
	clock.Advance(30 * time.Minute)
	fillSegments(t, l, 8, clock.Now().UnixMilli()) // offsets 20-27, newer
	segsBefore := len(l.segs)
	if n := m.RetainNow(); n != 0 {
		t.Fatalf("deleted %d segments before retention.ms passed", n)
	}
	// A fetch holds a chunk of the first segment across its deletion.
	rr, err := l.Read(0, 1<<20, true)
	if err != nil || rr.Chunk.Len() == 0 {
		t.Fatalf("read: %v", err)
	}
	defer rr.Chunk.Release()

	clock.Advance(31 * time.Minute) // the old records are now 61 minutes old
	n := m.RetainNow()
	start := l.LogStartOffset()
	if n == 0 || start == 0 || start > 20 {
		t.Fatalf("deleted %d of %d segments, log start %d; want the old segments gone, start <= 20", n, segsBefore, start)
	}
	if l.segs[0].base != start {
		t.Fatalf("first segment %d, log start %d", l.segs[0].base, start)
	}
	// The segment with offsets 20+ is younger: its predecessors only go.
	if _, err := l.Read(start-1, 1<<20, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below the log start: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	var buf bytes.Buffer
	if _, err := rr.Chunk.WriteTo(&buf); err != nil || buf.Len() != rr.Chunk.Len() {
		t.Fatalf("chunk of a deleted segment: %d bytes, %v", buf.Len(), err)
	}
	pdir := partitionDir(dir, "t", 0)
	if got := deletedFiles(t, pdir); len(got) != 3*n {
		t.Fatalf(".deleted files %v, want %d", got, 3*n)
	}
	clock.Advance(59 * time.Second)
	m.removeDeletedSegments()
	if got := deletedFiles(t, pdir); len(got) != 3*n {
		t.Fatalf("removed before file.delete.delay.ms: %v", got)
	}
	clock.Advance(time.Second)
	if next := m.removeDeletedSegments(); !next.IsZero() {
		t.Fatalf("next removal %v, want none", next)
	}
	if got := deletedFiles(t, pdir); len(got) != 0 {
		t.Fatalf(".deleted files left after the delay: %v", got)
	}
	cp, err := readOffsetCheckpoint(vfs.Default, filepath.Join(dir, logStartOffsetCheckpointFile))
	if err != nil || cp[topicPartition{"t", 0}] != start {
		t.Fatalf("log start checkpoint %v %v, want %d", cp, err, start)
	}

	// Everything old: the active segment is rolled and goes too.
	clock.Advance(2 * time.Hour)
	m.RetainNow()
	leo := l.LogEndOffset()
	if l.LogStartOffset() != leo || leo != 28 || len(l.segs) != 1 || l.segs[0].size != 0 {
		t.Fatalf("after expiring everything: start %d, end %d, %d segments", l.LogStartOffset(), leo, len(l.segs))
	}
	if got := readAll(t, l); len(got) != 0 {
		t.Fatalf("read %v from an emptied log", got)
	}
	appendOK(t, l, makeBatch(batchOpts{records: 1, ts: clock.Now().UnixMilli()}))
	if got := readAll(t, l); len(got) != 1 || got[0] != 28 {
		t.Fatalf("append after expiry: %v", got)
	}
	// A restart keeps the start.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openRetentionManager(t, dir, clock, retentionDefaults())
	defer m.Close()
	if got := m.Topic("t").Partitions()[0].Log.LogStartOffset(); got != 28 {
		t.Fatalf("log start after restart %d, want 28", got)
	}
}

func TestRetentionBySize(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(10_000_000_000))
	m := openRetentionManager(t, dir, clock, retentionDefaults())
	defer m.Close()
	top, err := m.CreateTopic("t", 1, map[string]string{"segment.bytes": "1000", "retention.bytes": "2500"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[0].Log
	fillSegments(t, l, 30, clock.Now().UnixMilli())
	before := l.Size()
	n := m.RetainNow()
	after := l.Size()
	if n == 0 || after >= before || after < 2500-1000 {
		t.Fatalf("deleted %d segments: size %d -> %d, want between %d and %d", n, before, after, 1500, 2500)
	}
	// Kafka's rule: a segment goes only if the log stays at or above the limit without it.
	if after-l.segs[0].size >= 2500 {
		t.Fatalf("size %d still exceeds retention.bytes by a whole segment (%d)", after, l.segs[0].size)
	}
	if l.LogStartOffset() != l.segs[0].base || l.LogStartOffset() == 0 {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), l.segs[0].base)
	}
}

func TestRetentionSkipsCompactOnly(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(10_000_000_000))
	m := openRetentionManager(t, dir, clock, retentionDefaults())
	defer m.Close()
	top, err := m.CreateTopic("c", 1, map[string]string{"segment.bytes": "1000", "retention.ms": "1", "cleanup.policy": "compact"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[0].Log
	fillKeys(t, l, 20, "k")
	clock.Advance(time.Hour)
	if n := m.RetainNow(); n != 0 {
		t.Fatalf("retention deleted %d segments of a compact-only topic", n)
	}
	if _, err := m.DeleteRecords("c", 0, 5); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("DeleteRecords on a compacted topic: %v, want POLICY_VIOLATION", err)
	}
}

func TestDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(10_000_000_000))
	m := openRetentionManager(t, dir, clock, retentionDefaults())
	top, err := m.CreateTopic("t", 2, map[string]string{"segment.bytes": "1000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[1].Log
	fillSegments(t, l, 20, clock.Now().UnixMilli())
	if _, err := m.DeleteRecords("t", 1, 21); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("above the high watermark: %v", err)
	}
	if _, err := m.DeleteRecords("t", 5, 1); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
	low, err := m.DeleteRecords("t", 1, 10)
	if err != nil || low != 10 {
		t.Fatalf("DeleteRecords(10) = %d, %v", low, err)
	}
	if l.segs[0].base > 10 || l.segs[0].next <= 10 || l.segs[0].base == 0 {
		t.Fatalf("first segment [%d, %d) should be the one holding 10", l.segs[0].base, l.segs[0].next)
	}
	if got := readAll(t, l); len(got) != 10 || got[0] != 10 {
		t.Fatalf("read after DeleteRecords: %v", got)
	}
	// Backwards is a no-op; -1 means the high watermark.
	if low, err := m.DeleteRecords("t", 1, 3); err != nil || low != 10 {
		t.Fatalf("DeleteRecords(3) = %d, %v", low, err)
	}
	// A crash keeps the start: the checkpoint was written by DeleteRecords.
	crashed := openRetentionManagerAfterCrash(t, m, dir, clock)
	if got := crashed.Topic("t").Partitions()[1].Log.LogStartOffset(); got != 10 {
		t.Fatalf("log start after a crash %d, want 10", got)
	}
	if low, err := crashed.DeleteRecords("t", 1, -1); err != nil || low != 20 {
		t.Fatalf("DeleteRecords(-1) = %d, %v", low, err)
	}
	if err := crashed.Close(); err != nil {
		t.Fatal(err)
	}
}

// openRetentionManagerAfterCrash abandons m without closing it (its logs'
// descriptors are dropped as a killed process's would be) and reopens dir.
func openRetentionManagerAfterCrash(t *testing.T, m *Manager, dir string, clock *clockwork.FakeClock) *Manager {
	t.Helper()
	m.stopRetention()
	m.lock.Close()
	for _, top := range m.Topics() {
		for _, p := range top.Partitions() {
			p.Log.mu.Lock()
			p.Log.closed = true
			for _, s := range p.Log.segs {
				s.closeAll()
			}
			p.Log.mu.Unlock()
		}
	}
	return openRetentionManager(t, dir, clock, retentionDefaults())
}

func TestRecoveryRemovesDeletedFiles(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{})
	appendOK(t, l, makeBatch(batchOpts{records: 1}))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "00000000000000000000.log.deleted")
	if err := os.WriteFile(stray, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s survived recovery: %v", stray, err)
	}
}

func TestAlterTopicAndBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.UnixMilli(10_000_000_000))
	m := openRetentionManager(t, dir, clock, retentionDefaults())
	top, err := m.CreateTopic("t", 1, map[string]string{"segment.bytes": "1000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AlterTopicConfigs("t", map[string]string{"retention.ms": "x"}, false); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("bad value: %v", err)
	}
	if err := m.AlterTopicConfigs("nope", nil, false); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", err)
	}
	if err := m.AlterTopicConfigs("t", map[string]string{"retention.ms": "1000", "segment.bytes": "2000"}, false); err != nil {
		t.Fatal(err)
	}
	l := top.Partitions()[0].Log
	if c := l.Config(); c.RetentionMs != 1000 || c.SegmentBytes != 2000 {
		t.Fatalf("log config after alter: retention.ms %d segment.bytes %d", c.RetentionMs, c.SegmentBytes)
	}
	if err := m.AlterBrokerConfigs(map[string]string{"num.partitions": "3"}, false, false); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("read-only broker config: %v", err)
	}
	if err := m.AlterBrokerConfigs(map[string]string{"log.retention.ms": "-5x"}, false, false); !errors.Is(err, kerr.InvalidRequest) ||
		err.Error() != "Invalid value -5x for configuration log.retention.ms: Not a number of type LONG" {
		t.Fatalf("bad broker value: %v, want INVALID_REQUEST with Kafka's message", err)
	}
	if err := m.AlterBrokerConfigs(map[string]string{"log.retention.hours": "2"}, false, false); !errors.Is(err, kerr.InvalidRequest) ||
		err.Error() != "Cannot update these configs dynamically: [log.retention.hours]" {
		t.Fatalf("log.retention.hours, not dynamic in Kafka 4.4: %v, want INVALID_REQUEST with Kafka's message", err)
	}
	if err := m.AlterBrokerConfigs(map[string]string{"log.retention.ms": "7200000", "log.retention.bytes": "5000"}, false, false); err != nil {
		t.Fatal(err)
	}
	if c := l.Config(); c.RetentionMs != 1000 || c.RetentionBytes != 5000 {
		t.Fatalf("topic override lost or broker default not applied: %+v", c)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openRetentionManager(t, dir, clock, retentionDefaults())
	defer m.Close()
	top = m.Topic("t")
	if got := top.ConfigMap(); got["retention.ms"] != "1000" || got["segment.bytes"] != "2000" || len(got) != 2 {
		t.Fatalf("topic configs after restart: %v", got)
	}
	def, node := m.BrokerConfigs()
	if def["log.retention.ms"] != "7200000" || len(node) != 0 {
		t.Fatalf("broker configs after restart: %v %v", def, node)
	}
	if c := top.LogConfig(); c.RetentionBytes != 5000 || c.SegmentBytes != 2000 {
		t.Fatalf("effective config after restart: %+v", c)
	}
	// Removing the override falls back to the dynamic default (2 hours).
	if err := m.AlterTopicConfigs("t", nil, false); err != nil {
		t.Fatal(err)
	}
	if c := top.Partitions()[0].Log.Config(); c.RetentionMs != 2*3600000 {
		t.Fatalf("retention.ms %d, want the dynamic default", c.RetentionMs)
	}
}

func TestTopicConfigDefaultsValidate(t *testing.T) {
	for _, d := range configdef.Topics() {
		if _, err := validateTopicConfig(d.Name, d.Default); err != nil {
			t.Errorf("default of %s: %v", d.Name, err)
		}
	}
}

func TestFsyncHook(t *testing.T) {
	var mu sync.Mutex
	var calls int
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{Events: &EventListener{OnFsync: func(d time.Duration) {
		mu.Lock()
		calls++
		mu.Unlock()
	}}})
	defer l.Close()
	appendOK(t, l, makeBatch(batchOpts{records: 1}))
	mu.Lock()
	defer mu.Unlock()
	if calls == 0 {
		t.Fatal("OnFsync not called for flush.messages=1")
	}
}
