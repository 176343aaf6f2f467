// Package memfs is a crashable file system for tests: a vfs.FS that knows,
// for every file, what is durable (the content as of its last Sync) and what
// is only in the "page cache" (everything written since), and, for every
// directory, which entries are durable (as of its last SyncDir). A crash
// image keeps the durable state plus a chosen fraction of the unsynced 4 KiB
// blocks, and reverts directory entries (creations, renames, removals) that
// were not synced.
//
// # Descriptors
//
// The storage layer mmaps its indexes and sends segments with sendfile(2),
// so File.Fd must be a real descriptor. Every file (inode) is therefore
// backed by a real file in a private temporary directory: reads, writes and
// mmap go to it, so it always holds the volatile content, while memfs keeps
// the durable content itself (a copy taken at each Sync). Writes made through
// an mmap are not operations memfs sees; they are part of the volatile
// content like any other unsynced write, and msync(2) is not a Sync: an
// mmap'd index is durable only as far as a File.Sync of it made it so.
//
// # Operations
//
// Every mutating operation is counted (OpenFile that creates or truncates,
// Write, WriteAt, Truncate, Sync, SyncDir, Remove, RemoveAll, Rename,
// MkdirAll that creates), so a test can crash "at the k-th write": Snapshot
// (or a Hook calling its snapshot function) freezes the state after an
// operation, and Image.Crash turns it into a new FS. HaltAfter(k) instead
// makes every operation after the k-th fail with ErrHalted, as a dead
// machine would, keeping the image taken right after operation k.
//
// # Simplifications
//
// Directories are durable as soon as MkdirAll creates them, and RemoveAll
// removes a tree durably at once (the storage layer's crash-relevant
// directory is the partition directory, whose entries are modelled). File
// size changes follow the data: growth is kept only as far as kept blocks
// reach, and a shrink (Truncate) since the last Sync survives a crash with
// probability keepFraction.
package memfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-io/strata/storage/vfs"
)

// BlockSize is the unit in which unsynced data survives or is lost.
const BlockSize = 4096

// ErrHalted is returned by every operation after HaltAfter's operation.
var ErrHalted = errors.New("memfs: halted (simulated crash)")

// Op is a kind of mutating operation.
type Op int

const (
	OpCreate   Op = iota // OpenFile that created or truncated a file
	OpWrite              // File.Write, File.WriteAt
	OpTruncate           // File.Truncate
	OpSync               // File.Sync
	OpSyncDir            // FS.SyncDir
	OpRemove             // FS.Remove, FS.RemoveAll
	OpRename             // FS.Rename
	OpMkdir              // FS.MkdirAll that created a directory
	numOps
)

func (o Op) String() string {
	return [...]string{"create", "write", "truncate", "sync", "syncdir", "remove", "rename", "mkdir"}[o]
}

// Hook observes each mutating operation right after it was applied, with
// the file system locked (no other operation can run). n is the 1-based
// count of mutating operations; snapshot freezes the state at this point.
// A hook must not call methods of the FS it observes.
type Hook func(n int64, op Op, name string, snapshot func() *Image)

type inode struct {
	backing string // real file holding the volatile content
	durable []byte // content as of the last Sync
}

type dir struct {
	vol map[string]*inode // entries now
	dur map[string]*inode // entries as of the last SyncDir
}

// FS is the crashable file system. It is safe for concurrent use.
type FS struct {
	mu      sync.Mutex
	root    string // private directory of backing files
	seq     int
	dirs    map[string]*dir
	ops     int64
	counts  [numOps]int64
	hook    Hook
	haltAt  int64
	halted  bool
	haltImg *Image
	locks   map[string]bool // names held by Lock
}

var _ vfs.FS = (*FS)(nil)

// New returns an empty FS whose backing files live in a new directory under
// backingDir; "" means DefaultBackingDir(). Call Release to remove them.
func New(backingDir string) (*FS, error) {
	if backingDir == "" {
		backingDir = DefaultBackingDir()
	}
	root, err := os.MkdirTemp(backingDir, "memfs")
	if err != nil {
		return nil, err
	}
	return &FS{root: root, dirs: map[string]*dir{}}, nil
}

// DefaultBackingDir is /dev/shm when it is a writable directory (a tmpfs:
// creating and deleting thousands of small backing files on a disk file
// system mounted with discard made a crash sweep ten times slower), else
// os.TempDir().
func DefaultBackingDir() string {
	const shm = "/dev/shm"
	if fi, err := os.Stat(shm); err == nil && fi.IsDir() && unix.Access(shm, unix.W_OK) == nil {
		return shm
	}
	return os.TempDir()
}

