package storage

import (
	"fmt"
	"sort"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ReadResult is what Read returns.
type ReadResult struct {
	Chunk          Chunk
	HighWatermark  int64
	LastStable     int64 // min(first offset of open transactions, high watermark)
	LogStartOffset int64
	// NextOffset is the offset after the chunk's last batch (the fetch
	// offset when the chunk is empty): the upper bound for
	// AbortedTransactions.
	NextOffset int64
}

// segmentFor returns the segment whose range holds offset (the last one
// with base <= offset).
func (l *Log) segmentFor(offset int64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	if i == 0 {
		return l.segs[0]
	}
	return l.segs[i-1]
}

// Read returns whole batches starting at the batch containing offset, up to
// maxBytes (the first batch regardless when minOneBatch), from one segment
// and never past the high watermark. An offset from the HW to the log end
// offset gives an empty chunk (on a new leader the HW may trail the offsets
// consumers already read); one outside [LogStartOffset, log end offset]
// gives kerr.OffsetOutOfRange, as Kafka's LocalLog.read.
func (l *Log) Read(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	return l.ReadIsolated(offset, maxBytes, minOneBatch, false)
}

// ReadIsolated is Read with an isolation level: readCommitted stops at the
// last stable offset (a batch starting at or after it is not returned), so
// an offset in [LSO, HW] gives an empty chunk, as Kafka's read_committed.
func (l *Log) ReadIsolated(offset int64, maxBytes int, minOneBatch, readCommitted bool) (ReadResult, error) {
	l.mu.Lock()
	lso := l.lastStableLocked()
	upTo := l.hw.offset
	if readCommitted {
		upTo = lso
	}
	return l.readLocked(offset, maxBytes, minOneBatch, l.hw, upTo, lso)
}

// ReadReplica is Read for a follower of this log, as Kafka's reads with
// FetchIsolation.LOG_END: whole batches up to the log end offset, past the
// high watermark; an offset outside [LogStartOffset, log end offset] gives
// kerr.OffsetOutOfRange.
func (l *Log) ReadReplica(offset int64, maxBytes int, minOneBatch bool) (ReadResult, error) {
	l.mu.Lock()
	act := l.active()
	end := logPos{offset: act.next, segBase: act.base, pos: act.size}
	return l.readLocked(offset, maxBytes, minOneBatch, end, end.offset, l.lastStableLocked())
}

// readLocked reads from offset to bound (the high watermark or the log end
// offset), batches starting at or after upTo left out; an offset past the
// bound but not past the log end gives an empty chunk. Caller holds l.mu,
// which it releases.
func (l *Log) readLocked(offset int64, maxBytes int, minOneBatch bool, bound logPos, upTo, lso int64) (ReadResult, error) {
	res := ReadResult{HighWatermark: l.hw.offset, LastStable: lso, LogStartOffset: l.logStart, NextOffset: offset}
	if l.closed {
		l.mu.Unlock()
		return res, fmt.Errorf("log %s: %w: %w", l.dir, errLogClosed, kerr.KafkaStorageError)
	}
	if end := l.active().next; offset < l.logStart || offset > end {
		l.mu.Unlock() // the message uses res and end: l.logStart and the end change once unlocked
		return res, fmt.Errorf("offset %d outside [%d, %d]: %w", offset, res.LogStartOffset, end, kerr.OffsetOutOfRange)
	}
	if offset >= upTo || offset > bound.offset {
		l.mu.Unlock()
		return res, nil
	}
	s := l.segmentFor(offset)
	var (
		f     *sharedFile
		pos   int64
		limit int64
	)
	for {
		limit = s.size
		if bound.segBase == s.base {
			limit = bound.pos
		}
		var err error
		f, pos, err = l.findBatch(s, offset, limit)
		if err != nil {
			l.mu.Unlock()
			return res, fmt.Errorf("read offset %d: %w: %w", offset, err, kerr.KafkaStorageError)
		}
		if f != nil {
			break
		}
		// Compaction removed the rest of this segment: continue at the next.
		next := l.nextSegment(s)
		if next == nil || next.base >= upTo {
			l.mu.Unlock()
			return res, nil
		}
		s = next
	}
	// The chunk ends at a batch boundary, found by reading batch headers.
	// When every batch below limit is under upTo, the walk starts at the
	// last indexed batch inside the byte budget instead of at pos: the
	// batches before it are whole and wanted, and their headers need not
	// be read (one pread each).
	end := pos
	if upTo == bound.offset {
		if p := s.idx.lastBefore(min(limit, pos+int64(maxBytes))); p > pos {
			end = p
		}
	}
	skipped := end > pos
	l.mu.Unlock()
	var hb [batch.HeaderSize]byte
	for end < limit {
		h, err := readHeader(f.f, end, limit, &hb)
		if err != nil {
			_ = f.release()
			return res, fmt.Errorf("segment %d: read at position %d: %w: %w", s.base, end, err, kerr.KafkaStorageError)
		}
		if h.BaseOffset >= upTo || end+h.Size()-pos > int64(maxBytes) && !(end == pos && minOneBatch) {
			if skipped {
				res.NextOffset = h.BaseOffset // the skipped batches end below it
			}
			break
		}
		end += h.Size()
		res.NextOffset = h.NextOffset()
		skipped = false
	}
	if end == pos {
		_ = f.release()
		return res, nil
	}
	res.Chunk = Chunk{file: f, pos: pos, n: int(end - pos)}
	return res, nil
}

// findBatch returns a referenced descriptor of s and the position of the
// first batch below limit whose last offset is >= offset, or a nil file when
// there is none (the rest of the segment was compacted away). The scan
// reads only batch headers. Caller holds l.mu.
func (l *Log) findBatch(s *segment, offset, limit int64) (*sharedFile, int64, error) {
	pos := int64(0)
	if offset > s.base {
		pos = s.idx.lookup(offset)
	}
	f, err := s.reader()
	if err != nil {
		return nil, 0, err
	}
	var hb [batch.HeaderSize]byte
	for pos < limit {
		h, err := readHeader(f.f, pos, limit, &hb)
		if err != nil {
			_ = f.release()
			return nil, 0, fmt.Errorf("segment %d: find offset %d: %w", s.base, offset, err)
		}
		if h.LastOffset() >= offset {
			return f, pos, nil
		}
		pos += h.Size()
	}
	_ = f.release()
	return nil, 0, nil
}

// nextSegment returns the segment after s, or nil. Caller holds l.mu.
func (l *Log) nextSegment(s *segment) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > s.base })
	if i == len(l.segs) {
		return nil
	}
	return l.segs[i]
}

