package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/storage/vfs"
)

func TestValidateTopicName(t *testing.T) {
	long := strings.Repeat("a", maxTopicNameLen)
	for name, ok := range map[string]bool{
		"orders":       true,
		"a.b_c-D9":     true,
		"..a":          true,
		long:           true,
		long + "a":     false,
		"":             false,
		".":            false,
		"..":           false,
		"with space":   false,
		"slash/x":      false,
		"ünicode":      false,
		"colon:x":      false,
		"star*":        false,
		"__consumer_x": true,
	} {
		err := ValidateTopicName(name)
		if ok && err != nil {
			t.Errorf("%q rejected: %v", name, err)
		}
		if !ok && !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("%q: error %v, want InvalidTopicException", name, err)
		}
	}
}

func openTestManager(t *testing.T, dir string, nodeID int32) (*Manager, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	m, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{Logger: zap.New(core), NodeID: nodeID})
	if err != nil {
		t.Fatal(err)
	}
	return m, logs
}

// openedClean reports the clean_shutdown flag OpenManager logged.
func openedClean(t *testing.T, logs *observer.ObservedLogs) bool {
	t.Helper()
	if logs.FilterMessage("log dir is new").Len() == 1 {
		return false
	}
	entries := logs.FilterMessage("opening log dir").All()
	if len(entries) != 1 {
		t.Fatalf("%d 'opening log dir' entries", len(entries))
	}
	return entries[0].ContextMap()["clean_shutdown"].(bool)
}

func TestManagerTopicLifecycleAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	m, logs := openTestManager(t, dir, 1)
	if openedClean(t, logs) {
		t.Fatal("first start reported clean shutdown")
	}
	cfgs := map[string]string{"segment.bytes": "1048576", "retention.ms": "1000"}
	a, err := m.CreateTopic("a.x", 2, cfgs, false)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == ([16]byte{}) || len(a.Partitions()) != 2 || a.cfg.SegmentBytes != 1048576 {
		t.Fatalf("topic %+v cfg %+v", a, a.cfg)
	}
	for i, p := range a.Partitions() {
		if p.Topic != "a.x" || p.Index != int32(i) || p.Log == nil || p.LeaderEpoch() != 0 {
			t.Fatalf("partition %d: %+v", i, p)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "a.x-1", partitionMetadataFile))
	if err != nil || string(md) != "version: 0\ntopic_id: "+uuidString(a.ID)+"\n" {
		t.Fatalf("partition.metadata %q %v", md, err)
	}
	b, err := m.CreateTopic("b", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		parts int32
		cfgs  map[string]string
		want  error
	}{
		{"a.x", 1, nil, kerr.TopicAlreadyExists},
		{"a_x", 1, nil, kerr.InvalidTopicException},
		{"bad name", 1, nil, kerr.InvalidTopicException},
		{"c", 0, nil, kerr.InvalidPartitions},
		{"c", 1, map[string]string{"segment.bytes": "1"}, kerr.InvalidConfig},
		{"c", 1, map[string]string{"bogus": "1"}, kerr.InvalidConfig},
	} {
		if _, err := m.CreateTopic(tc.name, tc.parts, tc.cfgs, false); !errors.Is(err, tc.want) {
			t.Errorf("create %q/%d/%v: %v, want %v", tc.name, tc.parts, tc.cfgs, err, tc.want)
		}
	}
	if v, err := m.CreateTopic("c", 3, nil, true); err != nil || v.Name != "c" {
		t.Fatalf("validateOnly: %v %v", v, err)
	}
	if m.Topic("c") != nil {
		t.Fatal("validateOnly created the topic")
	}
	if _, err := os.Stat(filepath.Join(dir, "c-0")); !os.IsNotExist(err) {
		t.Fatalf("validateOnly created a directory: %v", err)
	}

	old := a.Partitions()
	if err := m.CreatePartitions("a.x", 2, false); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("same count: %v", err)
	}
	if err := m.CreatePartitions("nope", 5, false); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", err)
	}
	if err := m.CreatePartitions("a.x", 4, true); err != nil || len(a.Partitions()) != 2 {
		t.Fatalf("validateOnly grew the topic: %v %d", err, len(a.Partitions()))
	}
	if err := m.CreatePartitions("a.x", 3, false); err != nil {
		t.Fatal(err)
	}
	if len(old) != 2 || len(a.Partitions()) != 3 || a.Partitions()[0] != old[0] || a.Partitions()[2].Index != 2 {
		t.Fatalf("partitions after grow: old %d new %d", len(old), len(a.Partitions()))
	}
	if got := a.Partitions()[2].Log.LogEndOffset(); got != 0 {
		t.Fatalf("new partition LEO %d", got)
	}

	if err := m.DeleteTopic("b"); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteTopic("b"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("second delete: %v", err)
	}
	if m.Topic("b") != nil || m.TopicByID(b.ID) != nil {
		t.Fatal("deleted topic still visible")
	}
	if _, err := os.Stat(filepath.Join(dir, "b-0")); !os.IsNotExist(err) {
		t.Fatalf("deleted partition dir remains: %v", err)
	}
	if m.TopicByID(a.ID) != a {
		t.Fatal("TopicByID")
	}
	z, err := m.CreateTopic("z", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	clusterID := m.ClusterID()

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean shutdown marker after Close: %v", err)
	}
	if _, err := m.CreateTopic("late", 1, nil, false); err == nil {
		t.Fatal("create after Close succeeded")
	}
	rp, err := os.ReadFile(filepath.Join(dir, recoveryPointCheckpointFile))
	if err != nil || string(rp) != "0\n4\na.x 0 0\na.x 1 0\na.x 2 0\nz 0 0\n" {
		t.Fatalf("recovery point checkpoint %q %v", rp, err)
	}
	if _, err := os.Stat(filepath.Join(dir, logStartOffsetCheckpointFile)); err != nil {
		t.Fatal(err)
	}

	m2, logs2 := openTestManager(t, dir, 1)
	defer m2.Close()
	if !openedClean(t, logs2) {
		t.Fatal("reopen after Close not reported clean")
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("clean shutdown marker not removed on open: %v", err)
	}
	if m2.ClusterID() != clusterID {
		t.Fatal("cluster id changed")
	}
	ts := m2.Topics()
	if len(ts) != 2 || ts[0].Name != "a.x" || ts[1].Name != "z" {
		t.Fatalf("topics after reopen: %v", ts)
	}
	if ts[0].ID != a.ID || ts[1].ID != z.ID || !reflect.DeepEqual(ts[0].Configs, cfgs) || len(ts[0].Partitions()) != 3 {
		t.Fatalf("topic a.x after reopen: %+v", ts[0])
	}
	if ts[0].cfg.SegmentBytes != 1048576 || m2.TopicByID(z.ID) != ts[1] {
		t.Fatal("config or id index not restored")
	}
	if _, err := m2.CreateTopic("b", 1, nil, false); err != nil {
		t.Fatalf("recreate deleted topic: %v", err)
	}
	if err := m2.DeleteTopic("a.x"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{recoveryPointCheckpointFile, logStartOffsetCheckpointFile} {
		cp, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(cp) != "0\n1\nz 0 0\n" {
			t.Fatalf("%s after deleting a.x: %q %v", name, cp, err)
		}
	}
}

