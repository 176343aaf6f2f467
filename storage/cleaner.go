package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"go.uber.org/zap"
)

// Log compaction (Kafka's log cleaner) for logs whose cleanup.policy lists
// "compact"; doc.go describes the rules and the crash-safe swap.

const (
	cleanedExt = ".cleaned"
	swapExt    = ".swap"
	// cleanerKeyBudget bounds the key -> offset map of one cleaning (key
	// bytes plus per-entry overhead), like log.cleaner.dedupe.buffer.size.
	cleanerKeyBudget = 128 << 20
	mapEntryOverhead = 48
	cleanerWriteBuf  = 1 << 20
)

// errCleanAborted stops a cleaning when the log is closing.
var errCleanAborted = errors.New("cleaning aborted: log closing")

// CleanStats describes one cleaning of a log.
type CleanStats struct {
	Cleaned        bool  // false when there was nothing (dirty enough) to clean
	FirstDirty     int64 // start of the dirty range whose keys were mapped
	End            int64 // offset after the last cleaned segment (new first dirty offset)
	SegmentsBefore int   // source segments rewritten
	SegmentsAfter  int   // segments they became
	BytesBefore    int64
	BytesAfter     int64
	RecordsRead    int64
	RecordsKept    int64
	Duration       time.Duration
}

// cleanSource is one closed segment taken for cleaning.
type cleanSource struct {
	seg  *segment
	file *sharedFile
	size int64
}

// cleanPlan is what Clean decides under the log lock.
type cleanPlan struct {
	srcs        []cleanSource // segments [logStart .. end of dirty range)
	firstDirty  int64
	dirtyFrom   int // index in srcs of the first dirty segment
	lastData    map[int64]int64
	now         int64
	cfg         Config
	horizonOnly bool
	// aborted lists the aborted transactions that may have records in the
	// cleanable segments (first offset below their end), by marker offset.
	aborted []abortedTxn
}

// Clean compacts the log once if it is compacted (cfg.Compact) and its
// closed segments are dirty enough (min.cleanable.dirty.ratio; force skips
// that check), or a stamped tombstone delete horizon has passed. Only
// closed segments whose records are all older than min.compaction.lag.ms
// and below the high watermark are cleaned. Readers of the old segments keep
// their descriptors. Close aborts a running Clean.
func (l *Log) Clean(force bool) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	start := time.Now()
	plan, ok := l.planClean(force)
	if !ok {
		return CleanStats{}, nil
	}
	defer func() {
		for _, s := range plan.srcs {
			_ = s.file.release()
		}
	}()
	c := &cleaner{l: l, plan: plan, keys: make(map[string]int64), txns: newCleanTxns(plan.aborted)}
	end, err := c.buildMap()
	if err != nil {
		return CleanStats{}, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	stats, err := c.clean(end)
	stats.Duration = time.Since(start)
	if err != nil {
		return stats, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	call(l.events.OnLogCleaned, LogCleanInfo{LogInfo{Dir: l.dir}, stats})
	return stats, nil
}

// FirstDirtyOffset is where the part of the log not yet cleaned starts (the
// Manager persists it in cleaner-offset-checkpoint).
func (l *Log) FirstDirtyOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.firstDirty, l.logStart)
}

