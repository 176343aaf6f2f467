package kraftmeta

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-io/strata/storage/internal/base"
	"github.com/strata-io/strata/storage/vfs"
)

// testdata/__cluster_metadata-0 was written by Apache Kafka 4.1.1 (KRaft,
// one combined node, metadata.log.max.snapshot.interval.ms=1000) with
// testdata/gen-fixture.sh: orders (3 partitions, retention.ms, then
// max.message.bytes deleted and segment.bytes added), compacted, gone
// (created and deleted), grown (1 partition, then 2), broker configs for
// node 1 and the cluster default, a restart, then late; Kafka stopped
// cleanly. Its log is 00000000000000000000.log; the snapshots at 50 (before
// the restart) and 79 (after late was created) are kept.
const fixture = "testdata/__cluster_metadata-0"

func uuid(t *testing.T, s string) [16]byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		t.Fatalf("bad uuid %q", s)
	}
	return [16]byte(b)
}

// wantFixture is the state DumpLogSegments --cluster-metadata-decoder shows
// at the end of the fixture's log. Each shutdown fences the broker
// (PartitionChangeRecord leader -1) and each start unfences it (leader 1),
// each bumping the leader epoch: orders, compacted and grown went 0, 1, 2,
// 3; late, created after the restart, 0, 1.
func wantFixture(t *testing.T) []Topic {
	fenced := func(n int, epoch int32) []Partition {
		ps := make([]Partition, n)
		for i := range ps {
			ps[i] = Partition{Leader: -1, LeaderEpoch: epoch}
		}
		return ps
	}
	return []Topic{
		{Name: "compacted", ID: uuid(t, "UYBTxdMVRIaqxZdznBRaRQ"), Partitions: fenced(1, 3), Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "grown", ID: uuid(t, "zQfzLvO9QSO2Yftz02VLMQ"), Partitions: fenced(2, 3)},
		{Name: "late", ID: uuid(t, "tI8lJp-kRRi9bvBZmoZahA"), Partitions: fenced(1, 1), Configs: map[string]string{"retention.bytes": "1000000"}},
		{Name: "orders", ID: uuid(t, "ey4p5zIaSymNtFBxjOeFcg"), Partitions: fenced(3, 3), Configs: map[string]string{"retention.ms": "86400000", "segment.bytes": "1048576"}},
	}
}

var wantBrokerConfigs = map[string]map[string]string{
	"":  {"min.insync.replicas": "1", "log.retention.ms": "604800000"},
	"1": {"log.cleaner.threads": "2"},
}

// copyFixture copies the named fixture files into a new directory.
func copyFixture(t *testing.T, names ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), DirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(fixture, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	fixtureLog   = "00000000000000000000.log"
	fixtureSnap1 = "00000000000000000050-0000000001.checkpoint"
	fixtureSnap2 = "00000000000000000079-0000000002.checkpoint"
)

func checkFixtureImage(t *testing.T, img *Image) {
	t.Helper()
	if !reflect.DeepEqual(img.Topics, wantFixture(t)) {
		t.Errorf("topics:\n got %+v\nwant %+v", img.Topics, wantFixture(t))
	}
	if !reflect.DeepEqual(img.BrokerConfigs, wantBrokerConfigs) {
		t.Errorf("broker configs: got %v, want %v", img.BrokerConfigs, wantBrokerConfigs)
	}
	if img.EndOffset != 91 || img.Skipped != 0 || img.InvalidTail != "" {
		t.Errorf("end offset %d (want 91), skipped %d, invalid tail %q", img.EndOffset, img.Skipped, img.InvalidTail)
	}
}

func TestLoadKafkaFixture(t *testing.T) {
	img, err := Load(vfs.Default, fixture)
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureImage(t, img)
	if img.Snapshot != fixtureSnap2 || len(img.BadSnapshot) != 0 {
		t.Errorf("snapshot %q (bad %v), want %s", img.Snapshot, img.BadSnapshot, fixtureSnap2)
	}
}

