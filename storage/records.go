package storage

import (
	"fmt"
	"strings"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// batchRecords returns the decompressed records section of batch b.
func batchRecords(h *batch.Header, b []byte) ([]byte, error) {
	return batch.Decompress(h.Compression(), b[batch.HeaderSize:])
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
func checkKeyed(h *batch.Header, b []byte, partition string) ([]RecordError, error) {
	recs, err := batchRecords(h, b)
	if err != nil {
		return nil, fmt.Errorf("compacted topic: %w: %w", err, kerr.CorruptMessage)
	}
	var keyless []RecordError
	it := batch.NewRecords(recs, h.RecordCount)
	var r batch.Record
	for index := int32(0); it.Next(&r); index++ {
		if r.Key == nil {
			keyless = append(keyless, RecordError{BatchIndex: index,
				Message: "Compacted topic cannot accept message without key in topic partition " + partition})
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("compacted topic: invalid record structure: %w: %w", err, kerr.InvalidRecord)
	}
	return keyless, nil
}

// buildBatch assembles a v2 batch from the header fields of orig (base
// offset, last offset delta, leader epoch, producer fields, base sequence)
// and the given attributes, timestamps, count and uncompressed records,
// compressing them with the attributes' codec, and computes its CRC32C.
func buildBatch(orig *batch.Header, attrs int16, baseTs, maxTs int64, count int32, recs []byte) ([]byte, error) {
	payload, err := batch.Compress(int(attrs&batch.AttrCompressionMask), recs)
	if err != nil {
		return nil, err
	}
	h := batch.Header{
		BaseOffset:           orig.BaseOffset,
		PartitionLeaderEpoch: orig.PartitionLeaderEpoch,
		Magic:                batch.Magic,
		Attributes:           attrs,
		LastOffsetDelta:      orig.LastOffsetDelta,
		BaseTimestamp:        baseTs,
		MaxTimestamp:         maxTs,
		ProducerID:           orig.ProducerID,
		ProducerEpoch:        orig.ProducerEpoch,
		BaseSequence:         orig.BaseSequence,
		RecordCount:          count,
	}
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(payload))
	h.Put(b)
	b = append(b, payload...)
	batch.Seal(b)
	return b, nil
}
