package broker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/local"
	"github.com/strata-io/strata/storage"
)

// testCluster is in-process brokers sharing one metadata store, as if a
// controller quorum had committed each change at once: the tests of what
// the image decides across brokers (hosting, leadership, routing,
// replication), apart from the quorum itself. A broker can be stopped and
// started again on its log dir, registering again with its new endpoint.
type testCluster struct {
	store   *local.Store
	brokers []*Broker // brokers[i] is node i+1; nil while stopped
	dirs    []string
	served  []chan error
	mutate  func(*Config)
}

// startTestCluster starts n brokers, nodes 1..n, registered in the shared
// store with their client endpoints; each runs Kafka's cluster defaults
// changed by mutate.
func startTestCluster(t *testing.T, n int, mutate func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{store: local.New(metadata.Empty, nil), mutate: mutate,
		brokers: make([]*Broker, n), dirs: make([]string, n), served: make([]chan error, n)}
	for i := 1; i <= n; i++ {
		c.dirs[i-1] = t.TempDir()
		c.start(t, int32(i))
	}
	t.Cleanup(func() {
		for i := n; i >= 1; i-- {
			if c.brokers[i-1] != nil {
				c.stop(t, int32(i))
			}
		}
	})
	return c
}

// start starts node on its log dir and registers it.
func (c *testCluster) start(t *testing.T, node int32) *Broker {
	t.Helper()
	cfg := Config{
		Listeners:             "PLAINTEXT://127.0.0.1:0",
		LogDirs:               c.dirs[node-1],
		NodeID:                node,
		NumPartitions:         1,
		AutoCreateTopics:      true,
		SocketRequestMaxBytes: 100 << 20,
		Log:                   storage.DefaultConfig(),
		Groups:                testGroupConfig(),
		Metadata:              c.store,
		Cluster:               DefaultClusterConfig(),
	}
	cfg.Cluster.ReplicaFetch.Backoff = 50 * time.Millisecond
	if c.mutate != nil {
		c.mutate(&cfg)
	}
	b, err := New(cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Named("node"+strconv.Itoa(int(node))))
	if err != nil {
		t.Fatalf("start node %d: %v", node, err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	c.brokers[node-1], c.served[node-1] = b, served
	host, port, err := net.SplitHostPort(b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	if _, err := c.store.Propose(registerRecord(node, "PLAINTEXT", host, int32(p))); err != nil {
		t.Fatalf("register node %d: %v", node, err)
	}
	return b
}

// stop shuts node down cleanly; its log dir stays for start.
func (c *testCluster) stop(t *testing.T, node int32) {
	t.Helper()
	b := c.brokers[node-1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Errorf("shutdown node %d: %v", node, err)
	}
	if err := <-c.served[node-1]; err != nil {
		t.Errorf("serve node %d: %v", node, err)
	}
	c.brokers[node-1] = nil
}

// createTopic proposes a topic whose partition p has the replicas
// assignment[p], the first of them its leader.
func (c *testCluster) createTopic(t *testing.T, name string, assignment [][]int32) [16]byte {
	t.Helper()
	var id [16]byte
	_, err := c.store.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		var err error
		if id, err = img.Topics.NewTopicID(); err != nil {
			return nil, err
		}
		records := []metadata.Record{metadata.TopicRecord{Name: name, TopicID: id}}
		for p, replicas := range assignment {
			records = append(records, metadata.PartitionRecord{PartitionID: int32(p), TopicID: id,
				Replicas: replicas, ISR: replicas, Leader: replicas[0]})
		}
		return records, nil
	})
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return id
}

// seeds are the running brokers' addresses.
func (c *testCluster) seeds() []string {
	var out []string
	for _, b := range c.brokers {
		if b != nil {
			out = append(out, b.Addr().String())
		}
	}
	return out
}

// TestClusterBrokersFollowTheImage checks that the brokers of a cluster
// serve what the shared image says: every broker lists every broker and
// each partition's leader, hosts every topic's logs, takes writes only
// for the partitions it leads (NOT_LEADER_OR_FOLLOWER for the others,
// which a client follows to the leader), and deletes a removed topic's
// logs.
func TestClusterBrokersFollowTheImage(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	id := c.createTopic(t, "spread", [][]int32{{1}, {2}, {3}})

	for i, b := range c.brokers {
		cl := rawClient(t, b)
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("spread")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatalf("metadata from node %d: %v", i+1, err)
		}
		if len(resp.Brokers) != 3 {
			t.Fatalf("node %d lists %d brokers, want 3: %+v", i+1, len(resp.Brokers), resp.Brokers)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("node %d: topics %+v", i+1, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.Leader != p.Partition+1 {
				t.Fatalf("node %d: partition %d led by %d, want %d", i+1, p.Partition, p.Leader, p.Partition+1)
			}
		}
		if st := b.logs.TopicByID(id); st == nil || len(st.Partitions()) != 3 {
			t.Fatalf("node %d does not host the topic's 3 partitions", i+1)
		}
	}

	// Node 2 does not lead partition 0.
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "spread"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, benchBatch(1)
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	presp, err := produce.RequestWith(context.Background(), rawClient(t, c.brokers[1]))
	if err != nil {
		t.Fatal(err)
	}
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}

	// A client seeded with one broker writes to each leader.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()[2]), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for p := int32(0); p < 3; p++ {
		r := &kgo.Record{Topic: "spread", Partition: p, Value: []byte{byte('a' + p)}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
		if r.Offset != 0 {
			t.Fatalf("partition %d: offset %d, want 0", p, r.Offset)
		}
		st := c.brokers[p].logs.TopicByID(id).Partitions()[p]
		if end := st.Log.LogEndOffset(); end != 1 {
			t.Fatalf("partition %d's leader, node %d, has log end offset %d, want 1", p, p+1, end)
		}
	}

	if _, err := c.store.Propose(metadata.RemoveTopicRecord{TopicID: id}); err != nil {
		t.Fatal(err)
	}
	for i, b := range c.brokers {
		if b.logs.TopicByID(id) != nil || b.logs.Topic("spread") != nil {
			t.Fatalf("node %d still hosts the deleted topic", i+1)
		}
	}
}
