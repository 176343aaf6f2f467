package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs"
)

// TestReadOfCorruptBatchHeaderIsCorruption damages the magic byte of the
// middle batch of a rolled segment of a cleanly closed log (so its indexes
// are trusted and nothing is rescanned) and checks a read of it fails with
// an error that is ErrCorruption and still answers CORRUPT_MESSAGE, as
// Kafka's fetch answers a CorruptRecordException of its batch iterator.
func TestReadOfCorruptBatchHeaderIsCorruption(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	first := makeBatch(batchOpts{records: 3, valueSize: 10})
	cfg.SegmentBytes = int64(3*len(first) + 1)
	cfg.IndexIntervalBytes = 1 // every batch indexed: the reopen scans no header of segment 0
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	for range 4 {
		appendOK(t, l, makeBatch(batchOpts{records: 3, valueSize: 10}))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := segmentPath(dir, 0, logExt)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 3*len(first) {
		t.Fatalf("segment 0 holds %d bytes, want three batches of %d", len(data), len(first))
	}
	data[len(first)+batch.OffMagic] = 7
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: 12, CleanShutdown: true})
	defer l.Close()
	_, err = l.Read(3, 1<<20, true)
	if !errors.Is(err, ErrCorruption) || !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("read of a batch with magic 7: %v, want ErrCorruption and CORRUPT_MESSAGE", err)
	}
}

// TestCorruptFilesAreErrCorruption writes garbage into each file the log
// dir keeps its metadata in and checks opening the log dir fails with an
// error that is ErrCorruption.
func TestCorruptFilesAreErrCorruption(t *testing.T) {
	for name, file := range map[string]func(dir string) string{
		"meta.properties":         func(dir string) string { return filepath.Join(dir, metaPropertiesFile) },
		"recovery checkpoint":     func(dir string) string { return filepath.Join(dir, recoveryPointCheckpointFile) },
		"log start checkpoint":    func(dir string) string { return filepath.Join(dir, logStartOffsetCheckpointFile) },
		"topic registry":          func(dir string) string { return filepath.Join(dir, registryFile) },
		"partition.metadata":      func(dir string) string { return filepath.Join(partitionDir(dir, "t", 0), partitionMetadataFile) },
		"leader-epoch-checkpoint": func(dir string) string { return filepath.Join(partitionDir(dir, "t", 0), leaderEpochCheckpointFile) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			m, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.CreateTopic("t", 1, nil, false); err != nil {
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file(dir), []byte("0\n1\nnot a checkpoint\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err = OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{})
			if err == nil {
				m.Close()
				t.Fatal("opened a log dir with a garbage " + name)
			}
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("open with a garbage %s: %v, want ErrCorruption", name, err)
			}
		})
	}
}

// TestCorruptProducerSnapshotIsCorruption flips a byte of a producer
// snapshot and checks decoding it fails with ErrCorruption.
func TestCorruptProducerSnapshotIsCorruption(t *testing.T) {
	s := newProducerStates()
	next := int64(0)
	mustAppend(t, s, &next, 7, 0, 0, 3)
	buf := s.encodeSnapshot()
	buf[len(buf)-1] ^= 0xff
	if _, err := decodeSnapshot(buf); !errors.Is(err, ErrCorruption) {
		t.Fatalf("decode of a damaged snapshot: %v, want ErrCorruption", err)
	}
}
