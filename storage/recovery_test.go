package storage

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

// crash drops the log's descriptors and mappings without any of Close's
// work (no flush, trim, snapshot), as a killed process would.
func crash(l *Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, s := range l.segs {
		s.closeAll()
	}
}

// fillLog appends n batches of records records each and returns the byte
// position where each batch starts in the (single) segment.
func fillLog(t *testing.T, l *Log, n, records int) []int64 {
	t.Helper()
	var pos []int64
	for i := 0; i < n; i++ {
		pos = append(pos, l.active().size)
		appendOK(t, l, makeBatch(batchOpts{records: records, valueSize: 20, ts: int64(1000 + i)}))
	}
	return pos
}

func TestTornTailEveryByte(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	pos := fillLog(t, l, 4, 3)
	crash(l)
	logPath := segmentPath(dir, 0, logExt)
	full, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	last := pos[len(pos)-1]
	for cut := last; cut < int64(len(full)); cut++ {
		if err := os.WriteFile(logPath, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
		if l.LogEndOffset() != 9 || l.active().size != last {
			t.Fatalf("cut at %d: LEO %d size %d, want 9 %d", cut, l.LogEndOffset(), l.active().size, last)
		}
		if res := appendOK(t, l, makeBatch(batchOpts{records: 2})); res.BaseOffset != 9 {
			t.Fatalf("cut at %d: next append at %d", cut, res.BaseOffset)
		}
		if got := readAll(t, l); len(got) != 4 || got[3] != 9 {
			t.Fatalf("cut at %d: batches %v", cut, got)
		}
		crash(l)
	}
}

func TestRandomGarbageTail(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 10; iter++ {
		dir := t.TempDir()
		l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
		fillLog(t, l, 5, 4)
		crash(l)
		garbage := make([]byte, 1+rng.Intn(1024))
		rng.Read(garbage)
		f, err := os.OpenFile(segmentPath(dir, 0, logExt), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(garbage)
		_ = f.Close()
		lg, logs := observedLogger()
		l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1, Logger: lg})
		if l.LogEndOffset() != 20 {
			t.Fatalf("iter %d (%d garbage bytes): LEO %d", iter, len(garbage), l.LogEndOffset())
		}
		if logs.FilterMessage("log recovery truncated the log").Len() != 1 {
			t.Fatalf("iter %d: truncation not logged", iter)
		}
		if res := appendOK(t, l, makeBatch(batchOpts{records: 1})); res.BaseOffset != 20 {
			t.Fatalf("iter %d: next append at %d", iter, res.BaseOffset)
		}
		if got := readAll(t, l); len(got) != 6 {
			t.Fatalf("iter %d: %d batches", iter, len(got))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFlippedByteTruncatesAndDropsLaterSegments(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	for i := 0; i < 30; i++ {
		appendOK(t, l, makeBatch(batchOpts{records: 2, valueSize: 40}))
	}
	if len(l.segs) < 4 {
		t.Fatalf("only %d segments", len(l.segs))
	}
	second := l.segs[1]
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Corrupt the third batch of the second segment.
	raw, err := os.ReadFile(segmentPath(dir, second.base, logExt))
	if err != nil {
		t.Fatal(err)
	}
	bsize := len(makeBatch(batchOpts{records: 2, valueSize: 40}))
	raw[2*bsize+bsize/2] ^= 0x40
	if err := os.WriteFile(segmentPath(dir, second.base, logExt), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	lg, logs := observedLogger()
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: second.base, Logger: lg})
	defer l.Close()
	if want := second.base + 4; l.LogEndOffset() != want || len(l.segs) != 2 {
		t.Fatalf("LEO %d (want %d), %d segments", l.LogEndOffset(), want, len(l.segs))
	}
	entries := logs.FilterMessage("log recovery truncated the log").All()
	if len(entries) != 1 || !strings.Contains(entries[0].ContextMap()["error"].(string), "crc") {
		t.Fatalf("truncation not logged with its reason: %+v", entries)
	}
	if ents, _ := os.ReadDir(dir); countSuffix(ents, logExt) != 2 {
		t.Fatalf("later segments not removed")
	}
	if res := appendOK(t, l, makeBatch(batchOpts{records: 1})); res.BaseOffset != second.base+4 {
		t.Fatalf("append at %d", res.BaseOffset)
	}
	if got := readAll(t, l); len(got) != int(second.base/2)+3 {
		t.Fatalf("%d batches readable", len(got))
	}
}

func countSuffix(ents []os.DirEntry, suffix string) int {
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			n++
		}
	}
	return n
}

