package storage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/memfs"
)

// The crash-point sweep (pebble's method): a deterministic workload of
// sweepAppends appends runs on memfs; at chosen mutating file-system
// operations k the state is frozen, and for each keep fraction and seed a
// power loss is simulated (memfs.Image.Crash: durable data plus a fraction
// of the unsynced 4 KiB blocks, unsynced directory entries reverted). Each
// image is recovered with OpenLog (RecoveryPoint -1, unclean) and must be a
// prefix of the appended batches, byte for byte, without holes, holding at
// least every batch below the recovery point (everything fsynced) at k; a
// second power loss right after recovery and a clean reopen give the same
// log.
//
// CI sweeps about sweepCIPoints operations per variant; STRATA_SWEEP=full
// sweeps every operation.

const (
	sweepAppends  = 1000
	sweepCIPoints = 16
	sweepDir      = "/data/sweep-0"
)

var (
	sweepKeeps = []float64{0, 0.1, 0.5}
	sweepSeeds = []int64{1, 2, 3}
)

func sweepFull() bool { return os.Getenv("STRATA_SWEEP") == "full" }

// sweepConfig rolls a segment every ~40 KiB, so sweepAppends appends
// (~170 KiB) give four or five rolls.
func sweepConfig(flushMessages int64) Config {
	c := DefaultConfig()
	c.SegmentBytes = 40 << 10
	c.IndexIntervalBytes = 512
	c.MaxIndexSize = 4096
	c.FlushIntervalMessages = flushMessages
	return c
}

// sweepBatch builds a real magic-2 batch with kmsg and CRC32C: records
// 1-4 records of 10-60 byte values, timestamps ts, ts+1, ...
func sweepBatch(rng *rand.Rand, ts int64) []byte { return sweepBatchSized(rng, ts, 10, 60) }

// sweepBatchSized is sweepBatch with values of minV-maxV bytes.
func sweepBatchSized(rng *rand.Rand, ts int64, minV, maxV int) []byte {
	n := 1 + rng.Intn(4)
	var recs []byte
	for i := 0; i < n; i++ {
		v := make([]byte, minV+rng.Intn(maxV-minV+1))
		rng.Read(v)
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("k%d", rng.Intn(100))), Value: v}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 encodes as one byte
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1),
		FirstTimestamp: ts, MaxTimestamp: ts + int64(n-1), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), Records: recs}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// sweepWorkload is the appended data: batch i unstamped, and as the log
// must hold it (base offset and leader epoch 0 stamped).
type sweepWorkload struct {
	raw     [][]byte
	stamped [][]byte
	next    []int64 // offset after batch i
}

func newSweepWorkload(seed int64, n int) *sweepWorkload {
	return newSweepWorkloadSized(seed, n, 10, 60)
}

func newSweepWorkloadSized(seed int64, n, minV, maxV int) *sweepWorkload {
	rng := rand.New(rand.NewSource(seed))
	w := &sweepWorkload{}
	off := int64(0)
	for i := 0; i < n; i++ {
		raw := sweepBatchSized(rng, 1_700_000_000_000+int64(i)*10, minV, maxV)
		st := append([]byte(nil), raw...)
		binary.BigEndian.PutUint64(st[0:], uint64(off))
		binary.BigEndian.PutUint32(st[12:], 0)
		off += int64(binary.BigEndian.Uint32(raw[57:]))
		w.raw, w.stamped, w.next = append(w.raw, raw), append(w.stamped, st), append(w.next, off)
	}
	return w
}

// covered is the number of batches wholly below offset.
func (w *sweepWorkload) covered(offset int64) int {
	n := 0
	for n < len(w.next) && w.next[n] <= offset {
		n++
	}
	return n
}

