package storage

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// attrDeleteHorizon is attributes bit 6 (KIP-534): the batch's
// baseTimestamp is the time after which its tombstones may be removed.
const attrDeleteHorizon = 0x40

// record is one v2 record parsed from a batch's (decompressed) records
// section. Key and value alias the section; keyNull / valueNull mark a
// length of -1. tail is everything from the key length on, so a record can
// be re-encoded with a new timestamp delta without touching the rest.
type record struct {
	attrs     byte
	tsDelta   int64
	offDelta  int32
	key       []byte
	keyNull   bool
	valueNull bool
	raw       []byte // length varint + body, as stored
	tail      []byte
}

// forEachRecord parses the records of an uncompressed records section
// (length varint, attributes int8, timestampDelta varlong, offsetDelta
// varint, keyLength varint, key, valueLength varint, value, headers).
func forEachRecord(recs []byte, count int32, fn func(r *record) error) error {
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 1 || int64(len(recs)-n) < length {
			return fmt.Errorf("record %d: bad length", i)
		}
		r := record{raw: recs[:n+int(length)]}
		body := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		r.attrs = body[0]
		p := 1
		ts, m := binary.Varint(body[p:])
		if m <= 0 {
			return fmt.Errorf("record %d: bad timestamp delta", i)
		}
		p += m
		od, m := binary.Varint(body[p:])
		if m <= 0 {
			return fmt.Errorf("record %d: bad offset delta", i)
		}
		p += m
		r.tsDelta, r.offDelta, r.tail = ts, int32(od), body[p:]
		kl, m := binary.Varint(body[p:])
		if m <= 0 || kl < -1 || kl > int64(len(body)-p-m) {
			return fmt.Errorf("record %d: bad key length", i)
		}
		p += m
		if kl < 0 {
			r.keyNull = true
		} else {
			r.key = body[p : p+int(kl)]
			p += int(kl)
		}
		vl, m := binary.Varint(body[p:])
		if m <= 0 || vl < -1 || vl > int64(len(body)-p-m) {
			return fmt.Errorf("record %d: bad value length", i)
		}
		r.valueNull = vl < 0
		if err := fn(&r); err != nil {
			return err
		}
	}
	if len(recs) != 0 {
		return fmt.Errorf("%d bytes after the last of %d records", len(recs), count)
	}
	return nil
}

// batchRecords returns the decompressed records section of batch b.
func batchRecords(h *batchHeader, b []byte) ([]byte, error) {
	return decompressRecords(h.compression(), b[batchHeaderSize:])
}

// RecordError is one record a batch was refused for, as Kafka's
// ProduceResponse.RecordError: its index in the batch and why.
type RecordError struct {
	BatchIndex int32
	Message    string
}

// RecordValidationError refuses a batch for the records it lists, as
// Kafka's RecordValidationException: its text is Kafka's message and it
// unwraps to kerr.InvalidRecord.
type RecordValidationError struct {
	Records []RecordError
}

func (e *RecordValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [", len(e.Records))
	for i, r := range e.Records[:min(len(e.Records), 3)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "RecordError(batchIndex=%d, message='%s')", r.BatchIndex, r.Message)
	}
	b.WriteByte(']')
	return b.String()
}

func (e *RecordValidationError) Unwrap() error { return kerr.InvalidRecord }

// checkKeyed lists the records of batch b without a key, as Kafka's
// LogValidator.validateKey does for compacted topics; partition names the
// log in the message ("topic-0"). Compressed batches are decompressed for
// the check. A record that does not parse is INVALID_RECORD, as Kafka's
// DefaultRecord.readFrom.
func checkKeyed(h *batchHeader, b []byte, partition string) ([]RecordError, error) {
	recs, err := batchRecords(h, b)
	if err != nil {
		return nil, fmt.Errorf("compacted topic: %w: %w", err, kerr.CorruptMessage)
	}
	var keyless []RecordError
	index := int32(0)
	err = forEachRecord(recs, h.RecordCount, func(r *record) error {
		if r.keyNull {
			keyless = append(keyless, RecordError{BatchIndex: index,
				Message: "Compacted topic cannot accept message without key in topic partition " + partition})
		}
		index++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compacted topic: invalid record structure: %w: %w", err, kerr.InvalidRecord)
	}
	return keyless, nil
}

// appendRecord re-encodes r with a timestamp delta relative to a new base
// timestamp, or copies it when the delta is unchanged.
func appendRecord(dst []byte, r *record, tsDelta int64) []byte {
	if tsDelta == r.tsDelta {
		return append(dst, r.raw...)
	}
	var body [1 + 2*binary.MaxVarintLen64]byte
	body[0] = r.attrs
	n := 1 + binary.PutVarint(body[1:], tsDelta)
	n += binary.PutVarint(body[n:], int64(r.offDelta))
	dst = binary.AppendVarint(dst, int64(n+len(r.tail)))
	dst = append(dst, body[:n]...)
	return append(dst, r.tail...)
}

// buildBatch assembles a v2 batch from the header fields of orig (base
// offset, last offset delta, leader epoch, producer fields, base sequence)
// and the given attributes, timestamps, count and uncompressed records,
// compressing them with the attributes' codec, and computes its CRC32C.
func buildBatch(orig *batchHeader, attrs int16, baseTs, maxTs int64, count int32, recs []byte) ([]byte, error) {
	payload, err := compressRecords(int(attrs&attrCompressionMask), recs)
	if err != nil {
		return nil, err
	}
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(payload))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(orig.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(batchHeaderSize-logOverhead+len(payload)))
	be.PutUint32(b[offLeaderEpoch:], uint32(orig.PartitionLeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(attrs))
	be.PutUint32(b[offLastOffsetDelta:], uint32(orig.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], uint64(orig.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(orig.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(orig.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(count))
	b = append(b, payload...)
	be.PutUint32(b[offCRC:], batchCRC(b))
	return b, nil
}
