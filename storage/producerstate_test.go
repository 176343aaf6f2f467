package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/vfs"
)

// appendBatch checks and, if accepted and new, records a batch of n records,
// assigning offsets from *next like a log would.
func appendBatch(t *testing.T, s *producerStates, next *int64, pid int64, epoch int16, seq, n int32) (int64, bool, error) {
	t.Helper()
	b := batchMeta{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, MaxTimestamp: 1000 + *next}
	dupBase, dup, err := s.check(b)
	if err != nil || dup {
		return dupBase, dup, err
	}
	b.BaseOffset = *next
	s.update(b)
	*next += int64(n)
	return b.BaseOffset, false, nil
}

func mustAppend(t *testing.T, s *producerStates, next *int64, pid int64, epoch int16, seq, n int32) int64 {
	t.Helper()
	base, dup, err := appendBatch(t, s, next, pid, epoch, seq, n)
	if err != nil || dup {
		t.Fatalf("append pid %d epoch %d seq %d: dup=%v err=%v", pid, epoch, seq, dup, err)
	}
	return base
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func TestProducerStateNonIdempotentAlwaysOK(t *testing.T) {
	s := newProducerStates()
	for i := 0; i < 3; i++ {
		if _, dup, err := s.check(batchMeta{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}); dup || err != nil {
			t.Fatalf("dup=%v err=%v", dup, err)
		}
		s.update(batchMeta{ProducerID: -1})
	}
	if len(s.entries) != 0 {
		t.Fatalf("non-idempotent batches recorded state: %v", s.entries)
	}
}

func TestProducerStateDuplicatesOfLastFive(t *testing.T) {
	s := newProducerStates()
	var next int64 = 100
	var bases []int64
	for i := int32(0); i < 6; i++ {
		bases = append(bases, mustAppend(t, s, &next, 7, 0, i*3, 3))
	}
	// Batches 1..5 are retained: each resend returns its original offset.
	for i := int32(1); i < 6; i++ {
		base, dup, err := appendBatch(t, s, &next, 7, 0, i*3, 3)
		if err != nil || !dup || base != bases[i] {
			t.Fatalf("resend of batch %d: base=%d dup=%v err=%v, want base %d dup", i, base, dup, err, bases[i])
		}
	}
	// The 6th-oldest batch is forgotten: its resend is out of order.
	_, _, err := appendBatch(t, s, &next, 7, 0, 0, 3)
	wantErr(t, err, kerr.OutOfOrderSequenceNumber)
	// Same first sequence but different last sequence is not a duplicate.
	_, _, err = appendBatch(t, s, &next, 7, 0, 15, 2)
	wantErr(t, err, kerr.OutOfOrderSequenceNumber)
	mustAppend(t, s, &next, 7, 0, 18, 1)
}

func TestProducerStateGapsAndUnknown(t *testing.T) {
	s := newProducerStates()
	var next int64
	// An unknown producer may start anywhere.
	mustAppend(t, s, &next, 1, 3, 42, 2) // seqs 42,43
	_, _, err := appendBatch(t, s, &next, 1, 3, 45, 1)
	wantErr(t, err, kerr.OutOfOrderSequenceNumber)
	_, _, err = appendBatch(t, s, &next, 1, 3, 43, 1)
	wantErr(t, err, kerr.OutOfOrderSequenceNumber)
	mustAppend(t, s, &next, 1, 3, 44, 1)
	// Producers are independent.
	mustAppend(t, s, &next, 2, 0, 0, 1)
	mustAppend(t, s, &next, 1, 3, 45, 1)
	if next != 5 {
		t.Fatalf("next offset %d, want 5", next)
	}
}

func TestProducerStateEpochs(t *testing.T) {
	s := newProducerStates()
	var next int64
	mustAppend(t, s, &next, 9, 1, 0, 5)
	mustAppend(t, s, &next, 9, 1, 5, 5)
	// Fenced: an older epoch.
	_, _, err := appendBatch(t, s, &next, 9, 0, 10, 1)
	wantErr(t, err, kerr.InvalidProducerEpoch)
	// A new epoch must start at sequence 0.
	_, _, err = appendBatch(t, s, &next, 9, 2, 10, 1)
	wantErr(t, err, kerr.OutOfOrderSequenceNumber)
	mustAppend(t, s, &next, 9, 2, 0, 1)
	// The old epoch's batches are gone, and the old epoch is now fenced.
	if got := len(s.entries[9].Batches); got != 1 {
		t.Fatalf("batches after epoch bump: %d, want 1", got)
	}
	_, _, err = appendBatch(t, s, &next, 9, 1, 0, 5)
	wantErr(t, err, kerr.InvalidProducerEpoch)
	mustAppend(t, s, &next, 9, 2, 1, 1)
}

func TestProducerStateSequenceWrap(t *testing.T) {
	if got := incrementSequence(math.MaxInt32-1, 3); got != 1 {
		t.Fatalf("incrementSequence wrap = %d, want 1", got)
	}
	s := newProducerStates()
	var next int64
	mustAppend(t, s, &next, 5, 0, math.MaxInt32-2, 3) // ends at MaxInt32
	_, _, err := appendBatch(t, s, &next, 5, 0, math.MaxInt32, 1)
	wantErr(t, err, kerr.OutOfOrderSequenceNumber)
	mustAppend(t, s, &next, 5, 0, 0, 2)
	// A batch crossing the wrap: MaxInt32-1 .. 1.
	s2 := newProducerStates()
	wrapBase := mustAppend(t, s2, &next, 6, 0, math.MaxInt32-1, 4)
	if last := s2.entries[6].Batches[0].LastSeq; last != 1 {
		t.Fatalf("last seq across wrap = %d, want 1", last)
	}
	base, dup, err := appendBatch(t, s2, &next, 6, 0, math.MaxInt32-1, 4)
	if err != nil || !dup || base != wrapBase {
		t.Fatalf("dup across wrap: base=%d dup=%v err=%v", base, dup, err)
	}
	mustAppend(t, s2, &next, 6, 0, 2, 1)
}

func TestProducerStateTruncateAfter(t *testing.T) {
	s := newProducerStates()
	var next int64
	mustAppend(t, s, &next, 1, 0, 0, 2) // 0-1
	mustAppend(t, s, &next, 2, 0, 0, 2) // 2-3
	mustAppend(t, s, &next, 1, 0, 2, 2) // 4-5
	s.truncateAfter(4)
	if _, ok := s.entries[2]; !ok {
		t.Fatal("producer 2 lost by truncation above its batch")
	}
	if got := s.entries[1].Batches; len(got) != 1 || got[0].LastSeq != 1 {
		t.Fatalf("producer 1 after truncate: %+v", got)
	}
	next = 4
	mustAppend(t, s, &next, 1, 0, 2, 2)
	s.truncateAfter(0)
	if len(s.entries) != 0 {
		t.Fatalf("entries after truncate to 0: %v", s.entries)
	}
}

func TestProducerSnapshotRoundTripAndRetention(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.Default
	s := newProducerStates()
	var next int64
	for i := int32(0); i < 7; i++ {
		mustAppend(t, s, &next, 11, 2, i, 1)
	}
	mustAppend(t, s, &next, 12, 0, 100, 3)
	for _, off := range []int64{3, 5, next} {
		if err := s.writeSnapshot(fsys, dir, off); err != nil {
			t.Fatal(err)
		}
	}
	offs, err := listSnapshots(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 2 || offs[0] != 5 || offs[1] != next {
		t.Fatalf("snapshots kept: %v, want [5 %d]", offs, next)
	}
	got, off, err := loadProducerSnapshot(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if off != next {
		t.Fatalf("loaded offset %d, want %d", off, next)
	}
	if string(got.encodeSnapshot()) != string(s.encodeSnapshot()) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got.entries, s.entries)
	}
	// As in Kafka only each producer's last batch is in the snapshot: its
	// resend is still a duplicate and the sequence continues after it.
	if n := len(got.entries[11].Batches); n != 1 {
		t.Fatalf("reloaded %d batches of producer 11, want 1", n)
	}
	base, dup, err := appendBatch(t, got, &next, 11, 2, 6, 1)
	if err != nil || !dup || base != 6 {
		t.Fatalf("dup after reload: base=%d dup=%v err=%v", base, dup, err)
	}
	if _, _, err := appendBatch(t, got, &next, 11, 2, 5, 1); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("older batch after reload: %v, want OutOfOrderSequenceNumber", err)
	}
	mustAppend(t, got, &next, 12, 0, 103, 1)

	// A snapshot above the offset being written is stale and removed.
	if err := s.writeSnapshot(fsys, dir, 4); err != nil {
		t.Fatal(err)
	}
	if offs, _ := listSnapshots(fsys, dir); len(offs) != 1 || offs[0] != 4 {
		t.Fatalf("after writing an older snapshot: %v, want [4]", offs)
	}
}

