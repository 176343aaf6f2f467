package storage

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/vfs/errorfs"
	"github.com/strata-io/strata/storage/vfs/memfs"
)

// The error sweep: the workload (open, appends across several rolls,
// close) runs on errorfs over memfs once to count its file-system
// operations of each kind; then, for every kind and every n up to that
// count, it runs again with exactly the n-th operation of that kind failing
// (writes torn after a varying number of bytes). Together the runs fail
// every single operation of the workload once. In each run:
//   - an Append that returned success is never lost: the log reopened on
//     the underlying file system (a process crash keeps the page cache)
//     holds every acknowledged batch, and is a prefix of the appended ones;
//   - once an Append failed, the log refuses further appends with
//     KAFKA_STORAGE_ERROR until it is reopened.
//
// CI runs errSweepCIAppends appends on small segments; STRATA_SWEEP=full
// runs the crash sweep's 1,000-append workload.

const errSweepCIAppends = 120

var errSweepOps = []errorfs.Op{errorfs.OpOpen, errorfs.OpRead, errorfs.OpWrite, errorfs.OpSync,
	errorfs.OpTruncate, errorfs.OpRemove, errorfs.OpRename, errorfs.OpSyncDir}

type errSweepResult struct {
	acked      int   // appends that returned success
	failedAt   int   // index of the first failed append, -1 if none
	openErr    error // OpenLog failed
	closeErr   error
	refusedErr error // the append tried after the first failure
	appendErr  error // the first failure
}

// runErrSweep runs the workload on a fresh memfs through errorfs with the
// given fault (nil: none) and returns what happened, the underlying FS and
// the operation counts.
func runErrSweep(t *testing.T, w *sweepWorkload, cfg Config, fault *errorfs.Fault) (errSweepResult, *memfs.FS, map[errorfs.Op]int) {
	t.Helper()
	base, err := memfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Release() })
	efs := errorfs.Wrap(base)
	if fault != nil {
		efs.Inject(*fault)
	}
	r := errSweepResult{failedAt: -1}
	counts := func() map[errorfs.Op]int {
		m := map[errorfs.Op]int{}
		for _, op := range errSweepOps {
			m[op] = efs.Count(op)
		}
		return m
	}
	l, err := sweepOpen(efs, cfg, OpenOptions{RecoveryPoint: -1})
	if err != nil {
		r.openErr = err
		return r, base, counts()
	}
	for i, raw := range w.raw {
		if _, err := leaderAppend(l, append([]byte(nil), raw...), 0); err != nil {
			r.failedAt, r.appendErr = i, err
			_, r.refusedErr = leaderAppend(l, append([]byte(nil), w.raw[min(i+1, len(w.raw)-1)]...), 0)
			break
		}
		r.acked++
	}
	r.closeErr = l.Close()
	return r, base, counts()
}

// checkErrSweep reopens the underlying FS and checks the properties.
func checkErrSweep(w *sweepWorkload, cfg Config, r errSweepResult, base *memfs.FS) error {
	if r.failedAt >= 0 {
		if !errors.Is(r.appendErr, kerr.KafkaStorageError) {
			return fmt.Errorf("append %d failed with %v, not KAFKA_STORAGE_ERROR", r.failedAt, r.appendErr)
		}
		if !errors.Is(r.refusedErr, kerr.KafkaStorageError) {
			return fmt.Errorf("append after the failed append %d: %v, want KAFKA_STORAGE_ERROR", r.failedAt, r.refusedErr)
		}
	}
	l, err := sweepOpen(base, cfg, OpenOptions{RecoveryPoint: -1})
	if err != nil {
		return fmt.Errorf("reopen on the underlying FS: %w", err)
	}
	defer func() { _ = l.Close() }()
	got, err := sweepReadBatches(l)
	if err != nil {
		return fmt.Errorf("after reopen: %w", err)
	}
	if err := w.checkPrefix(got, l.LogEndOffset()); err != nil {
		return fmt.Errorf("after reopen: %w", err)
	}
	if len(got) < r.acked {
		return fmt.Errorf("acknowledged appends lost: %d acknowledged, %d batches after reopen", r.acked, len(got))
	}
	// The reopened log takes writes again, at its end.
	leo := l.LogEndOffset()
	if res, err := leaderAppend(l, append([]byte(nil), w.raw[0]...), 0); err != nil || res.BaseOffset != leo {
		return fmt.Errorf("append after reopen at LEO %d: %+v %v", leo, res, err)
	}
	return nil
}

