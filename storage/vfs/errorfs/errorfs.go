// Package errorfs wraps a vfs.FS and injects failures into chosen operations:
// the k-th write (optionally torn: only a prefix reaches the file), the k-th
// fsync, truncate, rename and so on. Tests use it to prove that the storage
// layer never acknowledges data whose write or required fsync failed.
package errorfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/strata-io/strata/storage/vfs"
)

// Op is a class of file-system operation a Fault can target.
type Op int

const (
	OpOpen     Op = iota // FS.OpenFile
	OpRead               // File.Read and File.ReadAt
	OpWrite              // File.Write and File.WriteAt
	OpSync               // File.Sync
	OpTruncate           // File.Truncate
	OpRemove             // FS.Remove and FS.RemoveAll
	OpRename             // FS.Rename
	OpSyncDir            // FS.SyncDir
)

func (o Op) String() string {
	switch o {
	case OpOpen:
		return "open"
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpSync:
		return "sync"
	case OpTruncate:
		return "truncate"
	case OpRemove:
		return "remove"
	case OpRename:
		return "rename"
	case OpSyncDir:
		return "syncdir"
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// ErrInjected is the error returned by injected faults whose Err is nil.
var ErrInjected = errors.New("errorfs: injected fault")

// Fault describes when and how an operation fails.
type Fault struct {
	Op Op
	// PathSuffix restricts the fault to files whose name ends with it
	// (e.g. ".log"); empty matches every file.
	PathSuffix string
	// Nth is the 1-based index, among matching operations counted from the
	// moment the fault is injected, of the first operation that fails.
	Nth int
	// Sticky makes every matching operation from the Nth on fail; otherwise
	// only the Nth fails.
	Sticky bool
	// Torn, for OpWrite, is how many bytes of the failing write still reach
	// the file before the error is returned (clamped to the write's length).
	Torn int
	// Err is the error returned; nil means ErrInjected.
	Err error
}

type fault struct {
	Fault
	seen int
}

// hit reports whether this operation must fail, advancing the counter.
func (f *fault) hit(op Op, name string) bool {
	if f.Op != op || !strings.HasSuffix(name, f.PathSuffix) {
		return false
	}
	f.seen++
	if f.Sticky {
		return f.seen >= f.Nth
	}
	return f.seen == f.Nth
}

func (f *fault) err(op Op, name string) error {
	err := f.Err
	if err == nil {
		err = ErrInjected
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}

// FS injects faults into an underlying vfs.FS. It is safe for concurrent use.
type FS struct {
	inner vfs.FS

	mu     sync.Mutex
	faults []*fault
	counts map[Op]int
}

var _ vfs.FS = (*FS)(nil)

// Wrap returns an FS that forwards to inner until a fault fires.
func Wrap(inner vfs.FS) *FS {
	return &FS{inner: inner, counts: make(map[Op]int)}
}

// Inject adds a fault. Faults are independent; the first that fires wins.
func (fs *FS) Inject(f Fault) {
	if f.Nth < 1 {
		f.Nth = 1
	}
	fs.mu.Lock()
	fs.faults = append(fs.faults, &fault{Fault: f})
	fs.mu.Unlock()
}

// Clear removes every fault; later operations succeed.
func (fs *FS) Clear() {
	fs.mu.Lock()
	fs.faults = nil
	fs.mu.Unlock()
}

// Count returns how many operations of kind op have been attempted.
func (fs *FS) Count(op Op) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.counts[op]
}

// check counts the operation and returns the fault that fires, if any.
// Every fault sees every operation so that their counters stay meaningful.
func (fs *FS) check(op Op, name string) *fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.counts[op]++
	var fired *fault
	for _, f := range fs.faults {
		if f.hit(op, name) && fired == nil {
			fired = f
		}
	}
	return fired
}

func (fs *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if f := fs.check(OpOpen, name); f != nil {
		return nil, f.err(OpOpen, name)
	}
	inner, err := fs.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{File: inner, fs: fs}, nil
}

func (fs *FS) MkdirAll(dir string, perm os.FileMode) error { return fs.inner.MkdirAll(dir, perm) }

func (fs *FS) Remove(name string) error {
	if f := fs.check(OpRemove, name); f != nil {
		return f.err(OpRemove, name)
	}
	return fs.inner.Remove(name)
}

func (fs *FS) RemoveAll(dir string) error {
	if f := fs.check(OpRemove, dir); f != nil {
		return f.err(OpRemove, dir)
	}
	return fs.inner.RemoveAll(dir)
}

func (fs *FS) Rename(oldname, newname string) error {
	if f := fs.check(OpRename, newname); f != nil {
		return f.err(OpRename, newname)
	}
	return fs.inner.Rename(oldname, newname)
}

func (fs *FS) ReadDir(dir string) ([]os.DirEntry, error) { return fs.inner.ReadDir(dir) }
func (fs *FS) Stat(name string) (os.FileInfo, error)     { return fs.inner.Stat(name) }

// Lock is the inner FS's lock; no fault targets it.
func (fs *FS) Lock(name string) (io.Closer, error) { return fs.inner.Lock(name) }

func (fs *FS) SyncDir(dir string) error {
	if f := fs.check(OpSyncDir, dir); f != nil {
		return f.err(OpSyncDir, dir)
	}
	return fs.inner.SyncDir(dir)
}

// file forwards to the inner file; Stat, Fd, Name and Close never fail.
type file struct {
	vfs.File
	fs *FS
}

func (f *file) Read(p []byte) (int, error) {
	if ft := f.fs.check(OpRead, f.Name()); ft != nil {
		return 0, ft.err(OpRead, f.Name())
	}
	return f.File.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if ft := f.fs.check(OpRead, f.Name()); ft != nil {
		return 0, ft.err(OpRead, f.Name())
	}
	return f.File.ReadAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	if ft := f.fs.check(OpWrite, f.Name()); ft != nil {
		n, _ := f.File.Write(p[:min(max(ft.Torn, 0), len(p))])
		return n, ft.err(OpWrite, f.Name())
	}
	return f.File.Write(p)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if ft := f.fs.check(OpWrite, f.Name()); ft != nil {
		n, _ := f.File.WriteAt(p[:min(max(ft.Torn, 0), len(p))], off)
		return n, ft.err(OpWrite, f.Name())
	}
	return f.File.WriteAt(p, off)
}

func (f *file) Sync() error {
	if ft := f.fs.check(OpSync, f.Name()); ft != nil {
		return ft.err(OpSync, f.Name())
	}
	return f.File.Sync()
}

func (f *file) Truncate(size int64) error {
	if ft := f.fs.check(OpTruncate, f.Name()); ft != nil {
		return ft.err(OpTruncate, f.Name())
	}
	return f.File.Truncate(size)
}
