package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by Lock when another process (or another FS
// instance in this one) holds the lock.
var ErrLocked = errors.New("locked by another process")

// lock takes an exclusive open-file-description lock (F_OFD_SETLK) on the
// whole of name, creating it, and writes this process's id into it so a
// second broker can say who holds it. Kafka locks log.dirs/.lock with Java's
// FileChannel.tryLock, which is fcntl(F_SETLK) on Linux; OFD locks conflict
// with those, so Strata and Kafka keep each other out of one directory.
// Unlike flock(2) and classic POSIX locks, an OFD lock is not dropped when
// some other descriptor of the file is closed in this process.
func (osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk); err != nil {
		holder := lockHolder(f)
		_ = f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("lock %s: %w%s", name, ErrLocked, holder)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// lockHolder describes the process holding f's lock, as well as it is
// known: F_OFD_GETLK reports the pid of a classic POSIX lock holder (Kafka's
// JVM), and -1 for an OFD lock, whose holder (Strata) wrote its pid into the
// file.
func lockHolder(f *os.File) string {
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	pid := 0
	if unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk) == nil && lk.Pid > 0 {
		pid = int(lk.Pid)
	} else if b, err := io.ReadAll(io.LimitReader(f, 32)); err == nil {
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid <= 0 {
		return ""
	}
	desc := " (held by pid " + strconv.Itoa(pid)
	if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && len(cmd) > 0 {
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		desc += ": " + describeCommand(args)
	}
	return desc + ")"
}

// describeCommand shortens a command line to what names the program: a JVM
// is named by its main class (kafka.Kafka), anything else by its argv[0].
func describeCommand(args []string) string {
	if strings.HasSuffix(args[0], "java") {
		for i := 1; i < len(args); i++ {
			a := args[i]
			if a == "-cp" || a == "-classpath" {
				i++
				continue
			}
			if !strings.HasPrefix(a, "-") {
				return "java " + a
			}
		}
	}
	return args[0]
}
