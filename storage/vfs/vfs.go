// Package vfs is the file-system seam of the storage layer: every file the
// storage package touches goes through an FS, so tests can substitute a
// failing implementation (see errorfs) without touching the production path.
package vfs

import (
	"fmt"
	"io"
	"os"
)

// File is the subset of *os.File the storage layer uses. Fd must return the
// real descriptor: indexes are mmap'd and segments are sent with sendfile(2).
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Fd() uintptr
	Name() string
}

// FS is a file system. Paths are OS paths.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	MkdirAll(dir string, perm os.FileMode) error
	Remove(name string) error
	RemoveAll(dir string) error
	Rename(oldname, newname string) error
	ReadDir(dir string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory so that creations, renames and removals of
	// its entries are durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on the named file, creating it, for as
	// long as the returned Closer is open. A lock held elsewhere is
	// ErrLocked, with the holder in the message when it is known.
	Lock(name string) (io.Closer, error)
}

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) RemoveAll(dir string) error                  { return os.RemoveAll(dir) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) ReadDir(dir string) ([]os.DirEntry, error)   { return os.ReadDir(dir) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return d.Close()
}
