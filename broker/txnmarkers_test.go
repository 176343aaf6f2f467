package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// smallCoordinatorTopics gives __consumer_offsets and __transaction_state
// three partitions each, so a test cluster creates them quickly.
func smallCoordinatorTopics(cfg *Config) {
	cfg.Groups.OffsetsTopicPartitions = 3
	cfg.Txns.StateLogPartitions = 3
}

// txnProducer is a transactional franz-go producer on the cluster writing
// to the partition each record names.
func txnProducer(t *testing.T, c *testCluster, id string) *kgo.Client {
	return clusterClient(t, c, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(60*time.Second))
}

// produceInTxn produces values to topic's partitions 0..n-1 in turn inside
// the producer's open transaction and waits for every ack.
func produceInTxn(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int32, values ...string) {
	t.Helper()
	for i, v := range values {
		r := &kgo.Record{Topic: topic, Partition: int32(i) % n, Value: []byte(v)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
}

// readCommitted consumes topic's n partitions from the start with
// read_committed and returns how many times each value came: it first
// appends a sentinel record to every partition and reads until each one's
// sentinel, so everything before was delivered.
func readCommitted(t *testing.T, ctx context.Context, c *testCluster, topic string, n int32) map[string]int {
	t.Helper()
	// Not idempotent: the in-process cluster's nodes allocate producer ids
	// from their own log dirs, not from a controller, so an id may repeat
	// the transactional producer's.
	pr := clusterClient(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	for p := range n {
		if err := pr.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("sentinel")}).FirstErr(); err != nil {
			t.Fatalf("sentinel to %s-%d: %v", topic, p, err)
		}
	}
	cl := clusterClient(t, c, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	sentinels := map[int32]bool{}
	for len(sentinels) < int(n) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed %s: sentinels of %v, saw %v: %v", topic, sentinels, seen, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "sentinel" {
				sentinels[r.Partition] = true
				return
			}
			seen[string(r.Value)]++
		})
	}
	return seen
}

// values are prefix-0..prefix-n-1.
func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + "-" + strconv.Itoa(i)
	}
	return out
}

// checkExactly fails unless seen holds each of want once and nothing else.
func checkExactly(t *testing.T, seen map[string]int, want ...[]string) {
	t.Helper()
	all := map[string]bool{}
	for _, vs := range want {
		for _, v := range vs {
			all[v] = true
			if seen[v] != 1 {
				t.Errorf("committed %s read %d times, want once", v, seen[v])
			}
		}
	}
	for v, n := range seen {
		if !all[v] {
			t.Errorf("read %s %d times, which no committed transaction wrote", v, n)
		}
	}
}

// checkStable fails unless every replica of topic's partitions has a last
// stable offset at its high watermark, past from[p]: no transaction is
// left open on leader or follower.
func checkStable(t *testing.T, c *testCluster, topic string, n int32, from []int64) {
	t.Helper()
	for p := range n {
		c.waitInSync(t, topic, p)
		for _, id := range c.registration(t, topic, p).Replicas {
			if c.brokers[id-1] == nil {
				continue
			}
			l := c.hosted(t, id, topic, p).Log
			if lso, hw := l.LastStableOffset(), l.HighWatermark(); lso != hw || lso <= from[p] {
				t.Errorf("node %d's %s-%d: last stable offset %d, high watermark %d, was %d; want it moved to the high watermark",
					id, topic, p, lso, hw, from[p])
			}
		}
	}
}

// lsos are the last stable offsets of topic's partitions on their leaders.
func lsos(t *testing.T, c *testCluster, topic string, n int32) []int64 {
	out := make([]int64, n)
	for p := range n {
		out[p] = c.hosted(t, c.registration(t, topic, p).Leader, topic, p).Log.LastStableOffset()
	}
	return out
}

// TestClusterTxnMarkersReachEveryLeader checks transactions whose
// partitions are led by the three brokers of a cluster: the coordinator
// writes its markers on the partitions it leads and sends WriteTxnMarkers
// to the others' leaders, so a read_committed consumer sees exactly the
// committed records, and every replica's last stable offset, leaders' and
// followers' (which rebuild the transaction state from what they fetch),
// moves to the high watermark at each commit and abort.
func TestClusterTxnMarkersReachEveryLeader(t *testing.T) {
	c := startTestCluster(t, 3, smallCoordinatorTopics)
	c.createTopic(t, "tx", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := txnProducer(t, c, "spread")

	committed := [][]string{values("c1", 6), values("c2", 6)}
	for i, txn := range []struct {
		vs     []string
		commit bool
	}{{committed[0], true}, {values("a1", 6), false}, {committed[1], true}} {
		before := lsos(t, c, "tx", 3)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produceInTxn(t, ctx, cl, "tx", 3, txn.vs...)
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(txn.commit)); err != nil {
			t.Fatalf("transaction %d (commit %t): %v", i, txn.commit, err)
		}
		checkStable(t, c, "tx", 3, before)
	}
	checkExactly(t, readCommitted(t, ctx, c, "tx", 3), committed...)
}

