package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
	"github.com/strata-io/strata/storage/vfs/memfs"
)

// logBytes is every .log file of dir concatenated in offset order: the
// batches of the log, wherever its segments were rolled.
func logBytes(t *testing.T, dir string) []byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), logExt) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// copyFrom appends to follower everything leader holds from offset on, as
// fetched with Read, and moves the follower's high watermark to the leader's.
func copyFrom(t *testing.T, leader, follower *Log, from int64) {
	t.Helper()
	for off := from; off < leader.HighWatermark(); {
		r, err := leader.Read(off, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := r.Chunk.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		r.Chunk.Release()
		if _, err := follower.AppendAsFollower(buf.Bytes()); err != nil {
			t.Fatalf("follower append at %d: %v", off, err)
		}
		off = r.NextOffset
	}
	if err := follower.AdvanceHighWatermark(leader.HighWatermark()); err != nil {
		t.Fatal(err)
	}
}

// TestFollowerAppendAndTruncate checks a follower log against its leader's:
// batches fetched from the leader keep their offsets and epochs, so the
// follower's log is the leader's byte for byte, with the same leader
// epochs, aborted transactions and producer state; a batch that does not
// continue the log is refused. TruncateTo cuts all of that back to a batch
// boundary in an earlier segment, durably, and the follower then catches up
// again.
func TestFollowerAppendAndTruncate(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	leader := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
	defer leader.Close()
	fdir := t.TempDir()
	follower := openTestLog(t, vfs.Default, fdir, cfg, OpenOptions{RecoveryPoint: -1})
	for range 10 { // offsets 0-19, epoch 0
		if _, err := leaderAppend(leader, makeBatch(batchOpts{records: 2, valueSize: 50}), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // 20-22, epoch 2, producer 7
		if _, err := leaderAppend(leader, makeBatch(batchOpts{records: 1, pid: 7, seq: int32(i)}), 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := leaderAppend(leader, makeBatch(batchOpts{records: 1, pid: 8, seq: 0, attrs: batch.AttrTransactional}), 2); err != nil { // 23
		t.Fatal(err)
	}
	if _, err := leaderAppendControl(leader, 8, 0, false, 0, 2); err != nil { // abort marker at 24
		t.Fatal(err)
	}
	copyFrom(t, leader, follower, 0)
	state := func(l *Log) string {
		e, end := l.EndOffsetForEpoch(0)
		return fmt.Sprintf("leo %d hw %d epoch %d (epoch 0 ends at %d/%d) aborted %v", l.LogEndOffset(), l.HighWatermark(),
			l.LatestEpoch(), e, end, l.AbortedTransactions(0, l.LogEndOffset()))
	}
	if got, want := state(follower), state(leader); got != want {
		t.Fatalf("follower %s, leader %s", got, want)
	}
	if !bytes.Equal(logBytes(t, fdir), logBytes(t, leader.dir)) {
		t.Fatal("the follower's batches differ from the leader's")
	}
	for name, recs := range map[string][]byte{
		"a batch from offset 0": makeBatch(batchOpts{records: 1}),
		"a gap":                 stamped(makeBatch(batchOpts{records: 1}), 30, 2),
	} {
		if _, err := follower.AppendAsFollower(recs); !errors.Is(err, kerr.OffsetOutOfRange) || follower.LogEndOffset() != 25 {
			t.Fatalf("%s: %v, leo %d; want OFFSET_OUT_OF_RANGE and nothing written", name, err, follower.LogEndOffset())
		}
	}
	if res, err := leaderAppend(follower, makeBatch(batchOpts{records: 1, pid: 7, seq: 2}), 2); err != nil || !res.Duplicate {
		t.Fatalf("producer 7's last batch again on the follower: %+v %v, want a duplicate (producer state followed)", res, err)
	}

	if err := follower.TruncateTo(5); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("truncate inside a batch: %v", err)
	}
	if err := follower.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	want := "leo 6 hw 6 epoch 0 (epoch 0 ends at 0/6) aborted []"
	if got := state(follower); got != want {
		t.Fatalf("after truncating to 6: %s, want %s", got, want)
	}
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	follower = openTestLog(t, vfs.Default, fdir, cfg, OpenOptions{RecoveryPoint: -1})
	defer follower.Close()
	if got := state(follower); got != want {
		t.Fatalf("truncation did not last a reopen: %s, want %s", got, want)
	}
	if !bytes.HasPrefix(logBytes(t, leader.dir), logBytes(t, fdir)) || len(logBytes(t, fdir)) == 0 {
		t.Fatal("the truncated follower is not a prefix of the leader's log")
	}
	copyFrom(t, leader, follower, 6)
	if got, want := state(follower), state(leader); got != want || !bytes.Equal(logBytes(t, fdir), logBytes(t, leader.dir)) {
		t.Fatalf("after catching up again: follower %s, leader %s", got, want)
	}
}

// stamped sets a batch's base offset and leader epoch (outside its CRC), as a
// leader's log holds it.
func stamped(b []byte, base int64, epoch int32) []byte {
	stampBatch(b, base, epoch)
	return b
}

// TestTruncateFailureGoesOffline checks a TruncateTo whose file cut fails:
// the log fails and refuses reads and writes (its segments are closed)
// instead of serving closed files, and once the disk works a revival
// recovers it, after which the truncation can be done again.
func TestTruncateFailureGoesOffline(t *testing.T) {
	base, err := memfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Release() })
	efs := errorfs.Wrap(base)
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	l := openTestLog(t, efs, "/p-0", cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	for range 10 {
		if _, err := leaderAppend(l, makeBatch(batchOpts{records: 2, valueSize: 50}), 0); err != nil {
			t.Fatal(err)
		}
	}
	efs.Inject(errorfs.Fault{Op: errorfs.OpTruncate, PathSuffix: ".log", Nth: 1})
	if err := l.TruncateTo(4); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("truncate with a failing cut: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, err := l.Read(0, 1<<20, true); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("read of the failed log: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, err := l.Append(makeBatch(batchOpts{records: 1}), 0); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append to the failed log: %v, want KAFKA_STORAGE_ERROR", err)
	}
	efs.Clear()
	if _, err := l.Revive(); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if leo, hw := l.LogEndOffset(), l.HighWatermark(); leo != 4 || hw != 4 {
		t.Fatalf("after revival and truncation: leo %d hw %d, want 4", leo, hw)
	}
	r, err := l.Read(0, 1<<20, true)
	if err != nil || r.NextOffset != 4 {
		t.Fatalf("read after truncation: next %d, %v", r.NextOffset, err)
	}
	r.Chunk.Release()
}

// TestTruncateFullyAndStartAt checks a follower's log emptied and started
// again at a leader's log start offset: no record, producer (nor its
// snapshot), aborted transaction or leader epoch of before stays, the log
// start offset, log
// end offset and high watermark are the new start, batches from the
// leader follow on from there, and all of it lasts a reopen.
func TestTruncateFullyAndStartAt(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	for range 10 {
		if _, err := leaderAppend(l, makeBatch(batchOpts{records: 2, valueSize: 50}), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := leaderAppend(l, makeBatch(batchOpts{records: 1, pid: 7, seq: 0}), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := leaderAppend(l, makeBatch(batchOpts{records: 1, pid: 8, seq: 0, attrs: batch.AttrTransactional}), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := leaderAppendControl(l, 8, 0, false, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // a producer snapshot at the log end
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	state := func(l *Log) string {
		return fmt.Sprintf("start %d leo %d hw %d epoch %d aborted %v", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(),
			l.LatestEpoch(), l.AbortedTransactions(0, 200))
	}
	if got, want := state(l), "start 100 leo 100 hw 100 epoch -1 aborted []"; got != want {
		t.Fatalf("after starting again at 100: %s, want %s", got, want)
	}
	if snaps, err := listSnapshots(vfs.Default, dir); err != nil || len(snaps) != 0 {
		t.Fatalf("producer snapshots %v (%v) of the removed records kept", snaps, err)
	}
	if res, err := leaderAppend(l, makeBatch(batchOpts{records: 1, pid: 7, seq: 0}), 3); err != nil || res.Duplicate || res.BaseOffset != 100 {
		t.Fatalf("producer 7's first batch again: %+v %v; want it appended at 100 (no producer state kept)", res, err)
	}
	if _, err := l.AppendAsFollower(stamped(makeBatch(batchOpts{records: 2}), 101, 3)); err != nil {
		t.Fatal(err)
	}
	if err := l.AdvanceHighWatermark(103); err != nil {
		t.Fatal(err)
	}
	want := "start 100 leo 103 hw 103 epoch 3 aborted []"
	if got := state(l); got != want {
		t.Fatalf("after appending from 100: %s, want %s", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	if got := state(l); got != want {
		t.Fatalf("after a reopen: %s, want %s", got, want)
	}
	if r, err := l.Read(99, 1<<20, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		r.Chunk.Release()
		t.Fatalf("read below the new start: %v, want OFFSET_OUT_OF_RANGE", err)
	}
}

// TestReadReplica checks a follower's read: past the high watermark up to
// the log end offset, OFFSET_OUT_OF_RANGE beyond it, and the high
// watermark reported as it is.
func TestReadReplica(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	for range 3 {
		if _, err := l.Append(makeBatch(batchOpts{records: 2}), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AdvanceHighWatermark(2); err != nil {
		t.Fatal(err)
	}
	r, err := l.ReadReplica(2, 1<<20, true)
	if err != nil || r.NextOffset != 6 || r.HighWatermark != 2 || r.Chunk.Len() == 0 {
		t.Fatalf("read from 2: next %d hw %d, %d bytes, %v; want up to 6 with hw 2", r.NextOffset, r.HighWatermark, r.Chunk.Len(), err)
	}
	r.Chunk.Release()
	if r, err := l.ReadReplica(6, 1<<20, true); err != nil || r.Chunk.Len() != 0 {
		t.Fatalf("read at the log end: %d bytes, %v", r.Chunk.Len(), err)
	}
	if _, err := l.ReadReplica(7, 1<<20, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read past the log end: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if r, err := l.Read(2, 1<<20, true); err != nil || r.Chunk.Len() != 0 {
		t.Fatalf("a consumer's read at the high watermark: %d bytes, %v; want none", r.Chunk.Len(), err)
	}
}

// TestTruncateToLogEndDropsAnEmptyEpoch checks a replica that became
// leader (its epoch recorded at its log end offset) and appended nothing
// before another was elected: truncating to its log end offset drops that
// epoch, durably, as Kafka's truncateTo, so it no longer claims an epoch
// the new leader's log does not have.
func TestTruncateToLogEndDropsAnEmptyEpoch(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	if _, err := leaderAppend(l, makeBatch(batchOpts{records: 2}), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignLeaderEpoch(1); err != nil {
		t.Fatal(err)
	}
	if e := l.LatestEpoch(); e != 1 {
		t.Fatalf("latest epoch %d, want 1", e)
	}
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if e, end := l.EndOffsetForEpoch(0); l.LatestEpoch() != 0 || e != 0 || end != 2 {
		t.Fatalf("after truncating to the log end: latest epoch %d, epoch 0 ends at %d (epoch %d); want 0, and 2", l.LatestEpoch(), end, e)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	if e := l.LatestEpoch(); e != 0 {
		t.Fatalf("after a reopen: latest epoch %d, want 0", e)
	}
}
