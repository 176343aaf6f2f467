package storage

import (
	"bytes"
	mrand "math/rand/v2"
	"testing"

	"github.com/strata-io/strata/storage/vfs"
)

// TestReadSkipsIndexedBatches checks that a read which jumps over batches
// by the offset index returns the same chunk and next offset as one that
// reads every batch header: two logs get the same batches, one indexing
// every 64 bytes and one never.
func TestReadSkipsIndexedBatches(t *testing.T) {
	open := func(interval int) *Log {
		cfg := testConfig()
		cfg.IndexIntervalBytes = interval
		cfg.SegmentBytes = 64 << 10
		l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
		t.Cleanup(func() { l.Close() })
		return l
	}
	indexed, walked := open(64), open(1<<30)
	rng := mrand.New(mrand.NewPCG(1, 2))
	for range 600 {
		b := makeBatch(batchOpts{records: 1 + rng.IntN(20), valueSize: rng.IntN(400)})
		appendOK(t, indexed, b)
		appendOK(t, walked, b)
	}
	read := func(l *Log, off int64, maxBytes int, minOne bool) ([]byte, int64) {
		res, err := l.Read(off, maxBytes, minOne)
		if err != nil {
			t.Fatalf("Read(%d, %d, %v): %v", off, maxBytes, minOne, err)
		}
		var buf bytes.Buffer
		if _, err := res.Chunk.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		res.Chunk.Release()
		return buf.Bytes(), res.NextOffset
	}
	hw := indexed.HighWatermark()
	for i := range 3000 {
		off := rng.Int64N(hw + 1)
		maxBytes := rng.IntN(40 << 10)
		minOne := i%2 == 0
		got, gotNext := read(indexed, off, maxBytes, minOne)
		want, wantNext := read(walked, off, maxBytes, minOne)
		if !bytes.Equal(got, want) || gotNext != wantNext {
			t.Fatalf("Read(%d, %d, %v): %d bytes, next %d; walking every header: %d bytes, next %d",
				off, maxBytes, minOne, len(got), gotNext, len(want), wantNext)
		}
	}
}
