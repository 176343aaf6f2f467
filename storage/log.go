package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs"
)

// OpenOptions tells OpenLog what the caller knows about the previous run.
type OpenOptions struct {
	Logger        *zap.Logger
	RecoveryPoint int64 // offset up to which the log is known flushed; -1 = unknown (scan all)
	CleanShutdown bool  // trust indexes
	// LogStartOffset is the checkpointed log start offset (0 = none): the
	// log starts at max(first segment base, LogStartOffset), clamped to the
	// log end offset, so a start inside a segment survives restarts.
	LogStartOffset int64
	// FirstDirtyOffset is the checkpointed cleaner position
	// (cleaner-offset-checkpoint) of a compacted log; 0 = clean from the start.
	FirstDirtyOffset int64
	// Clock is the log's clock (retention, segment.ms, flush.ms, timestamp
	// bounds); nil = the real one.
	Clock clockwork.Clock
	// Events is told of the log's recovery truncations, rolls, failure,
	// revival, deleted segments, cleanings and fsyncs; nil =
	// LoggingListener(Logger).
	Events *EventListener
}

// AppendResult describes a successful Append.
type AppendResult struct {
	BaseOffset     int64 // offset of the first record (the original one for a duplicate)
	LogAppendTime  int64 // -1 (CreateTime)
	LogStartOffset int64
	Duplicate      bool
	// EndOffset is the log end offset right after this append (the offset
	// after its last record), to which the replica layer moves the high
	// watermark; for a duplicate, the original's is not known and it is 0.
	EndOffset int64
}

// logPos is an offset with the byte position where its batch starts, so a
// read can stop at the high watermark without scanning (Kafka's
// LogOffsetMetadata).
type logPos struct {
	offset  int64
	segBase int64
	pos     int64
}

