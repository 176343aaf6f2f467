package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PowerLossTarget runs strata on an ext4 file system on a loop device and
// turns every kill into a power loss: after SIGKILL it copies the loop
// device's backing image, which holds only what ext4 has written to the
// block device (fsynced data, plus whatever writeback happened to flush),
// not the dirty pages still in the page cache; it then unmounts the old file
// system and mounts the copy in its place, so the restarted broker sees the
// disk as a machine that lost power would. The file system is mounted with
// commit=600 so that no journal commit other than an fsync's runs between
// the kill and the copy. Needs root (losetup, mount) and mkfs.ext4.
type PowerLossTarget struct {
	*StrataTarget
	dir   string // holds the images
	mount string
	image string // current backing image
	loop  string // current loop device
	n     int
}

// NewPowerLoss makes a 512 MiB ext4 image under dir, mounts it and prepares
// strata with its data on it; extra are more strata flags.
func NewPowerLoss(bin, dir string, extra ...string) (*PowerLossTarget, error) {
	t := &PowerLossTarget{dir: dir, mount: filepath.Join(dir, "mnt"), image: filepath.Join(dir, "disk-0.img")}
	if err := os.MkdirAll(t.mount, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(t.image, nil, 0o644); err != nil {
		return nil, err
	}
	if err := os.Truncate(t.image, 512<<20); err != nil {
		return nil, err
	}
	if err := sh("mkfs.ext4", "-q", "-F", t.image); err != nil {
		return nil, err
	}
	if err := t.attach(); err != nil {
		return nil, err
	}
	st, err := newStrata(bin, filepath.Join(dir, "strata.log"), filepath.Join(t.mount, "data"), extra...)
	if err != nil {
		return nil, errors.Join(err, t.Close())
	}
	st.name = "strata (power loss)"
	t.StrataTarget = st
	return t, nil
}

func sh(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (t *PowerLossTarget) attach() error {
	out, err := exec.Command("losetup", "-f", "--show", t.image).Output()
	if err != nil {
		return fmt.Errorf("losetup %s: %w", t.image, err)
	}
	t.loop = strings.TrimSpace(string(out))
	if err := sh("mount", "-o", "commit=600", t.loop, t.mount); err != nil {
		return errors.Join(err, sh("losetup", "-d", t.loop))
	}
	return nil
}

func (t *PowerLossTarget) detach() error {
	if t.loop == "" {
		return nil
	}
	err := errors.Join(sh("umount", t.mount), sh("losetup", "-d", t.loop))
	t.loop = ""
	return err
}

// Kill sends SIGKILL, then cuts the power: the disk becomes a copy of what
// the block device held at that moment.
func (t *PowerLossTarget) Kill() error {
	if err := t.StrataTarget.Kill(); err != nil {
		return err
	}
	if t.loop == "" {
		return nil
	}
	t.n++
	next := filepath.Join(t.dir, fmt.Sprintf("disk-%d.img", t.n))
	if err := sh("cp", "--sparse=always", t.image, next); err != nil {
		return err
	}
	if err := t.detach(); err != nil {
		return err
	}
	_ = os.Remove(t.image)
	t.image = next
	return t.attach()
}

// Start launches strata on the current disk.
func (t *PowerLossTarget) Start(ctx context.Context) error { return t.StrataTarget.Start(ctx) }

// Close kills strata and unmounts the disk.
func (t *PowerLossTarget) Close() error {
	var err error
	if t.StrataTarget != nil {
		err = t.StrataTarget.Kill()
	}
	return errors.Join(err, t.detach())
}
