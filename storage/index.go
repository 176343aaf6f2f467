package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/strata-io/strata/storage/internal/base"
	"github.com/strata-io/strata/storage/vfs"
)

// mmapFile is a memory-mapped array of fixed-size index entries, the common
// part of Kafka's .index and .timeindex. While writable the file is
// pre-allocated to capacity and the descriptor stays open; seal trims the
// file to the used entries, remaps it read-only and closes the descriptor.
type mmapFile struct {
	path       string
	entrySize  int
	data       []byte // mapped region; len = maxEntries*entrySize
	entries    int
	maxEntries int
	f          vfs.File // non-nil while writable
}

var errIndexCorrupt = base.MarkCorruption(errors.New("index corrupt"))

// openMmapFile maps path. A writable file is grown (with zeros) to maxBytes
// rounded down to the entry size; a read-only one is trimmed to its used
// entries. The used entries are those up to the last non-zero one, which is
// how a pre-allocated index left by a crash is told apart from real data.
func openMmapFile(fsys vfs.FS, path string, entrySize, maxBytes int, writable bool) (*mmapFile, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	m, err := mapOpened(f, path, entrySize, maxBytes, writable)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !writable {
		if err := f.Close(); err != nil {
			m.unmap()
			return nil, fmt.Errorf("close index %s: %w", path, err)
		}
	}
	return m, nil
}

func mapOpened(f vfs.File, path string, entrySize, maxBytes int, writable bool) (*mmapFile, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat index %s: %w", path, err)
	}
	size := int(fi.Size())
	m := &mmapFile{path: path, entrySize: entrySize}
	if size%entrySize != 0 {
		return nil, fmt.Errorf("index %s: size %d not a multiple of %d: %w", path, size, entrySize, errIndexCorrupt)
	}
	mapped := size
	prot := unix.PROT_READ
	if writable {
		mapped = max(maxBytes/entrySize*entrySize, size)
		if mapped < 2*entrySize {
			mapped = 2 * entrySize
		}
		if mapped != size {
			if err := f.Truncate(int64(mapped)); err != nil {
				return nil, fmt.Errorf("preallocate index %s: %w", path, err)
			}
		}
		prot |= unix.PROT_WRITE
		m.f = f
	}
	if mapped > 0 {
		m.data, err = unix.Mmap(int(f.Fd()), 0, mapped, prot, unix.MAP_SHARED)
		if err != nil {
			return nil, fmt.Errorf("mmap index %s: %w", path, err)
		}
	}
	m.maxEntries = mapped / entrySize
	m.entries = m.countUsed(size / entrySize)
	if !writable && m.entries*entrySize != size {
		if err := m.remap(f, false); err != nil {
			m.unmap()
			return nil, err
		}
	}
	return m, nil
}

// countUsed returns the number of entries up to the last non-zero one.
func (m *mmapFile) countUsed(n int) int {
	for n > 0 {
		e := m.data[(n-1)*m.entrySize : n*m.entrySize]
		for _, b := range e {
			if b != 0 {
				return n
			}
		}
		n--
	}
	return 0
}

func (m *mmapFile) entry(i int) []byte { return m.data[i*m.entrySize : (i+1)*m.entrySize] }

func (m *mmapFile) full() bool { return m.entries >= m.maxEntries }

// put appends an entry; the caller checked full. A writable index is
// written with pwrite(2) into the page cache the mapping shares, rather than
// stored through the mapping: the first store to a page of the sparse,
// pre-allocated file takes a page fault that allocates the block, which
// cost milliseconds of system time per page on ext4 (1,000 partitions: two
// such faults each, the top of the broker's profile), while pwrite of the
// same bytes takes microseconds. Like the store, it bypasses the vfs; a
// failed pwrite falls back to the store.
func (m *mmapFile) put(e []byte) {
	off := m.entries * m.entrySize
	if m.f == nil || !pwriteFull(int(m.f.Fd()), e, int64(off)) {
		copy(m.data[off:], e)
	}
	m.entries++
}