// planClean picks the cleanable segments and takes read references on them.
func (l *Log) planClean(force bool) (cleanPlan, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cfg.Compact || l.closed || l.failed != nil || l.closing.Load() {
		return cleanPlan{}, false
	}
	now := l.now().UnixMilli()
	// Cleanable: closed segments fully below the last stable offset whose
	// newest record is older than min.compaction.lag.ms.
	k := 0
	for k < len(l.segs)-1 {
		s := l.segs[k]
		if s.next > l.lastStableLocked() || (l.cfg.MinCompactionLagMs > 0 && s.maxTs > now-l.cfg.MinCompactionLagMs) {
			break
		}
		k++
	}
	if k == 0 {
		return cleanPlan{}, false
	}
	firstDirty := max(l.firstDirty, l.logStart)
	dirtyFrom := k
	var clean, dirty int64
	for i := 0; i < k; i++ {
		if s := l.segs[i]; s.next > firstDirty {
			dirtyFrom = min(dirtyFrom, i)
			dirty += s.size
		} else {
			clean += s.size
		}
	}
	horizonDue := l.tombstoneHorizon > 0 && now >= l.tombstoneHorizon
	switch {
	case dirty == 0 && !horizonDue:
		return cleanPlan{}, false
	case !force && !horizonDue && float64(dirty) < l.cfg.MinCleanableDirtyRatio*float64(clean+dirty):
		return cleanPlan{}, false
	}
	plan := cleanPlan{firstDirty: firstDirty, dirtyFrom: dirtyFrom, now: now, cfg: l.cfg,
		lastData: make(map[int64]int64, len(l.producers.entries)), horizonOnly: dirty == 0}
	for pid, e := range l.producers.entries {
		if n := len(e.Batches); n > 0 {
			plan.lastData[pid] = e.Batches[n-1].LastOffset
		}
	}
	cleanEnd := l.segs[k-1].next
	for _, a := range l.aborted {
		if a.FirstOffset < cleanEnd && a.LastOffset >= l.segs[0].base {
			plan.aborted = append(plan.aborted, a)
		}
	}
	for _, s := range l.segs[:k] {
		f, err := s.reader()
		if err != nil {
			l.logger.Warn("cannot open segment for cleaning", zap.Int64("segment", s.base), zap.Error(err))
			for _, src := range plan.srcs {
				_ = src.file.release()
			}
			return cleanPlan{}, false
		}
		plan.srcs = append(plan.srcs, cleanSource{seg: s, file: f, size: s.size})
	}
	return plan, true
}

// cleaner holds the state of one cleaning.
type cleaner struct {
	l        *Log
	plan     cleanPlan
	keys     map[string]int64 // key -> offset of its latest record in the dirty range
	keyBytes int64
	horizon  int64 // earliest delete horizon of the tombstones and markers kept, 0 if none
	stats    CleanStats
	txns     *cleanTxns
}

// cleanTxns is what the cleaner knows about transactions, as Kafka's
// CleanedTransactionMetadata: the aborted ranges (from the aborted-
// transaction index) whose records are dropped, and which producers had
// transactional data since their last marker in this pass, which decides
// whether a marker may go.
type cleanTxns struct {
	aborted  map[int64][]abortedTxn // by producer, ascending (ranges of one producer never overlap)
	byMarker map[int64]abortedTxn   // by marker offset
	seen     map[int64]bool         // producers whose transactional batches were read since their last marker
}

func newCleanTxns(aborted []abortedTxn) *cleanTxns {
	t := &cleanTxns{aborted: make(map[int64][]abortedTxn), byMarker: make(map[int64]abortedTxn, len(aborted)),
		seen: make(map[int64]bool)}
	for _, a := range aborted {
		t.aborted[a.ProducerID] = append(t.aborted[a.ProducerID], a)
		t.byMarker[a.LastOffset] = a
	}
	return t
}

// isAborted reports whether the transactional batch h belongs to an
// aborted transaction: one of its producer's aborted ranges [first offset,
// marker] holds it.
func (t *cleanTxns) isAborted(h *batch.Header) bool {
	if !h.Transactional() || h.Control() || h.ProducerID < 0 {
		return false
	}
	rs := t.aborted[h.ProducerID]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].LastOffset >= h.BaseOffset })
	return i < len(rs) && rs[i].FirstOffset <= h.BaseOffset
}

