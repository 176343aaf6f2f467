// Package batch is the Kafka record batch (magic 2) as every log, produce
// request and fetch response carries it: the header layout, its CRC-32C,
// the record framing of the records section and the compression codecs.
// storage/doc.go describes the on-disk format this code reads and writes.
package batch

import (
	"encoding/binary"

	"github.com/klauspost/crc32"
)

// Header layout: the byte offset of each field of the fixed-size prefix,
// all integers big-endian.
const (
	OffBaseOffset      = 0  // int64: assigned by the broker on append
	OffBatchLength     = 8  // int32: bytes after this field
	OffLeaderEpoch     = 12 // int32: partitionLeaderEpoch
	OffMagic           = 16 // int8: 2
	OffCRC             = 17 // uint32: CRC-32C of bytes [OffAttributes, end)
	OffAttributes      = 21 // int16
	OffLastOffsetDelta = 23 // int32
	OffBaseTimestamp   = 27 // int64
	OffMaxTimestamp    = 35 // int64
	OffProducerID      = 43 // int64: -1 if not idempotent
	OffProducerEpoch   = 51 // int16
	OffBaseSequence    = 53 // int32
	OffRecordCount     = 57 // int32

	// HeaderSize is the size of the fixed-size prefix; the records
	// section follows it.
	HeaderSize = 61
	// LogOverhead is baseOffset + batchLength: the bytes batchLength does
	// not count.
	LogOverhead = 12

	// Magic is the only batch format this package knows.
	Magic = 2
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07 // the codec, Codec*
	AttrTimestampType   = 0x08 // LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	// AttrDeleteHorizon (KIP-534): the baseTimestamp is the time after
	// which the batch's tombstones may be removed.
	AttrDeleteHorizon = 0x40
)

// Header is the decoded fixed-size prefix of a record batch.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the number of bytes the batch occupies in a log.
func (h *Header) Size() int64 { return int64(h.BatchLength) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the batch's codec, one of Codec*.
func (h *Header) Compression() int { return int(h.Attributes & AttrCompressionMask) }

// Transactional reports whether a transactional producer wrote the batch.
func (h *Header) Transactional() bool { return h.Attributes&AttrTransactional != 0 }

// Control reports whether the batch holds a control record (a
// transaction marker).
func (h *Header) Control() bool { return h.Attributes&AttrControl != 0 }

// DecodeHeader decodes b[:HeaderSize]; the caller checks len(b).
func DecodeHeader(b []byte) Header {
	be := binary.BigEndian
	return Header{
		BaseOffset:           int64(be.Uint64(b[OffBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[OffBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[OffLeaderEpoch:])),
		Magic:                int8(b[OffMagic]),
		CRC:                  be.Uint32(b[OffCRC:]),
		Attributes:           int16(be.Uint16(b[OffAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[OffLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[OffBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[OffMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[OffProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[OffProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[OffBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[OffRecordCount:])),
	}
}

// Put encodes h into b[:HeaderSize]; the caller checks len(b). Seal sets
// the length and CRC once the records follow.
func (h *Header) Put(b []byte) {
	be := binary.BigEndian
	be.PutUint64(b[OffBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[OffBatchLength:], uint32(h.BatchLength))
	be.PutUint32(b[OffLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[OffMagic] = byte(h.Magic)
	be.PutUint32(b[OffCRC:], h.CRC)
	be.PutUint16(b[OffAttributes:], uint16(h.Attributes))
	be.PutUint32(b[OffLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[OffBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(b[OffMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[OffProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[OffProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[OffBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[OffRecordCount:], uint32(h.RecordCount))
}

// Seal sets the batchLength and CRC fields of b, a whole batch, from its
// contents.
func Seal(b []byte) {
	binary.BigEndian.PutUint32(b[OffBatchLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[OffCRC:], CRC(b))
}

// Next splits the batch at the start of b off the rest. ok is false when b
// does not hold a whole batch (a header's worth at least, and as many bytes
// as its length field claims), as at the end of a fetch response.
func Next(b []byte) (batch, rest []byte, ok bool) {
	if len(b) < HeaderSize {
		return nil, b, false
	}
	size := LogOverhead + int64(int32(binary.BigEndian.Uint32(b[OffBatchLength:])))
	if size < HeaderSize || size > int64(len(b)) {
		return nil, b, false
	}
	return b[:size], b[size:], true
}

// crcTable is CRC-32C (Castagnoli) from github.com/klauspost/crc32, which
// BenchmarkCRC32C measured faster than the standard library's (the
// figures are in storage/doc.go).
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// CRC is the CRC-32C a batch must carry; b is the whole batch.
func CRC(b []byte) uint32 { return crc32.Checksum(b[OffAttributes:], crcTable) }

// Checksum is the CRC-32C of p, for the other files Kafka checksums the
// same way (producer snapshots).
func Checksum(p []byte) uint32 { return crc32.Checksum(p, crcTable) }

// UpdateCRC adds p to a CRC-32C computed so far, for checking a batch read
// in pieces.
func UpdateCRC(crc uint32, p []byte) uint32 { return crc32.Update(crc, crcTable, p) }
