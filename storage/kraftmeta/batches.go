package kraftmeta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/strata-io/strata/storage/vfs"
)

// Record batch v2 layout (the same as every Kafka log): see storage/doc.go.
const (
	batchHeaderSize = 61
	batchLengthEnd  = 12 // baseOffset + batchLength
	crcStart        = 21
	attrControl     = 1 << 5
	attrCodecMask   = 0x07
)

// maxBatchBytes bounds the one batch held in memory: KafkaRaftClient writes
// batches of at most 8 MiB (MAX_BATCH_SIZE_BYTES); anything claiming more
// than twice that is treated as a corrupt batch.
const maxBatchBytes = 16 << 20

// Control record types (ControlRecordType) of KRaft's control batches.
const (
	controlSnapshotHeader = 3
	controlSnapshotFooter = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batch is one validated record batch.
type batch struct {
	baseOffset      int64
	lastOffsetDelta int32
	count           int32
	control         bool
	records         []byte // the records section, valid until the next batch is read
}

func (b *batch) lastOffset() int64 { return b.baseOffset + int64(b.lastOffsetDelta) }

// errInvalidBatch wraps the reason a file's batches stop being valid.
var errInvalidBatch = errors.New("invalid batch")

// readBatches calls fn for every batch of the file in order. It stops at
// the first batch that is short, too large, not magic 2, compressed
// (KafkaRaftClient never compresses) or fails its CRC, returning an error
// wrapping errInvalidBatch with its position; fn's errors are returned as
// they are.
func readBatches(fsys vfs.FS, path string, fn func(*batch) error) error {
	f, err := fsys.OpenFile(path, 0, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	size := st.Size()
	var buf []byte
	var hdr [batchHeaderSize]byte
	for pos := int64(0); pos < size; {
		invalid := func(why string) error {
			return fmt.Errorf("%s at position %d: %s: %w", path, pos, why, errInvalidBatch)
		}
		if size-pos < batchHeaderSize {
			return invalid("short batch header")
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("read %s at %d: %w", path, pos, err)
		}
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:12])))
		total := length + batchLengthEnd
		switch {
		case total < batchHeaderSize || total > maxBatchBytes:
			return invalid(fmt.Sprintf("batch length %d", length))
		case total > size-pos:
			return invalid("batch past the end of the file")
		case hdr[16] != 2:
			return invalid(fmt.Sprintf("magic %d", hdr[16]))
		}
		if int64(cap(buf)) < total {
			buf = make([]byte, total)
		}
		buf = buf[:total]
		if _, err := f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s at %d: %w", path, pos, err)
		}
		if crc32.Checksum(buf[crcStart:], castagnoli) != binary.BigEndian.Uint32(buf[17:21]) {
			return invalid("CRC mismatch")
		}
		attrs := binary.BigEndian.Uint16(buf[21:23])
		if attrs&attrCodecMask != 0 {
			return invalid(fmt.Sprintf("compression codec %d", attrs&attrCodecMask))
		}
		b := &batch{
			baseOffset:      int64(binary.BigEndian.Uint64(buf[0:8])),
			lastOffsetDelta: int32(binary.BigEndian.Uint32(buf[23:27])),
			count:           int32(binary.BigEndian.Uint32(buf[57:61])),
			control:         attrs&attrControl != 0,
			records:         buf[batchHeaderSize:],
		}
		if b.baseOffset < 0 || b.lastOffsetDelta < 0 || b.count < 0 || int64(b.count) > int64(b.lastOffsetDelta)+1 {
			return invalid(fmt.Sprintf("base offset %d, last offset delta %d, count %d", b.baseOffset, b.lastOffsetDelta, b.count))
		}
		if err := fn(b); err != nil {
			return err
		}
		pos += total
	}
	return nil
}

// forEachRecord calls fn with the offset, key and value (nil when null) of
// every record of the batch. A record that does not parse within the batch
// is an error: the CRC matched, so the writer put it there.
func (b *batch) forEachRecord(fn func(offset int64, key, value []byte) error) error {
	p := b.records
	for i := int32(0); i < b.count; i++ {
		length, n := binary.Varint(p)
		if n <= 0 || length < 0 || length > int64(len(p)-n) {
			return fmt.Errorf("batch at offset %d: record %d: bad length", b.baseOffset, i)
		}
		rec := p[n : n+int(length)]
		p = p[n+int(length):]
		r := varReader{b: rec}
		r.take(1)  // attributes
		r.varint() // timestamp delta
		offsetDelta := r.varint()
		key := r.bytes()
		value := r.bytes()
		for h, headers := int64(0), r.varint(); h < headers && r.err == nil; h++ {
			r.bytes()
			r.bytes()
		}
		if r.err != nil {
			return fmt.Errorf("batch at offset %d: record %d: %w", b.baseOffset, i, r.err)
		}
		if offsetDelta < 0 || offsetDelta > int64(b.lastOffsetDelta) {
			return fmt.Errorf("batch at offset %d: record %d: offset delta %d", b.baseOffset, i, offsetDelta)
		}
		if err := fn(b.baseOffset+offsetDelta, key, value); err != nil {
			return err
		}
	}
	return nil
}

// controlType is the ControlRecordType in a control record's key (int16
// version, int16 type), or -1 if the key is malformed.
func controlType(key []byte) int {
	if len(key) < 4 {
		return -1
	}
	return int(int16(binary.BigEndian.Uint16(key[2:4])))
}

// varReader reads the zigzag varint fields of a record; the first error
// sticks.
type varReader struct {
	b   []byte
	err error
}

func (r *varReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err, r.b = errShort, nil
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *varReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = errors.New("malformed varint"), nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads a varint length and that many bytes; -1 is null.
func (r *varReader) bytes() []byte {
	n := r.varint()
	if r.err != nil || n == -1 {
		return nil
	}
	if n < 0 || n > int64(len(r.b)) {
		r.err, r.b = errShort, nil
		return nil
	}
	return r.take(int(n))
}
