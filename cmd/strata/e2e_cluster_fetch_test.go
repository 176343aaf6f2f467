package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchesByNode counts, per broker, the records a consumer's fetches
// brought back from it.
type batchesByNode struct {
	mu      sync.Mutex
	records map[int32]int
}

func (h *batchesByNode) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records[meta.NodeID] += m.NumRecords
}

func (h *batchesByNode) counts() map[int32]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int32]int{}
	for id, n := range h.records {
		out[id] = n
	}
	return out
}

// rackedCluster starts three strata processes in racks r1, r2 and r3,
// with the extra lines, and creates "racked" on replicas 1, 2, 3 (led by
// 1) holding 100 records acknowledged by every replica.
func rackedCluster(t *testing.T, extra ...string) []*clusterNode {
	t.Helper()
	nodes := startCluster(t, append([]string{"broker.rack=r{id}"}, extra...)...)
	waitFormed(t, nodes, 15*time.Second)
	resp, err := createAssigned(nodes[0].addr, "racked", [][]int32{{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("CreateTopics: %v", kerr.ErrorForCode(code))
	}
	pr, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr, nodes[2].addr), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var records []*kgo.Record
	for i := range 100 {
		records = append(records, &kgo.Record{Topic: "racked", Value: []byte(strconv.Itoa(i))})
	}
	if err := pr.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return nodes
}

// consumeFromRack consumes "racked" from the start as a franz-go consumer
// in rack r2 until it has the 100 records, and returns how many each
// broker served.
func consumeFromRack(t *testing.T, nodes []*clusterNode) map[int32]int {
	t.Helper()
	hook := &batchesByNode{records: map[int32]int{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr, nodes[1].addr, nodes[2].addr), kgo.ConsumeTopics("racked"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Rack("r2"), kgo.WithHooks(hook))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < 100; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 100 records (per node %v): %v", got, hook.counts(), err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	return hook.counts()
}

// rawFetch is a consumer's Fetch v17 of topic-0 from rack at offset 0,
// sent to addr.
func rawFetch(t *testing.T, addr string, topicID [16]byte, rack string) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(17)
	req.ReplicaID, req.ReplicaState.ID = -1, -1
	req.MaxBytes, req.SessionEpoch, req.Rack = 1<<20, -1, rack
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := request(addr, req)
	if err != nil {
		t.Fatalf("fetch from %s: %v", addr, err)
	}
	return resp.(*kmsg.FetchResponse)
}

// topicID is the id Metadata at addr gives topic, once it lists the
// topic's partition with a leader.
func topicID(t *testing.T, addr, topic string) [16]byte {
	t.Helper()
	var id [16]byte
	waitUntil(t, 10*time.Second, "metadata of "+topic, func() (bool, string) {
		m, err := metadataOf(addr, topic)
		if err != nil {
			return false, err.Error()
		}
		if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) != 1 || m.Topics[0].Partitions[0].Leader < 0 {
			return false, fmt.Sprintf("%+v", m.Topics)
		}
		id = m.Topics[0].TopicID
		return true, ""
	})
	return id
}

// TestClusterConsumerFetchesFromItsRack checks KIP-392 on three strata
// processes in racks r1, r2, r3 with a partition led by the r1 node: with
// replica.selector.class=RackAwareReplicaSelector a franz-go consumer
// with client rack r2 gets every record from the r2 node, as a raw Fetch
// v17 shows (the leader names node 2 as preferred read replica, with no
// records, and node 2 serves the records); with no selector (Kafka's
// default) the leader serves them all, and a Fetch v17 at a broker that is
// not a replica names the leader and its endpoint (KIP-951).
func TestClusterConsumerFetchesFromItsRack(t *testing.T) {
	e2e(t)
	nodes := rackedCluster(t, "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector")
	id := topicID(t, nodes[0].addr, "racked")
	p := rawFetch(t, nodes[0].addr, id, "r2").Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.PreferredReadReplica != 2 || len(p.RecordBatches) != 0 || p.HighWatermark != 100 {
		t.Fatalf("r2 Fetch at the leader: %v, preferred %d, %d bytes, hw %d; want replica 2, no records, hw 100",
			kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark)
	}
	waitUntil(t, 10*time.Second, "node 2 serves records up to its high watermark", func() (bool, string) {
		p := rawFetch(t, nodes[1].addr, id, "r2").Topics[0].Partitions[0]
		return p.ErrorCode == 0 && p.HighWatermark == 100 && len(p.RecordBatches) > 0,
			fmt.Sprintf("%v, hw %d, %d bytes", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, len(p.RecordBatches))
	})
	got := consumeFromRack(t, nodes)
	t.Logf("records served per node with the selector: %v", got)
	if got[2] != 100 || got[1]+got[3] != 0 {
		t.Errorf("records served per node with the selector: %v, want all 100 from node 2 (r2)", got)
	}
	for _, n := range nodes {
		n.p.kill() // free the machine for the second cluster
	}

	plain := rackedCluster(t)
	got = consumeFromRack(t, plain)
	t.Logf("records served per node without a selector: %v", got)
	if got[1] != 100 || got[2]+got[3] != 0 {
		t.Errorf("records served per node without a selector: %v, want all 100 from the leader, node 1", got)
	}
	if resp, err := createAssigned(plain[0].addr, "pair", [][]int32{{1, 2}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create pair: %v %+v", err, resp)
	}
	pairID := topicID(t, plain[0].addr, "pair")
	waitUntil(t, 10*time.Second, "node 3 names the leader of pair-0", func() (bool, string) {
		resp := rawFetch(t, plain[2].addr, pairID, "")
		p := resp.Topics[0].Partitions[0]
		ok := p.ErrorCode == kerr.NotLeaderForPartition.Code && p.CurrentLeader.LeaderID == 1 && p.CurrentLeader.LeaderEpoch == 0 &&
			len(resp.Brokers) == 1 && resp.Brokers[0].NodeID == 1 && fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) == plain[0].addr &&
			resp.Brokers[0].Rack != nil && *resp.Brokers[0].Rack == "r1"
		return ok, fmt.Sprintf("%v, current leader %+v, nodes %+v", kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader, resp.Brokers)
	})
}