func TestLoadKafkaFixtureFromLogOnly(t *testing.T) {
	img, err := Load(vfs.Default, copyFixture(t, fixtureLog))
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureImage(t, img)
	if img.Snapshot != "" {
		t.Errorf("snapshot %q, want none", img.Snapshot)
	}
}

// The older snapshot predates the restart, gone's removal is in it but the
// epoch bumps of the restart and the topic late are only in the log.
func TestLoadKafkaFixtureFromOlderSnapshot(t *testing.T) {
	img, err := Load(vfs.Default, copyFixture(t, fixtureLog, fixtureSnap1))
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureImage(t, img)
	if img.Snapshot != fixtureSnap1 {
		t.Errorf("snapshot %q, want %s", img.Snapshot, fixtureSnap1)
	}
}

// A snapshot cut short (no footer) is passed over for the next older one.
func TestLoadSkipsTruncatedSnapshot(t *testing.T) {
	dir := copyFixture(t, fixtureLog, fixtureSnap1, fixtureSnap2)
	p := filepath.Join(dir, fixtureSnap2)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, st.Size()-10); err != nil {
		t.Fatal(err)
	}
	img, err := Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureImage(t, img)
	if img.Snapshot != fixtureSnap1 || len(img.BadSnapshot) != 1 {
		t.Errorf("snapshot %q, bad %v; want %s and one bad", img.Snapshot, img.BadSnapshot, fixtureSnap1)
	}
}

// A torn last batch (a crash mid-write) ends the log there, as Kafka's
// recovery truncates it: tearing the batch of offsets 81..88 (the fencing
// at the second shutdown) leaves late-0 led by node 1 at epoch 0.
func TestLoadStopsAtTornBatch(t *testing.T) {
	dir := copyFixture(t, fixtureLog)
	p := filepath.Join(dir, fixtureLog)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Find the batch holding offset 82 and cut it in half.
	pos := 0
	for pos < len(data) {
		base := int64(binary.BigEndian.Uint64(data[pos:]))
		size := int(binary.BigEndian.Uint32(data[pos+8:])) + 12
		last := base + int64(binary.BigEndian.Uint32(data[pos+23:]))
		if base <= 82 && 82 <= last {
			data = data[:pos+size/2]
			break
		}
		pos += size
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(img.InvalidTail, "batch past the end of the file") {
		t.Errorf("invalid tail %q", img.InvalidTail)
	}
	for _, tp := range img.Topics {
		if tp.Name == "late" && tp.Partitions[0] != (Partition{Leader: 1, LeaderEpoch: 0}) {
			t.Errorf("late-0 %+v, want leader 1 epoch 0 (its fencing was torn off)", tp.Partitions[0])
		}
	}
	if img.EndOffset > 82 {
		t.Errorf("end offset %d, want at most 82", img.EndOffset)
	}
}

// A topic whose partition records this reader cannot decode (a newer
// version, skipped) fails the load rather than yield a topic without
// partitions.
func TestLoadRejectsTopicWithoutPartitions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	writeLog(t, dir, 0, [][]byte{topicRecord("a", [16]byte{1}), metadataRecord(keyPartition, 9, []byte{1, 2, 3})})
	if _, err := Load(vfs.Default, dir); err == nil || !strings.Contains(err.Error(), "no partition records") {
		t.Fatalf("got %v, want no partition records", err)
	}
}

func TestLoadRejectsMissingRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	writeLog(t, dir, 100, [][]byte{topicRecord("a", [16]byte{1})})
	if _, err := Load(vfs.Default, dir); err == nil || !strings.Contains(err.Error(), "records are missing") {
		t.Fatalf("got %v, want records are missing", err)
	}
}