// Release removes the backing files. The FS and its open files must not be
// used afterwards (mappings stay valid until unmapped).
func (m *FS) Release() error { return os.RemoveAll(m.root) }

// Ops returns the number of mutating operations so far.
func (m *FS) Ops() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// Count returns the number of mutating operations of one kind.
func (m *FS) Count(op Op) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[op]
}

// SetHook installs h (nil removes it).
func (m *FS) SetHook(h Hook) {
	m.mu.Lock()
	m.hook = h
	m.mu.Unlock()
}

// HaltAfter makes the k-th mutating operation (1-based, counted from the
// creation of the FS) the last one: the state right after it is kept as the
// halt image, and every later operation fails with ErrHalted. The k-th
// operation itself succeeds.
func (m *FS) HaltAfter(k int64) {
	m.mu.Lock()
	m.haltAt = k
	m.mu.Unlock()
}

// Halted returns the image frozen by HaltAfter, or nil if it has not fired.
func (m *FS) Halted() *Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.haltImg
}

// Snapshot freezes the current state.
func (m *FS) Snapshot() *Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshotLocked()
}

// Crash is Snapshot().Crash: a new FS holding what a power loss now would
// leave.
func (m *FS) Crash(keepFraction float64, rng *rand.Rand, backingDir string) (*FS, error) {
	return m.Snapshot().Crash(keepFraction, rng, backingDir)
}

// begin checks the halt state; caller holds mu.
func (m *FS) begin() error {
	if m.halted {
		return ErrHalted
	}
	return nil
}

// done counts an applied mutating operation; caller holds mu.
func (m *FS) done(op Op, name string) {
	m.ops++
	m.counts[op]++
	if m.hook != nil {
		m.hook(m.ops, op, name, m.snapshotLocked)
	}
	if m.haltAt > 0 && m.ops >= m.haltAt && !m.halted {
		m.haltImg = m.snapshotLocked()
		m.halted = true
	}
}

func clean(name string) string { return filepath.Clean(name) }

func (m *FS) lookupDir(name string) (*dir, string, error) {
	name = clean(name)
	d, ok := m.dirs[filepath.Dir(name)]
	if !ok {
		return nil, "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return d, filepath.Base(name), nil
}

func (m *FS) newInode() (*inode, error) {
	m.seq++
	p := filepath.Join(m.root, fmt.Sprintf("i%08d", m.seq))
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &inode{backing: p}, f.Close()
}

// OpenFile opens or creates a file. O_CREATE, O_EXCL and O_TRUNC are
// modelled; the other flags go to the backing file.
func (m *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return nil, err
	}
	d, base, err := m.lookupDir(name)
	if err != nil {
		return nil, err
	}
	if _, isDir := m.dirs[clean(name)]; isDir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	ino, exists := d.vol[base]
	created := false
	switch {
	case exists && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !exists && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !exists:
		if ino, err = m.newInode(); err != nil {
			return nil, err
		}
		d.vol[base] = ino
		created = true
	}
	f, err := os.OpenFile(ino.backing, flag&^(os.O_CREATE|os.O_EXCL), 0)
	if err != nil {
		if created {
			delete(d.vol, base)
		}
		return nil, err
	}
	if created || flag&os.O_TRUNC != 0 {
		m.done(OpCreate, clean(name))
	}
	return &file{m: m, f: f, name: name, ino: ino}, nil
}

// MkdirAll creates dir and its parents; directories are durable at once.
func (m *FS) MkdirAll(name string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return err
	}
	name = clean(name)
	var missing []string
	for p := name; ; p = filepath.Dir(p) {
		if _, ok := m.dirs[p]; ok {
			break
		}
		if d, ok := m.dirs[filepath.Dir(p)]; ok {
			if _, isFile := d.vol[filepath.Base(p)]; isFile {
				return &fs.PathError{Op: "mkdir", Path: p, Err: fs.ErrExist}
			}
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		m.dirs[missing[i]] = &dir{vol: map[string]*inode{}, dur: map[string]*inode{}}
	}
	if len(missing) > 0 {
		m.done(OpMkdir, name)
	}
	return nil
}

