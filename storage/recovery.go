package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/jonboulle/clockwork"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs"
)

const snapshotExt = ".snapshot"

// OpenLog opens (creating if needed) the log in dir and recovers it: after
// a clean shutdown the indexes are trusted (a missing or corrupt one is
// rebuilt); otherwise every segment from the one holding opts.RecoveryPoint
// on is scanned and the log is truncated at the first invalid batch. Then
// producer state is loaded from the newest snapshot at or below the log end
// offset and rebuilt by replaying later batch headers, and leader epochs
// beyond the log end offset are dropped.
func OpenLog(fsys vfs.FS, dir string, cfg Config, opts OpenOptions) (*Log, error) {
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	if cfg.SegmentBytes <= 0 || cfg.IndexIntervalBytes < 0 || cfg.MaxIndexSize < timeEntrySize || cfg.MaxMessageBytes <= 0 {
		return nil, fmt.Errorf("open log %s: invalid config %+v", dir, cfg)
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	clock := opts.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	l := &Log{fsys: fsys, dir: dir, cfg: cfg, logger: logger.With(zap.String("log", dir)), clock: clock, now: clock.Now,
		waitCh: make(chan struct{})}
	if opts.Events != nil {
		l.events = *opts.Events
	} else {
		l.events = LoggingListener(logger)
	}
	l.cfgView.Store(&cfg)
	l.lastFlush = l.now()
	if err := l.load(opts); err != nil {
		for _, s := range l.segs {
			s.closeAll()
		}
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	l.startFlusher()
	return l, nil
}

// RecoveryReport is what opening a log checked and what it dropped.
type RecoveryReport struct {
	SegmentsChecked int   // segments whose batches were validated, not trusted from their indexes
	BytesChecked    int64 // their size
	BytesDropped    int64 // cut from the log: an invalid tail and the segments after it
	BatchesDropped  int   // whole batches in the dropped segments after the cut
	DroppedFrom     int64 // the offset the log now ends at when something was dropped, else -1
}

// add sums r into the report's counts (not DroppedFrom, which is per log).
func (s *RecoveryReport) add(r RecoveryReport) {
	s.SegmentsChecked += r.SegmentsChecked
	s.BytesChecked += r.BytesChecked
	s.BytesDropped += r.BytesDropped
	s.BatchesDropped += r.BatchesDropped
}

// Recovery reports what opening the log checked and dropped.
func (l *Log) Recovery() RecoveryReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recovery
}

// load recovers segments, producer state and epochs.
func (l *Log) load(opts OpenOptions) error {
	l.recovery = RecoveryReport{DroppedFrom: -1}
	if err := l.finishSwaps(); err != nil {
		return err
	}
	bases, err := listSegments(l.fsys, l.dir)
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		s, err := createSegment(l.fsys, l.dir, 0, &l.cfg, l.now())
		if err != nil {
			return err
		}
		l.segs = []*segment{s}
		l.dirDirty = true
	} else if err := l.loadSegments(bases, opts); err != nil {
		return err
	}
	act := l.active()
	leo := act.next
	l.logStart = min(max(l.segs[0].base, opts.LogStartOffset), leo)
	l.firstDirty = opts.FirstDirtyOffset
	l.hw = logPos{offset: leo, segBase: act.base, pos: act.size}
	l.flushed.Store(leo)
	l.flushedPos = l.hw
	if err := l.loadProducers(leo); err != nil {
		return err
	}
	return l.loadEpochs(leo)
}

// listSegments returns the base offsets of the .log files in dir, sorted.
func listSegments(fsys vfs.FS, dir string) ([]int64, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var bases []int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), logExt)
		if !ok || len(name) != 20 {
			continue
		}
		base, err := strconv.ParseInt(name, 10, 64)
		if err != nil || base < 0 {
			continue
		}
		bases = append(bases, base)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// loadSegments opens every segment, recovering those that need it, drops
// everything after the first invalid batch and activates the last one.
func (l *Log) loadSegments(bases []int64, opts OpenOptions) error {
	recoverFrom := 0
	switch {
	case opts.CleanShutdown:
		recoverFrom = len(bases)
	case opts.RecoveryPoint > 0:
		recoverFrom = max(sort.Search(len(bases), func(i int) bool { return bases[i] > opts.RecoveryPoint })-1, 0)
	}
	expected := bases[0]
	for i, base := range bases {
		s := &segment{fsys: l.fsys, dir: l.dir, base: base, cfg: &l.cfg, next: base,
			maxTs: -1, maxTsOffset: -1, firstTs: -1, created: l.now()}
		if base < expected || (base > expected && !l.cfg.Compact) {
			return l.dropFrom(bases[i:], 0, fmt.Errorf("segment %d does not continue the log at offset %d", base, expected))
		}
		trusted := i < recoverFrom
		if trusted {
			if err := s.loadTrusted(); err != nil {
				l.logger.Warn("rebuilding segment indexes", zap.Int64("segment", base), zap.Error(err))
				trusted = false
			}
		}
		if !trusted {
			cut, reason, err := s.recoverSegment()
			if err != nil {
				return err
			}
			l.recovery.SegmentsChecked++
			l.recovery.BytesChecked += s.size + cut
			l.segs = append(l.segs, s)
			if reason != nil {
				return l.dropFrom(bases[i+1:], cut, reason, s)
			}
		} else {
			l.segs = append(l.segs, s)
		}
		expected = s.next
	}
	return l.active().activate()
}