// buildMap maps each key of the dirty segments to its latest offset and
// returns how many sources (a prefix of plan.srcs) the cleaning covers: the
// map may fill up before the last dirty segment (Kafka's dedupe buffer).
func (c *cleaner) buildMap() (int, error) {
	end := c.plan.dirtyFrom
	for i := c.plan.dirtyFrom; i < len(c.plan.srcs); i++ {
		if i > c.plan.dirtyFrom && c.keyBytes > cleanerKeyBudget {
			break
		}
		src := c.plan.srcs[i]
		err := scanFile(src.file, src.size, func(h *batch.Header, b []byte) error {
			if c.l.closing.Load() {
				return errCleanAborted
			}
			// Markers carry no keys, and an aborted record must never
			// shadow a committed one (Kafka's buildOffsetMap skips both).
			if h.Control() || c.txns.isAborted(h) || h.BaseOffset < c.plan.firstDirty && h.LastOffset() < c.plan.firstDirty {
				return nil
			}
			recs, err := batchRecords(h, b)
			if err != nil {
				return fmt.Errorf("segment %d offset %d: %w", src.seg.base, h.BaseOffset, err)
			}
			it := batch.NewRecords(recs, h.RecordCount)
			var r batch.Record
			for it.Next(&r) {
				off := h.BaseOffset + int64(r.OffsetDelta)
				if r.Key == nil || off < c.plan.firstDirty {
					continue
				}
				if _, ok := c.keys[string(r.Key)]; !ok {
					c.keyBytes += int64(len(r.Key)) + mapEntryOverhead
				}
				c.keys[string(r.Key)] = off
			}
			return it.Err()
		})
		if err != nil {
			return 0, err
		}
		end = i + 1
	}
	if c.plan.horizonOnly {
		end = len(c.plan.srcs)
	}
	return end, nil
}

// scanFile calls fn for each batch of f below size, reading the file in
// large blocks (a batch larger than a block gets a buffer of its own).
func scanFile(f *sharedFile, size int64, fn func(h *batch.Header, b []byte) error) error {
	buf := make([]byte, 0, cleanerWriteBuf)
	bufPos := int64(0) // file position of buf[0]
	for pos := int64(0); pos < size; {
		if pos+batch.HeaderSize > bufPos+int64(len(buf)) {
			n := min(int64(cap(buf)), size-pos)
			buf = buf[:n]
			if _, err := f.f.ReadAt(buf, pos); err != nil {
				return fmt.Errorf("%s: read at %d: %w", f.f.Name(), pos, err)
			}
			bufPos = pos
		}
		rel := pos - bufPos
		if size-pos < batch.HeaderSize {
			return fmt.Errorf("%s at %d: %w", f.f.Name(), pos, errShortHeader)
		}
		h := batch.DecodeHeader(buf[rel:])
		if err := checkHeader(&h, size-pos); err != nil {
			return fmt.Errorf("%s at %d: %w", f.f.Name(), pos, err)
		}
		if rel+h.Size() > int64(len(buf)) {
			if h.Size() > int64(cap(buf)) {
				buf = make([]byte, 0, h.Size())
			}
			buf = buf[:min(int64(cap(buf)), size-pos)]
			if _, err := f.f.ReadAt(buf, pos); err != nil {
				return fmt.Errorf("%s: read at %d: %w", f.f.Name(), pos, err)
			}
			bufPos, rel = pos, 0
		}
		if err := fn(&h, buf[rel:rel+h.Size()]); err != nil {
			return err
		}
		pos += h.Size()
	}
	return nil
}

// filterMarker decides about the transaction marker h (Kafka's
// onControlBatchRead and the marker branch of checkBatchRetention): a
// marker whose transaction still had data in this pass stays as it is, and
// an abort marker's aborted-transaction entry goes to the output's
// .txnindex (out.aborted). A marker with no data of its transaction left is
// stamped with a delete horizon (now + delete.retention.ms) like a
// tombstone, and removed by the first cleaning after the horizon.
func (c *cleaner) filterMarker(h *batch.Header, b []byte, out *cleanOutput) ([]byte, error) {
	hadData := c.txns.seen[h.ProducerID]
	delete(c.txns.seen, h.ProducerID)
	if hadData {
		if a, ok := c.txns.byMarker[h.BaseOffset]; ok {
			out.aborted = append(out.aborted, a)
		}
		return b, nil
	}
	if h.Attributes&batch.AttrDeleteHorizon != 0 {
		if c.plan.now >= h.BaseTimestamp {
			return nil, nil
		}
		c.noteHorizon(h.BaseTimestamp)
		return b, nil
	}
	recs, err := batchRecords(h, b)
	if err != nil {
		return nil, fmt.Errorf("marker at %d: %w", h.BaseOffset, err)
	}
	horizon := c.plan.now + c.plan.cfg.DeleteRetentionMs
	var rebuilt []byte
	it := batch.NewRecords(recs, h.RecordCount)
	var r batch.Record
	for it.Next(&r) {
		rebuilt = r.AppendTo(rebuilt, h.BaseTimestamp+r.TimestampDelta-horizon)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("marker at %d: %w", h.BaseOffset, err)
	}
	c.noteHorizon(horizon)
	return buildBatch(h, h.Attributes|batch.AttrDeleteHorizon, horizon, h.MaxTimestamp, h.RecordCount, rebuilt)
}

