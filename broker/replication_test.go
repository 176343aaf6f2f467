package broker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// hosted is node's log of topic's partition p.
func (c *testCluster) hosted(t *testing.T, node int32, topic string, p int32) *storage.Partition {
	t.Helper()
	st := c.brokers[node-1].logs.Topic(topic)
	if st == nil || int(p) >= len(st.Partitions()) {
		t.Fatalf("node %d does not host %s-%d", node, topic, p)
	}
	return st.Partitions()[p]
}

// registration is the image's registration of topic's partition p.
func (c *testCluster) registration(t *testing.T, topic string, p int32) metadata.PartitionRegistration {
	t.Helper()
	ti := c.store.Image().Topics.ByName(topic)
	if ti == nil {
		t.Fatalf("no topic %s in the image", topic)
	}
	reg, ok := ti.Partition(p)
	if !ok {
		t.Fatalf("no partition %s-%d in the image", topic, p)
	}
	return reg
}

// moveLeader proposes leader, from isr, as the new leader of topic's
// partition p: a PartitionChangeRecord, which bumps the leader epoch, as
// Kafka's controller elects one.
func (c *testCluster) moveLeader(t *testing.T, topic string, p, leader int32, isr []int32) {
	t.Helper()
	id := c.store.Image().Topics.ByName(topic).ID
	if _, err := c.store.Propose(metadata.PartitionChangeRecord{TopicID: id, PartitionID: p, Leader: leader, ISR: isr}); err != nil {
		t.Fatalf("move the leader of %s-%d to %d: %v", topic, p, leader, err)
	}
}

// setTopicConfig proposes a topic config.
func (c *testCluster) setTopicConfig(t *testing.T, topic, name, value string) {
	t.Helper()
	if _, err := c.store.Propose(metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: topic, Name: name, Value: &value}); err != nil {
		t.Fatal(err)
	}
}

// batches copies sp's batches below its high watermark.
func batches(t *testing.T, sp *storage.Partition) [][]byte {
	t.Helper()
	var out [][]byte
	if err := sp.Log.ForEachBatch(0, func(b []byte) error {
		out = append(out, bytes.Clone(b))
		return nil
	}); err != nil {
		t.Fatalf("read %s-%d: %v", sp.Topic, sp.Index, err)
	}
	return out
}

// waitInSync waits until every running replica of topic-p holds the
// leader's log up to the leader's log end offset with the same high
// watermark, then checks their batches are byte for byte the leader's.
func (c *testCluster) waitInSync(t *testing.T, topic string, p int32) {
	t.Helper()
	reg := c.registration(t, topic, p)
	leader := c.hosted(t, reg.Leader, topic, p)
	waitUntil(t, 20*time.Second, func() (bool, string) {
		for _, id := range reg.Replicas {
			if c.brokers[id-1] == nil {
				continue
			}
			sp := c.hosted(t, id, topic, p)
			if sp.Log.LogEndOffset() != leader.Log.LogEndOffset() || sp.Log.HighWatermark() != leader.Log.HighWatermark() {
				return false, fmt.Sprintf("node %d: log end %d hw %d; leader %d: log end %d hw %d", id, sp.Log.LogEndOffset(),
					sp.Log.HighWatermark(), reg.Leader, leader.Log.LogEndOffset(), leader.Log.HighWatermark())
			}
		}
		return true, ""
	})
	want := batches(t, leader)
	for _, id := range reg.Replicas {
		if c.brokers[id-1] == nil || id == reg.Leader {
			continue
		}
		if got := batches(t, c.hosted(t, id, topic, p)); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("node %d's %d batches of %s-%d differ from the leader's %d", id, len(got), topic, p, len(want))
		}
	}
}

// clusterClient is a franz-go client seeded with every running broker.
func clusterClient(t *testing.T, c *testCluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.RetryTimeout(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestReplicationAcksAllReachesEveryReplica checks a partition of three
// replicas: an acks=all produce answers only once both followers' logs
// hold the batch, every replica ends with the leader's batches byte for
// byte at the same offsets and with the same high watermark, and the
// leader's high watermark is the smallest log end offset of the ISR.
func TestReplicationAcksAllReachesEveryReplica(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "r", [][]int32{{1, 2, 3}})
	cl := clusterClient(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("r"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 40 {
		r := &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		for _, node := range []int32{2, 3} {
			if end := c.hosted(t, node, "r", 0).Log.LogEndOffset(); end <= r.Offset {
				t.Fatalf("record %d acknowledged at offset %d while follower %d's log ends at %d", i, r.Offset, node, end)
			}
		}
	}
	c.waitInSync(t, "r", 0)
	leader := c.hosted(t, 1, "r", 0)
	if hw := leader.Log.HighWatermark(); hw != 40 {
		t.Fatalf("leader's high watermark %d, want 40", hw)
	}
	if got := batches(t, leader); len(got) != 40 {
		t.Fatalf("leader holds %d batches, want 40", len(got))
	}
}

// produceTo sends one batch to node's partition p of topic with acks and
// returns the partition's answer.
func produceTo(t *testing.T, c *testCluster, node int32, topic string, p int32, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	acksOpt := kgo.RequiredAcks(kgo.AllISRAcks())
	if acks == 1 {
		acksOpt = kgo.RequiredAcks(kgo.LeaderAck())
	}
	// The client sets a produce's acks to its own.
	cl := newClient(t, c.brokers[node-1], kgo.MaxVersions(kversion.V2_8_0()), acksOpt, kgo.DisableIdempotentWrite())
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("produce to node %d: %v", node, err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestReplicationISRShrinksAndExpands checks the ISR of a partition of
// three replicas with min.insync.replicas=2: a stopped follower leaves the
// ISR after replica.lag.time.max.ms and acks=all produces go on; with the
// second follower gone too acks=all is NOT_ENOUGH_REPLICAS and nothing is
// written, while acks=1 still is; a follower started again on its log dir
// catches up, rejoins the ISR and acks=all is served again.
func TestReplicationISRShrinksAndExpands(t *testing.T) {
	c := startTestCluster(t, 3, func(cfg *Config) { cfg.Cluster.ReplicaLagTimeMax = 500 * time.Millisecond })
	c.createTopic(t, "r", [][]int32{{1, 2, 3}})
	c.setTopicConfig(t, "r", "min.insync.replicas", "2")
	isr := func(want ...int32) {
		t.Helper()
		waitUntil(t, 20*time.Second, func() (bool, string) {
			got := slices.Sorted(slices.Values(c.registration(t, "r", 0).ISR))
			return slices.Equal(got, want), fmt.Sprintf("ISR %v, want %v", got, want)
		})
	}
	ok := func(acks int16) int64 {
		t.Helper()
		resp := produceTo(t, c, 1, "r", 0, acks, testBatch(t, 2))
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
		return resp.BaseOffset
	}
	ok(-1)
	c.waitInSync(t, "r", 0)

	c.stop(t, 3)
	isr(1, 2)
	ok(-1)
	c.stop(t, 2)
	isr(1)
	end := c.hosted(t, 1, "r", 0).Log.LogEndOffset()
	if resp := produceTo(t, c, 1, "r", 0, -1, testBatch(t, 2)); resp.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with the ISR [1] below min.insync.replicas 2: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(resp.ErrorCode))
	}
	if got := c.hosted(t, 1, "r", 0).Log.LogEndOffset(); got != end {
		t.Fatalf("a NOT_ENOUGH_REPLICAS produce was written: log end %d, was %d", got, end)
	}
	ok(1)

	c.start(t, 3)
	isr(1, 3)
	ok(-1)
	c.waitInSync(t, "r", 0)
}