// Log is one partition's log: an ordered list of segments, the last one
// active. All methods are safe for concurrent use; one mutex per Log guards
// the segments, offsets, producer state and epochs, and a second one
// (flushMu) serialises fsyncs so concurrent appenders share them.
type Log struct {
	fsys   vfs.FS
	dir    string
	cfg    Config
	logger *zap.Logger
	clock  clockwork.Clock
	now    func() time.Time // clock.Now
	// msClock is the clock in ms as the last timestamp check read it.
	msClock atomic.Int64

	mu            sync.Mutex
	segs          []*segment
	logStart      int64
	hw            logPos
	ends          [recentEnds]logPos // where the last appends ended (log_hw.go)
	endsNext      int
	waitCh        chan struct{}
	failed        error // first write/fsync/truncate failure; refuses all writes
	recovery      RecoveryReport
	closed        bool
	producers     *producerStates
	aborted       []abortedTxn // aborted-transaction index of all segments, by marker offset
	epochs        []epochEntry
	unflushedMsgs int64
	lastFlush     time.Time
	dirDirty      bool // segment files created or removed since the last fsync

	flushMu    sync.Mutex
	flushed    atomic.Int64 // recovery point: everything below is fsynced
	flushedPos logPos       // where flushed is in the log; guarded by mu

	stopFlusher chan struct{}
	flusherDone chan struct{}

	// Compaction (cleaner.go): cleanMu is held by a running Clean, closing
	// aborts it; firstDirty and tombstoneHorizon are guarded by mu.
	cleanMu          sync.Mutex
	closing          atomic.Bool
	firstDirty       int64
	tombstoneHorizon int64 // earliest delete horizon of kept tombstones (ms), 0 = none

	// Retention (retention.go): cfgView is cfg for the reads Append makes
	// before taking mu; doomed lists renamed segment files awaiting removal
	// (guarded by mu).
	cfgView atomic.Pointer[Config]
	doomed  []doomedFiles
	events  EventListener
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// fail moves the log into the failed state and logs the reason once. It
// then cuts the active segment back to what was acknowledged (the high
// watermark, or the last successful fsync if that is further), so bytes of a
// torn write or of appends whose required fsync failed are not resurrected
// by recovery. Caller holds l.mu.
func (l *Log) fail(err error) {
	if l.failed != nil {
		return
	}
	l.failed = err
	call(l.events.OnLogFailed, LogFailureInfo{LogInfo{Dir: l.dir}, err})
	s := l.active()
	if !s.active {
		return
	}
	keep := int64(0)
	for _, p := range []logPos{l.hw, l.flushedPos} {
		if p.segBase == s.base {
			keep = max(keep, p.pos)
		}
	}
	if terr := s.file.f.Truncate(keep); terr != nil {
		l.logger.Error("cannot cut unacknowledged bytes from the failed log; recovery will keep them if they are whole batches",
			zap.String("dir", l.dir), zap.Int64("segment", s.base), zap.Int64("keep", keep), zap.Error(terr))
	}
}

func (l *Log) storageError() error {
	return fmt.Errorf("log %s failed: %w: %w", l.dir, l.failed, kerr.KafkaStorageError)
}

var errLogClosed = errors.New("log closed")

// writable returns the error Append reports when the log refuses writes.
func (l *Log) writable() error {
	if l.failed != nil {
		return l.storageError()
	}
	if l.closed {
		return fmt.Errorf("log %s: %w: %w", l.dir, errLogClosed, kerr.KafkaStorageError)
	}
	return nil
}

// Append validates the produce payload (one or more magic-2 batches),
// checks idempotent sequences, stamps base offsets and the partition leader
// epoch, writes it with one write, fsyncs if the flush policy says so
// (sharing the fsync with concurrent appenders), and advances the log end
// offset. The high watermark stays: the replica layer moves it
// (AdvanceHighWatermark). Nothing is written on a validation error.
func (l *Log) Append(records []byte, leaderEpoch int32) (AppendResult, error) {
	view := l.cfgView.Load()
	hdrs, err := validateBatches(records, view.MaxMessageBytes)
	if err != nil {
		return AppendResult{}, err
	}
	if view.CheckTimestamps {
		if err := l.checkTimestamps(hdrs, view.TimestampBeforeMaxMs, view.TimestampAfterMaxMs); err != nil {
			return AppendResult{}, err
		}
	}
	if view.Compact {
		var keyless []RecordError
		for i, pos := range batchPositions(hdrs) {
			errs, err := checkKeyed(&hdrs[i], records[pos:pos+int(hdrs[i].Size())], filepath.Base(l.dir))
			if err != nil {
				return AppendResult{}, err
			}
			keyless = append(keyless, errs...)
		}
		if len(keyless) > 0 {
			return AppendResult{}, &RecordValidationError{Records: keyless}
		}
	}
	return l.appendBatches(records, hdrs, leaderEpoch, originClient)
}

// appendOrigin says who wrote a batch, as Kafka's AppendOrigin: sequence
// numbers are checked only for clients; the coordinators write their own
// transactional batches (offset commits) and markers.
type appendOrigin int

const (
	originClient appendOrigin = iota
	originCoordinator
)

// AppendCoordinator appends a validated payload written by a coordinator
// (transactional offset commits to __consumer_offsets): as Append, but a
// producer's sequence numbers are not checked, only its epoch.
func (l *Log) AppendCoordinator(records []byte, leaderEpoch int32) (AppendResult, error) {
	hdrs, err := validateBatches(records, l.cfgView.Load().MaxMessageBytes)
	if err != nil {
		return AppendResult{}, err
	}
	return l.appendBatches(records, hdrs, leaderEpoch, originCoordinator)
}

// appendBatches checks producer state, stamps, writes and indexes hdrs'
// batches (records).
func (l *Log) appendBatches(records []byte, hdrs []batch.Header, leaderEpoch int32, origin appendOrigin) (AppendResult, error) {
	idempotent := false
	for i := range hdrs {
		if hdrs[i].ProducerID >= 0 {
			idempotent = true
		}
	}
	if idempotent && len(hdrs) > 1 {
		// Kafka allows exactly one batch per partition in a produce request;
		// an idempotent check of several would need a speculative state.
		return AppendResult{}, fmt.Errorf("idempotent produce with %d batches: %w", len(hdrs), kerr.InvalidRecord)
	}
	control := hdrs[0].Control()

	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return AppendResult{}, err
	}
	base := l.active().next
	if idempotent && !control {
		m := metaOf(&hdrs[0])
		m.BaseOffset = base
		var (
			dupBase int64
			dup     bool
			err     error
		)
		if origin == originClient {
			dupBase, dup, err = l.producers.check(m)
		} else if e, ok := l.producers.entries[m.ProducerID]; ok && m.ProducerEpoch < e.Epoch {
			err = fmt.Errorf("producer %d: epoch %d is older than current epoch %d: %w", m.ProducerID, m.ProducerEpoch, e.Epoch, kerr.InvalidProducerEpoch)
		}
		if err != nil || dup {
			res := AppendResult{BaseOffset: dupBase, LogAppendTime: -1, LogStartOffset: l.logStart, Duplicate: dup}
			l.mu.Unlock()
			if err != nil {
				return AppendResult{}, err
			}
			return res, nil
		}
	}

	now := l.now()
	next, maxTs, msgs := base, int64(-1), int64(0)
	for i, pos := range batchPositions(hdrs) {
		stampBatch(records[pos:], next, leaderEpoch)
		hdrs[i].BaseOffset, hdrs[i].PartitionLeaderEpoch = next, leaderEpoch
		next = hdrs[i].NextOffset()
		maxTs = max(maxTs, hdrs[i].MaxTimestamp)
		msgs += int64(hdrs[i].RecordCount)
	}
	seg, rolledTo, err := l.writeLocked(records, hdrs, base, next, maxTs, now)
	if err != nil {
		return AppendResult{}, l.failUnlock(err)
	}
	switch {
	case control:
		if err := l.onControlAppended(&hdrs[0], records); err != nil {
			return AppendResult{}, l.failUnlock(err)
		}
	case idempotent:
		m := metaOf(&hdrs[0])
		l.producers.update(m)
	}
	if err := l.assignEpoch(leaderEpoch, base); err != nil {
		return AppendResult{}, l.failUnlock(err)
	}
	return l.finishAppend(seg, base, next, msgs, rolledTo, now)
}

