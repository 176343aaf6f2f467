package storage

// Retention, DeleteRecords and live config changes.
//
// Logs whose cleanup.policy contains "delete" (the default) lose whole
// segments as Kafka's UnifiedLog.deleteOldSegments decides:
//
//   - retention.ms (>= 0): a segment whose largest timestamp (the
//     segment's max record timestamp, or its creation time when it has no
//     record) is more than retention.ms before now;
//   - retention.bytes (>= 0): while the log's size minus the segment's
//     still stays at or above retention.bytes, oldest first;
//   - for every policy, a segment entirely below the log start offset
//     (moved by DeleteRecords).
//
// Segments go oldest first and only while every offset of the segment is
// below the high watermark, so the log start offset never passes it. When
// every segment is deletable, the active one is rolled first (Kafka's rule:
// a log always keeps one segment); an empty active segment is never
// deleted. A deleted segment's files are renamed to <name>.deleted at once
// and removed file.delete.delay.ms later; fetches holding Chunks of it keep
// reading through their descriptors. Recovery removes leftover .deleted
// files. The log start offset moves to the first remaining segment and
// leader epoch entries below it are dropped; the Manager checkpoints it.

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// deletedExt marks a segment file waiting for file.delete.delay.ms.
const deletedExt = ".deleted"

// doomedFiles are a deleted segment's renamed files and when to remove them.
type doomedFiles struct {
	due   time.Time
	paths []string
}

// RetentionResult says what one ApplyRetention or DeleteRecordsBefore did.
type RetentionResult struct {
	Segments       int   // segments deleted
	Bytes          int64 // their size
	LogStartOffset int64 // after the call
}

// ApplyRetention deletes the segments that retention.ms, retention.bytes
// or the log start offset make obsolete (see the file comment) and removes
// the files of earlier deletions whose file.delete.delay.ms has passed. A
// closed log is left alone; a failed one keeps its active segment (rolling
// is a write) but loses the closed segments retention deletes, which frees
// space on a full disk. It waits for a running cleaning of this log.
func (l *Log) ApplyRetention() (RetentionResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	res := RetentionResult{LogStartOffset: l.logStart}
	if l.closed || l.closing.Load() {
		return res, nil
	}
	now := l.now()
	err := l.deleteSegments(&res, now, "log start offset", func(_ *segment, next *segment) bool {
		return next != nil && next.base <= l.logStart
	})
	if err == nil && !l.cfg.NoDelete && l.cfg.RetentionMs >= 0 {
		limit := now.UnixMilli() - l.cfg.RetentionMs
		err = l.deleteSegments(&res, now, "retention.ms", func(s *segment, _ *segment) bool {
			return s.largestTimestamp() < limit
		})
	}
	if err == nil && !l.cfg.NoDelete && l.cfg.RetentionBytes >= 0 {
		if excess := l.size() - l.cfg.RetentionBytes; excess > 0 {
			err = l.deleteSegments(&res, now, "retention.bytes", func(s *segment, _ *segment) bool {
				if excess-s.size < 0 {
					return false
				}
				excess -= s.size
				return true
			})
		}
	}
	if rerr := l.removeDoomed(now); err == nil {
		err = rerr
	}
	res.LogStartOffset = l.logStart
	return res, storageFailure(err)
}

// DeleteRecordsBefore is DeleteRecords for one partition: it moves the log
// start offset to offset (-1 = the high watermark) and deletes the segments
// entirely below it. It works on a failed log too, as retention does, so
// that space can be freed without a restart. An offset above the high watermark or below -1 is
// kerr.OffsetOutOfRange; a log whose cleanup.policy lacks "delete" is
// kerr.PolicyViolation, as in Kafka. It returns the new log start offset
// (the low watermark), which never moves backwards.
func (l *Log) DeleteRecordsBefore(offset int64) (RetentionResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	res := RetentionResult{LogStartOffset: l.logStart}
	if l.closed {
		return res, fmt.Errorf("log %s: %w: %w", l.dir, errLogClosed, kerr.KafkaStorageError)
	}
	if l.cfg.NoDelete {
		return res, fmt.Errorf("records of %s can not be deleted due to the configured cleanup.policy: %w", l.dir, kerr.PolicyViolation)
	}
	if offset == -1 {
		offset = l.hw.offset
	}
	if offset < 0 || offset > l.hw.offset {
		return res, fmt.Errorf("cannot delete records before offset %d: the high watermark is %d: %w", offset, l.hw.offset, kerr.OffsetOutOfRange)
	}
	if offset > l.logStart {
		l.setLogStart(offset)
	}
	err := l.deleteSegments(&res, l.now(), "log start offset", func(_ *segment, next *segment) bool {
		return next != nil && next.base <= l.logStart
	})
	res.LogStartOffset = l.logStart
	return res, storageFailure(err)
}

// largestTimestamp is Kafka's LogSegment.largestTimestamp: the max record
// timestamp, or the creation time of a segment without records.
func (s *segment) largestTimestamp() int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	return s.created.UnixMilli()
}

