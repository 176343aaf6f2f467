package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-io/strata/storage/vfs"
)

func TestMetaPropertiesStableAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	first, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(first.ClusterID) != 22 || len(first.DirectoryID) != 22 || first.ClusterID == first.DirectoryID {
		t.Fatalf("ids %+v", first)
	}
	if _, err := parseUUID(first.ClusterID); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, metaPropertiesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"version=1\n", "node.id=3\n", "cluster.id=" + first.ClusterID + "\n", "directory.id=" + first.DirectoryID + "\n"} {
		if !strings.Contains(string(data), line) {
			t.Errorf("meta.properties lacks %q:\n%s", line, data)
		}
	}
	again, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 3, "")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("reopen changed ids: %+v vs %+v", again, first)
	}
}

func TestMetaPropertiesNodeIDMismatch(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 1, ""); err != nil {
		t.Fatal(err)
	}
	_, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 2, "")
	if err == nil || !strings.Contains(err.Error(), "node.id 1") || !strings.Contains(err.Error(), "node.id 2") {
		t.Fatalf("mismatch error %v should name both node ids", err)
	}
}

// TestMetaPropertiesClusterID checks that a cluster node's new log dir
// takes the cluster's id and that a log dir of another cluster is refused
// with Kafka's message, while a single node (no id) takes any.
func TestMetaPropertiesClusterID(t *testing.T) {
	dir := t.TempDir()
	const id = "ZqZlNWTXQAq9qv-mKYFIMg"
	mp, created, err := loadOrCreateMetaProperties(vfs.Default, dir, 4, id)
	if err != nil || !created || mp.ClusterID != id {
		t.Fatalf("new dir: %+v created %v, %v; want cluster.id %s", mp, created, err, id)
	}
	if _, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 4, id); err != nil {
		t.Fatalf("same cluster: %v", err)
	}
	_, _, err = loadOrCreateMetaProperties(vfs.Default, dir, 4, "NYPzPIOlQnq4otw3pg_vLw")
	if want := "invalid cluster.id in: " + dir + ". Expected NYPzPIOlQnq4otw3pg_vLw, but read " + id; err == nil || err.Error() != want {
		t.Fatalf("another cluster: %v; want %q", err, want)
	}
	if _, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 4, ""); err != nil {
		t.Fatalf("a single node: %v", err)
	}
}

func TestMetaPropertiesReadsKafkaFile(t *testing.T) {
	dir := t.TempDir()
	// As written by a Kafka 3.x broker (Java properties with a date comment);
	// it lacks directory.id, which is then added.
	kafka := "#\n#Tue Nov 24 10:00:00 UTC 2026\nnode.id=0\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
	path := filepath.Join(dir, metaPropertiesFile)
	if err := os.WriteFile(path, []byte(kafka), 0o644); err != nil {
		t.Fatal(err)
	}
	mp, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if mp.ClusterID != "MkU3OEVBNTcwNTJENDM2Qk" || mp.DirectoryID == "" {
		t.Fatalf("read %+v", mp)
	}
	again, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 0, "")
	if err != nil || again != mp {
		t.Fatalf("directory.id not persisted: %+v %v", again, err)
	}
	for _, bad := range []string{"version=0\nnode.id=0\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n", "version=1\nnode.id=x\n", "version=1\nnode.id=0\ncluster.id=short\n", "garbage\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := loadOrCreateMetaProperties(vfs.Default, dir, 0, "")
		if err == nil {
			t.Errorf("accepted %q", bad)
		}
		// Any version but 1 is a format this broker does not know, not damage.
		if unknownVersion := strings.HasPrefix(bad, "version=0"); errors.Is(err, ErrCorruption) == unknownVersion {
			t.Errorf("%q: %v, want ErrCorruption %v", bad, err, !unknownVersion)
		}
	}
}

func TestNewUUID(t *testing.T) {
	seen := map[[16]byte]bool{}
	for i := 0; i < 1000; i++ {
		u, err := newUUID()
		if err != nil {
			t.Fatal(err)
		}
		s := uuidString(u)
		if seen[u] || u == ([16]byte{}) || len(s) != 22 || s[0] == '-' {
			t.Fatalf("bad uuid %x %s", u, s)
		}
		seen[u] = true
		back, err := parseUUID(s)
		if err != nil || back != u {
			t.Fatalf("parse %s: %x %v", s, back, err)
		}
	}
}
