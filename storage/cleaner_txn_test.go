package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs"
)

// txnKeyedBatch is keyedBatch made transactional for producer pid (epoch 0,
// base sequence seq), as a transactional producer or the group coordinator's
// TxnOffsetCommit writes it.
func txnKeyedBatch(t testing.TB, pid int64, seq int32, ts int64, recs ...kv) []byte {
	t.Helper()
	b := keyedBatch(t, ts, batch.CodecNone, recs...)
	be := binary.BigEndian
	be.PutUint16(b[batch.OffAttributes:], be.Uint16(b[batch.OffAttributes:])|uint16(batch.AttrTransactional))
	be.PutUint64(b[batch.OffProducerID:], uint64(pid))
	be.PutUint16(b[batch.OffProducerEpoch:], 0)
	be.PutUint32(b[batch.OffBaseSequence:], uint32(seq))
	be.PutUint32(b[batch.OffCRC:], batch.CRC(b))
	return b
}

// batchKVs returns the key and value of each record of batch b (nil value
// for a tombstone).
func batchKVs(t testing.TB, b []byte) []kv {
	t.Helper()
	h := batch.DecodeHeader(b)
	recs, err := batchRecords(&h, b)
	if err != nil {
		t.Fatal(err)
	}
	var out []kv
	krs, err := kmsgRecords(recs, h.RecordCount)
	for _, kr := range krs {
		// Copies: ForEachBatch reuses its buffer.
		c := kv{key: bytes.Clone(kr.Key)}
		if kr.Value != nil {
			c.value = bytes.Clone(kr.Value)
		}
		out = append(out, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readCommittedView is what a read_committed consumer sees, key -> latest
// value: batches below the LSO, with the records of the aborted
// transactions AbortedTransactions reports skipped as Kafka's consumer
// does (a producer is aborted from its first offset to its abort marker).
func readCommittedView(t testing.TB, l *Log) map[string]string {
	t.Helper()
	lso := l.LastStableOffset()
	aborted := l.AbortedTransactions(l.LogStartOffset(), lso)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	abortedPids := map[int64]bool{}
	view := map[string]string{}
	err := l.ForEachBatch(0, func(b []byte) error {
		h := batch.DecodeHeader(b)
		if h.BaseOffset >= lso {
			return nil
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			abortedPids[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if h.Control() {
			if commit, _, ok := parseControlBatch(b); ok && !commit {
				delete(abortedPids, h.ProducerID)
			}
			return nil
		}
		if h.Transactional() && abortedPids[h.ProducerID] {
			return nil
		}
		for _, r := range batchKVs(t, b) {
			if r.value == nil {
				delete(view, string(r.key))
			} else {
				view[string(r.key)] = string(r.value)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return view
}

// replayView replays the whole log as the group coordinator loads
// __consumer_offsets: plain records apply at once, transactional ones are
// pending per producer until its marker applies (commit) or drops (abort)
// them.
func replayView(t testing.TB, l *Log) map[string]string {
	t.Helper()
	view := map[string]string{}
	pending := map[int64][]kv{}
	apply := func(recs []kv) {
		for _, r := range recs {
			if r.value == nil {
				delete(view, string(r.key))
			} else {
				view[string(r.key)] = string(r.value)
			}
		}
	}
	err := l.ForEachBatch(0, func(b []byte) error {
		h := batch.DecodeHeader(b)
		switch {
		case h.Control():
			if commit, _, ok := parseControlBatch(b); ok && commit {
				apply(pending[h.ProducerID])
			}
			delete(pending, h.ProducerID)
		case h.Transactional():
			pending[h.ProducerID] = append(pending[h.ProducerID], batchKVs(t, b)...)
		default:
			apply(batchKVs(t, b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return view
}

// markers lists the offsets of the control batches in the log.
func markers(t testing.TB, l *Log) []int64 {
	t.Helper()
	var out []int64
	err := l.ForEachBatch(0, func(b []byte) error {
		if h := batch.DecodeHeader(b); h.Control() {
			out = append(out, h.BaseOffset)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rawValues lists every value of key still in the log, in offset order.
func rawValues(t testing.TB, l *Log, key string) []string {
	t.Helper()
	var out []string
	for _, r := range readRecords(t, l) {
		if r.key == key {
			out = append(out, r.val)
		}
	}
	return out
}

func mustControl(t testing.TB, l *Log, pid int64, commit bool) int64 {
	t.Helper()
	off, err := leaderAppendControl(l, pid, 0, commit, 0, 0)
	if err != nil {
		t.Fatalf("AppendControl(%d, commit=%v): %v", pid, commit, err)
	}
	return off
}

func rollTest(t testing.TB, l *Log) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.roll(l.now()); err != nil {
		t.Fatal(err)
	}
}

// TestCleanAbortedTransactionNeverWins: K=v1 is committed by a
// transaction, then two aborted transactions (another producer, and the
// same producer again) write K. Cleaning must build its key map without the
// aborted records and drop them, keep the markers whose transaction still
// had data, carry the abort entries into the cleaned segment's .txnindex,
// and all of it must hold after a clean restart and after a crash.
func TestCleanAbortedTransactionNeverWins(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 60_000
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{Clock: clock})
	ts := clock.Now().UnixMilli()
	appendOK(t, l, keyedBatch(t, ts, batch.CodecNone, rec("K", "v0"), rec("other", "o1"))) // 0-1
	appendOK(t, l, txnKeyedBatch(t, 1, 0, ts, rec("K", "v1")))                             // 2
	commit1 := mustControl(t, l, 1, true)                                                  // 3
	appendOK(t, l, txnKeyedBatch(t, 2, 0, ts, rec("K", "v2"), rec("x", "x2")))             // 4-5
	abort2 := mustControl(t, l, 2, false)                                                  // 6
	appendOK(t, l, txnKeyedBatch(t, 1, 1, ts, rec("K", "v3")))                             // 7
	abort1 := mustControl(t, l, 1, false)                                                  // 8
	// Both producers write again, so their aborted batches are not their
	// last (which the cleaner would keep as empty batches, RETAIN_EMPTY).
	appendOK(t, l, txnKeyedBatch(t, 2, 2, ts, rec("p2", "c2"))) // 9
	commit2 := mustControl(t, l, 2, true)                       // 10
	appendOK(t, l, txnKeyedBatch(t, 1, 2, ts, rec("p1", "c1"))) // 11
	commit3 := mustControl(t, l, 1, true)                       // 12
	rollTest(t, l)
	appendOK(t, l, keyedBatch(t, ts, batch.CodecNone, rec("other", "o2"))) // 13, active segment

	want := map[string]string{"K": "v1", "other": "o2", "p1": "c1", "p2": "c2"}
	if got := readCommittedView(t, l); !reflect.DeepEqual(got, want) {
		t.Fatalf("before cleaning: read_committed %v, want %v", got, want)
	}
	wantAborted := []Aborted{{ProducerID: 2, FirstOffset: 4}, {ProducerID: 1, FirstOffset: 7}}
	st, err := l.Clean(true)
	if err != nil || !st.Cleaned {
		t.Fatalf("Clean: %+v, %v", st, err)
	}
	// A full recovery rebuilds the .txnindex by replay, which finds no
	// aborted data left: then no entries are needed (nor written). The
	// in-memory index and a clean restart keep the cleaned segment's.
	check := func(stage string, l *Log, indexed bool) {
		t.Helper()
		if got := readCommittedView(t, l); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: read_committed %v, want %v", stage, got, want)
		}
		if got := replayView(t, l); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: replay %v, want %v", stage, got, want)
		}
		if got := rawValues(t, l, "K"); !reflect.DeepEqual(got, []string{"v1"}) {
			t.Fatalf("%s: values of K in the log %v, want only the committed v1", stage, got)
		}
		if got := rawValues(t, l, "x"); len(got) != 0 {
			t.Fatalf("%s: aborted record x=%v kept", stage, got)
		}
		// Every marker's transaction had data in the first pass: all stay.
		if got, want := markers(t, l), []int64{commit1, abort2, abort1, commit2, commit3}; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: markers %v, want %v", stage, got, want)
		}
		if !indexed {
			if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
				t.Fatalf("%s: aborted transactions %v, want none", stage, got)
			}
			return
		}
		if got := l.AbortedTransactions(0, l.LogEndOffset()); !reflect.DeepEqual(got, wantAborted) {
			t.Fatalf("%s: aborted transactions %v, want %v", stage, got, wantAborted)
		}
		ents, err := readTxnIndex(vfs.Default, segmentPath(dir, 0, txnIndexExt))
		if err != nil || len(ents) != 2 || ents[0].LastOffset != abort2 || ents[1].LastOffset != abort1 {
			t.Fatalf("%s: .txnindex of the cleaned segment %+v, %v", stage, ents, err)
		}
	}
	check("after cleaning", l, true)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{CleanShutdown: true, RecoveryPoint: 14, FirstDirtyOffset: st.End, Clock: clock})
	check("after a clean restart", l, true)
	crash(l)
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1, FirstDirtyOffset: st.End, Clock: clock})
	defer func() { _ = l.Close() }()
	check("after a crash", l, false)

	// Second pass (a new dirty segment): the aborted transactions have no
	// data left, so their markers get a delete horizon; the commit markers'
	// transactions still hold K=v1, p2 and p1, so they stay untouched.
	appendOK(t, l, keyedBatch(t, ts, batch.CodecNone, rec("y", "y1")))
	rollTest(t, l)
	appendOK(t, l, keyedBatch(t, ts, batch.CodecNone, rec("z", "z1")))
	want["y"], want["z"] = "y1", "z1"
	if st, err := l.Clean(true); err != nil || !st.Cleaned {
		t.Fatalf("second Clean: %+v, %v", st, err)
	}
	horizons := map[int64]int64{}
	_ = l.ForEachBatch(0, func(b []byte) error {
		if h := batch.DecodeHeader(b); h.Control() {
			horizons[h.BaseOffset] = -1
			if h.Attributes&batch.AttrDeleteHorizon != 0 {
				horizons[h.BaseOffset] = h.BaseTimestamp
			}
		}
		return nil
	})
	wantH := map[int64]int64{commit1: -1, abort2: ts + cfg.DeleteRetentionMs, abort1: ts + cfg.DeleteRetentionMs, commit2: -1, commit3: -1}
	if !reflect.DeepEqual(horizons, wantH) {
		t.Fatalf("marker delete horizons %v, want %v", horizons, wantH)
	}
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted transactions without data left: %v", got)
	}
	if got := readCommittedView(t, l); !reflect.DeepEqual(got, want) {
		t.Fatalf("second pass: read_committed %v, want %v", got, want)
	}

	// Past the horizon the empty transactions' markers go; the commit
	// markers stay while their data is in the log.
	clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	if st, err := l.Clean(false); err != nil || !st.Cleaned {
		t.Fatalf("horizon Clean: %+v, %v", st, err)
	}
	if got, want := markers(t, l), []int64{commit1, commit2, commit3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("markers after the horizon %v, want %v", got, want)
	}

	// K=v4 shadows v1: the first commit marker keeps for the pass that
	// removes v1 (it saw the data), then gets a horizon, then goes.
	appendOK(t, l, keyedBatch(t, clock.Now().UnixMilli(), batch.CodecNone, rec("K", "v4")))
	rollTest(t, l)
	appendOK(t, l, keyedBatch(t, clock.Now().UnixMilli(), batch.CodecNone, rec("z", "z2")))
	want["K"], want["z"] = "v4", "z2"
	for pass, wantMarkers := range [][]int64{{commit1, commit2, commit3}, {commit1, commit2, commit3}, {commit2, commit3}} {
		if pass == 1 {
			appendOK(t, l, keyedBatch(t, clock.Now().UnixMilli(), batch.CodecNone, rec("w", "w1")))
			rollTest(t, l)
			want["w"] = "w1"
		}
		if pass == 2 {
			clock.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
		}
		if st, err := l.Clean(pass < 2); err != nil || !st.Cleaned {
			t.Fatalf("pass %d after v4: %+v, %v", pass, st, err)
		}
		if got := markers(t, l); !reflect.DeepEqual(got, wantMarkers) {
			t.Fatalf("pass %d after v4: markers %v, want %v", pass, got, wantMarkers)
		}
		if got := replayView(t, l); !reflect.DeepEqual(got, want) {
			t.Fatalf("pass %d after v4: replay %v, want %v", pass, got, want)
		}
	}
	if got := replayView(t, l); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the horizon: replay %v, want %v", got, want)
	}
	if _, err := os.Stat(segmentPath(dir, 0, txnIndexExt)); !os.IsNotExist(err) {
		t.Fatalf(".txnindex of a cleaned segment without aborts: %v", err)
	}
}

// TestCleanAbortedTxnOffsetCommit is the __consumer_offsets shape: a plain
// OffsetCommit, a committed TxnOffsetCommit (the coordinator's
// transactional batch with base sequence 0, appended with
// AppendCoordinator), then an aborted one for the same group, topic and
// partition. After compaction and a restart the coordinator's replay and a
// read_committed reader both find the committed offset.
func TestCleanAbortedTxnOffsetCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__consumer_offsets-0")
	cfg := compactConfig()
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{})
	key := kmsg.NewOffsetCommitKey()
	key.Version, key.Group, key.Topic, key.Partition = 1, "g", "t", 0
	k := key.AppendTo(nil)
	value := func(off int64) []byte {
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset, v.LeaderEpoch, v.CommitTimestamp = 3, off, -1, 1
		return v.AppendTo(nil)
	}
	ts := time.Now().UnixMilli()
	coord := func(b []byte) {
		t.Helper()
		if _, err := leaderAppendCoordinator(l, b, 0); err != nil {
			t.Fatalf("AppendCoordinator: %v", err)
		}
	}
	appendOK(t, l, keyedBatch(t, ts, batch.CodecNone, kv{key: k, value: value(10)}))
	coord(txnKeyedBatch(t, 7, 0, ts, kv{key: k, value: value(20)}))
	mustControl(t, l, 7, true)
	coord(txnKeyedBatch(t, 7, 0, ts, kv{key: k, value: value(30)}))
	mustControl(t, l, 7, false)
	rollTest(t, l)

	committed := func(stage string, l *Log) {
		t.Helper()
		for name, view := range map[string]map[string]string{"replay": replayView(t, l), "read_committed": readCommittedView(t, l)} {
			var v kmsg.OffsetCommitValue
			raw, ok := view[string(k)]
			if !ok {
				t.Fatalf("%s: %s lost the group's offset", stage, name)
			}
			if err := v.ReadFrom([]byte(raw)); err != nil || v.Offset != 20 {
				t.Fatalf("%s: %s offset %d (%v), want the committed 20", stage, name, v.Offset, err)
			}
		}
	}
	committed("before cleaning", l)
	st, err := l.Clean(true)
	if err != nil || !st.Cleaned {
		t.Fatalf("Clean: %+v, %v", st, err)
	}
	committed("after cleaning", l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{CleanShutdown: true, RecoveryPoint: l.LogEndOffset(), FirstDirtyOffset: st.End})
	committed("after a restart", l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCleanTxnIndexSwapRecovery: a crash right after a cleaned segment's
// swap committed (its .swap files in place, the old segment still there)
// completes the swap on open, .txnindex included.
func TestCleanTxnIndexSwapRecovery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := compactConfig()
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{})
	ts := time.Now().UnixMilli()
	appendOK(t, l, txnKeyedBatch(t, 1, 0, ts, rec("K", "v1")))
	mustControl(t, l, 1, true)
	appendOK(t, l, txnKeyedBatch(t, 2, 0, ts, rec("K", "v2")))
	abort := mustControl(t, l, 2, false)
	rollTest(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(segmentPath(dir, 0, txnIndexExt))
	if err != nil {
		t.Fatal(err)
	}
	// Clean a copy of the log, then graft its cleaned files onto the
	// original as .swap files, as a crash after the commit leaves them.
	cp := filepath.Join(t.TempDir(), "t-0")
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	lc := openTestLog(t, vfs.Default, cp, cfg, OpenOptions{CleanShutdown: true, RecoveryPoint: abort + 1})
	if st, err := lc.Clean(true); err != nil || !st.Cleaned {
		t.Fatalf("Clean: %+v, %v", st, err)
	}
	if err := lc.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{logExt, indexExt, timeIndexExt, txnIndexExt} {
		b, err := os.ReadFile(segmentPath(cp, 0, ext))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(swapPath(dir, 0, ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The abort marker's transaction had data in that pass: its entry stays.
	cleanedIdx, _ := os.ReadFile(swapPath(dir, 0, txnIndexExt))
	if !bytes.Equal(cleanedIdx, orig) {
		t.Fatalf("cleaned .txnindex %x, original %x", cleanedIdx, orig)
	}
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: abort + 1})
	defer func() { _ = l.Close() }()
	if got, err := os.ReadFile(segmentPath(dir, 0, txnIndexExt)); err != nil || !bytes.Equal(got, cleanedIdx) {
		t.Fatalf(".txnindex after completing the swap %x (%v), want %x", got, err, cleanedIdx)
	}
	if got := rawValues(t, l, "K"); !reflect.DeepEqual(got, []string{"v1"}) {
		t.Fatalf("K after completing the swap: %v", got)
	}
	if got, want := readCommittedView(t, l), map[string]string{"K": "v1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("read_committed %v, want %v", got, want)
	}
	if got := fmt.Sprint(l.AbortedTransactions(0, l.LogEndOffset())); got != "[{2 2}]" {
		t.Fatalf("aborted transactions %s", got)
	}
}
