package storage

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-io/strata/storage/vfs"
)

// leaderEpochCheckpointFile is Kafka's per-partition leader epoch cache file.
const leaderEpochCheckpointFile = "leader-epoch-checkpoint"

// epochEntry says that leader epoch Epoch wrote its first batch at StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// readEpochCheckpoint reads a leader-epoch-checkpoint file in Kafka's format:
// "0\n<count>\n<epoch> <startOffset>\n...". A missing file yields no entries.
func readEpochCheckpoint(fsys vfs.FS, path string) ([]epochEntry, error) {
	lines, err := readCheckpointLines(fsys, path, 2)
	if err != nil {
		return nil, err
	}
	entries := make([]epochEntry, 0, len(lines))
	for _, f := range lines {
		epoch, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil || epoch < 0 {
			return nil, corruptionf("leader epoch checkpoint %s: malformed epoch in %q", path, strings.Join(f, " "))
		}
		off, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || off < 0 {
			return nil, corruptionf("leader epoch checkpoint %s: malformed start offset in %q", path, strings.Join(f, " "))
		}
		entries = append(entries, epochEntry{Epoch: int32(epoch), StartOffset: off})
	}
	return entries, nil
}

// writeEpochCheckpoint atomically writes entries, in the given order, in
// Kafka's leader-epoch-checkpoint format.
func writeEpochCheckpoint(fsys vfs.FS, path string, entries []epochEntry) error {
	lines := make([]string, len(entries))
	for i, e := range entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	if err := replaceFile(fsys, path, formatCheckpoint(lines)); err != nil {
		return fmt.Errorf("leader epoch checkpoint %s: %w", path, err)
	}
	return nil
}