// dropFrom removes the segments at bases (dropped tail of the log), after
// cutBytes were already truncated from the segment before them, reports what
// was lost (OnLogTruncated) and activates the new last segment.
func (l *Log) dropFrom(bases []int64, cutBytes int64, reason error, truncated ...*segment) error {
	bytes, batches := cutBytes, 0
	for _, base := range bases {
		s := &segment{fsys: l.fsys, dir: l.dir, base: base, cfg: &l.cfg}
		if fi, err := l.fsys.Stat(segmentPath(l.dir, base, logExt)); err == nil {
			bytes += fi.Size()
			batches += countBatches(l.fsys, segmentPath(l.dir, base, logExt), fi.Size())
		}
		if err := s.remove(); err != nil {
			return err
		}
	}
	l.dirDirty = true
	l.recovery.BytesDropped += bytes
	l.recovery.BatchesDropped += batches
	l.recovery.DroppedFrom = l.active().next
	info := LogTruncationInfo{LogInfo: LogInfo{Dir: l.dir}, Reason: reason, BytesDropped: bytes, LaterSegmentsDropped: len(bases),
		LaterBatchesDropped: batches, LogEndOffset: l.active().next, TruncatedSegment: -1}
	if len(truncated) > 0 {
		info.TruncatedSegment, info.TruncatedAt = truncated[0].base, truncated[0].size
	}
	call(l.events.OnLogTruncated, info)
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return err
	}
	l.dirDirty = false
	if l.active().active {
		return nil
	}
	return l.active().activate()
}

// countBatches counts structurally valid batch headers, for logging only.
func countBatches(fsys vfs.FS, path string, size int64) int {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	var hb [batch.HeaderSize]byte
	n := 0
	for pos := int64(0); pos < size; n++ {
		h, err := readHeader(f, pos, size, &hb)
		if err != nil {
			break
		}
		pos += h.Size()
	}
	return n
}

// loadTrusted opens the indexes of a segment written before a clean
// shutdown (or below the recovery point), checks them, and reads the batches
// after the last index entry to learn the segment's next offset.
func (s *segment) loadTrusted() error {
	fi, err := s.fsys.Stat(segmentPath(s.dir, s.base, logExt))
	if err != nil {
		return err
	}
	s.size = fi.Size()
	for _, ext := range []string{indexExt, timeIndexExt} {
		if _, err := s.fsys.Stat(segmentPath(s.dir, s.base, ext)); err != nil {
			return fmt.Errorf("index missing: %w", err)
		}
	}
	if err := s.openIndexes(false); err != nil {
		s.closeIndexes()
		return err
	}
	if err := errors.Join(s.idx.check(s.size), s.tidx.check()); err != nil {
		s.closeIndexes()
		return err
	}
	if s.size > 0 && s.tidx.entries == 0 {
		// A clean close always leaves the segment's max timestamp entry.
		s.closeIndexes()
		return fmt.Errorf("time index of a %d byte segment is empty: %w", s.size, errIndexCorrupt)
	}
	s.maxTs, s.maxTsOffset = s.tidx.lastEntry()
	if s.tidx.entries == 0 {
		s.maxTsOffset = -1
	}
	if err := s.scanTail(); err != nil {
		s.closeIndexes()
		return err
	}
	return nil
}

func (s *segment) closeIndexes() {
	if s.idx != nil {
		_ = s.idx.close()
		s.idx = nil
	}
	if s.tidx != nil {
		_ = s.tidx.close()
		s.tidx = nil
	}
}