// writeLocked writes batches [base, next) to the active segment, rolling a
// new one first when they call for it (rolledTo is then the old segment's
// end, base; else -1). Caller holds l.mu; an error is a file error, for
// failUnlock.
func (l *Log) writeLocked(records []byte, hdrs []batch.Header, base, next, maxTs int64, now time.Time) (seg *segment, rolledTo int64, err error) {
	rolledTo = -1
	if l.active().shouldRoll(int64(len(records)), len(hdrs), maxTs, next-1, now) {
		if err := l.roll(now); err != nil {
			return nil, -1, err
		}
		rolledTo = base
	}
	seg = l.active()
	return seg, rolledTo, seg.append(records, hdrs)
}

// finishAppend ends an append of msgs records at [base, next) in seg: it
// notes the new log end, releases l.mu (held by the caller) and fsyncs what
// the flush policy asks for.
func (l *Log) finishAppend(seg *segment, base, next, msgs, rolledTo int64, now time.Time) (AppendResult, error) {
	l.unflushedMsgs += msgs
	l.noteEnd(logPos{offset: next, segBase: seg.base, pos: seg.size})
	needFlush := l.unflushedMsgs >= l.cfg.FlushIntervalMessages ||
		now.Sub(l.lastFlush).Milliseconds() >= l.cfg.FlushIntervalMs
	res := AppendResult{BaseOffset: base, LogAppendTime: -1, LogStartOffset: l.logStart, EndOffset: next}
	l.mu.Unlock()
	if err := l.flushAfterAppend(next, rolledTo, needFlush); err != nil {
		return AppendResult{}, err
	}
	return res, nil
}

// failUnlock fails the log for err, releases l.mu (held by the caller) and
// returns the error an append answers with.
func (l *Log) failUnlock(err error) error {
	l.fail(err)
	err = l.storageError()
	l.mu.Unlock()
	return err
}

// flushAfterAppend fsyncs what an append ending at next needs: all of it
// when the flush policy says so (needFlush), else the segment it rolled
// away from (rolledTo >= 0), as Kafka flushes a segment once it becomes
// inactive, which is what lets the recovery point move past it.
func (l *Log) flushAfterAppend(next, rolledTo int64, needFlush bool) error {
	switch {
	case needFlush:
		return l.flushTo(next)
	case rolledTo >= 0:
		return l.flushTo(rolledTo)
	}
	return nil
}

