package storage

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/strata-io/strata/storage/vfs"
)

// sharedFile is a segment descriptor shared by reference count: the active
// segment holds one reference on its write descriptor, each Chunk holds one,
// and the descriptor is closed when the last reference is released. A
// segment that rolls or closes drops its own reference, so a fetch that is
// still sending from the file finishes on a valid descriptor.
type sharedFile struct {
	f    vfs.File
	mu   sync.Mutex
	refs int // 0 = closed, never reused
}

func newSharedFile(f vfs.File) *sharedFile { return &sharedFile{f: f, refs: 1} }

// tryAcquire takes a reference unless the file is already closed.
func (s *sharedFile) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs == 0 {
		return false
	}
	s.refs++
	return true
}

func (s *sharedFile) release() error {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if last {
		return s.f.Close()
	}
	return nil
}

// Chunk is a byte range of a segment file; it holds a reference so the file
// stays open until Release. The zero Chunk is empty. Release exactly once.
type Chunk struct {
	file *sharedFile
	pos  int64
	n    int
}

// Len is the number of bytes in the chunk.
func (c Chunk) Len() int { return c.n }

// Release drops the chunk's reference to the segment file.
func (c Chunk) Release() {
	if c.file != nil {
		_ = c.file.release()
	}
}

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// WriteTo writes the chunk to w. When w exposes a descriptor
// (syscall.Conn: *net.TCPConn, *net.UnixConn, *os.File) it uses sendfile(2)
// with an explicit offset, so concurrent readers of one descriptor never
// share a file position; otherwise it preads into a pooled buffer.
func (c Chunk) WriteTo(w io.Writer) (int64, error) {
	if c.n == 0 {
		return 0, nil
	}
	if sc, ok := w.(syscall.Conn); ok {
		n, err, handled := c.sendfile(sc)
		if handled {
			return n, err
		}
	}
	return c.copyTo(w, 0)
}

// sendfile sends the chunk; handled is false when the kernel refused the
// descriptor pair before anything was sent, so the caller falls back.
func (c Chunk) sendfile(sc syscall.Conn) (written int64, err error, handled bool) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	src := int(c.file.f.Fd())
	off := c.pos
	remain := c.n
	var serr error
	werr := rc.Write(func(fd uintptr) bool {
		for remain > 0 {
			n, e := unix.Sendfile(int(fd), src, &off, min(remain, 1<<30))
			if n > 0 {
				remain -= n
				written += int64(n)
			}
			switch {
			case e == unix.EAGAIN:
				return false // wait until the socket is writable
			case e == unix.EINTR:
				continue
			case e != nil:
				serr = e
				return true
			case n == 0:
				serr = io.ErrUnexpectedEOF
				return true
			}
		}
		return true
	})
	if werr != nil {
		return written, fmt.Errorf("sendfile: %w", werr), true
	}
	if serr != nil {
		if written == 0 && (errors.Is(serr, unix.EINVAL) || errors.Is(serr, unix.ENOSYS) || errors.Is(serr, unix.EOPNOTSUPP)) {
			return 0, nil, false
		}
		return written, fmt.Errorf("sendfile %s: %w", c.file.f.Name(), serr), true
	}
	return written, nil, true
}

func (c Chunk) copyTo(w io.Writer, done int64) (int64, error) {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	for done < int64(c.n) {
		n := min(int64(len(buf)), int64(c.n)-done)
		m, err := c.file.f.ReadAt(buf[:n], c.pos+done)
		if int64(m) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, fmt.Errorf("read %s at %d: %w", c.file.f.Name(), c.pos+done, err)
		}
		wn, err := w.Write(buf[:n])
		done += int64(wn)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}