// Unknown record types and versions are skipped and counted; the highest
// ProducerIdsRecord block end is kept; metadata
// transactions apply at their end and vanish on abort or when the log ends
// inside one.
func TestLoadSkipsUnknownAndHonoursTransactions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	writeLog(t, dir, 0, [][]byte{
		topicRecord("a", [16]byte{1}),
		partitionRecord([16]byte{1}, 0, 1, 0),
		producerIDsRecord(2000),
		producerIDsRecord(1000),
		metadataRecord(99, 0, []byte{0xde, 0xad}),
		metadataRecord(keyTopic, 1, []byte{0xbe}),
		metadataRecord(keyBeginTransaction, 0, []byte{0}),
		topicRecord("aborted", [16]byte{2}),
		metadataRecord(keyAbortTransaction, 0, []byte{0}),
		metadataRecord(keyBeginTransaction, 0, []byte{0}),
		topicRecord("committed", [16]byte{3}),
		partitionRecord([16]byte{3}, 0, 1, 0),
		metadataRecord(keyEndTransaction, 0, []byte{0}),
		metadataRecord(keyBeginTransaction, 0, []byte{0}),
		topicRecord("open", [16]byte{4}),
	})
	img, err := Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range img.Topics {
		names = append(names, tp.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "committed"}) || img.Skipped != 2 || img.Records != 15 {
		t.Errorf("topics %v skipped %d records %d; want [a committed], 2, 15", names, img.Skipped, img.Records)
	}
	if img.NextProducerID != 2000 {
		t.Errorf("next producer id %d, want 2000", img.NextProducerID)
	}
}

func TestDecodeRecordRejectsMalformed(t *testing.T) {
	good := topicRecord("t", [16]byte{1})
	for name, b := range map[string][]byte{
		"empty":             nil,
		"frame version 0":   append([]byte{0}, good[1:]...),
		"garbage after":     append(append([]byte{}, good...), 0),
		"truncated":         good[:len(good)-3],
		"string past end":   metadataRecord(keyTopic, 0, []byte{0x7f, 'a'}),
		"null name":         metadataRecord(keyTopic, 0, append([]byte{0}, make([]byte, 17)...)),
		"huge array":        metadataRecord(keyPartition, 0, append(make([]byte, 20), 0xff, 0xff, 0xff, 0xff, 0x0f)),
		"long varint":       {1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"tag size past end": metadataRecord(keyRemoveTopic, 0, append(make([]byte, 16), 1, 0, 0x7f)),
	} {
		if rec, err := DecodeRecord(b); !errors.Is(err, base.ErrCorruption) {
			t.Errorf("%s: decoded %+v, %v, want an ErrCorruption", name, rec, err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(topicRecord("t", [16]byte{1}))
	f.Add(partitionRecord([16]byte{1}, 0, 1, 5))
	f.Add(partitionChangeRecord([16]byte{1}, 0, 1))
	f.Add(configRecord(ResourceTopic, "t", "retention.ms", nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := DecodeRecord(b)
		if err == nil && rec.Kind == KindTopic && len(rec.TopicName) > len(b) {
			t.Fatalf("name longer than the input")
		}
	})
}

// FuzzLoad feeds arbitrary bytes as a metadata log segment: Load must fail
// or succeed, never panic or allocate beyond its bounds.
func FuzzLoad(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join(fixture, fixtureSnap1))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(logBytes(0, [][]byte{topicRecord("a", [16]byte{1}), partitionRecord([16]byte{1}, 0, 1, 3)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := filepath.Join(t.TempDir(), DirName)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fixtureLog), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = Load(vfs.Default, dir)
	})
}

// Encoders for synthetic inputs, in Kafka's formats.

func uvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func compactString(b []byte, s string) []byte {
	return append(uvarint(b, uint64(len(s))+1), s...)
}

func metadataRecord(key, version uint64, body []byte) []byte {
	b := uvarint(uvarint(uvarint(nil, frameVersion), key), version)
	return append(b, body...)
}

func topicRecord(name string, id [16]byte) []byte {
	b := compactString(nil, name)
	b = append(b, id[:]...)
	return metadataRecord(keyTopic, 0, append(b, 0))
}

func partitionRecord(id [16]byte, partition, leader, epoch int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(partition))
	b = append(b, id[:]...)
	one := binary.BigEndian.AppendUint32([]byte{2}, 1) // compact array [1]
	b = append(b, one...)                              // replicas
	b = append(b, one...)                              // isr
	b = append(b, 1, 1)                                // removing, adding: []
	b = binary.BigEndian.AppendUint32(b, uint32(leader))
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = binary.BigEndian.AppendUint32(b, 0) // partition epoch
	return metadataRecord(keyPartition, 0, append(b, 0))
}

func partitionChangeRecord(id [16]byte, partition, leader int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(partition))
	b = append(b, id[:]...)
	b = append(b, 1, 1, 4) // one tagged field: tag 1 (leader), 4 bytes
	b = binary.BigEndian.AppendUint32(b, uint32(leader))
	return metadataRecord(keyPartitionChange, 0, b)
}

func configRecord(resource int8, name, key string, value *string) []byte {
	b := []byte{byte(resource)}
	b = compactString(b, name)
	b = compactString(b, key)
	if value == nil {
		b = append(b, 0)
	} else {
		b = compactString(b, *value)
	}
	return metadataRecord(keyConfig, 0, append(b, 0))
}

func producerIDsRecord(next int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1) // broker id
	b = binary.BigEndian.AppendUint64(b, 5)    // broker epoch
	b = binary.BigEndian.AppendUint64(b, uint64(next))
	return metadataRecord(keyProducerIDs, 0, append(b, 0))
}