// batchPositions returns the byte position of each batch in the payload.
func batchPositions(hdrs []batch.Header) []int {
	ps := make([]int, len(hdrs))
	pos := 0
	for i := range hdrs {
		ps[i] = pos
		pos += int(hdrs[i].Size())
	}
	return ps
}

// assignEpoch records the first offset written by a new leader epoch.
func (l *Log) assignEpoch(epoch int32, offset int64) error {
	if epoch < 0 || (len(l.epochs) > 0 && epoch <= l.epochs[len(l.epochs)-1].Epoch) {
		return nil
	}
	entries := append(l.epochs[:len(l.epochs):len(l.epochs)], epochEntry{Epoch: epoch, StartOffset: offset})
	if err := writeEpochCheckpoint(l.fsys, filepath.Join(l.dir, leaderEpochCheckpointFile), entries); err != nil {
		return fmt.Errorf("leader epoch %d at offset %d: %w", epoch, offset, err)
	}
	l.epochs = entries
	return nil
}

// advanceHW moves the high watermark forward and wakes waiting fetches.
func (l *Log) advanceHW(p logPos) {
	if l.failed != nil || p.offset <= l.hw.offset {
		return
	}
	l.hw = p
	close(l.waitCh)
	l.waitCh = make(chan struct{})
}

// roll closes the active segment and starts a new one at the log end
// offset, snapshotting producer state at that offset as Kafka does.
func (l *Log) roll(now time.Time) error {
	old := l.active()
	newBase := old.next
	if err := old.deactivate(); err != nil {
		return err
	}
	if err := l.producers.writeSnapshot(l.fsys, l.dir, newBase); err != nil {
		return fmt.Errorf("producer snapshot at %d: %w", newBase, err)
	}
	s, err := createSegment(l.fsys, l.dir, newBase, &l.cfg, now)
	if err != nil {
		return err
	}
	l.segs = append(l.segs, s)
	l.dirDirty = true
	call(l.events.OnSegmentRolled, SegmentRollInfo{LogInfo{Dir: l.dir}, newBase})
	return nil
}

// HighWatermark is the offset below which records are visible to fetches.
func (l *Log) HighWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hw.offset
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active().next
}

// LogStartOffset is the first offset held by the log.
func (l *Log) LogStartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logStart
}

// RecoveryPoint is the offset below which the log is fsynced; the manager
// persists it in recovery-point-offset-checkpoint and passes it back to
// OpenLog.
func (l *Log) RecoveryPoint() int64 { return l.flushed.Load() }

// Wait returns a channel closed the next time the high watermark advances.
func (l *Log) Wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitCh
}

// AssignLeaderEpoch records that epoch leads the log from its end offset
// on, as Kafka does when a replica becomes leader
// (maybeAssignEpochStartOffset); an epoch not newer than the latest is
// ignored.
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	return storageFailure(l.assignEpoch(epoch, l.active().next))
}

// LatestEpoch is the newest leader epoch in the log's leader-epoch-checkpoint, or -1.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.epochs) == 0 {
		return -1
	}
	return l.epochs[len(l.epochs)-1].Epoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch as Kafka's
// LeaderEpochFileCache.endOffsetFor: the largest epoch <= the requested one
// and the offset at which the next epoch started (the log end offset for
// the latest epoch); (-1, -1) when the epoch is unknown or newer than all.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.epochs)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if l.epochs[n-1].Epoch == epoch {
		return epoch, l.active().next
	}
	hi := sort.Search(n, func(i int) bool { return l.epochs[i].Epoch > epoch })
	if hi == n {
		return -1, -1
	}
	if hi == 0 {
		return epoch, l.epochs[0].StartOffset
	}
	return l.epochs[hi-1].Epoch, l.epochs[hi].StartOffset
}

// Flush fsyncs everything appended so far.
func (l *Log) Flush() error {
	l.mu.Lock()
	leo := l.active().next
	l.mu.Unlock()
	return l.flushTo(leo)
}