// Remove unlinks a file (volatile until SyncDir) or removes an empty
// directory.
func (m *FS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return err
	}
	name = clean(name)
	if _, ok := m.dirs[name]; ok {
		for p := range m.dirs {
			if p != name && filepath.Dir(p) == name {
				return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
		if len(m.dirs[name].vol) > 0 {
			return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
		}
		delete(m.dirs, name)
		m.done(OpRemove, name)
		return nil
	}
	d, base, err := m.lookupDir(name)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if _, ok := d.vol[base]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(d.vol, base)
	m.done(OpRemove, name)
	return nil
}

// RemoveAll removes a file or a directory tree; a tree goes durably at once.
func (m *FS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return err
	}
	name = clean(name)
	if _, ok := m.dirs[name]; !ok {
		d, base, err := m.lookupDir(name)
		if err == nil {
			if _, ok := d.vol[base]; ok {
				delete(d.vol, base)
				m.done(OpRemove, name)
			}
		}
		return nil
	}
	for p := range m.dirs {
		if p == name || strings.HasPrefix(p, name+string(filepath.Separator)) {
			delete(m.dirs, p)
		}
	}
	m.done(OpRemove, name)
	return nil
}

// Rename moves a file entry (volatile until both directories are synced).
func (m *FS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return err
	}
	od, ob, err := m.lookupDir(oldname)
	if err != nil {
		return err
	}
	ino, ok := od.vol[ob]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	nd, nb, err := m.lookupDir(newname)
	if err != nil {
		return err
	}
	delete(od.vol, ob)
	nd.vol[nb] = ino
	m.done(OpRename, clean(newname))
	return nil
}

// ReadDir lists the current entries, sorted by name.
func (m *FS) ReadDir(name string) ([]os.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return nil, err
	}
	name = clean(name)
	d, ok := m.dirs[name]
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	var out []os.DirEntry
	for base, ino := range d.vol {
		fi, err := os.Stat(ino.backing)
		if err != nil {
			return nil, err
		}
		out = append(out, fs.FileInfoToDirEntry(namedInfo{fi, base}))
	}
	for p := range m.dirs {
		if p != name && filepath.Dir(p) == name {
			out = append(out, fs.FileInfoToDirEntry(dirInfo(filepath.Base(p))))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Stat describes a file or directory.
func (m *FS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return nil, err
	}
	name = clean(name)
	if _, ok := m.dirs[name]; ok {
		return dirInfo(filepath.Base(name)), nil
	}
	d, base, err := m.lookupDir(name)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	ino, ok := d.vol[base]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	fi, err := os.Stat(ino.backing)
	if err != nil {
		return nil, err
	}
	return namedInfo{fi, base}, nil
}

// SyncDir makes the directory's current entries durable.
// Lock holds name until the Closer is closed; a second Lock of the same
// name fails with vfs.ErrLocked. It is not a mutating operation: no file is
// created and a crash image starts with no locks held.
func (m *FS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if m.locks[name] {
		return nil, fmt.Errorf("lock %s: %w", name, vfs.ErrLocked)
	}
	if m.locks == nil {
		m.locks = map[string]bool{}
	}
	m.locks[name] = true
	return lockCloser(func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.locks, name)
		return nil
	}), nil
}

type lockCloser func() error

func (c lockCloser) Close() error { return c() }

func (m *FS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(); err != nil {
		return err
	}
	name = clean(name)
	d, ok := m.dirs[name]
	if !ok {
		return &fs.PathError{Op: "syncdir", Path: name, Err: fs.ErrNotExist}
	}
	d.dur = make(map[string]*inode, len(d.vol))
	for k, v := range d.vol {
		d.dur[k] = v
	}
	m.done(OpSyncDir, name)
	return nil
}

// file is an open file; its descriptor is the backing file's.
type file struct {
	m    *FS
	f    *os.File
	name string
	ino  *inode // stays valid after the entry is unlinked or renamed
}

func (f *file) Read(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.m.begin(); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.m.begin(); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.m.begin(); err != nil {
		return 0, err
	}
	n, err := f.f.Write(p)
	if n > 0 {
		f.m.done(OpWrite, f.name)
	}
	return n, err
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.m.begin(); err != nil {
		return 0, err
	}
	n, err := f.f.WriteAt(p, off)
	if n > 0 {
		f.m.done(OpWrite, f.name)
	}
	return n, err
}

func (f *file) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.m.begin(); err != nil {
		return err
	}
	if err := f.f.Truncate(size); err != nil {
		return err
	}
	f.m.done(OpTruncate, f.name)
	return nil
}

// Sync makes the file's current content (including what was written
// through an mmap of its descriptor) durable.
func (f *file) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.m.begin(); err != nil {
		return err
	}
	data, err := os.ReadFile(f.f.Name())
	if err != nil {
		return err
	}
	f.ino.durable = data
	f.m.done(OpSync, f.name)
	return nil
}

func (f *file) Stat() (os.FileInfo, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return nil, err
	}
	return namedInfo{fi, filepath.Base(f.name)}, nil
}