func TestIndexRebuild(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 16 << 10
	for _, damage := range []string{"delete index", "delete timeindex", "zero index", "zero timeindex", "garbage index"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
			for i := 0; i < 100; i++ {
				appendOK(t, l, makeBatch(batchOpts{records: 5, valueSize: 30, ts: int64(10 * i)}))
			}
			wantEntries := l.segs[0].idx.entries
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			ext := indexExt
			if strings.HasSuffix(damage, "timeindex") {
				ext = timeIndexExt
			}
			path := segmentPath(dir, 0, ext)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case strings.HasPrefix(damage, "delete"):
				err = os.Remove(path)
			case strings.HasPrefix(damage, "zero"):
				err = os.WriteFile(path, make([]byte, fi.Size()), 0o644)
			default:
				err = os.WriteFile(path, bytes.Repeat([]byte{0xff, 0, 0, 1, 0, 0, 0, 9}, int(fi.Size())/8), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			lg, logs := observedLogger()
			l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{CleanShutdown: true, Logger: lg})
			defer l.Close()
			if logs.FilterMessage("rebuilding segment indexes").Len() != 1 {
				t.Fatalf("rebuild not logged")
			}
			if l.segs[0].idx.entries != wantEntries || wantEntries == 0 {
				t.Fatalf("rebuilt index has %d entries, want %d", l.segs[0].idx.entries, wantEntries)
			}
			for off := int64(0); off < l.HighWatermark(); off += 13 {
				res, err := l.Read(off, 1, true)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				_, _ = res.Chunk.WriteTo(&buf)
				res.Chunk.Release()
				if h := batch.DecodeHeader(buf.Bytes()); h.BaseOffset > off || h.LastOffset() < off {
					t.Fatalf("read %d got batch %d..%d", off, h.BaseOffset, h.LastOffset())
				}
			}
			if off, ts, ok := l.OffsetForTimestamp(500); !ok || off != 250 || ts != 500 {
				t.Fatalf("OffsetForTimestamp after rebuild: %d %d %v", off, ts, ok)
			}
		})
	}
}

// failingLog opens a log on an errorfs and appends two acknowledged batches.
func failingLog(t *testing.T, cfg Config) (*errorfs.FS, *Log, string, []byte) {
	dir := t.TempDir()
	efs := errorfs.Wrap(vfs.Default)
	l := openTestLog(t, efs, dir, cfg, OpenOptions{RecoveryPoint: -1})
	b := makeBatch(batchOpts{records: 3, valueSize: 50})
	appendOK(t, l, b)
	appendOK(t, l, b)
	return efs, l, dir, b
}

func TestInjectedFailures(t *testing.T) {
	flushEach := testConfig()
	flushEach.FlushIntervalMessages = 1
	cases := []struct {
		name  string
		cfg   Config
		fault func(b []byte) errorfs.Fault
	}{
		{"write error", testConfig(), func([]byte) errorfs.Fault {
			return errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: logExt}
		}},
		{"torn write", testConfig(), func(b []byte) errorfs.Fault {
			return errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: logExt, Torn: len(b) / 2}
		}},
		{"fsync error", flushEach, func([]byte) errorfs.Fault {
			return errorfs.Fault{Op: errorfs.OpSync, PathSuffix: logExt}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			efs, l, dir, b := failingLog(t, c.cfg)
			efs.Inject(c.fault(b))
			if res, err := leaderAppend(l, b, 0); err == nil {
				t.Fatalf("append succeeded despite the fault: %+v", res)
			}
			for i := 0; i < 3; i++ {
				if _, err := leaderAppend(l, b, 0); !errors.Is(err, kerr.KafkaStorageError) {
					t.Fatalf("append on failed log: %v", err)
				}
			}
			if l.HighWatermark() != 6 {
				t.Fatalf("HW %d moved past the acknowledged batches", l.HighWatermark())
			}
			if err := l.Close(); err == nil {
				t.Fatalf("Close of a failed log reported success")
			}
			efs.Clear()
			l = openTestLog(t, efs, dir, c.cfg, OpenOptions{RecoveryPoint: -1})
			defer l.Close()
			if got := readAll(t, l); len(got) != 2 || l.LogEndOffset() != 6 {
				t.Fatalf("after reopen: batches %v LEO %d", got, l.LogEndOffset())
			}
			if res := appendOK(t, l, b); res.BaseOffset != 6 {
				t.Fatalf("append after reopen at %d", res.BaseOffset)
			}
		})
	}
}

// A failure of the fsync that follows a roll fails the log too.
func TestRollFsyncFailure(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	efs, l, dir, b := failingLog(t, cfg)
	efs.Inject(errorfs.Fault{Op: errorfs.OpSync, PathSuffix: logExt})
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = leaderAppend(l, b, 0)
	}
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("roll fsync failure not reported: %v", err)
	}
	_ = l.Close()
	efs.Clear()
	l = openTestLog(t, efs, dir, cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	if got := readAll(t, l); int64(len(got))*3 != l.LogEndOffset() {
		t.Fatalf("batches %v LEO %d", got, l.LogEndOffset())
	}
}

func TestProducerStateSurvivesCrash(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	appendOK(t, l, makeBatch(batchOpts{records: 2, pid: 3, epoch: 0, seq: 0}))
	appendOK(t, l, makeBatch(batchOpts{records: 2, pid: 3, epoch: 0, seq: 2}))
	crash(l)
	l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	res := appendOK(t, l, makeBatch(batchOpts{records: 2, pid: 3, epoch: 0, seq: 2}))
	if !res.Duplicate || res.BaseOffset != 2 {
		t.Fatalf("retry after crash not detected as duplicate: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, leaderEpochCheckpointFile)); err != nil {
		t.Fatalf("epoch checkpoint: %v", err)
	}
}
