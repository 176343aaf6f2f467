package memfs

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func newFS(t *testing.T) *FS {
	t.Helper()
	m, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Release() })
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

func crash(t *testing.T, m *FS, keep float64, seed int64) *FS {
	t.Helper()
	c, err := m.Crash(keep, rand.New(rand.NewSource(seed)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Release() })
	return c
}

func write(t *testing.T, m *FS, name string, data []byte, off int64, sync bool) {
	t.Helper()
	f, err := m.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func content(t *testing.T, m *FS, name string) ([]byte, bool) {
	t.Helper()
	b, err := m.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func TestUnsyncedEntryIsLost(t *testing.T) {
	m := newFS(t)
	write(t, m, "/d/a", []byte("hello"), 0, true) // data synced, entry not
	if _, ok := content(t, crash(t, m, 1, 1), "/d/a"); ok {
		t.Fatal("a file whose directory was never synced survived")
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if b, ok := content(t, crash(t, m, 0, 1), "/d/a"); !ok || string(b) != "hello" {
		t.Fatalf("synced file: %q %v", b, ok)
	}
}

func TestBlocksKeptByFraction(t *testing.T) {
	m := newFS(t)
	durable := bytes.Repeat([]byte{1}, 2*BlockSize)
	write(t, m, "/d/f", durable, 0, true)
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	// Overwrite the second block and append eight more, unsynced.
	vol := append(append([]byte(nil), durable[:BlockSize]...), bytes.Repeat([]byte{2}, 9*BlockSize)...)
	write(t, m, "/d/f", vol[BlockSize:], BlockSize, false)

	if b, _ := content(t, crash(t, m, 0, 1), "/d/f"); !bytes.Equal(b, durable) {
		t.Fatalf("keep 0: %d bytes, want the durable %d", len(b), len(durable))
	}
	if b, _ := content(t, crash(t, m, 1, 1), "/d/f"); !bytes.Equal(b, vol) {
		t.Fatalf("keep 1: %d bytes, want the volatile %d", len(b), len(vol))
	}
	for seed := int64(0); seed < 20; seed++ {
		b, _ := content(t, crash(t, m, 0.5, seed), "/d/f")
		if len(b)%BlockSize != 0 || len(b) < len(durable) || len(b) > len(vol) {
			t.Fatalf("seed %d: size %d", seed, len(b))
		}
		if !bytes.Equal(b[:BlockSize], durable[:BlockSize]) {
			t.Fatalf("seed %d: the synced, unchanged block changed", seed)
		}
		for off := BlockSize; off < len(b); off += BlockSize {
			blk := b[off : off+BlockSize]
			if !bytes.Equal(blk, vol[off:off+BlockSize]) && !bytes.Equal(blk, make([]byte, BlockSize)) &&
				!(off < len(durable) && bytes.Equal(blk, durable[off:off+BlockSize])) {
				t.Fatalf("seed %d: block at %d is neither old, new nor a hole", seed, off)
			}
		}
	}
}

func TestRenameAndRemoveRevertUntilSyncDir(t *testing.T) {
	m := newFS(t)
	write(t, m, "/d/old", []byte("x"), 0, true)
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if err := m.Rename("/d/old", "/d/new"); err != nil {
		t.Fatal(err)
	}
	c := crash(t, m, 1, 1)
	if _, ok := content(t, c, "/d/new"); ok {
		t.Fatal("unsynced rename survived")
	}
	if _, ok := content(t, c, "/d/old"); !ok {
		t.Fatal("renamed-away entry lost before SyncDir")
	}
	if err := m.Remove("/d/new"); err != nil {
		t.Fatal(err)
	}
	if _, ok := content(t, crash(t, m, 0, 1), "/d/old"); !ok {
		t.Fatal("entry lost without a SyncDir")
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	ents, err := crash(t, m, 1, 1).ReadDir("/d")
	if err != nil || len(ents) != 0 {
		t.Fatalf("after SyncDir: %v %v", ents, err)
	}
}

func TestMmapThroughFd(t *testing.T) {
	m := newFS(t)
	f, err := m.OpenFile("/d/idx", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Truncate(BlockSize); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, BlockSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(data) }()
	copy(data, "mapped")
	if b, _ := content(t, crash(t, m, 0, 1), "/d/idx"); len(b) != 0 {
		t.Fatalf("unsynced mmap write survived keep 0: %d bytes", len(b))
	}
	if b, _ := content(t, m, "/d/idx"); !bytes.HasPrefix(b, []byte("mapped")) {
		t.Fatal("mmap write not visible through ReadAt")
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if b, _ := content(t, crash(t, m, 0, 1), "/d/idx"); !bytes.HasPrefix(b, []byte("mapped")) {
		t.Fatal("synced mmap write lost")
	}
}

func TestHaltAfterAndHook(t *testing.T) {
	m := newFS(t) // MkdirAll was op 1
	var seen []Op
	m.SetHook(func(n int64, op Op, name string, snapshot func() *Image) { seen = append(seen, op) })
	m.HaltAfter(4)
	f, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o644) // 2
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil { // 3
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("abc")); err != nil { // 4: the last
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("def")); !errors.Is(err, ErrHalted) {
		t.Fatalf("write after the halt: %v", err)
	}
	img := m.Halted()
	if img == nil || img.Ops != 4 {
		t.Fatalf("halt image %+v", img)
	}
	c, err := img.Crash(1, rand.New(rand.NewSource(1)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := content(t, c, "/d/a"); string(b) != "abc" {
		t.Fatalf("halt image holds %q", b)
	}
	if want := []Op{OpCreate, OpSyncDir, OpWrite}; len(seen) != 3 || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Fatalf("hook saw %v", seen)
	}
	_ = f.Close()
}
