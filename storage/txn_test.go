package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs"
)

func txnBatch(pid int64, seq int32, records int) []byte {
	// Markers carry the current time: so must the batches, or segment.ms
	// rolls the log between them.
	return makeBatch(batchOpts{records: records, valueSize: 8, ts: time.Now().UnixMilli(), pid: pid, epoch: 0, seq: seq, attrs: batch.AttrTransactional})
}

// readCommittedBases reads with read_committed from 0 and returns the base
// offsets of the batches returned.
func readCommittedBases(t *testing.T, l *Log) []int64 {
	t.Helper()
	var bases []int64
	for off := int64(0); ; {
		res, err := l.ReadIsolated(off, 1<<20, true, true)
		if err != nil {
			t.Fatalf("ReadIsolated(%d): %v", off, err)
		}
		var buf bytes.Buffer
		if _, err := res.Chunk.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		res.Chunk.Release()
		if buf.Len() == 0 {
			return bases
		}
		for b := buf.Bytes(); len(b) > 0; {
			h := batch.DecodeHeader(b)
			if h.BaseOffset >= res.LastStable {
				t.Fatalf("batch at %d returned past the last stable offset %d", h.BaseOffset, res.LastStable)
			}
			bases = append(bases, h.BaseOffset)
			off = h.NextOffset()
			b = b[h.Size():]
		}
	}
}

// TestTransactionsLSOAndAbortedIndex interleaves two transactions and a
// plain batch: the LSO follows the first open transaction, read_committed
// stops there, an abort writes Kafka's 34-byte .txnindex entry, and both an
// unclean reopen (full recovery) and a clean one rebuild the same state.
func TestTransactionsLSOAndAbortedIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := testConfig()
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	appendOK(t, l, txnBatch(1, 0, 2))                                            // 0-1, pid 1
	appendOK(t, l, txnBatch(2, 0, 1))                                            // 2, pid 2
	appendOK(t, l, makeBatch(batchOpts{records: 1, ts: time.Now().UnixMilli()})) // 3, plain
	appendOK(t, l, txnBatch(1, 2, 2))                                            // 4-5, pid 1
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO with pid 1 open from 0: %d", got)
	}
	if got := readCommittedBases(t, l); len(got) != 0 {
		t.Fatalf("read_committed below LSO 0 returned %v", got)
	}
	if _, err := leaderAppend(l, makeBatch(batchOpts{records: 1, pid: 1, epoch: 0, seq: 4}), 0); err == nil {
		t.Fatal("a non-transactional batch of a producer with an open transaction was accepted")
	}
	off, err := leaderAppendControl(l, 1, 0, false, 0, 0) // abort pid 1 at 6
	if err != nil || off != 6 {
		t.Fatalf("abort marker: offset %d, %v", off, err)
	}
	if got := l.LastStableOffset(); got != 2 {
		t.Fatalf("LSO with pid 2 open from 2: %d", got)
	}
	if got := readCommittedBases(t, l); !reflect.DeepEqual(got, []int64{0}) {
		t.Fatalf("read_committed below LSO 2: %v", got)
	}
	if off, err := leaderAppendControl(l, 2, 0, true, 0, 0); err != nil || off != 7 { // commit pid 2 at 7
		t.Fatalf("commit marker: offset %d, %v", off, err)
	}
	if got, hw := l.LastStableOffset(), l.HighWatermark(); got != 8 || hw != 8 {
		t.Fatalf("LSO %d, HW %d, want 8 and 8", got, hw)
	}
	if got := readCommittedBases(t, l); !reflect.DeepEqual(got, []int64{0, 2, 3, 4, 6, 7}) {
		t.Fatalf("read_committed of the decided log: %v", got)
	}
	want := []Aborted{{ProducerID: 1, FirstOffset: 0}}
	if got := l.AbortedTransactions(0, 8); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted in [0, 8): %v", got)
	}
	if got := l.AbortedTransactions(7, 8); len(got) != 0 {
		t.Fatalf("aborted in [7, 8): %v", got)
	}
	if _, err := leaderAppendControl(l, 1, -1, true, 0, 0); err == nil {
		t.Fatal("a marker with an older producer epoch was accepted")
	}
	appendOK(t, l, txnBatch(3, 0, 1)) // 8, pid 3 stays open
	if got := l.LastStableOffset(); got != 8 {
		t.Fatalf("LSO with pid 3 open from 8: %d", got)
	}
	idxPath := filepath.Join(dir, "00000000000000000000.txnindex")
	idx, err := os.ReadFile(idxPath)
	if err != nil {
		t.Fatal(err)
	}
	entry := make([]byte, 0, 34)
	entry = binary.BigEndian.AppendUint16(entry, 0)
	for _, v := range []int64{1, 0, 6, 2} { // pid, first, last, LSO
		entry = binary.BigEndian.AppendUint64(entry, uint64(v))
	}
	if !bytes.Equal(idx, entry) {
		t.Fatalf(".txnindex %x, want %x", idx, entry)
	}

	check := func(name string, l2 *Log) {
		t.Helper()
		if got := l2.LastStableOffset(); got != 8 {
			t.Fatalf("%s: LSO %d, want 8 (pid 3 open)", name, got)
		}
		if got := l2.AbortedTransactions(0, 9); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: aborted %v", name, got)
		}
		if got, err := os.ReadFile(idxPath); err != nil || !bytes.Equal(got, entry) {
			t.Fatalf("%s: .txnindex %x (%v), want %x", name, got, err, entry)
		}
		if off, err := leaderAppendControl(l2, 3, 0, false, 0, 0); err != nil || off != 9 {
			t.Fatalf("%s: abort pid 3: %d, %v", name, off, err)
		}
		if got := l2.AbortedTransactions(0, 10); !reflect.DeepEqual(got, append(want, Aborted{ProducerID: 3, FirstOffset: 8})) {
			t.Fatalf("%s: aborted after pid 3: %v", name, got)
		}
	}
	// Crash: the first log is never closed; recovery scans everything and
	// rebuilds the producer state and the index from the log.
	crashed := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	check("after a crash", crashed)
	if err := crashed.Close(); err != nil {
		t.Fatal(err)
	}
	// Clean reopen: the snapshot carries pid 3's open transaction... which
	// was aborted above, so reopen, start another and close cleanly.
	l3 := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{CleanShutdown: true, RecoveryPoint: 10})
	appendOK(t, l3, txnBatch(4, 0, 1)) // 10
	if err := l3.Close(); err != nil {
		t.Fatal(err)
	}
	l4 := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{CleanShutdown: true, RecoveryPoint: 11})
	defer l4.Close()
	if got := l4.LastStableOffset(); got != 10 {
		t.Fatalf("after a clean restart: LSO %d, want 10 (pid 4 open, from the snapshot)", got)
	}
	if got := l4.AbortedTransactions(0, 11); len(got) != 2 {
		t.Fatalf("after a clean restart: aborted %v", got)
	}
}

