package storage

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
	"github.com/strata-io/strata/storage/vfs/memfs"
)

// leaderAppend is Append followed by what the replica layer of a partition
// whose only replica is this log does: move the high watermark to the end
// of the append.
func leaderAppend(l *Log, records []byte, leaderEpoch int32) (AppendResult, error) {
	res, err := l.Append(records, leaderEpoch)
	if err != nil || res.Duplicate {
		return res, err
	}
	return res, l.AdvanceHighWatermark(res.EndOffset)
}

// leaderAppendCoordinator is AppendCoordinator then the high watermark, as leaderAppend.
func leaderAppendCoordinator(l *Log, records []byte, leaderEpoch int32) (AppendResult, error) {
	res, err := l.AppendCoordinator(records, leaderEpoch)
	if err != nil || res.Duplicate {
		return res, err
	}
	return res, l.AdvanceHighWatermark(res.EndOffset)
}

// leaderAppendControl is AppendControl then the high watermark, as leaderAppend.
func leaderAppendControl(l *Log, producerID int64, epoch int16, commit bool, coordinatorEpoch, leaderEpoch int32) (int64, error) {
	off, err := l.AppendControl(producerID, epoch, commit, coordinatorEpoch, leaderEpoch)
	if err != nil {
		return off, err
	}
	return off, l.AdvanceHighWatermark(off + 1)
}

// TestAppendLeavesHighWatermark checks that Append makes nothing visible and
// AdvanceHighWatermark does, waking a waiting fetch, at any batch boundary
// (the end of the last append, an older one, one in an earlier segment)
// and nowhere else.
func TestAppendLeavesHighWatermark(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	for range 40 {
		if _, err := l.Append(makeBatch(batchOpts{records: 2, valueSize: 50}), 0); err != nil {
			t.Fatal(err)
		}
	}
	if hw, leo := l.HighWatermark(), l.LogEndOffset(); hw != 0 || leo != 80 {
		t.Fatalf("after appends: hw %d leo %d, want 0 and 80", hw, leo)
	}
	if r, err := l.Read(0, 1<<20, true); err != nil || r.Chunk.Len() != 0 {
		t.Fatalf("read below an unmoved high watermark: %d bytes, %v", r.Chunk.Len(), err)
	}
	// Past the high watermark but not the log end, as on a new leader
	// whose high watermark trails what consumers read from the old one:
	// empty, not OFFSET_OUT_OF_RANGE; past the log end, out of range.
	for _, off := range []int64{40, 80} {
		if r, err := l.Read(off, 1<<20, true); err != nil || r.Chunk.Len() != 0 || r.NextOffset != off {
			t.Fatalf("read at %d, past the high watermark 0 within the log end 80: %d bytes, next %d, %v", off, r.Chunk.Len(), r.NextOffset, err)
		}
	}
	if _, err := l.Read(81, 1<<20, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read past the log end: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if len(l.segs) < 3 {
		t.Fatalf("%d segments; the test needs a boundary in an earlier segment", len(l.segs))
	}
	wait := l.Wait()
	for _, off := range []int64{4, 10, 70, 78, 80} { // 4 and 10: earlier segments, read from their files
		if err := l.AdvanceHighWatermark(off); err != nil {
			t.Fatalf("AdvanceHighWatermark(%d): %v", off, err)
		}
		if hw := l.HighWatermark(); hw != off {
			t.Fatalf("hw %d, want %d", hw, off)
		}
		r, err := l.Read(off-2, 1<<20, true)
		if err != nil || r.NextOffset != off {
			t.Fatalf("read at %d under hw %d: next %d, %v", off-2, off, r.NextOffset, err)
		}
		r.Chunk.Release()
	}
	select {
	case <-wait:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting fetch was not woken")
	}
	if err := l.AdvanceHighWatermark(60); err != nil || l.HighWatermark() != 80 {
		t.Fatalf("moving back: hw %d, %v; want 80 kept", l.HighWatermark(), err)
	}
	if _, err := l.Append(makeBatch(batchOpts{records: 3}), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.AdvanceHighWatermark(82); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("high watermark inside a batch: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if err := l.AdvanceHighWatermark(84); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("high watermark above the log end: %v, want OFFSET_OUT_OF_RANGE", err)
	}
}

// TestHighWatermarkAfterFailure checks that a failed log moves its high
// watermark no more: the end of an append that was fsynced before the
// failure is acknowledged (fail kept it), one fail may have cut is refused
// with KAFKA_STORAGE_ERROR, so its producer is not told it was written.
func TestHighWatermarkAfterFailure(t *testing.T) {
	base, err := memfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Release() })
	efs := errorfs.Wrap(base)
	l := openTestLog(t, efs, "/p-0", testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	if _, err := leaderAppend(l, makeBatch(batchOpts{records: 3}), 0); err != nil {
		t.Fatal(err)
	}
	flushed, err := l.Append(makeBatch(batchOpts{records: 3}), 0) // 3-5, fsynced below
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	cached, err := l.Append(makeBatch(batchOpts{records: 3}), 0) // 6-8, in the page cache only
	if err != nil {
		t.Fatal(err)
	}
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Nth: 1})
	if _, err := l.Append(makeBatch(batchOpts{records: 1}), 0); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append with a failing write: %v", err)
	}
	if err := l.AdvanceHighWatermark(flushed.EndOffset); err != nil {
		t.Fatalf("high watermark to the fsynced end %d: %v", flushed.EndOffset, err)
	}
	if err := l.AdvanceHighWatermark(cached.EndOffset); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("high watermark to %d, which the failure cut: %v, want KAFKA_STORAGE_ERROR", cached.EndOffset, err)
	}
	if hw := l.HighWatermark(); hw != 3 {
		t.Fatalf("hw %d, want 3: a failed log moves it no more", hw)
	}
}

// TestForEachBatchToEndPassesHighWatermark checks the replay of a new
// leader's coordinator partition: ForEachBatchToEnd visits every batch up
// to the log end offset, across segments, where ForEachBatch stops at the
// high watermark.
func TestForEachBatchToEndPassesHighWatermark(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 10
	l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	for range 20 {
		if _, err := l.Append(makeBatch(batchOpts{records: 2, valueSize: 50}), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AdvanceHighWatermark(10); err != nil {
		t.Fatal(err)
	}
	count := func(walk func(int64, func([]byte) error) error) (n int, last int64) {
		if err := walk(0, func(b []byte) error {
			n++
			h := batch.DecodeHeader(b)
			last = h.NextOffset()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n, last
	}
	if n, last := count(l.ForEachBatch); n != 5 || last != 10 {
		t.Errorf("ForEachBatch: %d batches ending at %d, want 5 ending at the high watermark 10", n, last)
	}
	if n, last := count(l.ForEachBatchToEnd); n != 20 || last != 40 {
		t.Errorf("ForEachBatchToEnd: %d batches ending at %d, want 20 ending at the log end offset 40", n, last)
	}
}