func TestProducerSnapshotCorruptFallsBack(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.Default
	s := newProducerStates()
	var next int64
	mustAppend(t, s, &next, 1, 0, 0, 1)
	if err := s.writeSnapshot(fsys, dir, next); err != nil {
		t.Fatal(err)
	}
	older := next
	mustAppend(t, s, &next, 1, 0, 1, 1)
	if err := s.writeSnapshot(fsys, dir, next); err != nil {
		t.Fatal(err)
	}
	path := snapshotPath(dir, next)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, off, err := loadProducerSnapshot(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if off != older || len(got.entries[1].Batches) != 1 {
		t.Fatalf("fallback loaded offset %d state %+v, want offset %d with 1 batch", off, got.entries, older)
	}
	// Both corrupt (one truncated to nothing): empty state from offset 0.
	if err := os.WriteFile(snapshotPath(dir, older), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, off, err = loadProducerSnapshot(fsys, dir)
	if err != nil || off != 0 || len(got.entries) != 0 {
		t.Fatalf("all corrupt: off=%d entries=%v err=%v", off, got.entries, err)
	}
}

func TestProducerSnapshotExactLayout(t *testing.T) {
	s := newProducerStates()
	s.update(batchMeta{ProducerID: 1, ProducerEpoch: 2, BaseSequence: 3, LastOffsetDelta: 1, BaseOffset: 4, MaxTimestamp: 5})
	s.update(batchMeta{ProducerID: 1, ProducerEpoch: 2, BaseSequence: 5, LastOffsetDelta: 2, BaseOffset: 8, MaxTimestamp: 9})
	buf := s.encodeSnapshot()
	want := []byte{
		0, 1, // version
		0, 0, 0, 0, // crc placeholder
		0, 0, 0, 1, // producer entries
		0, 0, 0, 0, 0, 0, 0, 1, // producer_id
		0, 2, // epoch
		0, 0, 0, 7, // last_sequence
		0, 0, 0, 0, 0, 0, 0, 10, // last_offset
		0, 0, 0, 2, // offset_delta
		0, 0, 0, 0, 0, 0, 0, 9, // timestamp
		0xff, 0xff, 0xff, 0xff, // coordinator_epoch -1
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // current_txn_first_offset -1
	}
	copy(want[2:6], buf[2:6])
	if string(buf) != string(want) {
		t.Fatalf("layout:\n got %v\nwant %v", buf, want)
	}
	if got := binary.BigEndian.Uint32(buf[2:6]); got != crc32.Checksum(buf[6:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("crc %08x", got)
	}
	got, err := decodeSnapshot(buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := got.entries[1].Batches; len(b) != 1 || b[0] != (producerBatch{FirstSeq: 5, LastSeq: 7, BaseOffset: 8, LastOffset: 10}) {
		t.Fatalf("decoded %+v", b)
	}
	if _, err := decodeSnapshot(append(buf, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	if filepath.Base(snapshotPath("d", 6)) != "00000000000000000006.snapshot" {
		t.Fatalf("snapshot name %s", snapshotPath("d", 6))
	}
}

// TestProducerSnapshotSequenceWrap decodes a last batch whose sequences
// wrapped from MaxInt32 to 0.
func TestProducerSnapshotSequenceWrap(t *testing.T) {
	s := newProducerStates()
	s.update(batchMeta{ProducerID: 3, BaseSequence: math.MaxInt32 - 1, LastOffsetDelta: 3, BaseOffset: 10})
	got, err := decodeSnapshot(s.encodeSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if b := got.entries[3].Batches[0]; b.FirstSeq != math.MaxInt32-1 || b.LastSeq != 1 {
		t.Fatalf("wrapped batch %+v", b)
	}
}