func TestErrorSweep(t *testing.T) {
	n, seg := errSweepCIAppends, int64(4<<10)
	if sweepFull() {
		n, seg = sweepAppends, 40<<10
	}
	for _, flush := range []int64{10, 1} {
		t.Run(fmt.Sprintf("flush.messages=%d", flush), func(t *testing.T) {
			cfg := sweepConfig(flush)
			cfg.SegmentBytes = seg
			w := newSweepWorkload(7, n)
			clean, base, total := runErrSweep(t, w, cfg, nil)
			if clean.openErr != nil || clean.failedAt >= 0 || clean.closeErr != nil {
				t.Fatalf("workload without faults: %+v", clean)
			}
			if err := checkErrSweep(w, cfg, clean, base); err != nil {
				t.Fatalf("workload without faults: %v", err)
			}
			_ = base.Release()
			runs, failedAppends, failedOpens, failedCloses, absorbed := 0, 0, 0, 0, 0
			var failures []string
			for _, op := range errSweepOps {
				for nth := 1; nth <= total[op]; nth++ {
					f := errorfs.Fault{Op: op, Nth: nth}
					if op == errorfs.OpWrite {
						f.Torn = (nth * 37) % 200
					}
					r, base, after := runErrSweep(t, w, cfg, &f)
					runs++
					if after[op] < nth {
						failures = append(failures, fmt.Sprintf("%s #%d: the fault never fired (%d ops)", op, nth, after[op]))
					}
					switch {
					case r.openErr != nil:
						failedOpens++
					case r.failedAt >= 0:
						failedAppends++
					case r.closeErr != nil:
						failedCloses++
					default:
						absorbed++
					}
					if err := checkErrSweep(w, cfg, r, base); err != nil {
						failures = append(failures, fmt.Sprintf("%s #%d (torn %d): %v", op, nth, f.Torn, err))
					}
					_ = base.Release()
				}
			}
			// One past the end: the workload completes without the fault.
			for _, op := range errSweepOps {
				r, base, _ := runErrSweep(t, w, cfg, &errorfs.Fault{Op: op, Nth: total[op] + 1})
				if r.openErr != nil || r.failedAt >= 0 || r.closeErr != nil {
					failures = append(failures, fmt.Sprintf("%s #%d (past the end) still failed: %+v", op, total[op]+1, r))
				}
				_ = base.Release()
			}
			for i, f := range failures {
				if i == 20 {
					t.Errorf("... and %d more", len(failures)-20)
					break
				}
				t.Error(f)
			}
			sum := 0
			for _, c := range total {
				sum += c
			}
			t.Logf("flush.messages=%d, %d appends: %d operations %v; %d fault runs: %d failed an append, %d failed the open, %d failed only the close, %d absorbed; %d violations",
				flush, n, sum, total, runs, failedAppends, failedOpens, failedCloses, absorbed, len(failures))
		})
	}
}