// coordinatorOf is the node FindCoordinator names for key of type typ.
func (c *testCluster) coordinatorOf(t *testing.T, typ int8, key string) int32 {
	t.Helper()
	var node int32
	waitUntil(t, 20*time.Second, func() (bool, string) {
		for i, b := range c.brokers {
			if b == nil {
				continue
			}
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorType = key, typ
			r := c.requestTo(t, int32(i+1), req).(*kmsg.FindCoordinatorResponse)
			if r.ErrorCode != 0 || c.brokers[r.NodeID-1] == nil {
				return false, fmt.Sprintf("FindCoordinator %q: node %d, error %d", key, r.NodeID, r.ErrorCode)
			}
			node = r.NodeID
			return true, ""
		}
		return false, "no broker running"
	})
	return node
}

// failover stops node, fences it and takes it out of every ISR, moving
// each partition it leads to the first other running member of its ISR,
// as the controller does when a broker shuts down (a fenced broker is not
// taken back into an ISR, KIP-841).
func (c *testCluster) failover(t *testing.T, node int32) {
	t.Helper()
	c.stop(t, node)
	reg, _ := c.store.Image().Cluster.Broker(node)
	if _, err := c.store.Propose(metadata.RegisterBrokerRecord{BrokerID: node, Endpoints: reg.Endpoints, Fenced: true}); err != nil {
		t.Fatalf("fence node %d: %v", node, err)
	}
	for _, ti := range c.store.Image().Topics.All() {
		for p := range int32(len(ti.Partitions)) {
			reg := c.registration(t, ti.Name, p)
			if !slices.Contains(reg.ISR, node) {
				continue
			}
			isr := slices.DeleteFunc(slices.Clone(reg.ISR), func(id int32) bool { return id == node })
			leader := metadata.NoLeaderChange
			if reg.Leader == node {
				next := slices.IndexFunc(isr, func(id int32) bool { return c.brokers[id-1] != nil })
				if next < 0 {
					t.Fatalf("%s-%d has no running in-sync replica but node %d", ti.Name, p, node)
				}
				leader = isr[next]
			}
			if _, err := c.store.Propose(metadata.PartitionChangeRecord{TopicID: ti.ID, PartitionID: p, Leader: leader, ISR: isr}); err != nil {
				t.Fatalf("take node %d out of %s-%d: %v", node, ti.Name, p, err)
			}
		}
	}
}