func (f *file) Close() error   { return f.f.Close() }
func (f *file) Fd() uintptr    { return f.f.Fd() }
func (f *file) Name() string   { return f.name }
func (f *file) String() string { return "memfs:" + f.name }

type namedInfo struct {
	os.FileInfo
	name string
}

func (n namedInfo) Name() string { return n.name }

type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() os.FileMode  { return os.ModeDir | 0o755 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// Image is a frozen state of an FS: its directories, and for every durable
// directory entry the file's durable and volatile content.
type Image struct {
	Ops   int64 // mutating operations applied when it was taken
	dirs  []string
	files map[string]fileImage
}

type fileImage struct {
	durable, volatile []byte
}

// snapshotLocked reads every durably linked file; caller holds mu.
func (m *FS) snapshotLocked() *Image {
	img := &Image{Ops: m.ops, files: map[string]fileImage{}}
	for p, d := range m.dirs {
		img.dirs = append(img.dirs, p)
		for base, ino := range d.dur {
			vol, err := os.ReadFile(ino.backing)
			if err != nil {
				panic(fmt.Sprintf("memfs: read backing file %s: %v", ino.backing, err))
			}
			img.files[filepath.Join(p, base)] = fileImage{durable: ino.durable, volatile: vol}
		}
	}
	sort.Strings(img.dirs)
	return img
}

// Files lists the durably linked files of the image, sorted.
func (img *Image) Files() []string {
	var out []string
	for p := range img.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Crash returns a new FS holding what a power loss at the image's moment
// leaves: directory entries as of their last SyncDir; for each file its
// durable content, with the 4 KiB blocks that differ in the volatile content
// (unsynced data) kept with keepFraction: rng picks, per file, either a
// prefix of those blocks (the first round(keepFraction*n)) or a random
// subset (each block with probability keepFraction). A kept block past the
// durable end extends the file (up to the volatile size); blocks in between
// that were not kept read as zeros. A shrink since the last Sync is kept with
// probability keepFraction. Everything in the new FS is durable. The same
// rng state gives the same result.
func (img *Image) Crash(keepFraction float64, rng *rand.Rand, backingDir string) (*FS, error) {
	m, err := New(backingDir)
	if err != nil {
		return nil, err
	}
	for _, p := range img.dirs {
		m.dirs[p] = &dir{vol: map[string]*inode{}, dur: map[string]*inode{}}
	}
	for _, p := range img.Files() {
		fi := img.files[p]
		data := crashContent(fi.durable, fi.volatile, keepFraction, rng)
		ino, err := m.newInode()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(ino.backing, data, 0o644); err != nil {
			return nil, err
		}
		ino.durable = data
		d := m.dirs[filepath.Dir(p)]
		d.vol[filepath.Base(p)] = ino
		d.dur[filepath.Base(p)] = ino
	}
	return m, nil
}

// crashContent applies the block model to one file.
func crashContent(dur, vol []byte, keep float64, rng *rand.Rand) []byte {
	out := append([]byte(nil), dur...)
	if len(vol) < len(dur) && rng.Float64() < keep {
		out = out[:len(vol)]
	}
	nblocks := (max(len(dur), len(vol)) + BlockSize - 1) / BlockSize
	var unsynced []int
	for b := 0; b < nblocks; b++ {
		if !equalRange(dur, vol, b*BlockSize, (b+1)*BlockSize) {
			unsynced = append(unsynced, b)
		}
	}
	prefix := rng.Intn(2) == 0
	nPrefix := int(keep*float64(len(unsynced)) + 0.5)
	for i, b := range unsynced {
		kept := i < nPrefix
		if !prefix {
			kept = rng.Float64() < keep
		}
		if !kept {
			continue
		}
		lo, hi := b*BlockSize, min((b+1)*BlockSize, len(vol))
		if lo >= hi {
			continue // the block is past the volatile end: only a shrink
		}
		if len(out) < hi {
			out = append(out, make([]byte, hi-len(out))...)
		}
		copy(out[lo:hi], vol[lo:hi])
	}
	return out
}

// equalRange compares a[lo:hi] and b[lo:hi], clipped to each length; a byte
// present in one and absent in the other differs.
func equalRange(a, b []byte, lo, hi int) bool {
	ah, bh := min(hi, len(a)), min(hi, len(b))
	if max(ah, lo) != max(bh, lo) {
		return false
	}
	if ah <= lo {
		return true
	}
	return string(a[lo:ah]) == string(b[lo:bh])
}

// ReadFile returns the current (volatile) content of a file, for tests.
func (m *FS) ReadFile(name string) ([]byte, error) {
	f, err := m.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(f)
}
