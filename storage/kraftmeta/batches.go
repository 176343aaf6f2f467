package kraftmeta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	recordbatch "github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs"

	"github.com/strata-io/strata/storage/internal/base"
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
var errInvalidBatch = base.MarkCorruption(errors.New("invalid batch"))

// corruptionf is fmt.Errorf marking the error as storage's ErrCorruption:
// the metadata log holds what Kafka would not have written.
func corruptionf(format string, args ...any) error { return base.CorruptionErrorf(format, args...) }

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
	var hdr [recordbatch.HeaderSize]byte
	for pos := int64(0); pos < size; {
		invalid := func(why string) error {
			return fmt.Errorf("%s at position %d: %s: %w", path, pos, why, errInvalidBatch)
		}
		if size-pos < recordbatch.HeaderSize {
			return invalid("short batch header")
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("read %s at %d: %w", path, pos, err)
		}
		h := recordbatch.DecodeHeader(hdr[:])
		total := h.Size()
		switch {
		case total < recordbatch.HeaderSize || total > maxBatchBytes:
			return invalid(fmt.Sprintf("batch length %d", h.BatchLength))
		case total > size-pos:
			return invalid("batch past the end of the file")
		case h.Magic != recordbatch.Magic:
			return invalid(fmt.Sprintf("magic %d", uint8(h.Magic)))
		}
		if int64(cap(buf)) < total {
			buf = make([]byte, total)
		}
		buf = buf[:total]
		if _, err := f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s at %d: %w", path, pos, err)
		}
		if recordbatch.CRC(buf) != h.CRC {
			return invalid("CRC mismatch")
		}
		if h.Compression() != recordbatch.CodecNone {
			return invalid(fmt.Sprintf("compression codec %d", h.Compression()))
		}
		b := &batch{
			baseOffset:      h.BaseOffset,
			lastOffsetDelta: h.LastOffsetDelta,
			count:           h.RecordCount,
			control:         h.Control(),
			records:         buf[recordbatch.HeaderSize:],
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
	it := recordbatch.NewRecords(b.records, b.count)
	var r recordbatch.Record
	for i := 0; it.Next(&r); i++ {
		if err := r.CheckHeaders(); err != nil {
			return corruptionf("batch at offset %d: record %d: %w", b.baseOffset, i, err)
		}
		if r.OffsetDelta < 0 || r.OffsetDelta > b.lastOffsetDelta {
			return corruptionf("batch at offset %d: record %d: offset delta %d", b.baseOffset, i, r.OffsetDelta)
		}
		if err := fn(b.baseOffset+int64(r.OffsetDelta), r.Key, r.Value); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return corruptionf("batch at offset %d: %w", b.baseOffset, err)
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
