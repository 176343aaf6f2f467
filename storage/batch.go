package storage

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// maxCompressionCodec is zstd, the last codec Kafka knows.
const maxCompressionCodec = batch.CodecZstd

// metaOf is what producer state tracks of a batch.
func metaOf(h *batch.Header) batchMeta {
	return batchMeta{
		ProducerID:      h.ProducerID,
		ProducerEpoch:   h.ProducerEpoch,
		BaseSequence:    h.BaseSequence,
		LastOffsetDelta: h.LastOffsetDelta,
		BaseOffset:      h.BaseOffset,
		MaxTimestamp:    h.MaxTimestamp,
		Transactional:   h.Transactional(),
	}
}

// checkHeader validates the structural fields of a header whose batch must
// fit in avail bytes. It is shared by produce validation and recovery.
func checkHeader(h *batch.Header, avail int64) error {
	if h.BatchLength < batch.HeaderSize-batch.LogOverhead {
		return fmt.Errorf("batch at offset %d: length %d below header size: %w", h.BaseOffset, h.BatchLength, kerr.CorruptMessage)
	}
	if h.Size() > avail {
		return fmt.Errorf("batch at offset %d: length %d exceeds the %d bytes available: %w", h.BaseOffset, h.BatchLength, avail, kerr.CorruptMessage)
	}
	if h.Magic != 2 {
		// Kafka's batch iterator rejects an unknown magic as corrupt; magic 0
		// and 1 are well-formed but refused for produce v3+ (InvalidRecord).
		if h.Magic < 0 || h.Magic > 2 {
			return fmt.Errorf("batch at offset %d: unknown magic %d: %w", h.BaseOffset, h.Magic, kerr.CorruptMessage)
		}
		return fmt.Errorf("batch at offset %d: magic %d, only v2 record batches are accepted: %w", h.BaseOffset, h.Magic, kerr.InvalidRecord)
	}
	return nil
}

// walkBatches checks what every payload's batches must be, whoever sent
// them (a header that fits, magic 2, at most maxMessageBytes, a matching
// CRC-32C), then rule's checks of each, and returns the headers. It never
// allocates from a length field before checking it against the buffer.
// what names the payload in the error of an empty one.
func walkBatches(records []byte, maxMessageBytes int, what string, rule func(batch.Header) error) ([]batch.Header, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("empty %s: %w", what, kerr.InvalidRecord)
	}
	var hdrs []batch.Header
	for pos := 0; pos < len(records); {
		rest := records[pos:]
		if len(rest) < batch.HeaderSize {
			return nil, fmt.Errorf("batch at byte %d: %d bytes left, header needs %d: %w", pos, len(rest), batch.HeaderSize, kerr.CorruptMessage)
		}
		h := batch.DecodeHeader(rest)
		if err := checkHeader(&h, int64(len(rest))); err != nil {
			return nil, err
		}
		if h.Size() > int64(maxMessageBytes) {
			return nil, fmt.Errorf("batch of %d bytes exceeds max.message.bytes %d: %w", h.Size(), maxMessageBytes, kerr.MessageTooLarge)
		}
		if got := batch.CRC(rest[:h.Size()]); got != h.CRC {
			return nil, fmt.Errorf("batch at byte %d: crc %08x, computed %08x: %w", pos, h.CRC, got, kerr.CorruptMessage)
		}
		if err := rule(h); err != nil {
			return nil, err
		}
		hdrs = append(hdrs, h)
		pos += int(h.Size())
	}
	return hdrs, nil
}

// validateBatches checks a produce payload and returns its batch headers.
// Errors wrap the kerr code Kafka returns for the same input.
func validateBatches(records []byte, maxMessageBytes int) ([]batch.Header, error) {
	return walkBatches(records, maxMessageBytes, "produce payload", clientBatchRule)
}

// clientBatchRule is what a client's batch must be beyond its structure, as
// Kafka's LogValidator for a produce request.
func clientBatchRule(h batch.Header) error {
	if h.LastOffsetDelta < 0 {
		return fmt.Errorf("batch has an invalid last offset delta %d: %w", h.LastOffsetDelta, kerr.InvalidRecord)
	}
	if h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 {
		return fmt.Errorf("batch record count %d does not match last offset delta %d: %w", h.RecordCount, h.LastOffsetDelta, kerr.InvalidRecord)
	}
	if h.Compression() > maxCompressionCodec {
		return fmt.Errorf("batch compression codec %d: %w", h.Compression(), kerr.UnsupportedCompressionType)
	}
	if h.Control() {
		return fmt.Errorf("clients may not send control batches: %w", kerr.InvalidRecord)
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return fmt.Errorf("idempotent batch of producer %d without a base sequence: %w", h.ProducerID, kerr.InvalidRecord)
	}
	return nil
}

// checkTimestamps is Kafka's timestamp bound for CreateTime topics
// (LogValidator.validateTimestamp): a record may be at most beforeMax ms
// older and afterMax ms newer than the broker's clock, else the batch is
// INVALID_TIMESTAMP. Records are not decoded here, so the bounds are checked
// on each batch's first timestamp (a producer's earliest record) and its max
// timestamp (its latest); records without a timestamp (-1) pass, as in
// Kafka.
//
// With the default unbounded beforeMax only the future bound applies, and
// a timestamp within afterMax of a clock reading taken earlier is within it
// of the clock now, so the clock is read only when that check fails (about
// once per afterMax), not on every append.
func (l *Log) checkTimestamps(hdrs []batch.Header, beforeMax, afterMax int64) error {
	fresh := beforeMax != math.MaxInt64
	now := l.msClock.Load()
	if fresh {
		now = l.readClockMs()
	}
	for i := range hdrs {
		for _, ts := range [2]int64{hdrs[i].BaseTimestamp, hdrs[i].MaxTimestamp} {
			if timestampInBounds(ts, beforeMax, afterMax, now) {
				continue
			}
			if !fresh {
				now, fresh = l.readClockMs(), true
				if timestampInBounds(ts, beforeMax, afterMax, now) {
					continue
				}
			}
			return timestampError(ts, beforeMax, afterMax, now)
		}
	}
	return nil
}

// readClockMs reads the log's clock in ms for checkTimestamps.
func (l *Log) readClockMs() int64 {
	now := l.now().UnixMilli()
	l.msClock.Store(now)
	return now
}

// timestampInBounds is written so that no subtraction can overflow.
// Kafka's unbounded default (Long.MAX_VALUE) never refuses, and a record
// without a timestamp (-1) always passes.
func timestampInBounds(ts, beforeMax, afterMax, now int64) bool {
	const noTimestamp = -1
	tooOld := beforeMax != math.MaxInt64 && ts < now && ts != noTimestamp && now-beforeMax > ts
	tooNew := ts > now && ts-now > afterMax
	return !tooOld && !tooNew
}

// timestampError is apart from checkTimestamps so that only a refusal
// allocates.
func timestampError(ts, beforeMax, afterMax, now int64) error {
	return fmt.Errorf("record timestamp %d is out of range: timestamps must be within [%d, %d]: %w",
		ts, now-beforeMax, satAdd(now, afterMax), kerr.InvalidTimestamp)
}

// satAdd is a+b, or math.MaxInt64 where that overflows (a, b >= 0).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// stampBatch assigns the batch's base offset and leader epoch in place.
// Neither field is covered by the CRC, so the checksum stays valid.
func stampBatch(b []byte, baseOffset int64, leaderEpoch int32) {
	binary.BigEndian.PutUint64(b[batch.OffBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[batch.OffLeaderEpoch:], uint32(leaderEpoch))
}
