package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/local"
	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// TestImageFollowsStorage checks the records the follower proposes: new
// topics with their partitions and configs, a leader epoch storage moved
// (a new partition epoch), a deleted topic and one recreated under its
// name with a new id, and the dynamic broker configs.
func TestImageFollowsStorage(t *testing.T) {
	store := local.New(metadata.Empty, nil)
	f := &imageFollower{store: store, node: 7, logger: zaptest.NewLogger(t)}
	m, err := storage.OpenManager(vfs.Default, t.TempDir(), storage.DefaultConfig(), storage.ManagerOptions{NodeID: 7, OnChange: f.follow})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	old, err := m.CreateTopic("t", 2, map[string]string{"retention.ms": "5"}, false)
	if err != nil {
		t.Fatal(err)
	}
	img := store.Image()
	ti := img.Topics.ByName("t")
	if ti == nil || ti.ID != old.ID || len(ti.Partitions) != 2 {
		t.Fatalf("image topic t = %+v", ti)
	}
	if p := ti.Partitions[1]; !p.LeaderIs(7) || !slices.Equal(p.Replicas, []int32{7}) || !slices.Equal(p.ISR, []int32{7}) || p.LeaderEpoch != 0 {
		t.Fatalf("partition 1 = %+v", p)
	}
	if c := img.Configs.Of(metadata.ConfigResource{Type: metadata.TopicResource, Name: "t"}); c["retention.ms"] != "5" {
		t.Fatalf("topic configs = %v", c)
	}

	old.Partitions()[1].SetLeaderEpoch(4)
	if err := m.AlterBrokerConfigs(map[string]string{"log.retention.ms": "9"}, true, false); err != nil {
		t.Fatal(err)
	}
	img = store.Image()
	if p := img.Topics.ByName("t").Partitions[1]; p.LeaderEpoch != 4 || p.PartitionEpoch != 1 {
		t.Fatalf("partition 1 after a new epoch = %+v", p)
	}
	if c := img.Configs.Of(metadata.ConfigResource{Type: metadata.BrokerResource, Name: "7"}); c["log.retention.ms"] != "9" {
		t.Fatalf("node configs = %v", c)
	}

	if err := m.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if store.Image().Topics.Len() != 0 {
		t.Fatalf("deleted topic still in the image: %+v", store.Image().Topics.All())
	}
	recreated, err := m.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	img = store.Image()
	if ti := img.Topics.ByName("t"); ti == nil || ti.ID != recreated.ID || len(ti.Partitions) != 1 || img.Topics.ByID(old.ID) != nil {
		t.Fatalf("recreated t = %+v", ti)
	}
	if c := img.Configs.Of(metadata.ConfigResource{Type: metadata.TopicResource, Name: "t"}); c != nil {
		t.Fatalf("recreated t kept the old configs %v", c)
	}
}

// TestMetadataAfterRestartIsTheLogDirs checks that a restarted broker's
// image holds the topics its log dir keeps: Metadata describes them, with
// their ids, before anything else changes.
func TestMetadataAfterRestartIsTheLogDirs(t *testing.T) {
	dir := t.TempDir()
	first, stop := startBrokerOnce(t, dir)
	adm := newAdmin(t, first)
	ctx := testCtx(t)
	createTopic(t, adm, "kept", 3)
	before, err := adm.ListTopics(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	adm.Close()
	stop()

	b := startBroker(t, func(c *Config) { c.LogDirs = dir })
	topics, err := newAdmin(t, b).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kept := topics["kept"]
	if len(topics) != 1 || kept.ID != before["kept"].ID || len(kept.Partitions) != 3 {
		t.Fatalf("after restart: %+v", topics)
	}
	for _, p := range kept.Partitions.Sorted() {
		if p.Leader != testNodeID || !slices.Equal(p.Replicas, []int32{testNodeID}) || p.Err != nil {
			t.Fatalf("kept-%d after restart: %+v", p.Partition, p)
		}
	}
}

// startBrokerOnce starts a broker on dir; stop shuts it down and checks
// Serve's return.
func startBrokerOnce(t *testing.T, dir string) (b *Broker, stop func()) {
	t.Helper()
	cfg := Config{Listeners: "PLAINTEXT://127.0.0.1:0", LogDirs: dir, NodeID: testNodeID, NumPartitions: 1,
		SocketRequestMaxBytes: 100 << 20, Log: storage.DefaultConfig(), Groups: testGroupConfig()}
	b, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	return b, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-served; err != nil {
			t.Fatal(err)
		}
	}
}

// TestImageRecordsProducerIDBlocks checks that the image's producer ids
// follow the blocks handed out: none at first, the first block once an
// idempotent producer got its id.
func TestImageRecordsProducerIDBlocks(t *testing.T) {
	b := startBroker(t, nil)
	if got := b.meta.Image().ProducerIDs.NextProducerID; got != 0 {
		t.Fatalf("next producer id before any = %d", got)
	}
	createTopicN(t, b, "pids", 1)
	cl := newClient(t, b, kgo.DefaultProduceTopic("pids"))
	if err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := b.meta.Image().ProducerIDs.NextProducerID; got != 1000 {
		t.Fatalf("next producer id after one producer = %d, want 1000", got)
	}
}