// scanTail walks the batch headers from the last offset index entry to the
// end of the file; any inconsistency makes the segment untrusted.
func (s *segment) scanTail() error {
	f, err := s.fsys.OpenFile(segmentPath(s.dir, s.base, logExt), os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	var hb [batch.HeaderSize]byte
	pos, expected := int64(0), s.base
	if s.idx.entries > 0 {
		expected, pos = s.idx.at(s.idx.entries - 1)
	}
	first := true
	for pos < s.size {
		h, err := readHeader(f, pos, s.size, &hb)
		if err != nil {
			return fmt.Errorf("segment %d at %d: %w", s.base, pos, err)
		}
		if pos == 0 {
			s.firstTs = h.MaxTimestamp
		}
		var bad bool
		switch {
		case first && s.cfg.Compact && s.idx.entries == 0:
			bad = h.BaseOffset < expected // compaction may have removed the segment's first offsets
		case first:
			bad = h.BaseOffset > expected
		case s.cfg.Compact:
			bad = h.BaseOffset < expected // compaction leaves gaps between batches
		default:
			bad = h.BaseOffset != expected
		}
		if bad || h.LastOffsetDelta < 0 {
			return fmt.Errorf("segment %d at %d: batch offset %d, expected %d", s.base, pos, h.BaseOffset, expected)
		}
		if s.bytesSinceIndex > int64(s.cfg.IndexIntervalBytes) && s.idx.entries < s.cfg.MaxIndexSize/offsetEntrySize {
			// Appending this batch added an index entry that is not there:
			// the index lost its tail (zeroed or truncated).
			return fmt.Errorf("segment %d: no index entry for the batch at %d: %w", s.base, pos, errIndexCorrupt)
		}
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.LastOffset()
		}
		first = false
		expected = h.NextOffset()
		pos += h.Size()
		s.bytesSinceIndex += h.Size()
	}
	s.next = max(expected, s.base)
	if s.firstTs < 0 && s.size > 0 {
		h, err := readHeader(f, 0, s.size, &hb)
		if err != nil {
			return fmt.Errorf("segment %d: first batch: %w", s.base, err)
		}
		s.firstTs = h.MaxTimestamp
	}
	return nil
}

// recoverSegment rebuilds the indexes of a segment by validating every
// batch (header, offsets continuing from the segment base, CRC32C), and
// truncates the file at the first invalid one. It returns the bytes cut and
// the reason it stopped early (nil if the whole file was valid); err is an
// I/O failure that prevents recovery.
func (s *segment) recoverSegment() (cut int64, reason error, err error) {
	path := segmentPath(s.dir, s.base, logExt)
	f, err := s.fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("segment %d: %w", s.base, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, fmt.Errorf("segment %d: %w", s.base, err)
	}
	s.size = fi.Size()
	// Start from scratch: a failed loadTrusted may have left partial state.
	s.next, s.maxTs, s.maxTsOffset, s.firstTs, s.bytesSinceIndex = s.base, -1, -1, -1, 0
	// The transaction index is rebuilt by the producer state replay.
	s.recovered = true
	for _, ext := range []string{indexExt, timeIndexExt, txnIndexExt} {
		if err := s.fsys.Remove(segmentPath(s.dir, s.base, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, nil, fmt.Errorf("segment %d: %w", s.base, err)
		}
	}
	if err := s.openIndexes(true); err != nil {
		return 0, nil, err
	}
	var hb [batch.HeaderSize]byte
	buf := make([]byte, 64<<10)
	expected, valid := s.base, int64(0)
	for valid < s.size {
		h, herr := readHeader(f, valid, s.size, &hb)
		switch {
		case herr != nil:
			reason = herr
		case h.BaseOffset < expected || (h.BaseOffset > expected && !s.cfg.Compact):
			// Compaction leaves gaps between batches; nothing else does.
			reason = fmt.Errorf("batch at position %d has offset %d, expected %d", valid, h.BaseOffset, expected)
		case h.LastOffsetDelta < 0 || h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 ||
			(!s.cfg.Compact && int64(h.RecordCount) != int64(h.LastOffsetDelta)+1):
			// A cleaned batch keeps its last offset delta with fewer records.
			reason = fmt.Errorf("batch at position %d: record count %d, last offset delta %d", valid, h.RecordCount, h.LastOffsetDelta)
		default:
			reason = verifyCRC(f, valid, &h, buf)
		}
		var rerr *readError
		if errors.As(reason, &rerr) {
			return 0, nil, fmt.Errorf("segment %d: %w", s.base, rerr)
		}
		if reason != nil {
			reason = fmt.Errorf("segment %d: %w", s.base, reason)
			break
		}
		s.indexBatch(&h, valid)
		expected = h.NextOffset()
		valid += h.Size()
	}
	if valid < s.size {
		if err := f.Truncate(valid); err != nil {
			return 0, nil, fmt.Errorf("segment %d: truncate to %d: %w", s.base, valid, err)
		}
	}
	// What recovery accepted must survive a power loss before it is built on.
	if err := f.Sync(); err != nil {
		return 0, nil, fmt.Errorf("segment %d: fsync: %w", s.base, err)
	}
	oldSize := s.size
	s.size = valid
	if s.maxTs >= 0 {
		s.tidx.maybeAppend(s.maxTs, s.maxTsOffset)
	}
	if err := errors.Join(s.idx.seal(), s.tidx.seal()); err != nil {
		return 0, nil, fmt.Errorf("segment %d: %w", s.base, err)
	}
	return oldSize - valid, reason, nil
}

// activate makes a loaded segment the active one: a write descriptor and
// writable, pre-allocated indexes.
func (s *segment) activate() error {
	f, err := s.fsys.OpenFile(segmentPath(s.dir, s.base, logExt), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("segment %d: %w", s.base, err)
	}
	s.closeIndexes()
	if err := s.openIndexes(true); err != nil {
		_ = f.Close()
		return err
	}
	s.file = newSharedFile(f)
	s.active = true
	return nil
}

// loadProducers loads the newest producer snapshot at or below leo
// (removing newer ones, which describe truncated data) and replays the
// batches after it: idempotent and transactional batches update producer
// state, transaction markers end transactions. Segments that recovery
// rebuilt get their .txnindex rebuilt by this replay, so the snapshot used
// is at or below the first of them (Kafka's rebuildProducerState before
// recoverSegment); the other segments' .txnindex files are read as they are.
func (l *Log) loadProducers(leo int64) error {
	ents, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), snapshotExt)
		if !ok {
			continue
		}
		if off, err := strconv.ParseInt(name, 10, 64); err == nil && off > leo {
			if err := l.fsys.Remove(filepath.Join(l.dir, e.Name())); err != nil {
				return fmt.Errorf("remove stale snapshot: %w", err)
			}
		}
	}
	firstRecovered := int64(math.MaxInt64)
	for _, s := range l.segs {
		if s.recovered {
			firstRecovered = s.base
			break
		}
	}
	if err := l.loadTxnIndexes(firstRecovered, leo); err != nil {
		return err
	}
	ps, from, err := loadProducerSnapshotAtOrBelow(l.fsys, l.dir, firstRecovered)
	if err != nil {
		return fmt.Errorf("load producer snapshot: %w", err)
	}
	if from > leo || from < l.logStart {
		ps, from = newProducerStates(), l.logStart
	}
	for _, s := range l.segs {
		if s.next <= from {
			continue
		}
		pos := int64(0)
		if from > s.base {
			pos = s.idx.lookup(from)
		}
		if err := l.replayHeaders(s, pos, from, ps); err != nil {
			return err
		}
	}
	l.producers = ps
	return nil
}