func (c *cleaner) noteHorizon(ts int64) {
	if c.horizon == 0 || ts < c.horizon {
		c.horizon = ts
	}
}

// filterBatch returns the batch to write in place of b: b itself when every
// record stays and nothing changes, nil when the batch goes away, or a
// rebuilt batch (same base offset, last offset delta, producer fields and
// base sequence; retained records only; new CRC). Records of aborted
// transactions go; markers are decided by filterMarker.
func (c *cleaner) filterBatch(h *batch.Header, b []byte, dst *cleanOutput) ([]byte, error) {
	if h.Control() {
		return c.filterMarker(h, b, dst)
	}
	if h.Transactional() && h.ProducerID >= 0 {
		c.txns.seen[h.ProducerID] = true
	}
	aborted := c.txns.isAborted(h)
	recs, err := batchRecords(h, b)
	if err != nil {
		return nil, fmt.Errorf("offset %d: %w", h.BaseOffset, err)
	}
	hasHorizon := h.Attributes&batch.AttrDeleteHorizon != 0
	var kept []batch.Record
	tombstones := false
	it := batch.NewRecords(recs, h.RecordCount)
	var r batch.Record
	for it.Next(&r) {
		c.stats.RecordsRead++
		off := h.BaseOffset + int64(r.OffsetDelta)
		if r.Key == nil || aborted {
			continue // Kafka's cleaner discards keyless records
		}
		if latest, ok := c.keys[string(r.Key)]; ok && off < latest {
			continue
		}
		if r.Value == nil {
			if hasHorizon && c.plan.now >= h.BaseTimestamp {
				continue // delete.retention.ms has passed since the tombstone was first cleaned
			}
			tombstones = true
		}
		kept = append(kept, r)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("offset %d: %w", h.BaseOffset, err)
	}
	c.stats.RecordsKept += int64(len(kept))
	baseTs, attrs := h.BaseTimestamp, h.Attributes
	if tombstones {
		if !hasHorizon {
			baseTs, attrs = c.plan.now+c.plan.cfg.DeleteRetentionMs, attrs|batch.AttrDeleteHorizon
		}
		c.noteHorizon(baseTs)
	}
	switch {
	case len(kept) == int(h.RecordCount) && baseTs == h.BaseTimestamp:
		return b, nil
	case len(kept) == 0:
		if last, ok := c.plan.lastData[h.ProducerID]; h.ProducerID >= 0 && ok && last == h.LastOffset() {
			// Kafka keeps the producer's last batch as an empty header so its
			// sequence and epoch survive (BatchRetention.RETAIN_EMPTY).
			attrs = h.Attributes &^ (batch.AttrCompressionMask | batch.AttrDeleteHorizon)
			return buildBatch(h, attrs, h.MaxTimestamp, h.MaxTimestamp, 0, nil)
		}
		return nil, nil
	}
	oldBase := h.BaseTimestamp
	maxTs := int64(math.MinInt64)
	var out []byte
	for i := range kept {
		ts := oldBase + kept[i].TimestampDelta
		maxTs = max(maxTs, ts)
		out = kept[i].AppendTo(out, ts-baseTs)
	}
	if h.Attributes&batch.AttrTimestampType != 0 {
		maxTs = h.MaxTimestamp // LogAppendTime: the batch timestamp applies
	}
	return buildBatch(h, attrs, baseTs, maxTs, int32(len(kept)), out)
}

// removeFiles deletes paths, ignoring missing ones.
func (l *Log) removeFiles(paths ...string) error {
	var errs []error
	for _, p := range paths {
		if err := l.fsys.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
