package storage

// Follower writes: batches fetched from the partition's leader, which keep
// the leader's offsets and epochs, and truncation to where this replica's
// log agrees with the leader's, as Kafka's UnifiedLog.appendAsFollower and
// truncateTo. Package replica calls them; a single node never does.

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// followerBatchRule is what a batch a leader sent must be beyond its
// structure, as Kafka's LogValidator for a follower: control batches and
// compacted batches (fewer records than the offsets they span) are the
// leader's own and are taken.
func followerBatchRule(h batch.Header) error {
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return fmt.Errorf("batch at offset %d: record count %d, last offset delta %d: %w", h.BaseOffset, h.RecordCount, h.LastOffsetDelta, kerr.CorruptMessage)
	}
	return nil
}

// AppendAsFollower appends batches fetched from the partition's leader,
// keeping their offsets and partition leader epochs: the first must start
// at the log end offset and each where the one before ended (else
// OFFSET_OUT_OF_RANGE, and nothing is written). Producer state, the
// aborted-transaction index and the leader epoch cache follow the batches,
// with no sequence checks: the leader made them. The high watermark stays.
func (l *Log) AppendAsFollower(records []byte) (AppendResult, error) {
	hdrs, err := walkBatches(records, l.cfgView.Load().MaxMessageBytes, "follower append", followerBatchRule)
	if err != nil {
		return AppendResult{}, err
	}
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return AppendResult{}, err
	}
	base := l.active().next
	next, maxTs, msgs := base, int64(-1), int64(0)
	for i := range hdrs {
		if hdrs[i].BaseOffset != next {
			l.mu.Unlock()
			return AppendResult{}, fmt.Errorf("log %s: follower batch at offset %d where the log ends at %d: %w", l.dir, hdrs[i].BaseOffset, next, kerr.OffsetOutOfRange)
		}
		next = hdrs[i].NextOffset()
		maxTs = max(maxTs, hdrs[i].MaxTimestamp)
		msgs += int64(hdrs[i].RecordCount)
	}
	now := l.now()
	seg, rolledTo, err := l.writeLocked(records, hdrs, base, next, maxTs, now)
	if err != nil {
		return AppendResult{}, l.failUnlock(err)
	}
	for i, pos := range batchPositions(hdrs) {
		h := &hdrs[i]
		switch {
		case h.Control():
			err = l.onControlAppended(h, records[pos:pos+int(h.Size())])
		case h.ProducerID >= 0:
			l.producers.update(metaOf(h))
		}
		if err == nil {
			err = l.assignEpoch(h.PartitionLeaderEpoch, h.BaseOffset)
		}
		if err != nil {
			return AppendResult{}, l.failUnlock(err)
		}
	}
	return l.finishAppend(seg, base, next, msgs, rolledTo, now)
}

// TruncateTo cuts the log back to offset, a batch boundary, as Kafka's
// UnifiedLog.truncateTo when a follower's log diverged from its leader's:
// the segments above it are removed, the one holding it is cut there, and
// the log is loaded again from that segment, as recovery does (indexes,
// producer state, aborted transactions and leader epochs at or above offset
// go). The high watermark and recovery point come down to the new log end
// offset if they were above. An offset at or above the log end offset cuts
// no record, only the leader epochs that start at the log end
// (dropEpochsFrom); one below the log start offset is OFFSET_OUT_OF_RANGE. If
// a file operation fails the log fails and goes offline (reads fail too)
// until it is revived, as after a failed revival.
func (l *Log) TruncateTo(offset int64) error {
	unlock, err := l.lockForRewrite()
	if err != nil {
		return err
	}
	defer unlock()
	leo := l.active().next
	if offset >= leo {
		return l.dropEpochsFrom(leo)
	}
	if offset < l.logStart {
		return fmt.Errorf("log %s: truncate to %d below the log start offset %d: %w", l.dir, offset, l.logStart, kerr.OffsetOutOfRange)
	}
	cut, err := l.positionOf(offset)
	if err != nil {
		return err
	}
	for _, s := range l.segs {
		s.closeAll()
	}
	if err := l.cutFiles(cut); err != nil {
		return l.rewriteFailed(fmt.Errorf("truncate to %d: %w", offset, err))
	}
	opts := OpenOptions{RecoveryPoint: min(l.flushed.Load(), cut.segBase), LogStartOffset: l.logStart, FirstDirtyOffset: min(l.firstDirty, offset)}
	end, err := l.reloadLocked(opts, fmt.Sprintf("truncate to %d", offset))
	if err != nil {
		return err
	}
	if l.hw.offset > end.offset {
		l.hw = end
	}
	if l.flushed.Load() > end.offset {
		l.flushedPos = end
		l.flushed.Store(end.offset)
	}
	l.logger.Info("partition log truncated", zap.String("dir", l.dir), zap.Int64("from", leo), zap.Int64("to", end.offset))
	return nil
}

// TruncateFullyAndStartAt removes every segment and starts the log again,
// empty, at offset, as Kafka's UnifiedLog.truncateFullyAndStartAt when a
// follower's log ends below its leader's log start offset (the leader's
// retention removed what the follower lacks): producer state, aborted
// transactions and leader epochs go with the records, and the log start
// offset, high watermark and recovery point are offset. If a file
// operation fails the log fails and goes offline, as TruncateTo.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	unlock, err := l.lockForRewrite()
	if err != nil {
		return err
	}
	defer unlock()
	leo := l.active().next
	for _, s := range l.segs {
		s.closeAll()
	}
	if err := l.removeAllFiles(offset); err != nil {
		return l.rewriteFailed(fmt.Errorf("truncate fully and start at %d: %w", offset, err))
	}
	end, err := l.reloadLocked(OpenOptions{RecoveryPoint: offset, LogStartOffset: offset, FirstDirtyOffset: offset},
		fmt.Sprintf("truncate fully and start at %d", offset))
	if err != nil {
		return err
	}
	l.hw, l.flushedPos = end, end
	l.flushed.Store(end.offset)
	l.logger.Info("partition log emptied and started again", zap.String("dir", l.dir), zap.Int64("log_end", leo), zap.Int64("start", offset))
	return nil
}

