package errorfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-io/strata/storage/vfs"
)

func TestNthTornAndSticky(t *testing.T) {
	dir := t.TempDir()
	fs := Wrap(vfs.Default)
	fs.Inject(Fault{Op: OpWrite, PathSuffix: ".log", Nth: 2, Torn: 3})
	fs.Inject(Fault{Op: OpSync, Nth: 2, Sticky: true})
	f, err := fs.OpenFile(filepath.Join(dir, "a.log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	other, err := fs.OpenFile(filepath.Join(dir, "a.index"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Write([]byte("x")); err != nil {
		t.Fatalf("write to a non-matching file failed: %v", err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	n, err := f.Write([]byte("world"))
	if n != 3 || !errors.Is(err, ErrInjected) {
		t.Fatalf("torn write: n=%d err=%v", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.log")); string(b) != "hellowor" {
		t.Fatalf("file holds %q", b)
	}
	if _, err := f.WriteAt([]byte("!"), 8); err != nil {
		t.Fatalf("fault fired twice: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := f.Sync(); !errors.Is(err, ErrInjected) {
			t.Fatalf("sticky sync %d: %v", i, err)
		}
	}
	fs.Clear()
	if err := f.Sync(); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
	if fs.Count(OpWrite) != 4 {
		t.Fatalf("counted %d writes", fs.Count(OpWrite))
	}
}

func TestCustomErrorAndOps(t *testing.T) {
	dir := t.TempDir()
	fs := Wrap(vfs.Default)
	boom := errors.New("boom")
	fs.Inject(Fault{Op: OpRename, Err: boom})
	fs.Inject(Fault{Op: OpSyncDir})
	fs.Inject(Fault{Op: OpOpen, PathSuffix: ".tmp"})
	if err := fs.Rename(filepath.Join(dir, "x"), filepath.Join(dir, "y")); !errors.Is(err, boom) {
		t.Fatalf("rename: %v", err)
	}
	if err := fs.SyncDir(dir); !errors.Is(err, ErrInjected) {
		t.Fatalf("syncdir: %v", err)
	}
	if _, err := fs.OpenFile(filepath.Join(dir, "a.tmp"), os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, ErrInjected) {
		t.Fatalf("open: %v", err)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatalf("second syncdir: %v", err)
	}
}