func TestManagerCrashIsNotClean(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 1)
	if _, err := m.CreateTopic("t", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	// No Close: the marker is absent, as after a crash. Release the logs
	// and the lock without going through the manager, as a killed process
	// would.
	for _, p := range m.Topic("t").Partitions() {
		if err := p.Log.Close(); err != nil {
			t.Fatal(err)
		}
	}
	m.lock.Close()
	m2, logs := openTestManager(t, dir, 1)
	defer m2.Close()
	if openedClean(t, logs) {
		t.Fatal("open after crash reported clean")
	}
	if m2.Topic("t") == nil {
		t.Fatal("topic lost")
	}
}

func TestManagerNodeIDMismatch(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 1)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{NodeID: 2})
	if err == nil || !strings.Contains(err.Error(), "1") || !strings.Contains(err.Error(), "2") {
		t.Fatalf("node id mismatch: %v", err)
	}
}

func TestManagerStrayDirectories(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"ghost-0", "empty-0", "t-0.0123abcd-delete", "not_a_partition"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ghost-0", "00000000000000000000.log"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, logs := openTestManager(t, dir, 0)
	defer m.Close()
	if _, err := os.Stat(filepath.Join(dir, "ghost-0")); err != nil {
		t.Fatalf("stray dir removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-0.0123abcd-delete")); !os.IsNotExist(err) {
		t.Fatalf("deletion leftover kept: %v", err)
	}
	warn := logs.FilterMessageSnippet("not Strata's").All()
	if len(warn) != 1 || fmt.Sprint(warn[0].ContextMap()["directories"]) != "[ghost-0]" {
		t.Fatalf("warnings: %v", warn)
	}
	if len(m.Topics()) != 0 {
		t.Fatal("stray dir became a topic")
	}
}

// mgrTestBatch builds a magic-2 batch of values with a valid CRC32C, as a
// producer would send it.
func mgrTestBatch(values ...string) []byte {
	var records []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)                   // attributes
		body = kbin.AppendVarlong(body, 0)       // timestamp delta
		body = kbin.AppendVarint(body, int32(i)) // offset delta
		body = kbin.AppendVarint(body, -1)       // null key
		body = kbin.AppendVarint(body, int32(len(v)))
		body = append(body, v...)
		body = kbin.AppendVarint(body, 0) // headers
		records = kbin.AppendVarint(records, int32(len(body)))
		records = append(records, body...)
	}
	b := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  1700000000000,
		MaxTimestamp:    1700000000000,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(values)),
		Records:         records,
	}
	buf := b.AppendTo(nil)
	binary.BigEndian.PutUint32(buf[8:12], uint32(len(buf)-12))
	binary.BigEndian.PutUint32(buf[17:21], crc32.Checksum(buf[21:], crc32.MakeTable(crc32.Castagnoli)))
	return buf
}

func TestManagerDataSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 0)
	tp, err := m.CreateTopic("data", 2, map[string]string{"segment.bytes": "1048576"}, false)
	if err != nil {
		t.Fatal(err)
	}
	p := tp.Partitions()[1]
	first, second := mgrTestBatch("a", "bb", "ccc"), mgrTestBatch("dddd")
	for i, batch := range [][]byte{first, second} {
		res, err := leaderAppend(p.Log, batch, p.LeaderEpoch())
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if want := int64(3 * i); res.BaseOffset != want {
			t.Fatalf("append %d at %d, want %d", i, res.BaseOffset, want)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	rp, _ := os.ReadFile(filepath.Join(dir, recoveryPointCheckpointFile))
	if !strings.Contains(string(rp), "data 1 4\n") {
		t.Fatalf("recovery point checkpoint %q lacks data-1 at 4", rp)
	}

	m2, _ := openTestManager(t, dir, 0)
	defer m2.Close()
	l := m2.Topic("data").Partitions()[1].Log
	if l.LogEndOffset() != 4 || l.HighWatermark() != 4 {
		t.Fatalf("after reopen LEO %d HW %d, want 4", l.LogEndOffset(), l.HighWatermark())
	}
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Chunk.Release()
	var got bytes.Buffer
	if _, err := res.Chunk.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	// The log stamps base offset, leader epoch and CRC-neutral header fields;
	// compare the record payloads, which must be byte-identical.
	if got.Len() != len(first)+len(second) {
		t.Fatalf("read %d bytes, want %d", got.Len(), len(first)+len(second))
	}
	for i, want := range [][]byte{first, second} {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(got.Next(len(want))); err != nil {
			t.Fatal(err)
		}
		if rb.FirstOffset != int64(3*i) || rb.NumRecords != []int32{3, 1}[i] {
			t.Fatalf("batch %d: offset %d records %d", i, rb.FirstOffset, rb.NumRecords)
		}
		if !bytes.Equal(rb.Records, want[61:]) {
			t.Fatalf("batch %d records differ", i)
		}
	}
	if m2.Topic("data").Partitions()[0].Log.LogEndOffset() != 0 {
		t.Fatal("partition 0 not empty")
	}
}

func TestManagerPartitionDirProblems(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 0)
	if _, err := m.CreateTopic("t", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A registered partition whose directory vanished starts empty, loudly.
	if err := os.RemoveAll(filepath.Join(dir, "t-1")); err != nil {
		t.Fatal(err)
	}
	m2, logs := openTestManager(t, dir, 0)
	if n := logs.FilterMessage("registered partition has no directory, starting it empty").Len(); n != 1 {
		t.Fatalf("%d missing-dir warnings", n)
	}
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	// A partition.metadata naming another topic id refuses to open.
	other := partitionMetadata([16]byte{1, 2, 3})
	if err := os.WriteFile(filepath.Join(dir, "t-0", partitionMetadataFile), other, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{}); err == nil || !strings.Contains(err.Error(), "t-0") {
		t.Fatalf("topic id mismatch: %v", err)
	}
}

func TestManagerRegistryFile(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 0)
	defer m.Close()
	tp, err := m.CreateTopic("r", 1, map[string]string{"cleanup.policy": "compact"}, false)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, registryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version": 1`, `"name": "r"`, `"id": "` + uuidString(tp.ID) + `"`, `"partitions": 1`, `"cleanup.policy": "compact"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("registry lacks %s:\n%s", want, data)
		}
	}
}

// Readers look topics and partitions up while admin operations run; the race
// detector checks the copy-on-write partition snapshots.
func TestManagerConcurrentLookups(t *testing.T) {
	m, _ := openTestManager(t, t.TempDir(), 0)
	defer m.Close()
	tp, err := m.CreateTopic("grow", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() {
		defer close(readerErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			parts := m.Topic("grow").Partitions()
			for i, p := range parts {
				if p == nil || p.Index != int32(i) {
					readerErr <- errors.New("partition snapshot has a hole")
					return
				}
				p.Log.LogEndOffset()
			}
			m.Topics()
			m.TopicByID(tp.ID)
		}
	}()
	for n := int32(2); n <= 6; n++ {
		if err := m.CreatePartitions("grow", n, false); err != nil {
			t.Fatal(err)
		}
		if _, err := m.CreateTopic("other"+string(rune('a'+n)), 1, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	if len(tp.Partitions()) != 6 {
		t.Fatalf("%d partitions", len(tp.Partitions()))
	}
}
