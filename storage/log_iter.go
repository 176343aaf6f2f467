package storage

import (
	"fmt"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ForEachBatch calls fn with every whole batch that holds offsets at or
// after from, in offset order, up to the high watermark as of the call:
// the batch containing from first (it may start before from), then every
// later batch, across segments and compaction gaps, without the fetch
// path's byte limits. It is meant for replaying a log, e.g. the group
// coordinator loading __consumer_offsets. b is valid only during the call
// (its buffer is reused) and must not be modified; an error from fn stops
// the walk and is returned. from below the log start offset starts at the
// log start; from above the high watermark is kerr.OffsetOutOfRange.
// Segments are read through referenced descriptors without holding the log
// lock, so appends, rolls and cleaning proceed meanwhile; a batch that a
// concurrent cleaning rewrote is seen in either its old or its new form.
func (l *Log) ForEachBatch(from int64, fn func(batch []byte) error) error {
	return l.forEachBatch(from, false, fn)
}

// ForEachBatchToEnd is ForEachBatch up to the log end offset as of the
// call, as Kafka's coordinators load their partition on becoming its
// leader: a new leader's high watermark may still lag what it holds, all
// of which is its log now.
func (l *Log) ForEachBatchToEnd(from int64, fn func(batch []byte) error) error {
	return l.forEachBatch(from, true, fn)
}

func (l *Log) forEachBatch(from int64, toEnd bool, fn func(batch []byte) error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("log %s: %w: %w", l.dir, errLogClosed, kerr.KafkaStorageError)
	}
	hw := l.hw.offset
	if toEnd {
		hw = l.active().next
	}
	if from > hw {
		l.mu.Unlock()
		return fmt.Errorf("offset %d above high watermark %d: %w", from, hw, kerr.OffsetOutOfRange)
	}
	from = max(from, l.logStart)
	l.mu.Unlock()

	var buf []byte
	for from < hw {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return fmt.Errorf("log %s: %w: %w", l.dir, errLogClosed, kerr.KafkaStorageError)
		}
		s := l.segmentFor(from)
		limit := s.size
		if !toEnd && l.hw.segBase == s.base {
			limit = l.hw.pos
		}
		f, pos, err := l.findBatch(s, from, limit)
		next := l.nextSegment(s)
		l.mu.Unlock()
		if err != nil {
			return fmt.Errorf("replay from %d: %w: %w", from, err, kerr.KafkaStorageError)
		}
		if f == nil {
			if next == nil {
				return nil
			}
			from = max(from, next.base)
			continue
		}
		var hb [batch.HeaderSize]byte
		err = func() error {
			defer func() { _ = f.release() }()
			for pos < limit && from < hw {
				h, err := readHeader(f.f, pos, limit, &hb)
				if err != nil {
					return fmt.Errorf("segment %d at %d: %w: %w", s.base, pos, err, kerr.KafkaStorageError)
				}
				if int64(cap(buf)) < h.Size() {
					buf = make([]byte, h.Size())
				}
				b := buf[:h.Size()]
				if _, err := f.f.ReadAt(b, pos); err != nil {
					return fmt.Errorf("segment %d: read batch at %d: %w: %w", s.base, pos, err, kerr.KafkaStorageError)
				}
				if err := fn(b); err != nil {
					return err
				}
				from = h.NextOffset()
				pos += h.Size()
			}
			return nil
		}()
		if err != nil {
			return err
		}
		if from < hw && next != nil {
			from = max(from, next.base)
		}
	}
	return nil
}