// TestMarkerEpochsOfTransactionVersion2: a marker of a transaction that ran
// at transaction version 2 (KIP-1228) must carry a newer epoch than the
// producer's open transaction; one at the same epoch is refused while a
// transaction is open (a late marker of the previous transaction), and
// accepted again once none is (a retry). A version 0 marker at the same
// epoch ends the transaction as before.
func TestMarkerEpochsOfTransactionVersion2(t *testing.T) {
	l := openTestLog(t, vfs.Default, filepath.Join(t.TempDir(), "t-0"), testConfig(), OpenOptions{RecoveryPoint: -1})
	appendOK(t, l, txnBatch(1, 0, 1)) // pid 1 epoch 0 open at 0
	if _, err := l.AppendMarker(1, 0, true, 0, 0, 2); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("v2 marker at the open transaction's epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO after a refused marker: %d, want 0", got)
	}
	if _, err := l.AppendMarker(1, 1, true, 0, 0, 2); err != nil {
		t.Fatalf("v2 marker at epoch+1: %v", err)
	}
	if _, err := l.AppendMarker(1, 1, true, 0, 0, 2); err != nil {
		t.Fatalf("retried v2 marker with no transaction open: %v", err)
	}
	appendOK(t, l, makeBatch(batchOpts{records: 1, valueSize: 8, ts: time.Now().UnixMilli(), pid: 2, epoch: 0, seq: 0, attrs: batch.AttrTransactional}))
	if _, err := l.AppendMarker(2, 0, false, 0, 0, 0); err != nil {
		t.Fatalf("v0 marker at the producer's epoch: %v", err)
	}
}
