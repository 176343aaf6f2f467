package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

// eventRecorder keeps every event a Manager reported.
type eventRecorder struct {
	mu        sync.Mutex
	recovered []RecoveryInfo
	rolled    []SegmentRollInfo
	failed    []LogFailureInfo
	revived   []LogRevivalInfo
	deleted   []SegmentDeletionInfo
	created   []TopicInfo
	gone      []TopicInfo
}

func (r *eventRecorder) listener() EventListener {
	rec := func(f func()) { r.mu.Lock(); f(); r.mu.Unlock() }
	return EventListener{
		OnRecovered:       func(i RecoveryInfo) { rec(func() { r.recovered = append(r.recovered, i) }) },
		OnSegmentRolled:   func(i SegmentRollInfo) { rec(func() { r.rolled = append(r.rolled, i) }) },
		OnLogFailed:       func(i LogFailureInfo) { rec(func() { r.failed = append(r.failed, i) }) },
		OnLogRevived:      func(i LogRevivalInfo) { rec(func() { r.revived = append(r.revived, i) }) },
		OnSegmentsDeleted: func(i SegmentDeletionInfo) { rec(func() { r.deleted = append(r.deleted, i) }) },
		OnTopicCreated:    func(i TopicInfo) { rec(func() { r.created = append(r.created, i) }) },
		OnTopicDeleted:    func(i TopicInfo) { rec(func() { r.gone = append(r.gone, i) }) },
	}
}

// TestManagerReportsEvents drives a log dir through an open, a topic
// creation, rolls, DeleteRecords, a disk failure, its revival and the topic's
// deletion, and checks each is reported to the listener with the partition
// named, and that LoggingListener writes the failure's line with the fields
// a log's logger always carried (topic, partition, log, dir, error).
func TestManagerReportsEvents(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	core, logs := observer.New(zapcore.InfoLevel)
	var r eventRecorder
	events := TeeEventListener(LoggingListener(zap.New(core)), r.listener())
	dir := t.TempDir()
	m, err := OpenManager(efs, dir, DefaultConfig(), ManagerOptions{Events: &events})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	topic, err := m.CreateTopic("t", 1, map[string]string{"segment.bytes": "300"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := topic.Partitions()[0].Log
	for range 3 {
		if _, err := leaderAppend(l, makeBatch(batchOpts{records: 2, valueSize: 100}), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.DeleteRecords("t", 0, -1); err != nil {
		t.Fatal(err)
	}
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Sticky: true, Err: syscall.ENOSPC})
	if _, err := l.Append(makeBatch(batchOpts{records: 1}), 0); err == nil {
		t.Fatal("append on a full disk succeeded")
	}
	efs.Clear()
	deadline := time.Now().Add(10 * time.Second)
	for l.Failed() != nil {
		if time.Now().After(deadline) {
			t.Fatal("log not revived within 10 s of the disk taking writes")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := m.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	pdir := partitionDir(m.dir, "t", 0)
	named := LogInfo{Topic: "t", Partition: 0, Dir: pdir}
	if len(r.recovered) != 1 || r.recovered[0].Dir != m.dir {
		t.Errorf("OnRecovered: %+v, want one for %s", r.recovered, m.dir)
	}
	if len(r.created) != 1 || r.created[0].Topic != "t" || r.created[0].ID != topic.ID || r.created[0].Partitions != 1 {
		t.Errorf("OnTopicCreated: %+v", r.created)
	}
	if len(r.rolled) < 2 || r.rolled[0].LogInfo != named || r.rolled[0].Base != 2 {
		t.Errorf("OnSegmentRolled: %+v, want rolls of %+v, the first at 2", r.rolled, named)
	}
	if len(r.deleted) != 1 || r.deleted[0].LogInfo != named || r.deleted[0].Reason != "log start offset" || r.deleted[0].FirstBase != 0 {
		t.Errorf("OnSegmentsDeleted: %+v", r.deleted)
	}
	if len(r.failed) != 1 || r.failed[0].LogInfo != named || !errors.Is(r.failed[0].Err, syscall.ENOSPC) {
		t.Errorf("OnLogFailed: %+v", r.failed)
	}
	if len(r.revived) != 1 || r.revived[0].LogInfo != named || r.revived[0].LogEndOffset != 6 {
		t.Errorf("OnLogRevived: %+v, want %+v at log end 6", r.revived, named)
	}
	if len(r.gone) != 1 || r.gone[0].Topic != "t" || r.gone[0].ID != topic.ID {
		t.Errorf("OnTopicDeleted: %+v", r.gone)
	}
	lines := logs.FilterMessage("partition log failed, refusing writes until a write in its log dir succeeds again").All()
	if len(lines) != 1 {
		t.Fatalf("failure logged %d times, want once", len(lines))
	}
	var keys []string
	for _, f := range lines[0].Context {
		keys = append(keys, f.Key)
	}
	if got := lines[0].ContextMap(); len(keys) != 5 || keys[0] != "topic" || keys[1] != "partition" || keys[2] != "log" ||
		keys[3] != "dir" || keys[4] != "error" || got["topic"] != "t" || got["log"] != pdir || got["dir"] != pdir {
		t.Errorf("failure line fields %v: %v, want topic, partition, log, dir, error", keys, got)
	}
}

// TestRecoveryTruncationIsReported appends garbage to a partition's segment
// after an unclean shutdown and checks the reopened Manager reports the cut
// with the partition named (OnLogTruncated), its line carries the fields a
// log's logger did, and OnRecovered sums what was dropped.
func TestRecoveryTruncationIsReported(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	topic, err := m.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, topic.Partitions()[0].Log, makeBatch(batchOpts{records: 2}))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	pdir := partitionDir(m.dir, "t", 0)
	f, err := os.OpenFile(segmentPath(pdir, 0, logExt), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Remove(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		cuts      []LogTruncationInfo
		recovered []RecoveryInfo
	)
	core, logs := observer.New(zapcore.InfoLevel)
	events := TeeEventListener(LoggingListener(zap.New(core)), EventListener{
		OnLogTruncated: func(i LogTruncationInfo) { mu.Lock(); cuts = append(cuts, i); mu.Unlock() },
		OnRecovered:    func(i RecoveryInfo) { mu.Lock(); recovered = append(recovered, i); mu.Unlock() },
	})
	m, err = OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{Events: &events})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(cuts) != 1 || cuts[0].LogInfo != (LogInfo{Topic: "t", Partition: 0, Dir: pdir}) || cuts[0].BytesDropped != 100 ||
		cuts[0].LogEndOffset != 2 || cuts[0].TruncatedSegment != 0 || cuts[0].Reason == nil {
		t.Fatalf("OnLogTruncated: %+v", cuts)
	}
	if len(recovered) != 1 || recovered[0].CleanShutdown || recovered[0].Report.BytesDropped != 100 ||
		len(recovered[0].Truncated) != 1 || recovered[0].Truncated[0] != "t-0 from offset 2" {
		t.Fatalf("OnRecovered: %+v", recovered)
	}
	lines := logs.FilterMessage("log recovery truncated the log").All()
	if len(lines) != 1 {
		t.Fatalf("truncation logged %d times", len(lines))
	}
	if got := lines[0].ContextMap(); got["topic"] != "t" || got["log"] != pdir || got["bytesDropped"] != int64(100) || got["truncatedSegment"] != int64(0) {
		t.Fatalf("truncation line %v", got)
	}
	if logs.FilterMessage("log dir recovered after an unclean shutdown").Len() != 1 {
		t.Fatal("no log dir recovery line")
	}
}
