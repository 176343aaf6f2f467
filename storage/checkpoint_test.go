package storage

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

func TestOffsetCheckpointExactBytesAndRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), recoveryPointCheckpointFile)
	m := map[topicPartition]int64{
		{"b", 0}:       7,
		{"a.x-y_z", 1}: 12345678901,
		{"a.x-y_z", 0}: 0,
	}
	if err := writeOffsetCheckpoint(vfs.Default, path, m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "0\n3\na.x-y_z 0 0\na.x-y_z 1 12345678901\nb 0 7\n"
	if string(data) != want {
		t.Fatalf("file:\n%q\nwant\n%q", data, want)
	}
	got, err := readOffsetCheckpoint(vfs.Default, path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip %v, want %v", got, m)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temp file left behind: %v", err)
	}
}

func TestOffsetCheckpointMissingAndEmpty(t *testing.T) {
	dir := t.TempDir()
	got, err := readOffsetCheckpoint(vfs.Default, filepath.Join(dir, "nope"))
	if err != nil || len(got) != 0 || got == nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
	path := filepath.Join(dir, logStartOffsetCheckpointFile)
	if err := writeOffsetCheckpoint(vfs.Default, path, nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "0\n0\n" {
		t.Fatalf("empty checkpoint %q", data)
	}
	// Kafka leaves cleaner-offset-checkpoint as an empty file until its
	// cleaner cleans something; its CheckpointReadBuffer reads no entries.
	empty := filepath.Join(dir, cleanerCheckpointFile)
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readOffsetCheckpoint(vfs.Default, empty); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("empty file: %v %v", got, err)
	}
}

func TestCheckpointMalformed(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"bad version":   "1\n0\n",
		"no count":      "0\n",
		"bad count":     "0\nx\n",
		"too few":       "0\n2\nt 0 1\n",
		"too many":      "0\n1\nt 0 1\nt 1 2\n",
		"fields":        "0\n1\nt 0\n",
		"bad partition": "0\n1\nt x 1\n",
		"bad offset":    "0\n1\nt 0 1.5\n",
	}
	for name, content := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readOffsetCheckpoint(vfs.Default, path)
		if err == nil {
			t.Errorf("%s: accepted %q", name, content)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
}

func TestEpochCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), leaderEpochCheckpointFile)
	entries := []epochEntry{{0, 0}, {3, 17}, {4, 1000}}
	if err := writeEpochCheckpoint(vfs.Default, path, entries); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "0\n3\n0 0\n3 17\n4 1000\n" {
		t.Fatalf("file %q", data)
	}
	got, err := readEpochCheckpoint(vfs.Default, path)
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("round trip %v %v", got, err)
	}
	if err := os.WriteFile(path, []byte("0\n1\n-1 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readEpochCheckpoint(vfs.Default, path); err == nil {
		t.Fatal("negative epoch accepted")
	}
	if got, err := readEpochCheckpoint(vfs.Default, path+"-missing"); err != nil || len(got) != 0 {
		t.Fatalf("missing: %v %v", got, err)
	}
}

// A checkpoint write that fails at any step leaves the previous content.
func TestCheckpointFailedWriteKeepsOldFile(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpOpen, errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename} {
		path := filepath.Join(t.TempDir(), recoveryPointCheckpointFile)
		efs := errorfs.Wrap(vfs.Default)
		old := map[topicPartition]int64{{"t", 0}: 5}
		if err := writeOffsetCheckpoint(efs, path, old); err != nil {
			t.Fatal(err)
		}
		efs.Inject(errorfs.Fault{Op: op, Nth: 1, Torn: 3})
		if err := writeOffsetCheckpoint(efs, path, map[topicPartition]int64{{"t", 0}: 9}); err == nil {
			t.Fatalf("%v fault: write succeeded", op)
		}
		efs.Clear()
		got, err := readOffsetCheckpoint(efs, path)
		if err != nil || !reflect.DeepEqual(got, old) {
			t.Fatalf("%v fault: read back %v %v, want %v", op, got, err, old)
		}
	}
}