// sweepReadBatches reads every batch below the high watermark as raw bytes.
func sweepReadBatches(l *Log) ([][]byte, error) {
	var out [][]byte
	hw := l.HighWatermark()
	for off := l.LogStartOffset(); off < hw; {
		res, err := l.Read(off, 1<<20, true)
		if err != nil {
			return nil, fmt.Errorf("Read(%d): %w", off, err)
		}
		var buf bytes.Buffer
		_, err = res.Chunk.WriteTo(&buf)
		res.Chunk.Release()
		if err != nil {
			return nil, fmt.Errorf("Read(%d): %w", off, err)
		}
		b := buf.Bytes()
		if len(b) == 0 {
			return nil, fmt.Errorf("Read(%d) empty below HW %d", off, hw)
		}
		for len(b) > 0 {
			if len(b) < 61 {
				return nil, fmt.Errorf("Read(%d): %d trailing bytes", off, len(b))
			}
			size := int(binary.BigEndian.Uint32(b[8:])) + 12
			if size > len(b) {
				return nil, fmt.Errorf("Read(%d): batch of %d bytes, %d returned", off, size, len(b))
			}
			out = append(out, append([]byte(nil), b[:size]...))
			off = int64(binary.BigEndian.Uint64(b)) + int64(binary.BigEndian.Uint32(b[23:])) + 1
			b = b[size:]
		}
	}
	return out, nil
}

// sweepCheckPrefix checks that got is batches 0..len(got)-1 of the workload
// and that the log end offset matches.
func (w *sweepWorkload) checkPrefix(got [][]byte, leo int64) error {
	if len(got) > len(w.stamped) {
		return fmt.Errorf("%d batches recovered, %d appended", len(got), len(w.stamped))
	}
	for i, b := range got {
		if !bytes.Equal(b, w.stamped[i]) {
			return fmt.Errorf("batch %d (offset %d) differs from the appended one (hole or corruption)", i, binary.BigEndian.Uint64(b))
		}
	}
	want := int64(0)
	if len(got) > 0 {
		want = w.next[len(got)-1]
	}
	if leo != want {
		return fmt.Errorf("log end offset %d after %d batches ending at %d", leo, len(got), want)
	}
	return nil
}

func sweepOpen(fsys vfs.FS, cfg Config, opts OpenOptions) (*Log, error) {
	opts.Logger = zap.NewNop()
	return OpenLog(fsys, sweepDir, cfg, opts)
}

// sweepPoint is a frozen state: the image right after mutating operation k,
// the recovery point then and the number of appends acknowledged.
type sweepPoint struct {
	k             int64
	img           *memfs.Image
	recoveryPoint int64
	acked         int
}

type sweepStats struct {
	points, recoveries, lostUnsynced, rolls int
	ops                                     int64
	minKept, maxKept                        int
}

// runSweepWorkload opens a log on a fresh memfs, appends every batch and
// closes it; at each operation in want (nil: none) it freezes a point and
// hands it to visit after the Append (or Close) in progress returns.
func runSweepWorkload(t *testing.T, w *sweepWorkload, cfg Config, want map[int64]bool, visit func(sweepPoint)) (ops int64, segments int) {
	t.Helper()
	fsys, err := memfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fsys.Release() }()
	var l *Log
	acked := 0
	var pending []sweepPoint
	fsys.SetHook(func(n int64, op memfs.Op, name string, snapshot func() *memfs.Image) {
		if !want[n] {
			return
		}
		rp := int64(0)
		if l != nil {
			rp = l.RecoveryPoint()
		}
		pending = append(pending, sweepPoint{k: n, img: snapshot(), recoveryPoint: rp, acked: acked})
	})
	drain := func() {
		for _, p := range pending {
			visit(p)
		}
		pending = nil
	}
	if err := fsys.MkdirAll(filepath.Dir(sweepDir), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err = sweepOpen(fsys, cfg, OpenOptions{RecoveryPoint: -1})
	if err != nil {
		t.Fatal(err)
	}
	drain()
	for i, raw := range w.raw {
		res, err := leaderAppend(l, append([]byte(nil), raw...), 0)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if want := w.next[i] - int64(binary.BigEndian.Uint32(raw[57:])); res.BaseOffset != want {
			t.Fatalf("append %d at offset %d, want %d", i, res.BaseOffset, want)
		}
		acked++
		drain()
	}
	ents, err := fsys.ReadDir(sweepDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), logExt) {
			segments++
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	drain()
	fsys.SetHook(nil)
	return fsys.Ops(), segments
}

