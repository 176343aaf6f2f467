package storage

// Reviving a failed log.
//
// A write, fsync or truncate error fails the log (Log.fail): it refuses
// writes, and what it had not acknowledged is cut. The failure is often
// passing, a full disk above all, so the log does not wait for a restart:
// once the Manager sees that a write in the log dir succeeds again, Revive
// closes the log's files and runs its recovery again from the last fsynced
// offset, as a restart would, and the log takes writes again. Recovery drops
// only bytes that were never acknowledged (fail cut the acknowledged end),
// and the report says what it dropped. Until then the failed log still
// serves reads, and retention and DeleteRecords still delete its closed
// segments, so an operator can free space on it.

import (
	"fmt"
	"slices"
)

// Failed returns the error that failed the log, nil while it is healthy.
func (l *Log) Failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// isDoomed reports whether path is a renamed segment file awaiting removal.
// Caller holds mu, or owns the log before it is published.
func (l *Log) isDoomed(path string) bool {
	for _, d := range l.doomed {
		if slices.Contains(d.paths, path) {
			return true
		}
	}
	return false
}

// Revive recovers a failed log in place: it closes its segments, runs
// recovery on the directory from the last fsynced offset and, if that
// succeeds, serves the recovered log. If recovery fails too, the log stays
// failed and goes offline (reads fail as well) until a later Revive
// succeeds. A healthy or closed log is left alone (nil report, nil error).
func (l *Log) Revive() (*RecoveryReport, error) {
	if l.closing.Load() {
		return nil, nil
	}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil || l.closing.Load() {
		return nil, nil
	}
	for _, s := range l.segs {
		s.closeAll()
	}
	fresh := &Log{fsys: l.fsys, dir: l.dir, cfg: l.cfg, logger: l.logger, clock: l.clock, now: l.now, doomed: l.doomed, events: l.events}
	fresh.lastFlush = l.now()
	opts := OpenOptions{RecoveryPoint: l.flushed.Load(), LogStartOffset: l.logStart, FirstDirtyOffset: l.firstDirty}
	if err := fresh.load(opts); err != nil {
		for _, s := range fresh.segs {
			s.closeAll()
		}
		l.closed = true // offline: the segments behind l.segs are closed
		return nil, fmt.Errorf("revive log %s: %w", l.dir, err)
	}
	for _, s := range fresh.segs {
		s.cfg = &l.cfg // recovery built them on fresh's copy; SetConfig changes l's
	}
	l.segs, l.logStart, l.firstDirty, l.tombstoneHorizon = fresh.segs, fresh.logStart, fresh.firstDirty, fresh.tombstoneHorizon
	l.producers, l.aborted, l.epochs, l.recovery = fresh.producers, fresh.aborted, fresh.epochs, fresh.recovery
	l.flushedPos, l.dirDirty, l.unflushedMsgs, l.lastFlush = fresh.flushedPos, fresh.dirDirty, 0, fresh.lastFlush
	l.flushed.Store(fresh.flushed.Load())
	l.failed, l.closed = nil, false
	l.forgetEnds()
	l.hw = logPos{} // advanceHW only moves forward; recovery may have cut a torn tail
	l.advanceHW(fresh.hw)
	r := l.recovery
	call(l.events.OnLogRevived, LogRevivalInfo{LogInfo{Dir: l.dir}, l.active().next, r})
	return &r, nil
}
