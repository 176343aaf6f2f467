package broker

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/storage"
)

// findCoordinator asks for the coordinator of key (key type 0: group, 1:
// transactional id) as a client does, retrying COORDINATOR_NOT_AVAILABLE,
// and fails the test on another error answer.
func findCoordinator(t *testing.T, b *Broker, keyType int8, key string) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = keyType
	req.CoordinatorKeys = []string{key}
	// As a client: COORDINATOR_NOT_AVAILABLE, the answer while the internal
	// topic is being created, is retried.
	var r *kmsg.FindCoordinatorResponse
	waitUntil(t, 10*time.Second, func() (bool, string) {
		r = adminRoundTrip[*kmsg.FindCoordinatorResponse](t, b, req, 4)
		return len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code, "coordinator not available"
	})
	if len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != 0 || r.Coordinators[0].NodeID != testNodeID {
		t.Fatalf("find coordinator type %d %q: %+v", keyType, key, r.Coordinators)
	}
}

// partitionDirs counts the partition directories of topic in dir.
func partitionDirs(t *testing.T, dir, topic string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, topic+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// TestInternalTopicsCreatedOnFirstNeed: a fresh broker has neither
// __consumer_offsets nor __transaction_state; read-only group requests
// leave it so; the first FindCoordinator for a group creates the offsets
// topic with offsets.topic.num.partitions partitions (and only it), the
// first for a transactional id the transaction topic with
// transaction.state.log.num.partitions; a commit then survives a restart.
func TestInternalTopicsCreatedOnFirstNeed(t *testing.T) {
	const (
		group = "lazy-group"
		topic = "lazy-topic"
	)
	cfg := Config{
		Listeners:             "PLAINTEXT://127.0.0.1:0",
		LogDirs:               t.TempDir(),
		NodeID:                testNodeID,
		NumPartitions:         1,
		AutoCreateTopics:      true,
		SocketRequestMaxBytes: 100 << 20,
		Log:                   storage.DefaultConfig(),
		Groups:                testGroupConfig(),
		Txns:                  coordinator.DefaultTxnConfig(),
	}
	cfg.Groups.OffsetsTopicPartitions = 7
	cfg.Txns.StateLogPartitions = 3
	b, stop := runBroker(t, cfg)
	createTopicN(t, b, topic, 1)

	absent := func(when string) {
		t.Helper()
		for _, name := range []string{coordinator.OffsetsTopic, coordinator.TxnStateTopic} {
			if n := partitionDirs(t, cfg.LogDirs, name); n != 0 || b.logs.Topic(name) != nil {
				t.Fatalf("%s: %s exists (%d partition dirs)", when, name, n)
			}
		}
	}
	absent("at start")
	if !b.groups.Loaded() {
		t.Fatal("group coordinator without __consumer_offsets is not loaded")
	}
	waitUntil(t, 10*time.Second, func() (bool, string) { return b.txns.Loaded(), "transaction coordinator not loaded" })

	// Requests that only read answer from the empty state.
	if r := adminRoundTrip[*kmsg.ListGroupsResponse](t, b, kmsg.NewPtrListGroupsRequest(), 4); r.ErrorCode != 0 || len(r.Groups) != 0 {
		t.Fatalf("list groups: %+v", r)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	if r := adminRoundTrip[*kmsg.DescribeGroupsResponse](t, b, dg, 5); r.Groups[0].ErrorCode != 0 || r.Groups[0].State != "Dead" {
		t.Fatalf("describe groups: %+v", r.Groups)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = group
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = topic, []int32{0}
	of.Topics = append(of.Topics, ot)
	if r := adminRoundTrip[*kmsg.OffsetFetchResponse](t, b, of, 7); r.ErrorCode != 0 || r.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("offset fetch before any commit: %+v", r)
	}
	md := kmsg.NewPtrMetadataRequest()
	if r := adminRoundTrip[*kmsg.MetadataResponse](t, b, md, 12); len(r.Topics) != 1 || *r.Topics[0].Topic != topic {
		t.Fatalf("metadata lists %d topics, want only %s", len(r.Topics), topic)
	}
	absent("after read-only requests")

	// Concurrent first FindCoordinators create the topic once.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			findCoordinator(t, b, 0, group)
		}()
	}
	wg.Wait()
	if n := partitionDirs(t, cfg.LogDirs, coordinator.OffsetsTopic); n != 7 {
		t.Fatalf("%s has %d partition dirs, want 7 (offsets.topic.num.partitions)", coordinator.OffsetsTopic, n)
	}
	if tp := b.logs.Topic(coordinator.OffsetsTopic); tp == nil || !tp.Internal || tp.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("%s not an internal compacted topic: %+v", coordinator.OffsetsTopic, tp)
	}
	if n := partitionDirs(t, cfg.LogDirs, coordinator.TxnStateTopic); n != 0 {
		t.Fatalf("a group lookup created %s (%d partition dirs)", coordinator.TxnStateTopic, n)
	}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = group, -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = topic
	ocp := kmsg.NewOffsetCommitRequestTopicPartition()
	ocp.Partition, ocp.Offset = 0, 42
	oct.Partitions = append(oct.Partitions, ocp)
	oc.Topics = append(oc.Topics, oct)
	if r := adminRoundTrip[*kmsg.OffsetCommitResponse](t, b, oc, 8); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}

	findCoordinator(t, b, 1, "lazy-txn")
	if n := partitionDirs(t, cfg.LogDirs, coordinator.TxnStateTopic); n != 3 {
		t.Fatalf("%s has %d partition dirs, want 3 (transaction.state.log.num.partitions)", coordinator.TxnStateTopic, n)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID = kmsg.StringPtr("lazy-txn")
	ip.TransactionTimeoutMillis = 60000
	if r := adminRoundTrip[*kmsg.InitProducerIDResponse](t, b, ip, 4); r.ErrorCode != 0 || r.ProducerID < 0 {
		t.Fatalf("init producer id: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	stop()
	b2, _ := runBroker(t, cfg)
	waitUntil(t, 10*time.Second, func() (bool, string) { return b2.groups.Loaded(), "groups not loaded after restart" })
	waitUntil(t, 10*time.Second, func() (bool, string) { return b2.txns.Loaded(), "transactions not loaded after restart" })
	if r := adminRoundTrip[*kmsg.OffsetFetchResponse](t, b2, of, 7); r.ErrorCode != 0 || r.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("offset fetch after restart: %+v", r.Topics)
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"lazy-txn"}
	if r := adminRoundTrip[*kmsg.DescribeTransactionsResponse](t, b2, dt, 0); r.TransactionStates[0].ErrorCode != 0 || r.TransactionStates[0].State != "Empty" {
		t.Fatalf("describe transaction after restart: %+v", r.TransactionStates)
	}
	if n := partitionDirs(t, cfg.LogDirs, coordinator.OffsetsTopic); n != 7 {
		t.Fatalf("after restart %s has %d partition dirs, want 7", coordinator.OffsetsTopic, n)
	}
}

// TestInternalTopicAutoCreatedByCoordinator: a Metadata request that may
// auto-create __consumer_offsets gets it from the coordinator, with
// offsets.topic.num.partitions partitions rather than num.partitions, as
// Kafka's AutoTopicCreationManager: UNKNOWN_TOPIC_OR_PARTITION while it is
// created, described from the next request on.
func TestInternalTopicAutoCreatedByCoordinator(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Groups.OffsetsTopicPartitions = 4 })
	md := kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(coordinator.OffsetsTopic)
	md.Topics = append(md.Topics, mt)
	r := adminRoundTrip[*kmsg.MetadataResponse](t, b, md, 12)
	if r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || !r.Topics[0].IsInternal || len(r.Topics[0].Partitions) != 0 {
		t.Fatalf("creating metadata: error %d, internal %v, %d partitions", r.Topics[0].ErrorCode, r.Topics[0].IsInternal, len(r.Topics[0].Partitions))
	}
	r = adminRoundTrip[*kmsg.MetadataResponse](t, b, md, 12)
	if r.Topics[0].ErrorCode != 0 || !r.Topics[0].IsInternal || len(r.Topics[0].Partitions) != 4 {
		t.Fatalf("metadata: error %d, internal %v, %d partitions", r.Topics[0].ErrorCode, r.Topics[0].IsInternal, len(r.Topics[0].Partitions))
	}
	findCoordinator(t, b, 0, "g")
	if got := b.groups.PartitionFor("g"); got < 0 || got >= 4 {
		t.Fatalf("partition for g: %d of 4", got)
	}
}