// recoverPoint simulates one power loss at p and checks the recovered log.
func recoverPoint(t *testing.T, w *sweepWorkload, cfg Config, p sweepPoint, keep float64, seed int64) (kept int, err error) {
	rng := rand.New(rand.NewSource(seed*1_000_003 + p.k))
	tmp := ""
	fs1, err := p.img.Crash(keep, rng, tmp)
	if err != nil {
		return 0, err
	}
	defer func() { _ = fs1.Release() }()
	l1, err := sweepOpen(fs1, cfg, OpenOptions{RecoveryPoint: -1})
	if err != nil {
		return 0, fmt.Errorf("recovery failed: %w", err)
	}
	got1, err := sweepReadBatches(l1)
	if err == nil {
		err = w.checkPrefix(got1, l1.LogEndOffset())
	}
	if err != nil {
		_ = l1.Close()
		return 0, err
	}
	if need := w.covered(p.recoveryPoint); len(got1) < need {
		_ = l1.Close()
		return 0, fmt.Errorf("lost fsynced data: %d batches recovered, %d were below recovery point %d", len(got1), need, p.recoveryPoint)
	}
	leo := l1.LogEndOffset()

	// A second power loss right after recovery (nothing unsynced kept)
	// must not change the result: recovery made what it kept durable.
	fs2, err := fs1.Crash(0, rng, tmp)
	_ = l1.Close()
	if err != nil {
		return 0, err
	}
	defer func() { _ = fs2.Release() }()
	for _, opts := range []OpenOptions{{RecoveryPoint: -1}, {RecoveryPoint: leo, CleanShutdown: true}} {
		l2, err := sweepOpen(fs2, cfg, opts)
		if err != nil {
			return 0, fmt.Errorf("reopen %+v: %w", opts, err)
		}
		got2, err := sweepReadBatches(l2)
		if err == nil && (len(got2) != len(got1) || l2.LogEndOffset() != leo) {
			err = fmt.Errorf("reopen %+v: %d batches, LEO %d; first recovery %d batches, LEO %d", opts, len(got2), l2.LogEndOffset(), len(got1), leo)
		}
		if err == nil {
			err = w.checkPrefix(got2, l2.LogEndOffset())
		}
		if cerr := l2.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close after reopen %+v: %w", opts, cerr)
		}
		if err != nil {
			return 0, err
		}
	}
	return len(got1), nil
}

// sweepPoints picks the operations to crash at: every one in a full sweep,
// else about sweepCIPoints spread over [1, total] with a deterministic
// jitter so they do not fall in step with the workload's period.
func sweepPoints(total int64) map[int64]bool {
	want := map[int64]bool{}
	if sweepFull() {
		for k := int64(1); k <= total; k++ {
			want[k] = true
		}
		return want
	}
	stride := max(total/sweepCIPoints, 1)
	for i := int64(0); i*stride < total; i++ {
		want[min(1+i*stride+(i*7919)%stride, total)] = true
	}
	return want
}

func TestCrashPointSweep(t *testing.T) {
	for _, v := range []struct {
		name  string
		flush int64
	}{
		{"flush.messages=100", 100},
		{"flush.messages=1", 1},
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := sweepConfig(v.flush)
			w := newSweepWorkload(42, sweepAppends)
			total, segments := runSweepWorkload(t, w, cfg, nil, nil)
			if segments < 4 {
				t.Fatalf("workload made %d segments, want >= 4 (3 rolls)", segments)
			}
			st := sweepStats{ops: total, rolls: segments - 1, minKept: sweepAppends}
			var failures []string
			runSweepWorkload(t, w, cfg, sweepPoints(total), func(p sweepPoint) {
				st.points++
				for _, keep := range sweepKeeps {
					for _, seed := range sweepSeeds {
						st.recoveries++
						kept, err := recoverPoint(t, w, cfg, p, keep, seed)
						if err != nil {
							failures = append(failures, fmt.Sprintf("op %d keep %.1f seed %d (acked %d, recovery point %d): %v", p.k, keep, seed, p.acked, p.recoveryPoint, err))
							continue
						}
						if kept < p.acked {
							st.lostUnsynced++
						}
						st.minKept, st.maxKept = min(st.minKept, kept), max(st.maxKept, kept)
					}
				}
			})
			for i, f := range failures {
				if i == 20 {
					t.Errorf("... and %d more", len(failures)-20)
					break
				}
				t.Error(f)
			}
			t.Logf("%s: %d mutating ops, %d rolls; crashed at %d ops x %d keep fractions x %d seeds = %d recoveries, %d failed; "+
				"%d recoveries lost acknowledged but unsynced appends (allowed)",
				v.name, st.ops, st.rolls, st.points, len(sweepKeeps), len(sweepSeeds), st.recoveries, len(failures), st.lostUnsynced)
			if v.flush == 1 && st.lostUnsynced > 0 {
				// With an fsync per append only the append in flight may
				// be missing: acked counts appends that returned.
				t.Errorf("flush.messages=1 lost acknowledged appends in %d recoveries", st.lostUnsynced)
			}
		})
	}
}

