package storage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// partitionDirs lists the <topic>-<p> directories (and any -delete ones) of dir.
func partitionDirs(t *testing.T, dir, topic string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestManagerHostsOnlyAssignedPartitions checks a topic hosts the logs of
// the partitions it is given and no other, across a restart: a partition
// hosted later gets an empty log, a dropped one's directory goes (renamed
// -delete, then removed) with its data, new partitions are hosted as
// asked, and a directory a crash left for a partition the registry does
// not host is kept at open and taken back, data intact, when the
// partition is hosted.
func TestManagerHostsOnlyAssignedPartitions(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 1)
	tp, err := m.CreateTopicWithID("s", [16]byte{1}, 3, nil, func(p int32) bool { return p == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if got := partitionDirs(t, dir, "s"); !slices.Equal(got, []string{"s-1"}) || tp.PartitionCount() != 3 || tp.Partition(0) != nil || len(tp.Partitions()) != 1 {
		t.Fatalf("created hosting 1 of 3: dirs %v, count %d, hosted %d", got, tp.PartitionCount(), len(tp.Partitions()))
	}
	p1 := tp.Partition(1)
	if _, err := leaderAppend(p1.Log, mgrTestBatch("a", "b"), p1.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	if err := m.HostPartition("s", 0); err != nil {
		t.Fatal(err)
	}
	if err := m.HostPartition("s", 3); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("hosting a partition the topic lacks: %v", err)
	}
	if err := m.DropPartition("s", 1); err != nil {
		t.Fatal(err)
	}
	if err := m.DropPartition("s", 1); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("dropping a partition not hosted: %v", err)
	}
	if got := partitionDirs(t, dir, "s"); !slices.Equal(got, []string{"s-0"}) {
		t.Fatalf("after hosting 0 and dropping 1: dirs %v", got)
	}
	if err := m.CreatePartitionsHosting("s", 5, func(p int32) bool { return p == 4 }); err != nil {
		t.Fatal(err)
	}
	p4 := tp.Partition(4)
	if _, err := leaderAppend(p4.Log, mgrTestBatch("c", "d"), p4.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// A crash left s-2 behind, holding s's id and two records.
	if err := os.CopyFS(filepath.Join(dir, "s-2"), os.DirFS(filepath.Join(dir, "s-4"))); err != nil {
		t.Fatal(err)
	}
	m, _ = openTestManager(t, dir, 1)
	defer m.Close()
	tp = m.Topic("s")
	var hosted []int32
	for _, p := range tp.Partitions() {
		hosted = append(hosted, p.Index)
	}
	if !slices.Equal(hosted, []int32{0, 4}) || tp.PartitionCount() != 5 {
		t.Fatalf("reopened: hosted %v of %d", hosted, tp.PartitionCount())
	}
	if _, err := os.Stat(filepath.Join(dir, "s-2", partitionMetadataFile)); err != nil {
		t.Fatalf("the directory left for a partition not hosted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s-1")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the dropped partition's directory: %v", err)
	}
	if err := m.HostPartition("s", 2); err != nil {
		t.Fatal(err)
	}
	if p2 := tp.Partition(2); p2 == nil || p2.Log.LogEndOffset() != 2 {
		t.Fatalf("partition 2 hosted from the left directory: %+v", p2)
	}
}
