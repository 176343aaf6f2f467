package broker

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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

// start starts node on its log dir and registers it, in its rack.
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
	// One cluster id for every node, as a cluster's nodes have: clients
	// name it in ApiVersions v5, which a node of another id refuses.
	cfg.Cluster.ClusterID = "c3RyYXRhLXRlc3QtY2x1cw"
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
	reg := registerRecord(node, []metadata.Endpoint{{Listener: "PLAINTEXT", Host: host, Port: int32(p)}})
	reg.Rack = cfg.Cluster.Rack
	if _, err := c.store.Propose(reg); err != nil {
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

// requestTo sends req to node itself, not to whichever broker a client
// would route it to.
func (c *testCluster) requestTo(t *testing.T, node int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := rawClient(t, c.brokers[node-1]).Broker(int(node)).Request(context.Background(), req)
	if err != nil {
		t.Fatalf("%s to node %d: %v", kmsg.NameForKey(req.Key()), node, err)
	}
	return resp
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
// each partition's leader, hosts the logs of the partitions it is a
// replica of and no others, takes writes only
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
		if st := b.logs.TopicByID(id); st == nil || st.PartitionCount() != 3 || len(st.Partitions()) != 1 || st.Partition(int32(i)) == nil {
			t.Fatalf("node %d does not host the one partition of the topic's 3 it is the replica of", i+1)
		}
	}

	// Each node describes the one partition it is a replica of.
	for node := int32(1); node <= 3; node++ {
		dresp := c.requestTo(t, node, kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse)
		var got []int32
		for _, dt := range dresp.Dirs[0].Topics {
			for _, dp := range dt.Partitions {
				if dt.Topic == "spread" {
					got = append(got, dp.Partition)
				}
			}
		}
		if !slices.Equal(got, []int32{node - 1}) {
			t.Fatalf("node %d describes partitions %v of spread, want [%d]", node, got, node-1)
		}
	}

	// Node 2 does not lead partition 0.
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "spread", c.brokers[1].meta.Image().Topics.ByName("spread").ID // v13 names it by id
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = 0, benchBatch(1)
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	presp := c.requestTo(t, 2, produce).(*kmsg.ProduceResponse)
	if code := presp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	// From v10 the answer names the leader and its endpoint (KIP-951).
	latest, err := newClient(t, c.brokers[1]).Broker(2).Request(context.Background(), produce)
	if err != nil {
		t.Fatal(err)
	}
	lresp := latest.(*kmsg.ProduceResponse)
	pp0 := lresp.Topics[0].Partitions[0]
	if lresp.Version < 10 || pp0.ErrorCode != kerr.NotLeaderForPartition.Code || pp0.CurrentLeader.LeaderID != 1 || pp0.CurrentLeader.LeaderEpoch != 0 ||
		len(lresp.Brokers) != 1 || lresp.Brokers[0].NodeID != 1 || lresp.Brokers[0].Host+":"+strconv.Itoa(int(lresp.Brokers[0].Port)) != c.seeds()[0] {
		t.Fatalf("produce v%d to a follower: %+v, brokers %+v; want leader 1 at epoch 0 and its endpoint", lresp.Version, pp0, lresp.Brokers)
	}

	// ListOffsets is answered by the leader only.
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "spread"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 0, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	for node, want := range map[int]int16{1: 0, 2: kerr.NotLeaderForPartition.Code} {
		lresp := c.requestTo(t, int32(node), lo).(*kmsg.ListOffsetsResponse)
		if got := lresp.Topics[0].Partitions[0].ErrorCode; got != want {
			t.Fatalf("ListOffsets of partition 0 on node %d: %v, want %v", node, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
		}
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
		st := c.brokers[p].logs.TopicByID(id).Partition(p)
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

// TestClusterPlacesReplicas checks CreateTopics and CreatePartitions on a
// cluster: replicas placed at the requested replication factor (the
// default one when -1) over the brokers, leaders spread, the ISR every
// replica; a manual assignment kept as given; a replication factor above
// the broker count refused with Kafka's message.
func TestClusterPlacesReplicas(t *testing.T) {
	c := startTestCluster(t, 3, func(cfg *Config) { cfg.Cluster.DefaultReplicationFactor = 2 })
	adm := kadm.NewClient(rawClient(t, c.brokers[1]))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	resp, err := adm.CreateTopic(ctx, 3, 3, nil, "rf3")
	if err != nil || resp.Err != nil {
		t.Fatalf("create rf3: %v %v", err, resp.Err)
	}
	if resp.ReplicationFactor != 3 {
		t.Fatalf("rf3 created at replication factor %d", resp.ReplicationFactor)
	}
	leaders := map[int32]bool{}
	for p, reg := range c.store.Image().Topics.ByName("rf3").Partitions {
		if len(reg.Replicas) != 3 || !slices.Equal(reg.ISR, reg.Replicas) || reg.Leader != reg.Replicas[0] {
			t.Fatalf("rf3 partition %d: %+v", p, reg)
		}
		leaders[reg.Leader] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("rf3's 3 partitions are led by %v, want one on each broker", leaders)
	}

	if resp, err := adm.CreateTopic(ctx, 2, -1, nil, "default-rf"); err != nil || resp.Err != nil || resp.ReplicationFactor != 2 {
		t.Fatalf("create with the default replication factor: %v %+v", err, resp)
	}
	for p, reg := range c.store.Image().Topics.ByName("default-rf").Partitions {
		if len(reg.Replicas) != 2 {
			t.Fatalf("default-rf partition %d has replicas %v, want 2 (default.replication.factor)", p, reg.Replicas)
		}
	}

	manual := kmsg.NewPtrCreateTopicsRequest()
	mt := kmsg.NewCreateTopicsRequestTopic()
	mt.Topic, mt.NumPartitions, mt.ReplicationFactor = "manual", -1, -1
	for _, replicas := range [][]int32{{3, 1}, {2, 3}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(len(mt.ReplicaAssignment)), replicas
		mt.ReplicaAssignment = append(mt.ReplicaAssignment, a)
	}
	manual.Topics = append(manual.Topics, mt)
	mresp, err := manual.RequestWith(ctx, rawClient(t, c.brokers[0]))
	if err != nil || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("manual assignment: %v %+v", err, mresp)
	}
	if got := c.store.Image().Topics.ByName("manual").Partitions; !slices.Equal(got[0].Replicas, []int32{3, 1}) ||
		got[0].Leader != 3 || !slices.Equal(got[1].Replicas, []int32{2, 3}) || got[1].Leader != 2 {
		t.Fatalf("manual assignment placed as %+v", got)
	}

	if _, err := adm.CreatePartitions(ctx, 5, "rf3"); err != nil {
		t.Fatal(err)
	}
	for p, reg := range c.store.Image().Topics.ByName("rf3").Partitions {
		if len(reg.Replicas) != 3 {
			t.Fatalf("rf3's partition %d, added, has replicas %v, want the topic's 3", p, reg.Replicas)
		}
	}
	parts := len(c.store.Image().Topics.ByName("rf3").Partitions) // 3, and 5 added
	for i, b := range c.brokers {
		if st := b.logs.Topic("rf3"); st == nil || len(st.Partitions()) != parts || parts != 8 {
			t.Fatalf("node %d does not host rf3's %d partitions after CreatePartitions", i+1, parts)
		}
	}

	resp, _ = adm.CreateTopic(ctx, 1, 4, nil, "rf4")
	want := "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."
	if !errors.Is(resp.Err, kerr.InvalidReplicationFactor) || resp.ErrMessage != want {
		t.Fatalf("rf4: %v %q, want INVALID_REPLICATION_FACTOR %q", resp.Err, resp.ErrMessage, want)
	}
}

// TestClusterMetadataShowsOfflineReplicas checks Metadata once a broker is
// fenced, as Kafka's KRaftMetadataCache answers: it is no longer listed, a
// partition it still leads has leader -1 and LEADER_NOT_AVAILABLE, and it
// is an offline replica of its partitions.
func TestClusterMetadataShowsOfflineReplicas(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "t", [][]int32{{3, 1}, {1, 3}})
	reg, _ := c.store.Image().Cluster.Broker(3)
	reg3 := metadata.RegisterBrokerRecord{BrokerID: 3, Endpoints: reg.Endpoints, Fenced: true}
	if _, err := c.store.Propose(reg3); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("t")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), rawClient(t, c.brokers[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 2 {
		t.Fatalf("%d brokers listed, want 2 (node 3 is fenced)", len(resp.Brokers))
	}
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if p0.Leader != -1 || p0.ErrorCode != kerr.LeaderNotAvailable.Code || !slices.Equal(p0.OfflineReplicas, []int32{3}) {
		t.Fatalf("partition 0, led by the fenced node: leader %d, %v, offline %v", p0.Leader, kerr.ErrorForCode(p0.ErrorCode), p0.OfflineReplicas)
	}
	if p1.Leader != 1 || p1.ErrorCode != 0 || !slices.Equal(p1.OfflineReplicas, []int32{3}) {
		t.Fatalf("partition 1: leader %d, %v, offline %v", p1.Leader, kerr.ErrorForCode(p1.ErrorCode), p1.OfflineReplicas)
	}
}

// TestClusterElectLeaders checks ElectLeaders decided on the image as the
// KRaft controller decides: a preferred election brings leadership back
// to the first replica (a new leader epoch), is not needed where it leads
// and not possible while it is fenced; an unclean election gives a
// leaderless partition an unfenced replica outside the ISR.
func TestClusterElectLeaders(t *testing.T) {
	c := startTestCluster(t, 2, nil)
	id := c.createTopic(t, "el", [][]int32{{1, 2}, {2, 1}})
	move := func(p, leader int32, isr []int32) {
		t.Helper()
		if _, err := c.store.Propose(metadata.PartitionChangeRecord{PartitionID: p, TopicID: id, Leader: leader, ISR: isr}); err != nil {
			t.Fatal(err)
		}
	}
	elect := func(electionType int8, p int32) int16 {
		t.Helper()
		req := kmsg.NewPtrElectLeadersRequest()
		req.ElectionType = electionType
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "el", []int32{p}
		req.Topics = append(req.Topics, rt)
		resp := c.requestTo(t, 2, req).(*kmsg.ElectLeadersResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	partition := func(p int32) metadata.PartitionRegistration {
		reg, _ := c.store.Image().Topics.ByID(id).Partition(p)
		return reg
	}

	move(0, 2, nil)
	if code := elect(electPreferred, 0); code != 0 || partition(0).Leader != 1 || partition(0).LeaderEpoch != 2 {
		t.Fatalf("preferred election of partition 0: %v, now %+v", kerr.ErrorForCode(code), partition(0))
	}
	if code := elect(electPreferred, 1); code != kerr.ElectionNotNeeded.Code {
		t.Fatalf("preferred election where the preferred leader leads: %v", kerr.ErrorForCode(code))
	}

	reg, _ := c.store.Image().Cluster.Broker(1)
	if _, err := c.store.Propose(metadata.RegisterBrokerRecord{BrokerID: 1, Endpoints: reg.Endpoints, Fenced: true}); err != nil {
		t.Fatal(err)
	}
	move(0, 2, []int32{2})
	if code := elect(electPreferred, 0); code != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("preferred election with the preferred replica fenced: %v", kerr.ErrorForCode(code))
	}

	move(1, metadata.NoLeader, []int32{1})
	if code := elect(electUnclean, 1); code != 0 || partition(1).Leader != 2 || !slices.Equal(partition(1).ISR, []int32{2}) {
		t.Fatalf("unclean election of a leaderless partition: %v, now %+v", kerr.ErrorForCode(code), partition(1))
	}
}

// TestClusterReassignsPartitions checks a reassignment through the Kafka
// API as kafka-reassign-partitions makes one: the added replica catches up
// by fetching, the ISR change that brings it in sync completes the
// reassignment, and the dropped leader hands over at a new epoch; one that
// cannot complete (its new replica is down) is listed by
// ListPartitionReassignments, with the target and the dropped replicas
// together, until it is cancelled, which puts the replicas back.
func TestClusterReassignsPartitions(t *testing.T) {
	c := startTestCluster(t, 3, func(cfg *Config) { cfg.Cluster.ReplicaLagTimeMax = 2 * time.Second })
	id := c.createTopic(t, "move", [][]int32{{1, 2}, {1, 2}})
	adm := kadm.NewClient(rawClient(t, c.brokers[1]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	partition := func(p int32) metadata.PartitionRegistration {
		reg, _ := c.store.Image().Topics.ByID(id).Partition(p)
		return reg
	}
	reassign := func(p int32, replicas []int32) {
		t.Helper()
		req := kadm.AlterPartitionAssignmentsReq{}
		if replicas == nil {
			req.CancelAssign("move", p)
		} else {
			req.Assign("move", p, replicas)
		}
		res, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil || res["move"][p].Err != nil {
			t.Fatalf("reassign partition %d to %v: %v %+v", p, replicas, err, res)
		}
	}

	reassign(0, []int32{2, 3})
	deadline := time.Now().Add(20 * time.Second)
	for {
		p0 := partition(0)
		if !p0.Reassigning() {
			if !slices.Equal(p0.Replicas, []int32{2, 3}) || p0.Leader != 2 || p0.LeaderEpoch != 1 ||
				!slices.Equal(slices.Sorted(slices.Values(p0.ISR)), []int32{2, 3}) {
				t.Fatalf("partition 0 once reassigned: %+v", p0)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition 0's reassignment never completed: %+v", p0)
		}
		time.Sleep(10 * time.Millisecond)
	}

	c.stop(t, 3)
	reassign(1, []int32{1, 3})
	p1 := partition(1)
	if !slices.Equal(p1.Replicas, []int32{1, 3, 2}) || !slices.Equal(p1.AddingReplicas, []int32{3}) ||
		!slices.Equal(p1.RemovingReplicas, []int32{2}) || p1.Leader != 1 {
		t.Fatalf("partition 1 while reassigning: %+v", p1)
	}
	named := kadm.TopicsSet{}
	named.Add("move", 0, 1)
	listed, err := adm.ListPartitionReassignments(ctx, named)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := listed["move"][1]; !ok || len(listed["move"]) != 1 || !slices.Equal(r.Replicas, []int32{1, 3, 2}) || !slices.Equal(r.AddingReplicas, []int32{3}) {
		t.Fatalf("listed %+v", listed)
	}
	all := c.requestTo(t, 1, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	if len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 1 {
		t.Fatalf("listing every reassignment: %+v", all.Topics)
	}

	reassign(1, nil)
	if p1 := partition(1); !slices.Equal(p1.Replicas, []int32{1, 2}) || p1.Reassigning() || p1.Leader != 1 {
		t.Fatalf("partition 1 after its reassignment was cancelled: %+v", p1)
	}
	cancelReq := kadm.AlterPartitionAssignmentsReq{}
	cancelReq.CancelAssign("move", 1)
	res, err := adm.AlterPartitionAssignments(ctx, cancelReq)
	if err != nil || !errors.Is(res["move"][1].Err, kerr.NoReassignmentInProgress) {
		t.Fatalf("cancelling with none in progress: %v %+v", err, res)
	}
}

// TestClusterFindCoordinatorNamesLiveLeaders checks that FindCoordinator
// names the broker leading the group's __consumer_offsets partition, from
// any broker, and answers COORDINATOR_NOT_AVAILABLE once that broker is
// fenced and still its leader.
func TestClusterFindCoordinatorNamesLiveLeaders(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	find := func(node int32) *kmsg.FindCoordinatorResponse {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g"
		return c.requestTo(t, node, req).(*kmsg.FindCoordinatorResponse)
	}
	var leader int32
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := find(1)
		if r.ErrorCode == 0 {
			leader = r.NodeID
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no coordinator: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		time.Sleep(10 * time.Millisecond)
	}
	img := c.store.Image()
	offsets := img.Topics.ByName("__consumer_offsets")
	if offsets == nil || len(offsets.Partitions[c.brokers[0].groups.PartitionFor("g")].Replicas) != 3 {
		t.Fatalf("__consumer_offsets not created at offsets.topic.replication.factor 3: %+v", offsets)
	}
	other := leader%3 + 1
	if r := find(other); r.ErrorCode != 0 || r.NodeID != leader {
		t.Fatalf("node %d names coordinator %d (%v), node 1 named %d", other, r.NodeID, kerr.ErrorForCode(r.ErrorCode), leader)
	}
	reg, _ := img.Cluster.Broker(leader)
	if _, err := c.store.Propose(metadata.RegisterBrokerRecord{BrokerID: leader, Endpoints: reg.Endpoints, Fenced: true}); err != nil {
		t.Fatal(err)
	}
	if r := find(other); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("with the coordinator's broker fenced: node %d, %v", r.NodeID, kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestClusterPreferredLeadersComeBack checks auto.leader.rebalance.enable:
// a partition led by another in-sync replica gets its preferred replica
// back as leader at the next check. (That one out of the ISR keeps its
// leader is partitionChange's, TestPartitionChangeIsKafkas: here a
// follower rejoins the ISR within milliseconds.)
func TestClusterPreferredLeadersComeBack(t *testing.T) {
	c := startTestCluster(t, 2, func(cfg *Config) { cfg.Cluster.LeaderImbalanceCheckInterval = 20 * time.Millisecond })
	id := c.createTopic(t, "b", [][]int32{{1, 2}})
	if _, err := c.store.Propose(metadata.PartitionChangeRecord{PartitionID: 0, TopicID: id, Leader: 2}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := c.store.Image().Topics.ByID(id).Partitions[0]
		if p.Leader == 1 {
			if p.LeaderEpoch != 2 {
				t.Fatalf("partition 0 back on its preferred replica at leader epoch %d, want 2", p.LeaderEpoch)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition 0 still led by %d", p.Leader)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