// txnStateConfigs are __transaction_state's configs as DescribeConfigs
// answers them, once a FindCoordinator for a transactional id created it.
func txnStateConfigs(t *testing.T, b *Broker) map[string]string {
	t.Helper()
	findCoordinator(t, b, 1, "configs-txn")
	dc := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, coordinator.TxnStateTopic
	dc.Resources = append(dc.Resources, res)
	r := adminRoundTrip[*kmsg.DescribeConfigsResponse](t, b, dc, 4)
	if len(r.Resources) != 1 || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe configs of %s: %+v", coordinator.TxnStateTopic, r.Resources)
	}
	configs := map[string]string{}
	for _, c := range r.Resources[0].Configs {
		if c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			configs[c.Name] = *c.Value
		}
	}
	return configs
}

// TestTxnStateTopicConfigs: __transaction_state is created as Kafka's
// TransactionStateManager.transactionTopicConfigs creates it: compacted,
// uncompressed, never an unclean leader, and in a cluster with
// transaction.state.log.min.isr as its min.insync.replicas (a single
// node's one replica keeps the broker's).
func TestTxnStateTopicConfigs(t *testing.T) {
	single := txnStateConfigs(t, startBroker(t, nil))
	cluster := DefaultClusterConfig()
	cluster.ClusterID, cluster.TxnStateReplicationFactor, cluster.TxnStateMinISR = "txn-configs", 1, 3
	node, _ := startQuorumNode(t, cluster)
	clustered := txnStateConfigs(t, node)
	for name, want := range map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false"} {
		if single[name] != want || clustered[name] != want {
			t.Errorf("%s is %q on a single node and %q in a cluster, want %q", name, single[name], clustered[name], want)
		}
	}
	if v, ok := single["min.insync.replicas"]; ok {
		t.Errorf("a single node's %s has min.insync.replicas %s", coordinator.TxnStateTopic, v)
	}
	if v := clustered["min.insync.replicas"]; v != "3" {
		t.Errorf("a cluster's %s has min.insync.replicas %q, want transaction.state.log.min.isr's 3", coordinator.TxnStateTopic, v)
	}
}