// TestCrashHolesInsideBatches aims the block model at what only the CRC
// catches: batches of several KiB span 4 KiB blocks, nothing is fsynced
// after the first append, and half the unsynced blocks survive, so a batch
// often keeps its header and loses a block in its middle (zeros) while a
// later block survives. Recovery must cut the log before such a batch.
func TestCrashHolesInsideBatches(t *testing.T) {
	cfg := sweepConfig(1 << 40)
	cfg.SegmentBytes = 1 << 20
	w := newSweepWorkloadSized(9, 24, 500, 2500)
	last := int64(-1)
	recoveries, truncated := 0, 0
	total, _ := runSweepWorkload(t, w, cfg, nil, nil)
	want := map[int64]bool{}
	for k := total / 2; k <= total; k += max(total/8, 1) {
		want[k] = true
	}
	runSweepWorkload(t, w, cfg, want, func(p sweepPoint) {
		last = p.k
		for seed := int64(1); seed <= 25; seed++ {
			recoveries++
			kept, err := recoverPoint(t, w, cfg, p, 0.5, seed)
			if err != nil {
				t.Errorf("op %d seed %d: %v", p.k, seed, err)
			}
			if kept < p.acked {
				truncated++
			}
		}
	})
	if last < 0 {
		t.Fatal("no crash point was visited")
	}
	t.Logf("%d recoveries, %d lost unsynced appends", recoveries, truncated)
}

// TestCrashHaltedMachine crashes the way a dying machine does: memfs
// HaltAfter(k) lets operation k complete and fails every later one, so the
// log runs its failure path (fail, the cut of unacknowledged bytes, Close)
// against a dead file system. The image frozen at k must recover like any
// other: a byte-identical prefix holding everything below the recovery
// point the log reported before the halt.
func TestCrashHaltedMachine(t *testing.T) {
	cfg := sweepConfig(7)
	w := newSweepWorkload(11, 150)
	cfg.SegmentBytes = 8 << 10
	total, _ := runSweepWorkload(t, w, cfg, nil, nil)
	points := 0
	for k := int64(1); k <= total; k += max(total/12, 1) {
		fsys, err := memfs.New("")
		if err != nil {
			t.Fatal(err)
		}
		fsys.HaltAfter(k)
		if err := fsys.MkdirAll(filepath.Dir(sweepDir), 0o755); err != nil && k > 1 {
			t.Fatal(err)
		}
		acked, rp := 0, int64(0)
		if l, err := sweepOpen(fsys, cfg, OpenOptions{RecoveryPoint: -1}); err == nil {
			for _, raw := range w.raw {
				if _, err := leaderAppend(l, append([]byte(nil), raw...), 0); err != nil {
					break
				}
				acked++
				rp = l.RecoveryPoint()
			}
			haltedBefore := fsys.Halted() != nil
			if err := l.Close(); err == nil && haltedBefore {
				t.Errorf("op %d: Close succeeded on a halted file system", k)
			}
		}
		img := fsys.Halted()
		_ = fsys.Release()
		if img == nil {
			continue // the workload needed fewer operations this time
		}
		points++
		for _, keep := range sweepKeeps {
			if _, err := recoverPoint(t, w, cfg, sweepPoint{k: k, img: img, recoveryPoint: rp, acked: acked}, keep, 1); err != nil {
				t.Errorf("halt after op %d keep %.1f (acked %d, recovery point %d): %v", k, keep, acked, rp, err)
			}
		}
	}
	if points == 0 {
		t.Fatal("no halt point fired")
	}
	t.Logf("%d of %d operations: halted and recovered", points, total)
}
