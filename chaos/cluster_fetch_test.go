package chaos

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rackedProps put node n in rack r<n> with Kafka's RackAwareReplicaSelector.
var rackedProps = []string{"broker.rack=r{id}", "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"}

// TestKafkaClusterFetchAnswers is the control of TestStrataClusterFetchAnswers.
func TestKafkaClusterFetchAnswers(t *testing.T) {
	checkFetchAnswers(t, kafkaCluster(t, rackedProps...))
}

// TestStrataClusterFetchAnswers checks what a cluster answers a consumer's
// raw Fetch v17, field for field as Kafka 4.4 does: a consumer in r2 at
// the leader (r1) gets node 2 as preferred read replica, no records and
// the partition's offsets (KIP-392); at node 2 the records up to its high
// watermark; and at a broker that is not a replica NOT_LEADER_OR_FOLLOWER
// with the leader, its epoch and its endpoint (KIP-951).
func TestStrataClusterFetchAnswers(t *testing.T) {
	checkFetchAnswers(t, strataCluster(t, rackedProps...))
}

func checkFetchAnswers(t *testing.T, c *Cluster) {
	startCluster(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 30000
	for name, replicas := range map[string][]int32{"racked": {1, 2, 3}, "pair": {1, 2}} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Replicas = replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		create.Topics = append(create.Topics, rt)
	}
	resp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("create %s: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	if _, err := c.ISRFull(ctx, time.Minute, "racked", "pair"); err != nil {
		t.Fatal(err)
	}
	var records []*kgo.Record
	for i := range 10 {
		records = append(records, &kgo.Record{Topic: "racked", Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	ids := map[string][16]byte{}
	for _, topic := range []string{"racked", "pair"} {
		m, err := metadataOf(ctx, c.Addr(1), []string{topic})
		if err != nil || len(m.Topics) != 1 {
			t.Fatalf("metadata of %s: %v", topic, err)
		}
		ids[topic] = m.Topics[0].TopicID
	}

	p := fetchV17(t, c.Addr(1), ids["racked"], "r2")
	t.Logf("%s: r2 consumer at the leader: %s", c.Name(), describeFetch(p))
	if pp := p.Topics[0].Partitions[0]; pp.ErrorCode != 0 || pp.PreferredReadReplica != 2 || len(pp.RecordBatches) != 0 ||
		pp.HighWatermark != 10 || pp.LastStableOffset != 10 || pp.LogStartOffset != 0 || pp.CurrentLeader.LeaderID != -1 || len(p.Brokers) != 0 {
		t.Errorf("%s: r2 consumer at the leader: %s; want preferred 2, no records, offsets 10 10 0, no leader", c.Name(), describeFetch(p))
	}
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := fetchV17(t, c.Addr(2), ids["racked"], "r2")
		last = describeFetch(p)
		if pp := p.Topics[0].Partitions[0]; pp.ErrorCode == 0 && pp.HighWatermark == 10 && len(pp.RecordBatches) > 0 && pp.PreferredReadReplica == -1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: r2 consumer at node 2: %s; want its records up to 10", c.Name(), last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: r2 consumer at node 2: %s", c.Name(), last)

	p = fetchV17(t, c.Addr(3), ids["pair"], "")
	t.Logf("%s: consumer at a broker not a replica: %s", c.Name(), describeFetch(p))
	pp := p.Topics[0].Partitions[0]
	if pp.ErrorCode != kerr.NotLeaderForPartition.Code || pp.CurrentLeader.LeaderID != 1 || pp.CurrentLeader.LeaderEpoch != 0 ||
		len(p.Brokers) != 1 || p.Brokers[0].NodeID != 1 || net.JoinHostPort(p.Brokers[0].Host, strconv.Itoa(int(p.Brokers[0].Port))) != c.Addr(1) ||
		p.Brokers[0].Rack == nil || *p.Brokers[0].Rack != "r1" {
		t.Errorf("%s: consumer at a broker not a replica: %s; want NOT_LEADER_OR_FOLLOWER naming leader 1 at epoch 0, at %s in r1", c.Name(), describeFetch(p), c.Addr(1))
	}
}

// describeFetch is a one-partition Fetch answer's fields.
func describeFetch(r *kmsg.FetchResponse) string {
	p := r.Topics[0].Partitions[0]
	s := fmt.Sprintf("error %v, session %d, hw %d, lso %d, log start %d, aborted list %v, preferred %d, %d record bytes, diverging %d/%d, current leader %d/%d",
		kerr.ErrorForCode(p.ErrorCode), r.SessionID, p.HighWatermark, p.LastStableOffset, p.LogStartOffset, p.AbortedTransactions != nil,
		p.PreferredReadReplica, len(p.RecordBatches), p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch)
	for _, b := range r.Brokers {
		rack := "null"
		if b.Rack != nil {
			rack = *b.Rack
		}
		s += fmt.Sprintf(", node %d %s:%d rack %s", b.NodeID, b.Host, b.Port, rack)
	}
	return s
}

// fetchV17 sends a consumer's Fetch v17 of topic-0 at offset 0 from rack
// to addr on a connection of its own, answered at once.
func fetchV17(t *testing.T, addr string, topicID [16]byte, rack string) *kmsg.FetchResponse {
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
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(15 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	var size [4]byte
	if _, err := io.ReadFull(br, size[:]); err != nil {
		t.Fatalf("fetch from %s: %v", addr, err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(br, frame); err != nil || len(frame) < 5 {
		t.Fatalf("fetch from %s: %v", addr, err)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, no header tags
		t.Fatalf("decode fetch from %s: %v", addr, err)
	}
	return resp
}
