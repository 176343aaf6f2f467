package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-io/strata/storage/vfs"
)

// Names of Kafka's per-log.dir offset checkpoint files.
const (
	recoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	cleanerCheckpointFile        = "cleaner-offset-checkpoint"
)

// checkpointVersion is the only version of Kafka's checkpoint text format.
const checkpointVersion = 0

type topicPartition struct {
	Topic     string
	Partition int32
}

// replaceFile atomically replaces path with data: it writes path+".tmp",
// fsyncs it, renames it over path and fsyncs the directory so the rename
// itself survives a crash. A reader sees either the old or the new content.
func replaceFile(fsys vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("fsync dir of %s: %w", path, err)
	}
	return nil
}

// slurpFile reads a whole file. A missing file yields an error wrapping
// fs.ErrNotExist.
func slurpFile(fsys vfs.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// readCheckpointLines parses Kafka's checkpoint text format (CheckpointFile):
// a version line ("0"), an entry count line, then exactly that many entry
// lines, each split on whitespace into want fields. A missing or empty file
// yields nil entries and a nil error (Kafka's CheckpointReadBuffer reads an
// empty file, which its cleaner-offset-checkpoint is until a cleaning, as
// no entries).
func readCheckpointLines(fsys vfs.FS, path string, want int) ([][]string, error) {
	data, err := slurpFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), len(data)+1)
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	v, ok := next()
	if !ok {
		return nil, sc.Err()
	}
	if ver, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || ver != checkpointVersion {
		return nil, fmt.Errorf("checkpoint %s: unrecognized version %q", path, v)
	}
	c, ok := next()
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: missing entry count", path)
	}
	count, err := strconv.Atoi(strings.TrimSpace(c))
	if err != nil || count < 0 {
		return nil, corruptionf("checkpoint %s: malformed entry count %q", path, c)
	}
	entries := make([][]string, 0, min(count, 1<<16))
	for {
		l, ok := next()
		if !ok {
			break
		}
		fields := strings.Fields(l)
		if len(fields) != want {
			return nil, corruptionf("checkpoint %s line %d: malformed entry %q", path, line, l)
		}
		entries = append(entries, fields)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if len(entries) != count {
		return nil, fmt.Errorf("checkpoint %s: expected %d entries but found %d", path, count, len(entries))
	}
	return entries, nil
}

// formatCheckpoint renders entry lines in Kafka's checkpoint text format.
func formatCheckpoint(lines []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// readOffsetCheckpoint reads a recovery-point-offset-checkpoint or
// log-start-offset-checkpoint file ("<topic> <partition> <offset>" lines).
// A missing file yields an empty map.
func readOffsetCheckpoint(fsys vfs.FS, path string) (map[topicPartition]int64, error) {
	entries, err := readCheckpointLines(fsys, path, 3)
	if err != nil {
		return nil, err
	}
	m := make(map[topicPartition]int64, len(entries))
	for _, f := range entries {
		p, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil || p < 0 {
			return nil, corruptionf("checkpoint %s: malformed partition in %q", path, strings.Join(f, " "))
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, corruptionf("checkpoint %s: malformed offset in %q", path, strings.Join(f, " "))
		}
		m[topicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return m, nil
}

// writeOffsetCheckpoint atomically writes m in Kafka's offset checkpoint
// format, sorted by topic then partition so the file is deterministic.
func writeOffsetCheckpoint(fsys vfs.FS, path string, m map[topicPartition]int64) error {
	tps := make([]topicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, m[tp])
	}
	if err := replaceFile(fsys, path, formatCheckpoint(lines)); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return nil
}