func pwriteFull(fd int, p []byte, off int64) bool {
	for len(p) > 0 {
		n, err := unix.Pwrite(fd, p, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		p, off = p[n:], off+int64(n)
	}
	return true
}

// sync flushes the mapped pages to the file.
func (m *mmapFile) sync() error {
	if m.f == nil || len(m.data) == 0 {
		return nil
	}
	if err := unix.Msync(m.data, unix.MS_SYNC); err != nil {
		return fmt.Errorf("msync index %s: %w", m.path, err)
	}
	return nil
}

// remap truncates the file to the used entries and maps that many read-only.
func (m *mmapFile) remap(f vfs.File, closeFile bool) error {
	used := m.entries * m.entrySize
	m.unmap()
	if err := f.Truncate(int64(used)); err != nil {
		return fmt.Errorf("trim index %s: %w", m.path, err)
	}
	if used > 0 {
		data, err := unix.Mmap(int(f.Fd()), 0, used, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mmap index %s: %w", m.path, err)
		}
		m.data = data
	}
	m.maxEntries = m.entries
	if closeFile {
		m.f = nil
		if err := f.Close(); err != nil {
			return fmt.Errorf("close index %s: %w", m.path, err)
		}
	}
	return nil
}

// seal makes a writable index read-only at its used size (roll, clean close).
func (m *mmapFile) seal() error {
	if m.f == nil {
		return nil
	}
	if err := m.sync(); err != nil {
		return err
	}
	return m.remap(m.f, true)
}

func (m *mmapFile) unmap() {
	if m.data != nil {
		_ = unix.Munmap(m.data)
		m.data = nil
	}
}

// close releases the mapping and descriptor without trimming: used when the
// log has failed and the on-disk state is left for recovery.
func (m *mmapFile) close() error {
	m.unmap()
	if m.f != nil {
		f := m.f
		m.f = nil
		return f.Close()
	}
	return nil
}

// offsetIndex is Kafka's .index: sparse entries of 8 bytes, a uint32 offset
// relative to the segment base and a uint32 byte position in the .log. The
// entry for a batch is its last offset and its starting position.
type offsetIndex struct {
	*mmapFile
	base int64
}

const offsetEntrySize = 8

func openOffsetIndex(fsys vfs.FS, path string, base int64, maxBytes int, writable bool) (*offsetIndex, error) {
	m, err := openMmapFile(fsys, path, offsetEntrySize, maxBytes, writable)
	if err != nil {
		return nil, err
	}
	return &offsetIndex{mmapFile: m, base: base}, nil
}

func (x *offsetIndex) at(i int) (offset int64, pos int64) {
	e := x.entry(i)
	return x.base + int64(binary.BigEndian.Uint32(e)), int64(binary.BigEndian.Uint32(e[4:]))
}

// lastOffset is the offset of the last entry, or base when empty.
func (x *offsetIndex) lastOffset() int64 {
	if x.entries == 0 {
		return x.base
	}
	o, _ := x.at(x.entries - 1)
	return o
}

// append adds (offset, pos) if it advances the index; the caller checked full.
func (x *offsetIndex) append(offset, pos int64) {
	if x.entries > 0 {
		if o, p := x.at(x.entries - 1); offset <= o || pos <= p {
			return
		}
	}
	var e [offsetEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-x.base))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	x.put(e[:])
}

// lookup returns the position of the last indexed batch whose last offset is
// at most target; scanning from there reaches the batch containing target.
func (x *offsetIndex) lookup(target int64) (pos int64) {
	i := sort.Search(x.entries, func(i int) bool {
		o, _ := x.at(i)
		return o > target
	})
	if i == 0 {
		return 0
	}
	_, pos = x.at(i - 1)
	return pos
}

// lastBefore returns the position of the last indexed batch that starts
// below limit, or -1 when there is none.
func (x *offsetIndex) lastBefore(limit int64) int64 {
	i := sort.Search(x.entries, func(i int) bool {
		_, p := x.at(i)
		return p >= limit
	})
	if i == 0 {
		return -1
	}
	_, pos := x.at(i - 1)
	return pos
}

// check verifies what Kafka's OffsetIndex.sanityCheck does, plus ordering
// and that positions lie inside the log.
func (x *offsetIndex) check(logSize int64) error {
	prevO, prevP := int64(-1), int64(-1)
	for i := 0; i < x.entries; i++ {
		o, p := x.at(i)
		if o <= prevO || p <= prevP || p >= logSize {
			return fmt.Errorf("index %s entry %d (offset %d, position %d) out of order or beyond log size %d: %w", x.path, i, o, p, logSize, errIndexCorrupt)
		}
		prevO, prevP = o, p
	}
	return nil
}

// timeIndex is Kafka's .timeindex: 12-byte entries, an int64 timestamp and
// a uint32 relative offset, appended only when the timestamp grows.
type timeIndex struct {
	*mmapFile
	base int64
}

const timeEntrySize = 12

func openTimeIndex(fsys vfs.FS, path string, base int64, maxBytes int, writable bool) (*timeIndex, error) {
	m, err := openMmapFile(fsys, path, timeEntrySize, maxBytes, writable)
	if err != nil {
		return nil, err
	}
	return &timeIndex{mmapFile: m, base: base}, nil
}

func (x *timeIndex) at(i int) (ts, offset int64) {
	e := x.entry(i)
	return int64(binary.BigEndian.Uint64(e)), x.base + int64(binary.BigEndian.Uint32(e[8:]))
}

// lastEntry is the newest (timestamp, offset), or (-1, base) when empty.
func (x *timeIndex) lastEntry() (ts, offset int64) {
	if x.entries == 0 {
		return -1, x.base
	}
	return x.at(x.entries - 1)
}

// roomFull reports whether only the slot reserved for the final entry
// written when the segment becomes inactive is left (Kafka's TimeIndex.isFull).
func (x *timeIndex) roomFull() bool { return x.entries >= x.maxEntries-1 }

// maybeAppend adds (ts, offset) if ts exceeds the last entry's timestamp.
func (x *timeIndex) maybeAppend(ts, offset int64) {
	if x.full() {
		return
	}
	if x.entries > 0 {
		if lt, lo := x.lastEntry(); ts <= lt || offset < lo {
			return
		}
	}
	var e [timeEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-x.base))
	x.put(e[:])
}

// lookup returns the offset of the last entry with timestamp below ts, a
// safe place to start scanning for the first batch with a timestamp >= ts.
func (x *timeIndex) lookup(ts int64) (offset int64) {
	i := sort.Search(x.entries, func(i int) bool {
		t, _ := x.at(i)
		return t >= ts
	})
	if i == 0 {
		return x.base
	}
	_, offset = x.at(i - 1)
	return offset
}

// check verifies the entries are ordered and inside the segment.
func (x *timeIndex) check() error {
	prevT, prevO := int64(-1<<63), x.base
	for i := 0; i < x.entries; i++ {
		t, o := x.at(i)
		if t < prevT || o < prevO {
			return fmt.Errorf("time index %s entry %d (timestamp %d, offset %d) out of order: %w", x.path, i, t, o, errIndexCorrupt)
		}
		prevT, prevO = t, o
	}
	return nil
}