// TestRecoveryErrorSweep fails, one at a time, every file-system
// operation of a recovery: a log written without Close (a process crash)
// and with a torn batch at its end is reopened through errorfs with the
// n-th operation of one kind failing. Whether that OpenLog fails or not, a
// later OpenLog without faults must find every acknowledged batch, as a
// byte-identical prefix, and reopening must be stable.
func TestRecoveryErrorSweep(t *testing.T) {
	cfg := sweepConfig(10)
	cfg.SegmentBytes = 4 << 10
	w := newSweepWorkload(13, 80)
	acked := len(w.raw) - 1

	// build returns a memfs holding the crashed log: all but the last
	// batch appended, the last one torn in half, no Close.
	build := func() *memfs.FS {
		fsys, err := memfs.New("")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fsys.Release() })
		l, err := sweepOpen(fsys, cfg, OpenOptions{RecoveryPoint: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range w.raw[:acked] {
			if _, err := leaderAppend(l, append([]byte(nil), raw...), 0); err != nil {
				t.Fatal(err)
			}
		}
		bases, err := listSegments(fsys, sweepDir)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fsys.OpenFile(segmentPath(sweepDir, bases[len(bases)-1], logExt), os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		last := w.stamped[acked]
		if _, err := f.Write(last[:len(last)/2]); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
		return fsys // l is abandoned, as by a killed process
	}

	counter := errorfs.Wrap(build())
	l, err := sweepOpen(counter, cfg, OpenOptions{RecoveryPoint: -1})
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	total := map[errorfs.Op]int{}
	sum := 0
	for _, op := range errSweepOps {
		total[op] = counter.Count(op)
		sum += total[op]
	}

	runs, openFailed := 0, 0
	for _, op := range errSweepOps {
		for nth := 1; nth <= total[op]; nth++ {
			base := build()
			efs := errorfs.Wrap(base)
			efs.Inject(errorfs.Fault{Op: op, Nth: nth, Torn: nth % 7})
			runs++
			if l, err := sweepOpen(efs, cfg, OpenOptions{RecoveryPoint: -1}); err != nil {
				openFailed++
			} else {
				_ = l.Close()
			}
			for reopen := 0; reopen < 2; reopen++ {
				l, err := sweepOpen(base, cfg, OpenOptions{RecoveryPoint: -1})
				if err != nil {
					t.Fatalf("%s #%d: reopen %d without faults: %v", op, nth, reopen, err)
				}
				got, err := sweepReadBatches(l)
				if err == nil {
					err = w.checkPrefix(got, l.LogEndOffset())
				}
				if err == nil && len(got) != acked {
					err = fmt.Errorf("%d batches, want the %d acknowledged", len(got), acked)
				}
				_ = l.Close()
				if err != nil {
					t.Errorf("%s #%d: reopen %d: %v", op, nth, reopen, err)
				}
			}
			_ = base.Release()
		}
	}
	t.Logf("recovery: %d operations %v; %d fault runs, %d failed the open", sum, total, runs, openFailed)
}

// TestRecoveryReadErrorKeepsData is the reproducer of a fixed defect: three fsynced
// batches, an unclean reopen whose first read of the .log fails, then a
// reopen without faults.
func TestRecoveryReadErrorKeepsData(t *testing.T) {
	base, err := memfs.New("")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = base.Release() }()
	w := newSweepWorkload(3, 3)
	cfg := sweepConfig(1)
	l, err := sweepOpen(base, cfg, OpenOptions{RecoveryPoint: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range w.raw {
		if _, err := leaderAppend(l, append([]byte(nil), raw...), 0); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()

	efs := errorfs.Wrap(base)
	efs.Inject(errorfs.Fault{Op: errorfs.OpRead, PathSuffix: logExt, Nth: 1, Err: errors.New("EIO")})
	faulty, err := sweepOpen(efs, cfg, OpenOptions{RecoveryPoint: -1})
	if err == nil {
		t.Logf("OpenLog with a failing read succeeded, log end offset %d", faulty.LogEndOffset())
		_ = faulty.Close()
	}
	l, err = sweepOpen(base, cfg, OpenOptions{RecoveryPoint: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	got, err := sweepReadBatches(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(w.raw) {
		t.Fatalf("after a read error during recovery %d of %d fsynced batches remain", len(got), len(w.raw))
	}
}