// failoverCluster is a 3-node cluster with topic in, whose partitions
// 0..2 are led by nodes 1..3, each replicated on all three.
func failoverCluster(t *testing.T) (*testCluster, context.Context) {
	c := startTestCluster(t, 3, smallCoordinatorTopics)
	c.createTopic(t, "in", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c, ctx
}

// endWithin ends cl's transaction within failoverBound: a stopped broker
// is out of every ISR, so nothing waits for it.
func endWithin(ctx context.Context, cl *kgo.Client, commit kgo.TransactionEndTry) error {
	ctx, cancel := context.WithTimeout(ctx, failoverBound)
	defer cancel()
	return cl.EndTransaction(ctx, commit)
}

// failoverBound is how long a transaction may take to end after its
// coordinator's broker stopped: well under replica.lag.time.max.ms
// (30 s), after which even a replica wrongly waited for leaves the ISR.
const failoverBound = 10 * time.Second

// TestClusterGroupCoordinatorFailover checks a group's committed offsets
// when the broker leading its __consumer_offsets partition stops: the
// next leader, which FindCoordinator then names, serves them.
func TestClusterGroupCoordinatorFailover(t *testing.T) {
	c, ctx := failoverCluster(t)
	adm := kadm.NewClient(clusterClient(t, c))
	offsets := kadm.Offsets{}
	for p := range int32(3) {
		offsets.Add(kadm.Offset{Topic: "in", Partition: p, At: int64(10 + p), LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctx, "g", offsets); err != nil {
		t.Fatalf("commit offsets: %v", err)
	}
	old := c.coordinatorOf(t, 0, "g")
	c.failover(t, old)
	if now := c.coordinatorOf(t, 0, "g"); now == old {
		t.Fatalf("group g's coordinator is still node %d after it stopped", old)
	}
	fetched, err := kadm.NewClient(clusterClient(t, c)).FetchOffsets(ctx, "g")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch offsets after the failover: %v %v", err, fetched.Error())
	}
	for p := range int32(3) {
		if o, ok := fetched.Lookup("in", p); !ok || o.At != int64(10+p) {
			t.Errorf("in-%d: offset %+v after the failover, want %d", p, o, 10+p)
		}
	}
}

// TestClusterTxnCoordinatorFailover checks a transaction left open when
// the broker leading its __transaction_state partition stops: its
// producer commits it through the next leader, which FindCoordinator then
// names and which writes the markers to every partition, so a
// read_committed consumer sees its records once and no replica's last
// stable offset stays behind.
func TestClusterTxnCoordinatorFailover(t *testing.T) {
	c, ctx := failoverCluster(t)
	p1 := txnProducer(t, c, "moves")
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	committed := values("kept", 6)
	produceInTxn(t, ctx, p1, "in", 3, committed...)
	old := c.coordinatorOf(t, 1, "moves")
	c.failover(t, old)
	if err := endWithin(ctx, p1, kgo.TryCommit); err != nil {
		t.Fatalf("commit through the next coordinator: %v", err)
	}
	if now := c.coordinatorOf(t, 1, "moves"); now == old {
		t.Fatalf("the coordinator of moves is still node %d after it stopped", old)
	}
	checkStable(t, c, "in", 3, []int64{-1, -1, -1})
	checkExactly(t, readCommitted(t, ctx, c, "in", 3), committed)
}

// TestClusterTxnCoordinatorFailoverFencesProducer checks a transaction
// left open when its coordinator's broker stops and its producer is
// replaced: the next coordinator aborts it at the new producer's
// InitProducerId, the new producer's transaction commits, the old producer
// is fenced, and a read_committed consumer sees only the new producer's
// records.
func TestClusterTxnCoordinatorFailoverFencesProducer(t *testing.T) {
	c, ctx := failoverCluster(t)
	p1 := txnProducer(t, c, "replaced")
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceInTxn(t, ctx, p1, "in", 3, values("fenced", 6)...)
	c.failover(t, c.coordinatorOf(t, 1, "replaced"))
	p2 := txnProducer(t, c, "replaced")
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	after := values("after", 6)
	produceInTxn(t, ctx, p2, "in", 3, after...)
	if err := endWithin(ctx, p2, kgo.TryCommit); err != nil {
		t.Fatalf("the new producer's commit: %v", err)
	}
	if err := p1.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the replaced producer committed after the new one's InitProducerId")
	}
	checkStable(t, c, "in", 3, []int64{-1, -1, -1})
	checkExactly(t, readCommitted(t, ctx, c, "in", 3), after)
}

// TestClusterWriteTxnMarkersAnswers checks WriteTxnMarkers sent to one
// broker, as Kafka's handler answers per partition: written (and seen by
// the follower) where it leads, NOT_LEADER_OR_FOLLOWER where it follows,
// UNKNOWN_TOPIC_OR_PARTITION for a partition it does not hold; the
// markers of one producer share its entry.
func TestClusterWriteTxnMarkersAnswers(t *testing.T) {
	c := startTestCluster(t, 2, nil)
	c.createTopic(t, "m", [][]int32{{1, 2}, {2, 1}})
	// The produce path would verify the batch with a coordinator, so the
	// leader's replica takes it directly.
	lp, err := c.brokers[0].replicas.Partition(c.hosted(t, 1, "m", 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lp.AppendAsLeader(producerBatch(9000, 0, 0, true, "open"), -1, 10*time.Second); err != nil {
		t.Fatalf("transactional batch: %v", err)
	}
	if lso := c.hosted(t, 1, "m", 0).Log.LastStableOffset(); lso != 0 {
		t.Fatalf("last stable offset %d with the transaction open, want 0", lso)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	for _, topics := range [][]kmsg.WriteTxnMarkersRequestMarkerTopic{
		{{Topic: "m", Partitions: []int32{0, 1}}},
		{{Topic: "m", Partitions: []int32{7}}, {Topic: "nope", Partitions: []int32{0}}},
	} {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.Topics = 9000, 0, true, topics
		req.Markers = append(req.Markers, m)
	}
	resp := c.requestTo(t, 1, req).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != 9000 {
		t.Fatalf("answer %+v, want one entry for producer 9000", resp.Markers)
	}
	got := map[string]int16{}
	for _, rt := range resp.Markers[0].Topics {
		for _, rp := range rt.Partitions {
			got[rt.Topic+"-"+strconv.Itoa(int(rp.Partition))] = rp.ErrorCode
		}
	}
	want := map[string]int16{"m-0": 0, "m-1": kerr.NotLeaderForPartition.Code,
		"m-7": kerr.UnknownTopicOrPartition.Code, "nope-0": kerr.UnknownTopicOrPartition.Code}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: %v, want %v", k, kerr.ErrorForCode(g), kerr.ErrorForCode(w))
		}
	}
	c.waitInSync(t, "m", 0)
	for _, node := range []int32{1, 2} {
		l := c.hosted(t, node, "m", 0).Log
		if lso, hw := l.LastStableOffset(), l.HighWatermark(); lso != hw || hw != 2 {
			t.Errorf("node %d: last stable offset %d, high watermark %d after the commit marker; want both 2", node, lso, hw)
		}
	}
}