// replayHeaders feeds the idempotent and transactional batches of s at or
// after offset from into the producer state; markers end transactions and,
// in a recovered segment, write its aborted-transaction index.
func (l *Log) replayHeaders(s *segment, pos, from int64, ps *producerStates) error {
	f, err := s.reader()
	if err != nil {
		return err
	}
	defer func() { _ = f.release() }()
	var hb [batch.HeaderSize]byte
	var buf []byte
	for pos < s.size {
		h, err := readHeader(f.f, pos, s.size, &hb)
		if err != nil {
			return fmt.Errorf("segment %d: replay producer state at %d: %w", s.base, pos, err)
		}
		switch {
		case h.BaseOffset < from || h.ProducerID < 0:
		case h.Control():
			if int64(cap(buf)) < h.Size() {
				buf = make([]byte, h.Size())
			}
			b := buf[:h.Size()]
			if _, err := f.f.ReadAt(b, pos); err != nil {
				return fmt.Errorf("segment %d: read marker at %d: %w", s.base, pos, err)
			}
			commit, coordEpoch, ok := parseControlBatch(b)
			if !ok {
				break
			}
			a, aborted := completeTxn(ps, h.ProducerID, h.ProducerEpoch, commit, coordEpoch, h.BaseOffset, h.MaxTimestamp)
			if aborted && s.recovered {
				l.aborted = append(l.aborted, a)
				if err := appendTxnIndex(l.fsys, l.dir, s.base, a); err != nil {
					return err
				}
			}
		default:
			ps.update(metaOf(&h))
		}
		pos += h.Size()
	}
	return nil
}

// loadEpochs reads the leader epoch checkpoint and drops entries that start
// at or after the log end offset, as Kafka's truncateFromEnd does.
func (l *Log) loadEpochs(leo int64) error {
	path := filepath.Join(l.dir, leaderEpochCheckpointFile)
	entries, err := readEpochCheckpoint(l.fsys, path)
	if err != nil {
		return fmt.Errorf("leader epochs: %w", err)
	}
	kept := entries
	for len(kept) > 0 && kept[len(kept)-1].StartOffset >= leo {
		kept = kept[:len(kept)-1]
	}
	if len(kept) != len(entries) {
		if err := writeEpochCheckpoint(l.fsys, path, kept); err != nil {
			return fmt.Errorf("leader epochs: %w", err)
		}
	}
	l.epochs = kept
	return nil
}