// deleteSegments deletes the longest prefix of segments for which pred
// holds and whose offsets are all below the high watermark, rolling first
// if that is every segment. Caller holds cleanMu and mu.
func (l *Log) deleteSegments(res *RetentionResult, now time.Time, reason string, pred func(s, next *segment) bool) error {
	k := 0
	for i, s := range l.segs {
		var next *segment
		upper := l.active().next
		if i+1 < len(l.segs) {
			next = l.segs[i+1]
			upper = next.base
		}
		if (next == nil && s.size == 0) || l.hw.offset < upper || !pred(s, next) {
			break
		}
		k++
	}
	if k == len(l.segs) && l.failed != nil {
		k-- // a failed log cannot roll; its active segment stays
	}
	if k == 0 {
		return nil
	}
	if k == len(l.segs) {
		if err := l.roll(now); err != nil {
			l.fail(err)
			return l.storageError()
		}
		if act := l.active(); l.hw.offset == act.base {
			l.hw = logPos{offset: act.base, segBase: act.base}
		}
	}
	doomed := l.segs[:k]
	l.segs = append([]*segment(nil), l.segs[k:]...)
	l.dirDirty = true
	var bytes int64
	var paths []string
	var errs []error
	for _, s := range doomed {
		bytes += s.size
		s.closeAll()
		for _, ext := range []string{logExt, indexExt, timeIndexExt} {
			from := segmentPath(l.dir, s.base, ext)
			if err := l.fsys.Rename(from, from+deletedExt); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("rename %s for deletion: %w", from, err))
				}
				continue
			}
			paths = append(paths, from+deletedExt)
		}
	}
	if l.segs[0].base > l.logStart {
		l.setLogStart(l.segs[0].base)
	}
	res.Segments += k
	res.Bytes += bytes
	l.doomed = append(l.doomed, doomedFiles{due: now.Add(time.Duration(l.cfg.FileDeleteDelayMs) * time.Millisecond), paths: paths})
	call(l.events.OnSegmentsDeleted, SegmentDeletionInfo{LogInfo: LogInfo{Dir: l.dir}, Reason: reason, Segments: k, Bytes: bytes,
		FirstBase: doomed[0].base, LogStartOffset: l.logStart})
	if err := errors.Join(errs...); err != nil {
		l.fail(err)
		return l.storageError()
	}
	return nil
}

// setLogStart moves the log start offset forward and drops the leader
// epoch entries below it (Kafka's LeaderEpochFileCache.truncateFromStart:
// the last entry at or below the new start is moved to it). Caller holds mu.
func (l *Log) setLogStart(offset int64) {
	l.logStart = offset
	keep := 0
	for keep+1 < len(l.epochs) && l.epochs[keep+1].StartOffset <= offset {
		keep++
	}
	if len(l.epochs) == 0 || (keep == 0 && l.epochs[0].StartOffset >= offset) {
		return
	}
	entries := append([]epochEntry(nil), l.epochs[keep:]...)
	entries[0].StartOffset = max(entries[0].StartOffset, offset)
	if err := writeEpochCheckpoint(l.fsys, filepath.Join(l.dir, leaderEpochCheckpointFile), entries); err != nil {
		// The in-memory cache is still right; recovery drops nothing it needs.
		l.logger.Warn("cannot truncate the leader epoch checkpoint", zap.Error(err))
	}
	l.epochs = entries
}

// removeDoomed removes the renamed files whose delay has passed. Caller
// holds mu.
func (l *Log) removeDoomed(now time.Time) error {
	var errs []error
	kept := l.doomed[:0]
	for _, d := range l.doomed {
		if now.Before(d.due) {
			kept = append(kept, d)
			continue
		}
		if err := l.removeFiles(d.paths...); err != nil {
			errs = append(errs, err)
		}
	}
	clear(l.doomed[len(kept):])
	l.doomed = kept
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove deleted segments of %s: %w", l.dir, err)
	}
	return nil
}

// RemoveDeletedSegments removes the files of deleted segments whose
// file.delete.delay.ms has passed, and returns when the next are due (zero
// when none wait).
func (l *Log) RemoveDeletedSegments() (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.removeDoomed(l.now())
	var next time.Time
	for _, d := range l.doomed {
		if next.IsZero() || d.due.Before(next) {
			next = d.due
		}
	}
	return next, err
}

// size is the bytes of all segments. Caller holds mu.
func (l *Log) size() int64 {
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// Size is the size in bytes of all the log's segments (the .log files).
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size()
}

// SetConfig applies a new config to an open log (AlterConfigs): segment
// rolling, indexing, flushing, message size, retention and compaction
// settings take effect with the next append, retention check or cleaning.
// The active segment keeps its already allocated index size. A time-based
// flusher is not started or stopped here: flush.ms set on a log opened
// without it applies on append only. It waits for a running cleaning.
func (l *Log) SetConfig(cfg Config) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = cfg
	l.cfgView.Store(&cfg)
}

// MinInSyncReplicas is the log's min.insync.replicas, read without its lock.
func (l *Log) MinInSyncReplicas() int { return l.cfgView.Load().MinInSyncReplicas }

// Config returns the log's current config.
func (l *Log) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}
