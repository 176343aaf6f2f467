package storage

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/internal/base"
	"github.com/strata-io/strata/storage/vfs"
)

// segment is one %020d.log file with its .index and .timeindex. The active
// (last) segment keeps its write descriptor and writable indexes; a closed
// segment keeps only read-only index mappings and opens its .log lazily for
// reads. All fields are guarded by the owning Log's mutex.
type segment struct {
	fsys vfs.FS
	dir  string
	base int64
	cfg  *Config

	file *sharedFile // write fd (active) or the last read-only fd; may be closed
	size int64
	next int64 // offset after the last batch

	idx  *offsetIndex
	tidx *timeIndex

	bytesSinceIndex int64
	maxTs           int64 // largest batch max timestamp, -1 when empty
	maxTsOffset     int64 // last offset of the batch that has maxTs
	firstTs         int64 // max timestamp of the first batch, -1 when empty
	created         time.Time
	active          bool
	recovered       bool // rebuilt by recovery on open: its .txnindex is rebuilt too
}

func segmentPath(dir string, base int64, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, ext))
}

const (
	logExt       = ".log"
	indexExt     = ".index"
	timeIndexExt = ".timeindex"
)

// createSegment creates an empty active segment at base.
func createSegment(fsys vfs.FS, dir string, base int64, cfg *Config, now time.Time) (*segment, error) {
	path := segmentPath(dir, base, logExt)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment %d: %w", base, err)
	}
	s := &segment{fsys: fsys, dir: dir, base: base, cfg: cfg, file: newSharedFile(f), next: base,
		maxTs: -1, maxTsOffset: -1, firstTs: -1, created: now, active: true}
	// Stale index files of a segment that recovery dropped must not be reused.
	for _, ext := range []string{indexExt, timeIndexExt, txnIndexExt} {
		if err := fsys.Remove(segmentPath(dir, base, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.closeAll()
			return nil, fmt.Errorf("segment %d: %w", base, err)
		}
	}
	if err := s.openIndexes(true); err != nil {
		s.closeAll()
		return nil, err
	}
	return s, nil
}

func (s *segment) openIndexes(writable bool) error {
	var err error
	s.idx, err = openOffsetIndex(s.fsys, segmentPath(s.dir, s.base, indexExt), s.base, s.cfg.MaxIndexSize, writable)
	if err != nil {
		return fmt.Errorf("segment %d: %w", s.base, err)
	}
	s.tidx, err = openTimeIndex(s.fsys, segmentPath(s.dir, s.base, timeIndexExt), s.base, s.cfg.MaxIndexSize, writable)
	if err != nil {
		return fmt.Errorf("segment %d: %w", s.base, err)
	}
	return nil
}

// closeAll releases descriptors and mappings without trimming anything.
func (s *segment) closeAll() {
	if s.idx != nil {
		_ = s.idx.close()
	}
	if s.tidx != nil {
		_ = s.tidx.close()
	}
	if s.active && s.file != nil {
		_ = s.file.release()
	}
	s.active = false
}

// reader returns a referenced descriptor for reading the .log.
func (s *segment) reader() (*sharedFile, error) {
	if s.file != nil && s.file.tryAcquire() {
		return s.file, nil
	}
	f, err := s.fsys.OpenFile(segmentPath(s.dir, s.base, logExt), os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", s.base, err)
	}
	s.file = newSharedFile(f)
	return s.file, nil
}

// shouldRoll reports whether an append of n bytes and k batches, with the
// given largest timestamp and last offset, must go to a new segment.
func (s *segment) shouldRoll(n int64, k int, maxTs, lastOffset int64, now time.Time) bool {
	if s.size == 0 {
		// An empty segment never rolls (the new one would have the same
		// base); index appends that find no room are skipped instead.
		return false
	}
	waited := now.Sub(s.created).Milliseconds()
	if s.firstTs >= 0 && maxTs >= 0 {
		waited = maxTs - s.firstTs
	}
	return s.size+n > s.cfg.SegmentBytes ||
		waited > s.cfg.SegmentMs ||
		s.idx.entries+k > s.idx.maxEntries ||
		s.tidx.entries+k >= s.tidx.maxEntries ||
		lastOffset-s.base > math.MaxInt32
}