// logBytes is one uncompressed batch v2 at base holding values as records.
func logBytes(base int64, values [][]byte) []byte {
	var recs []byte
	for i, v := range values {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		r = binary.AppendVarint(r, -1)       // null key
		r = binary.AppendVarint(r, int64(len(v)))
		r = append(r, v...)
		r = binary.AppendVarint(r, 0) // headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	// Kafka's layout written out byte by byte, independent of internal/batch.
	const headerSize = 61
	b := make([]byte, headerSize, headerSize+len(recs))
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(headerSize-12+len(recs)))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(len(values)-1))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(len(values)))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func writeLog(t *testing.T, dir string, base int64, values [][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, fmt.Sprintf("%020d.log", base))
	if err := os.WriteFile(name, logBytes(base, values), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A deleted topic's configs go with it (MetadataDelta replays
// RemoveTopicRecord into the configs too): the topic recreated under the
// same name starts without them; a null ConfigRecord value deletes a key.
func TestLoadRemoveTopicDropsItsConfigs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	week, one := "604800000", "1"
	writeLog(t, dir, 0, [][]byte{
		topicRecord("x", [16]byte{1}),
		partitionRecord([16]byte{1}, 0, 1, 0),
		configRecord(ResourceTopic, "x", "retention.ms", &week),
		metadataRecord(keyRemoveTopic, 0, append(append([]byte{}, (&[16]byte{1})[:]...), 0)),
		topicRecord("x", [16]byte{2}),
		partitionRecord([16]byte{2}, 0, 1, 4),
		partitionChangeRecord([16]byte{2}, 0, -1),
		configRecord(ResourceTopic, "x", "segment.bytes", &one),
		configRecord(ResourceTopic, "x", "min.insync.replicas", &one),
		configRecord(ResourceTopic, "x", "segment.bytes", nil),
	})
	img, err := Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Topic{{Name: "x", ID: [16]byte{2}, Partitions: []Partition{{Leader: -1, LeaderEpoch: 5}}, Configs: map[string]string{"min.insync.replicas": "1"}}}
	if !reflect.DeepEqual(img.Topics, want) {
		t.Errorf("got %+v, want %+v", img.Topics, want)
	}
}