// lockForRewrite takes the cleaner's, the flusher's and the log's locks,
// in that order, for a follower's rewrite of the log's files, and checks
// the log can be written; unlock releases them.
func (l *Log) lockForRewrite() (unlock func(), err error) {
	if l.closing.Load() {
		return nil, fmt.Errorf("log %s: %w: %w", l.dir, errLogClosed, kerr.KafkaStorageError)
	}
	l.cleanMu.Lock()
	l.flushMu.Lock()
	l.mu.Lock()
	unlock = func() {
		l.mu.Unlock()
		l.flushMu.Unlock()
		l.cleanMu.Unlock()
	}
	if err := l.writable(); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// rewriteFailed takes the log offline after a rewrite of its files failed
// with err: the segments behind l.segs are closed, so it stays offline
// until revived. Caller holds every lock.
func (l *Log) rewriteFailed(err error) error {
	l.failed = err
	l.closed = true
	call(l.events.OnLogFailed, LogFailureInfo{LogInfo{Dir: l.dir}, err})
	return l.storageError()
}

// removeAllFiles removes every segment, producer snapshot and leader epoch
// of the log and creates an empty segment at offset, durably. Caller holds
// every lock and closed the segments.
func (l *Log) removeAllFiles(offset int64) error {
	for _, s := range l.segs {
		if err := s.remove(); err != nil {
			return err
		}
	}
	snaps, err := listSnapshots(l.fsys, l.dir)
	if err != nil {
		return err
	}
	for _, off := range snaps {
		if err := l.fsys.Remove(snapshotPath(l.dir, off)); err != nil {
			return fmt.Errorf("remove producer snapshot: %w", err)
		}
	}
	if err := writeEpochCheckpoint(l.fsys, filepath.Join(l.dir, leaderEpochCheckpointFile), nil); err != nil {
		return err
	}
	s, err := createSegment(l.fsys, l.dir, offset, &l.cfg, l.now())
	if err != nil {
		return err
	}
	s.closeAll()
	return l.fsys.SyncDir(l.dir)
}

// reloadLocked loads the log again from its files, as recovery does, and
// takes the loaded segments, producer state, aborted transactions and
// epochs; it returns the position of the new log end offset. On failure
// the log is offline, as after a failed revival. Caller holds every lock.
func (l *Log) reloadLocked(opts OpenOptions, what string) (logPos, error) {
	fresh := &Log{fsys: l.fsys, dir: l.dir, cfg: l.cfg, logger: l.logger, clock: l.clock, now: l.now, doomed: l.doomed, events: l.events}
	fresh.lastFlush = l.now()
	if err := fresh.load(opts); err != nil {
		for _, s := range fresh.segs {
			s.closeAll()
		}
		l.failed = err
		l.closed = true // offline, as a failed Revive
		call(l.events.OnLogFailed, LogFailureInfo{LogInfo{Dir: l.dir}, fmt.Errorf("reload after %s: %w", what, err)})
		return logPos{}, fmt.Errorf("%s, log %s: %w: %w", what, l.dir, err, kerr.KafkaStorageError)
	}
	for _, s := range fresh.segs {
		s.cfg = &l.cfg
	}
	l.segs, l.logStart, l.firstDirty, l.tombstoneHorizon = fresh.segs, fresh.logStart, fresh.firstDirty, fresh.tombstoneHorizon
	l.producers, l.aborted, l.epochs = fresh.producers, fresh.aborted, fresh.epochs
	l.dirDirty, l.unflushedMsgs = false, 0
	l.forgetEnds()
	return fresh.hw, nil
}

// dropEpochsFrom removes the leader epochs that start at or after offset,
// the log end offset, as Kafka's truncateTo does even when it cuts no
// record: a replica that became leader and appended nothing before another
// was elected has its epoch's entry at the log end, which conflicts with
// the new leader's log (its fetches would diverge there forever). Caller
// holds l.mu.
func (l *Log) dropEpochsFrom(offset int64) error {
	kept := l.epochs
	for len(kept) > 0 && kept[len(kept)-1].StartOffset >= offset {
		kept = kept[:len(kept)-1]
	}
	if len(kept) == len(l.epochs) {
		return nil
	}
	kept = kept[:len(kept):len(kept)]
	if err := writeEpochCheckpoint(l.fsys, filepath.Join(l.dir, leaderEpochCheckpointFile), kept); err != nil {
		return storageFailure(fmt.Errorf("log %s: drop the leader epochs from %d: %w", l.dir, offset, err))
	}
	l.epochs = kept
	return nil
}

// cutFiles removes the segments above cut and cuts the one holding it at
// cut's position, durably. Caller holds every lock and closed the segments.
func (l *Log) cutFiles(cut logPos) error {
	for _, s := range l.segs {
		if s.base > cut.segBase {
			if err := s.remove(); err != nil {
				return err
			}
		}
	}
	path := segmentPath(l.dir, cut.segBase, logExt)
	f, err := l.fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("truncate %s: %w", path, err)
	}
	if err := f.Truncate(cut.pos); err != nil {
		f.Close()
		return fmt.Errorf("truncate %s to %d: %w", path, cut.pos, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return l.fsys.SyncDir(l.dir)
}