// append writes data (validated, stamped batches described by hdrs) with
// one write. On error the file may hold a prefix of data; the caller fails
// the log and recovery cuts it off.
func (s *segment) append(data []byte, hdrs []batch.Header) error {
	n, err := s.file.f.WriteAt(data, s.size)
	if err != nil {
		return fmt.Errorf("segment %d: write %d bytes at %d (wrote %d): %w", s.base, len(data), s.size, n, err)
	}
	pos := s.size
	for i := range hdrs {
		s.indexBatch(&hdrs[i], pos)
		pos += hdrs[i].Size()
	}
	s.size = pos
	return nil
}

// indexBatch updates the in-memory metadata and sparse indexes for the
// batch at pos, as Kafka's LogSegment.append and recover do.
func (s *segment) indexBatch(h *batch.Header, pos int64) {
	if s.firstTs < 0 && pos == 0 {
		s.firstTs = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.LastOffset()
	}
	if s.bytesSinceIndex > int64(s.cfg.IndexIntervalBytes) {
		if !s.idx.full() {
			s.idx.append(h.LastOffset(), pos)
		}
		if !s.tidx.roomFull() {
			s.tidx.maybeAppend(s.maxTs, s.maxTsOffset)
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += h.Size()
	s.next = h.NextOffset()
}

// deactivate turns the active segment into a closed one: the final time
// index entry (the segment's max timestamp) goes into the reserved slot, the
// indexes are trimmed and remapped read-only, and the write fd is released.
func (s *segment) deactivate() error {
	if !s.active {
		return nil
	}
	s.active = false
	if s.maxTs >= 0 {
		s.tidx.maybeAppend(s.maxTs, s.maxTsOffset)
	}
	err := errors.Join(s.idx.seal(), s.tidx.seal(), syncTxnIndex(s.fsys, s.dir, s.base), s.file.release())
	if err != nil {
		return fmt.Errorf("segment %d: %w", s.base, err)
	}
	return nil
}

// remove deletes the segment's files; open chunks keep reading the unlinked
// .log through their descriptor.
func (s *segment) remove() error {
	s.closeAll()
	var errs []error
	for _, ext := range []string{logExt, indexExt, timeIndexExt, txnIndexExt} {
		if err := s.fsys.Remove(segmentPath(s.dir, s.base, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove segment %d: %w", s.base, err)
	}
	return nil
}

// errShortHeader marks a batch header cut off by the end of the file.
var errShortHeader = base.MarkCorruption(errors.New("short batch header"))

// readError is a read that failed, as opposed to bytes that were read and
// found wrong. Recovery truncates a log at bad bytes, never at a failed
// read: the data may be intact and the next start may read it.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// readHeader reads and structurally checks the batch header at pos of a
// file holding size bytes.
func readHeader(r io.ReaderAt, pos, size int64, buf *[batch.HeaderSize]byte) (batch.Header, error) {
	if size-pos < batch.HeaderSize {
		return batch.Header{}, errShortHeader
	}
	if _, err := r.ReadAt(buf[:], pos); err != nil {
		return batch.Header{}, &readError{fmt.Errorf("read header at %d: %w", pos, err)}
	}
	h := batch.DecodeHeader(buf[:])
	if err := checkHeader(&h, size-pos); err != nil {
		return h, base.MarkCorruption(err)
	}
	return h, nil
}

// verifyCRC streams the batch at pos through CRC32C without allocating
// from its (untrusted) length.
func verifyCRC(r io.ReaderAt, pos int64, h *batch.Header, buf []byte) error {
	crc := uint32(0)
	for off, end := pos+batch.OffAttributes, pos+h.Size(); off < end; {
		n := min(int64(len(buf)), end-off)
		if _, err := r.ReadAt(buf[:n], off); err != nil {
			return &readError{fmt.Errorf("read batch at %d: %w", pos, err)}
		}
		crc = batch.UpdateCRC(crc, buf[:n])
		off += n
	}
	if crc != h.CRC {
		return corruptionf("batch at position %d (offset %d): crc %08x, computed %08x", pos, h.BaseOffset, h.CRC, crc)
	}
	return nil
}
