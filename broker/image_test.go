package broker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/local"
	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// TestImageChangesAreDurableFirst checks that each change the image takes
// is in storage before a subscriber hears of it, and after a restart; that
// a change storage refuses leaves both the image and storage as they were,
// with storage's error as it is; and that a change storage cannot make at
// once is refused.
func TestImageChangesAreDurableFirst(t *testing.T) {
	dir := t.TempDir()
	open := func() (*storage.Manager, *local.Store) {
		m, err := storage.OpenManager(vfs.Default, dir, storage.DefaultConfig(), storage.ManagerOptions{NodeID: 7})
		if err != nil {
			t.Fatal(err)
		}
		img, err := imageOf(m, registerRecord(7, []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}))
		if err != nil {
			t.Fatal(err)
		}
		return m, local.New(img, logHost{logs: m, node: 7}.commit)
	}
	m, store := open()
	var notDurable []string
	store.Subscribe(func(old, new *metadata.Image) {
		for _, ti := range new.Topics.All() {
			if st := m.Topic(ti.Name); st == nil || st.ID != ti.ID || len(st.Partitions()) != len(ti.Partitions) {
				notDurable = append(notDurable, ti.Name)
			}
		}
		for _, ti := range old.Topics.All() {
			if new.Topics.ByID(ti.ID) == nil && m.Topic(ti.Name) != nil {
				notDurable = append(notDurable, "removed "+ti.Name)
			}
		}
	})
	id, err := proposeTopic(store, "t", replicaLayout{partitions: 2, rf: 1}, map[string]string{"retention.ms": "5"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := proposeTopic(store, "gone", replicaLayout{partitions: 1, rf: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	topicRes := metadata.ConfigResource{Type: metadata.TopicResource, Name: "t"}
	nodeRes := metadata.ConfigResource{Type: metadata.BrokerResource, Name: "7"}
	for _, change := range [][]metadata.Record{
		{metadata.PartitionRecord{PartitionID: 2, TopicID: id, Replicas: []int32{7}, ISR: []int32{7}, Leader: 7}},
		configRecords(topicRes, map[string]string{"retention.ms": "5"}, map[string]string{"retention.ms": "7"}),
		configRecords(nodeRes, nil, map[string]string{"log.retention.ms": "9"}),
		{metadata.RemoveTopicRecord{TopicID: gone}},
		{metadata.UserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA512, Salt: []byte("salt"), Iterations: 4096},
			metadata.UserScramCredentialRecord{Name: "bob", Mechanism: metadata.ScramSHA256, Iterations: 4096}},
		{metadata.RemoveUserScramCredentialRecord{Name: "bob", Mechanism: metadata.ScramSHA256}},
	} {
		if _, err := store.Propose(change...); err != nil {
			t.Fatalf("%+v: %v", change, err)
		}
	}
	if len(notDurable) > 0 {
		t.Fatalf("subscribers heard of changes before storage made them: %v", notDurable)
	}
	if st := m.Topic("t"); st == nil || st.ID != id || len(st.Partitions()) != 3 || st.ConfigMap()["retention.ms"] != "7" || m.Topic("gone") != nil {
		t.Fatalf("storage's t = %+v, gone = %v", st, m.Topic("gone"))
	}

	before := store.Image()
	if _, err := store.Propose(configRecords(topicRes, nil, map[string]string{"retention.ms": "x"})...); !errors.Is(err, kerr.InvalidConfig) || !strings.HasPrefix(err.Error(), "topic t: ") {
		t.Fatalf("an invalid config: %v, want storage's InvalidConfig as it is", err)
	}
	if _, err := proposeTopic(store, "u", replicaLayout{partitions: 1, rf: 1}, map[string]string{"segment.bytes": "-1"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("a topic with an invalid config: %v, want InvalidConfig", err)
	}
	two := append(configRecords(topicRes, nil, map[string]string{"retention.ms": "8"}), configRecords(nodeRes, nil, map[string]string{"log.retention.ms": "8"})...)
	if _, err := store.Propose(two...); !errors.Is(err, errNotHosted) {
		t.Fatalf("two operations in one change: %v, want errNotHosted", err)
	}
	elsewhere := []metadata.Record{metadata.TopicRecord{Name: "elsewhere", TopicID: [16]byte{9}},
		metadata.PartitionRecord{TopicID: [16]byte{9}, Replicas: []int32{8}, ISR: []int32{8}, Leader: 8}}
	if _, err := store.Propose(elsewhere...); !errors.Is(err, errNotHosted) {
		t.Fatalf("a partition on another node: %v, want errNotHosted", err)
	}
	offNode := []metadata.Record{metadata.PartitionChangeRecord{PartitionID: 0, TopicID: id, Leader: 8, ISR: []int32{8}, Replicas: []int32{8}}}
	if _, err := store.Propose(offNode...); !errors.Is(err, errNotHosted) {
		t.Fatalf("a partition moved off this node: %v, want errNotHosted", err)
	}
	if store.Image() != before || m.Topic("u") != nil || m.Topic("elsewhere") != nil || m.Topic("t").ConfigMap()["retention.ms"] != "7" {
		t.Fatalf("refused changes took effect: image changed %v, u %v, t's configs %v", store.Image() != before, m.Topic("u"), m.Topic("t").ConfigMap())
	}
	led := metadata.PartitionChangeRecord{PartitionID: 0, TopicID: id, Leader: 8, ISR: []int32{7, 8}, Replicas: []int32{7, 8}}
	if img, err := store.Propose(led); err != nil || img.Topics.ByID(id).Partitions[0].Leader != 8 {
		t.Fatalf("a new leader on replicas that keep this node: %v, want it in the image", err)
	}
	if len(m.Topic("t").Partitions()) != 3 {
		t.Fatal("a leadership change touched storage's partitions")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m, store = open()
	defer m.Close()
	img := store.Image()
	ti := img.Topics.ByName("t")
	if ti == nil || ti.ID != id || len(ti.Partitions) != 3 || img.Topics.Len() != 1 {
		t.Fatalf("after restart the image's topics are %+v", img.Topics.All())
	}
	if p := ti.Partitions[0]; !p.LeaderIs(7) {
		t.Fatalf("after restart partition 0 = %+v, want this node its leader again (no leadership change is kept)", p)
	}
	if p := ti.Partitions[2]; !p.LeaderIs(7) || !slices.Equal(p.Replicas, []int32{7}) || !slices.Equal(p.ISR, []int32{7}) {
		t.Fatalf("after restart partition 2 = %+v", p)
	}
	if c := img.Configs.Of(topicRes); c["retention.ms"] != "7" || len(c) != 1 {
		t.Fatalf("after restart t's configs = %v", c)
	}
	if c := img.Configs.Of(nodeRes); c["log.retention.ms"] != "9" {
		t.Fatalf("after restart the node's configs = %v", c)
	}
	alice512 := metadata.ScramUser{Name: "alice", Mechanism: metadata.ScramSHA512}
	if c, ok := img.Access.Scram.Credential(alice512); !ok || string(c.Salt) != "salt" || len(img.Access.Scram.Users()) != 1 {
		t.Fatalf("after restart the SCRAM credentials are %v (alice's %+v)", img.Access.Scram.Users(), c)
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

// TestConcurrentCreationsOfOneTopic checks that clients creating the same
// topic at once get one success and TOPIC_ALREADY_EXISTS for the others:
// each creation is decided on the image the one before it made.
func TestConcurrentCreationsOfOneTopic(t *testing.T) {
	b := startBroker(t, nil)
	const n = 6
	ctx := testCtx(t)
	errs := make(chan error, n)
	for range n {
		adm := newAdmin(t, b)
		go func() {
			res, err := adm.CreateTopic(ctx, 2, 1, nil, "contended")
			if err == nil {
				err = res.Err
			}
			errs <- err
		}()
	}
	created := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			created++
		case errors.Is(err, kerr.TopicAlreadyExists):
		default:
			t.Fatalf("CreateTopics: %v, want success or TOPIC_ALREADY_EXISTS", err)
		}
	}
	if created != 1 {
		t.Fatalf("%d of %d concurrent creations succeeded", created, n)
	}
	if ti := b.meta.Image().Topics.ByName("contended"); ti == nil || b.logs.Topic("contended").ID != ti.ID {
		t.Fatalf("image topic %+v, storage's %+v", ti, b.logs.Topic("contended"))
	}
}