// flushTo makes offsets below upTo durable. Callers queue on flushMu; the
// one that gets it syncs everything written so far, so the callers behind it
// usually find their data already covered and return without an fsync
// (group commit). A failed fsync fails the log.
func (l *Log) flushTo(upTo int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.flushed.Load() >= upTo {
		return nil
	}
	l.mu.Lock()
	if l.failed != nil {
		err := l.storageError()
		l.mu.Unlock()
		return err
	}
	target := logPos{offset: l.active().next, segBase: l.active().base, pos: l.active().size}
	from := l.flushed.Load()
	var files []*sharedFile
	var err error
	for _, s := range l.segs {
		if s.next <= from && s != l.active() {
			continue
		}
		f, rerr := s.reader()
		if rerr != nil {
			err = rerr
			break
		}
		files = append(files, f)
	}
	syncDir := l.dirDirty
	l.dirDirty = false
	l.unflushedMsgs = 0
	l.lastFlush = l.now()
	l.mu.Unlock()

	for _, f := range files {
		if err == nil {
			start := time.Now()
			if serr := f.f.Sync(); serr != nil {
				err = fmt.Errorf("fsync %s: %w", f.f.Name(), serr)
			} else {
				call(l.events.OnFsync, time.Since(start))
			}
		}
		_ = f.release()
	}
	if err == nil && syncDir {
		err = l.fsys.SyncDir(l.dir)
	}
	if err != nil {
		l.mu.Lock()
		return l.failUnlock(err)
	}
	l.mu.Lock()
	l.flushedPos = target
	l.flushed.Store(target.offset)
	l.mu.Unlock()
	return nil
}

// startFlusher runs the time-based flush (flush.ms) for logs that set it:
// appends check the interval themselves, the ticker covers a log that
// stops receiving appends with unflushed data.
func (l *Log) startFlusher() {
	if l.cfg.FlushIntervalMs <= 0 || l.cfg.FlushIntervalMs >= int64(24*time.Hour/time.Millisecond) {
		return
	}
	interval := min(max(time.Duration(l.cfg.FlushIntervalMs)*time.Millisecond/2, 10*time.Millisecond), time.Second)
	l.stopFlusher = make(chan struct{})
	l.flusherDone = make(chan struct{})
	go func() {
		defer close(l.flusherDone)
		t := l.clock.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-l.stopFlusher:
				return
			case <-t.Chan():
			}
			l.mu.Lock()
			due := l.failed == nil && !l.closed && l.unflushedMsgs > 0 &&
				l.now().Sub(l.lastFlush).Milliseconds() >= l.cfg.FlushIntervalMs
			leo := l.active().next
			l.mu.Unlock()
			if due {
				_ = l.flushTo(leo) // a failure is logged by fail and surfaces on the next Append
			}
		}
	}()
}

// Close flushes, snapshots producer state, trims the active segment's
// indexes to their used size and releases descriptors (open Chunks keep
// theirs until Release). A failed log is closed without touching its files
// and Close returns the failure, so the caller does not mark a clean
// shutdown.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	// Abort a running cleaning and wait for it to let go of the segments.
	l.closing.Store(true)
	l.cleanMu.Lock()
	l.cleanMu.Unlock() //nolint:staticcheck // a barrier, not a critical section
	if l.stopFlusher != nil {
		close(l.stopFlusher)
		<-l.flusherDone
	}
	flushErr := l.Flush()

	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.failed != nil {
		for _, s := range l.segs {
			s.closeAll()
		}
		return l.storageError()
	}
	var errs []error
	errs = append(errs, flushErr)
	leo := l.active().next
	if err := l.producers.writeSnapshot(l.fsys, l.dir, leo); err != nil {
		errs = append(errs, fmt.Errorf("producer snapshot at %d: %w", leo, err))
	}
	for _, s := range l.segs {
		errs = append(errs, s.deactivate())
		s.closeAll()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close log %s: %w", l.dir, err)
	}
	return nil
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	closeErr := l.Close()
	if err := l.fsys.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("delete log %s: %w", l.dir, err)
	}
	if closeErr != nil && !errors.Is(closeErr, kerr.KafkaStorageError) {
		return closeErr
	}
	return nil
}
