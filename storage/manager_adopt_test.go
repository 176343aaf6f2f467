package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-io/strata/internal/batch"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/storage/kraftmeta"
	"github.com/strata-io/strata/storage/vfs"
)

// kafkaMetadataFixture is the metadata log Apache Kafka 4.1.1 wrote (see
// storage/kraftmeta/kraftmeta_test.go for what it holds): topics orders (3
// partitions, id ey4p5zIaSymNtFBxjOeFcg, retention.ms and segment.bytes),
// compacted, grown (2) and late, all fenced by the clean shutdown (leader
// -1), orders at leader epoch 3.
const kafkaMetadataFixture = "kraftmeta/testdata/__cluster_metadata-0"

// kafkaLogDir lays out a log dir as Kafka left it: meta.properties, the
// metadata log and orders-0 with its partition.metadata and a
// leader-epoch-checkpoint whose last epoch (2) is the one that wrote.
func kafkaLogDir(t *testing.T, ordersID string) string {
	t.Helper()
	dir := t.TempDir()
	mdir := filepath.Join(dir, kraftmeta.DirName)
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(kafkaMetadataFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(kafkaMetadataFixture, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mdir, e.Name()), data, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"meta.properties":                  "#\n#Tue Dec 01 10:10:20 UTC 2026\nnode.id=1\ndirectory.id=VMImtkavQ3eqqo8RkVEMyw\nversion=1\ncluster.id=Nn6fQ4yGQqmW0aU3BmVU0g\n",
		"orders-0/partition.metadata":      "version: 0\ntopic_id: " + ordersID + "\n",
		"orders-0/leader-epoch-checkpoint": "0\n1\n2 0\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// dirDigest is every file under dir with its content.
func dirDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

func openAdoptingManager(t *testing.T, dir string, reserve func(int64) error) (*Manager, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	m, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{Logger: zap.New(core), NodeID: 1, ReserveProducerIDs: reserve})
	if err != nil {
		t.Fatal(err)
	}
	return m, logs
}

func TestOpenManagerAdoptsKafkaLogDir(t *testing.T) {
	dir := kafkaLogDir(t, "ey4p5zIaSymNtFBxjOeFcg")
	mdir := filepath.Join(dir, kraftmeta.DirName)
	before := dirDigest(t, mdir)
	m, logs := openAdoptingManager(t, dir, nil)

	got := map[string]int{}
	for _, tp := range m.Topics() {
		got[tp.Name] = len(tp.Partitions())
	}
	if want := map[string]int{"compacted": 1, "grown": 2, "late": 1, "orders": 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("topics %v, want %v", got, want)
	}
	orders := m.Topic("orders")
	if id := uuidString(orders.ID); id != "ey4p5zIaSymNtFBxjOeFcg" {
		t.Errorf("orders id %s", id)
	}
	if c := orders.ConfigMap(); !reflect.DeepEqual(c, map[string]string{"retention.ms": "86400000", "segment.bytes": "1048576"}) {
		t.Errorf("orders configs %v", c)
	}
	if cfg := orders.LogConfig(); cfg.RetentionMs != 86400000 || cfg.SegmentBytes != 1048576 {
		t.Errorf("orders log config retention %d segment %d", cfg.RetentionMs, cfg.SegmentBytes)
	}
	if !m.Topic("compacted").LogConfig().Compact {
		t.Error("compacted is not compacted")
	}
	if n := logs.FilterMessage("adopted Kafka topic").Len(); n != 4 {
		t.Errorf("%d adopted-topic log lines, want 4", n)
	}
	if s := logs.FilterMessage("adopted Kafka log dir").All(); len(s) != 1 || s[0].ContextMap()["skipped_records"] != int64(0) {
		t.Errorf("summary lines %v", s)
	}
	if n := logs.FilterMessage("partition directory not in topic registry, leaving it").Len(); n != 0 {
		t.Errorf("%d stray-directory warnings, want none (__cluster_metadata-0 is Kafka's)", n)
	}

	// Kafka's clean shutdown left leader -1 at epoch 3; this node takes
	// over at 4, as Kafka's own restart would, and stamps it.
	p := orders.Partitions()[0]
	if p.LeaderEpoch() != 4 {
		t.Fatalf("orders-0 leader epoch %d, want 4", p.LeaderEpoch())
	}
	if _, err := leaderAppend(p.Log, mgrTestBatch("x"), p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	res, err := p.Log.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := res.Chunk.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	res.Chunk.Release()
	if epoch := int32(binary.BigEndian.Uint32(buf.Bytes()[12:16])); epoch != 4 {
		t.Errorf("appended batch stamped with epoch %d, want 4", epoch)
	}
	ckpt, _ := os.ReadFile(filepath.Join(dir, "orders-0", leaderEpochCheckpointFile))
	if string(ckpt) != "0\n1\n4 0\n" {
		t.Errorf("leader-epoch-checkpoint %q, want epoch 4 at 0 (recovery dropped 2, which wrote nothing)", ckpt)
	}

	var bc brokerConfigsJSON
	data, err := os.ReadFile(filepath.Join(dir, brokerConfigsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &bc); err != nil {
		t.Fatal(err)
	}
	// log.cleaner.threads (node 1's) is not a dynamic log config.
	if want := map[string]string{"min.insync.replicas": "1", "log.retention.ms": "604800000"}; !reflect.DeepEqual(bc.Default, want) || len(bc.Broker) != 0 {
		t.Errorf("broker configs %+v, want default %v and no node config", bc, want)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirDigest(t, mdir); !reflect.DeepEqual(before, after) {
		t.Error("__cluster_metadata-0 changed")
	}

	// The registry now holds the topics: a restart does not adopt again
	// and keeps leading at epoch 4.
	reg, _, err := readRegistry(vfs.Default, dir)
	if err != nil || len(reg) != 4 {
		t.Fatalf("registry %v, %v", reg, err)
	}
	m2, logs2 := openAdoptingManager(t, dir, nil)
	defer m2.Close()
	if n := logs2.FilterMessage("adopted Kafka topic").Len(); n != 0 {
		t.Errorf("adopted again on restart (%d topics)", n)
	}
	if e := m2.Topic("orders").Partitions()[0].LeaderEpoch(); e != 4 {
		t.Errorf("after restart orders-0 leader epoch %d, want 4", e)
	}
}

// A partition directory whose partition.metadata names another topic id
// belongs to another topic: adoption must not take it over.
func TestOpenManagerAdoptionChecksTopicID(t *testing.T) {
	dir := kafkaLogDir(t, "zQfzLvO9QSO2Yftz02VLMQ")
	_, err := OpenManager(vfs.Default, dir, DefaultConfig(), ManagerOptions{Logger: zap.NewNop(), NodeID: 1})
	if err == nil || !strings.Contains(err.Error(), "does not match the registry's") {
		t.Fatalf("got %v, want a topic id mismatch", err)
	}
}

// The producer ids Kafka handed out are reserved before the registry is
// written, and a failure to reserve them fails the adoption (and leaves
// no registry, so the next start adopts again).
func TestOpenManagerAdoptionReservesProducerIDs(t *testing.T) {
	dir := kafkaLogDir(t, "ey4p5zIaSymNtFBxjOeFcg")
	// The fixture's Kafka never allocated producer ids; add the record the
	// controller writes for a block, in a new segment after the log.
	mdir := filepath.Join(dir, kraftmeta.DirName)
	rec := []byte{1, 15, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0}
	if err := os.WriteFile(filepath.Join(mdir, "00000000000000000091.log"), metadataBatch(91, rec), 0o400); err != nil {
		t.Fatal(err)
	}
	var reserved int64
	m, _ := openAdoptingManager(t, dir, func(end int64) error { reserved = end; return nil })
	m.Close()
	if reserved != 1000 {
		t.Errorf("reserved producer ids below %d, want 1000", reserved)
	}
}

// metadataBatch is one uncompressed batch v2 at base holding value.
func metadataBatch(base int64, value []byte) []byte {
	var r []byte
	r = append(r, 0, 0, 0, 1) // attributes, timestamp delta 0, offset delta 0, null key (-1)
	r = binary.AppendVarint(r, int64(len(value)))
	r = append(r, value...)
	r = append(r, 0) // no headers
	recs := binary.AppendVarint(nil, int64(len(r)))
	recs = append(recs, r...)
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(recs)))
	b[16] = 2
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], 1)
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[batch.OffCRC:], batch.CRC(b))
	return b
}

// A crash after the adoption wrote the registry but before any partition
// opened: the next start (no adoption now) still leads at Kafka's epoch
// plus one, kept in the registry.
func TestOpenManagerAdoptionInterruptedBeforeOpen(t *testing.T) {
	dir := kafkaLogDir(t, "ey4p5zIaSymNtFBxjOeFcg")
	if _, err := adoptKafkaLogDir(vfs.Default, dir, DefaultConfig(), ManagerOptions{NodeID: 1}, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	m, logs := openAdoptingManager(t, dir, nil)
	defer m.Close()
	if n := logs.FilterMessage("adopted Kafka topic").Len(); n != 0 {
		t.Errorf("adopted again (%d topics)", n)
	}
	if e := m.Topic("orders").Partitions()[0].LeaderEpoch(); e != 4 {
		t.Errorf("orders-0 leader epoch %d, want 4", e)
	}
}
