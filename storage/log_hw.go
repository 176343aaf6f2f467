package storage

// The high watermark.
//
// Append does not move a log's high watermark: the replica layer (package
// replica) does, once the replicas the partition's ISR needs hold the
// records, as Kafka's Partition.maybeIncrementLeaderHW moves
// UnifiedLog.highWatermark. Until then the records are in the log but no
// fetch sees them. A log remembers where its last appends ended (recentEnds)
// so moving the high watermark to the end of one of them costs no read;
// any other offset is found by reading batch headers, as a read does.

import (
	"fmt"

	"github.com/strata-io/strata/internal/batch"

	"github.com/twmb/franz-go/pkg/kerr"
)

// recentEnds is how many append end positions a log remembers.
const recentEnds = 16

// noteEnd remembers where an append ended. Caller holds l.mu.
func (l *Log) noteEnd(p logPos) {
	l.ends[l.endsNext%recentEnds] = p
	l.endsNext++
}

// forgetEnds drops the remembered append ends, after the segments they
// point into changed. Caller holds l.mu.
func (l *Log) forgetEnds() {
	l.ends = [recentEnds]logPos{}
	l.endsNext = 0
}

// AdvanceHighWatermark moves the high watermark up to offset, which must be
// a batch boundary no higher than the log end offset, and wakes waiting
// fetches; an offset at or below the high watermark changes nothing. A
// failed log moves it no more: offset is then acknowledged only if it was
// fsynced (fail kept it), else the error is kerr.KafkaStorageError, since
// fail may have cut the records below offset.
func (l *Log) AdvanceHighWatermark(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset <= l.hw.offset {
		return nil
	}
	if l.failed != nil {
		if offset <= l.flushedPos.offset {
			return nil
		}
		return l.storageError()
	}
	if leo := l.active().next; offset > leo {
		return fmt.Errorf("log %s: high watermark %d above the log end offset %d: %w", l.dir, offset, leo, kerr.OffsetOutOfRange)
	}
	p, err := l.positionOf(offset)
	if err != nil {
		return err
	}
	l.advanceHW(p)
	return nil
}

// positionOf returns the position of the batch boundary at offset, which is
// in [log start offset, log end offset]. Caller holds l.mu.
func (l *Log) positionOf(offset int64) (logPos, error) {
	act := l.active()
	switch offset {
	case act.next:
		return logPos{offset: offset, segBase: act.base, pos: act.size}, nil
	case act.base:
		return logPos{offset: offset, segBase: act.base}, nil
	}
	for _, e := range l.ends {
		// Only the active segment is never rewritten (compaction, retention).
		if e.offset == offset && e.segBase == act.base {
			return e, nil
		}
	}
	s := l.segmentFor(offset)
	if offset == s.next {
		return logPos{offset: offset, segBase: s.base, pos: s.size}, nil
	}
	f, pos, err := l.findBatch(s, offset, s.size)
	if err != nil {
		return logPos{}, fmt.Errorf("log %s: high watermark %d: %w: %w", l.dir, offset, err, kerr.KafkaStorageError)
	}
	if f == nil {
		return logPos{offset: offset, segBase: s.base, pos: s.size}, nil
	}
	defer func() { _ = f.release() }()
	var hb [batch.HeaderSize]byte
	h, err := readHeader(f.f, pos, s.size, &hb)
	if err != nil {
		return logPos{}, fmt.Errorf("log %s: high watermark %d: %w: %w", l.dir, offset, err, kerr.KafkaStorageError)
	}
	if h.BaseOffset < offset {
		return logPos{}, fmt.Errorf("log %s: high watermark %d inside the batch at offsets [%d, %d]: %w",
			l.dir, offset, h.BaseOffset, h.LastOffset(), kerr.OffsetOutOfRange)
	}
	return logPos{offset: offset, segBase: s.base, pos: pos}, nil
}