// MaxTimestamp returns the largest batch timestamp and the offset of the
// record carrying it (the batch's last offset when the batch is compressed),
// or (-1, -1) when the log is empty.
func (l *Log) MaxTimestamp() (offset, timestamp int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best *segment
	for _, s := range l.segs {
		if s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if best == nil {
		return -1, -1
	}
	offset, timestamp = best.maxTsOffset, best.maxTs
	// Find the batch ending at maxTsOffset and, if it is uncompressed, the
	// exact record with the timestamp (Kafka >= 3.8 returns that offset).
	_ = l.scanBatches(best, best.idx.lookup(best.maxTsOffset), func(h *batch.Header, b []byte) bool {
		if h.LastOffset() < best.maxTsOffset {
			return true
		}
		if o, t, ok := firstRecordAtOrAfter(h, b, best.maxTs); ok && t == best.maxTs {
			offset = o
		}
		return false
	})
	return offset, timestamp
}

// OffsetForTimestamp returns the first offset whose timestamp is >= ts and
// that timestamp, using the time index to skip ahead. For a compressed batch
// the batch's base offset and max timestamp are returned (records are not
// decompressed).
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		if s.maxTs < ts {
			continue
		}
		start := s.idx.lookup(s.tidx.lookup(ts))
		_ = l.scanBatches(s, start, func(h *batch.Header, b []byte) bool {
			if h.MaxTimestamp < ts {
				return true
			}
			offset, timestamp, ok = firstRecordAtOrAfter(h, b, ts)
			return !ok
		})
		if ok {
			return offset, timestamp, true
		}
	}
	return -1, -1, false
}

// scanBatches walks the batches of s from position pos below the high
// watermark, reading each whole batch, until fn returns false. Caller holds
// l.mu.
func (l *Log) scanBatches(s *segment, pos int64, fn func(h *batch.Header, b []byte) bool) error {
	limit := s.size
	if l.hw.segBase == s.base {
		limit = l.hw.pos
	}
	f, err := s.reader()
	if err != nil {
		return err
	}
	defer func() { _ = f.release() }()
	var hb [batch.HeaderSize]byte
	var buf []byte
	for pos < limit {
		h, err := readHeader(f.f, pos, limit, &hb)
		if err != nil {
			return err
		}
		if cap(buf) < int(h.Size()) {
			buf = make([]byte, h.Size())
		}
		b := buf[:h.Size()]
		if _, err := f.f.ReadAt(b, pos); err != nil {
			return fmt.Errorf("segment %d: read batch at %d: %w", s.base, pos, err)
		}
		if !fn(&h, b) {
			return nil
		}
		pos += h.Size()
	}
	return nil
}

// firstRecordAtOrAfter finds, in an uncompressed batch, the first record
// with timestamp >= ts. A compressed batch (or one whose records do not
// parse) answers with its base offset and max timestamp if that qualifies.
func firstRecordAtOrAfter(h *batch.Header, b []byte, ts int64) (offset, timestamp int64, ok bool) {
	if h.Compression() == 0 {
		if o, t, found, err := scanRecordTimestamps(h, b[batch.HeaderSize:], ts); err == nil {
			return o, t, found
		}
	}
	if h.MaxTimestamp >= ts {
		return h.BaseOffset, h.MaxTimestamp, true
	}
	return -1, -1, false
}

// scanRecordTimestamps walks the records of an uncompressed records
// section for the first with timestamp >= ts.
func scanRecordTimestamps(h *batch.Header, recs []byte, ts int64) (offset, timestamp int64, found bool, err error) {
	it := batch.NewRecords(recs, h.RecordCount)
	var r batch.Record
	for it.Next(&r) {
		if t := h.BaseTimestamp + r.TimestampDelta; t >= ts {
			return h.BaseOffset + int64(r.OffsetDelta), t, true, nil
		}
	}
	return 0, 0, false, it.Err()
}
