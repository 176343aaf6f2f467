package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareCluster starts three nodes serving share groups, with one
// __share_group_state partition on all three, and returns them and the
// node leading that partition: the share coordinator of every
// share-partition.
func shareCluster(t *testing.T) ([]*clusterNode, *clusterNode) {
	t.Helper()
	nodes := startCluster(t, "unstable.api.versions.enable=true", "share.coordinator.state.topic.num.partitions=1",
		"share.coordinator.state.topic.replication.factor=3")
	waitFormed(t, nodes, 30*time.Second)
	return nodes, waitCoordinator(t, nodes, 2, "any:AAAAAAAAAAAAAAAAAAAAAA:0")
}

// waitCoordinator is the node FindCoordinator names for key, of key type
// typ (0 a group, 2 a share-partition's share state), once it names one.
func waitCoordinator(t *testing.T, nodes []*clusterNode, typ int8, key string) *clusterNode {
	t.Helper()
	var coord *clusterNode
	waitUntil(t, 30*time.Second, fmt.Sprintf("the coordinator of %s", key), func() (bool, string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(6)
		req.CoordinatorType, req.CoordinatorKeys = typ, []string{key}
		resp, err := request(nodes[0].addr, req)
		if err != nil {
			return false, err.Error()
		}
		c := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
		for _, n := range nodes {
			if c.ErrorCode == 0 && c.NodeID == n.id {
				coord = n
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", c)
	})
	return coord
}

// seeds is every node's client address.
func seeds(nodes []*clusterNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.addr)
	}
	return out
}

// waitLeader waits until node n's Metadata names leader as topic's
// partition 0 leader with isr in-sync replicas.
func waitLeader(t *testing.T, n *clusterNode, topic string, leader int32, isr int) {
	t.Helper()
	waitUntil(t, 30*time.Second, fmt.Sprintf("%s led by node %d on node %d", topic, leader, n.id), func() (bool, string) {
		m, err := metadataOf(n.addr, topic)
		if err != nil {
			return false, err.Error()
		}
		if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
			return false, fmt.Sprintf("%+v", m.Topics)
		}
		p := m.Topics[0].Partitions[0]
		return p.Leader == leader && len(p.ISR) == isr, fmt.Sprintf("leader %d, ISR %v", p.Leader, p.ISR)
	})
}

// shareLog is what share consumers saw: how often each record was
// delivered and accepted.
type shareLog struct {
	mu         sync.Mutex
	deliveries map[int]int
	accepted   map[int]int
}

func (l *shareLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.accepted)
}

// consume runs members share consumers of group on topic, accepting
// every record, until the returned stop is called.
func (l *shareLog) consume(t *testing.T, nodes []*clusterNode, group, topic string, members int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for m := range members {
		c := newClient(t, nodes[0].addr, kgo.SeedBrokers(seeds(nodes)...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprintf("share-%d", m)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for ctx.Err() == nil {
				fs := c.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) {
					v, _ := strconv.Atoi(string(r.Value))
					l.mu.Lock()
					l.deliveries[v]++
					l.accepted[v]++
					l.mu.Unlock()
					r.Ack(kgo.AckAccept)
				})
				c.MarkAcks(kgo.AckAccept)
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// check fails the test unless records 0 to n-1 were each delivered and
// accepted exactly once.
func (l *shareLog) check(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for v := range n {
		if l.deliveries[v] != 1 || l.accepted[v] != 1 {
			t.Errorf("record %d delivered %d times, accepted %d times, want once", v, l.deliveries[v], l.accepted[v])
		}
	}
	if len(l.deliveries) != n {
		t.Errorf("%d records delivered, want %d", len(l.deliveries), n)
	}
}

// produceRange produces the records from to to-1 (their values) to
// topic's partition 0.
func produceRange(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(timeoutCtx(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d-%d: %v", from, to-1, err)
	}
}

// earliest sets group's share.auto.offset.reset to earliest.
func earliest(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(timeoutCtx(t, 20*time.Second), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set share.auto.offset.reset: %v %+v", err, resp)
	}
}

// waitPersisted waits until the share coordinator on coord has every
// record of the share-partition before want acknowledged: its start
// offset and its delivery-complete count (the acknowledged records at or
// after it, KIP-1226) add up to want.
func waitPersisted(t *testing.T, l *shareLog, coord *clusterNode, group string, topic [16]byte, want int64) {
	t.Helper()
	waitUntil(t, 60*time.Second, fmt.Sprintf("share-partition complete to %d on node %d", want, coord.id), func() (bool, string) {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.SetVersion(1)
		req.GroupID = group
		rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		rt.TopicID = topic
		rt.Partitions = []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		resp, err := request(coord.addr, req)
		if err != nil {
			return false, err.Error()
		}
		r := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return false, fmt.Sprintf("%+v", r.Topics)
		}
		p := r.Topics[0].Partitions[0]
		return p.ErrorCode == 0 && p.StartOffset+int64(p.DeliveryCompleteCount) == want, fmt.Sprintf("error %v, start offset %d, delivery complete count %d, %d accepted",
			kerr.ErrorForCode(p.ErrorCode), p.StartOffset, p.DeliveryCompleteCount, l.count())
	})
}

// TestClusterShareGroupStateOnAnotherNode runs a share group on a
// partition led by one node (Y) whose share state the share coordinator
// of another (X) keeps: two franz-go share members accept 50 records
// (X's state reaching start offset 50 shows the writes went there), Y
// restarts, new members accept 50 more, and each of the 100 was delivered
// exactly once: Y loaded the share-partition from X after its restart.
func TestClusterShareGroupStateOnAnotherNode(t *testing.T) {
	e2e(t)
	nodes, x := shareCluster(t)
	var y *clusterNode
	for _, n := range nodes {
		if n != x {
			y = n
			break
		}
	}
	const topic, group = "queue-a", "ga"
	if resp, err := createAssigned(nodes[0].addr, topic, [][]int32{{y.id}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	for _, n := range nodes {
		waitLeader(t, n, topic, y.id, 1)
	}
	id := topicID(t, x.addr, topic)
	cl := newClient(t, nodes[0].addr, kgo.SeedBrokers(seeds(nodes)...))
	earliest(t, cl, group)
	produceRange(t, cl, topic, 0, 50)

	l := &shareLog{deliveries: map[int]int{}, accepted: map[int]int{}}
	stop := l.consume(t, nodes, group, topic, 2)
	waitPersisted(t, l, x, group, id, 50)
	stop()

	y.p.kill()
	y.start(t)
	for _, n := range nodes {
		waitLeader(t, n, topic, y.id, 1)
	}
	produceRange(t, cl, topic, 50, 100)
	stop = l.consume(t, nodes, group, topic, 2)
	waitPersisted(t, l, x, group, id, 100)
	stop()
	l.check(t, 100)
}

// droppedShares is the line a node logs when it drops the share-partitions
// of a partition it no longer leads.
var droppedShares = regexp.MustCompile(`dropped the share-partitions of a partition this node no longer leads`)

// TestClusterShareGroupFollowsItsPartitionsLeader runs a share group on a
// partition replicated on Y and Z whose share state X keeps, with two
// franz-go share members consuming throughout: 50 records accepted on Y;
// the leadership moves to Z by a reassignment and a preferred election
// while Y runs (Y logs that it dropped the share-partition); 50 more
// accepted on Z; Z is killed and Y leads again; 50 more accepted. Each of
// the 150 records is delivered exactly once: each new leader loaded the
// share-partition's state from X.
func TestClusterShareGroupFollowsItsPartitionsLeader(t *testing.T) {
	e2e(t)
	nodes, x := shareCluster(t)
	var yz []*clusterNode
	for _, n := range nodes {
		if n != x {
			yz = append(yz, n)
		}
	}
	y, z := yz[0], yz[1]
	const topic, group = "queue-b", "gb"
	if resp, err := createAssigned(nodes[0].addr, topic, [][]int32{{y.id, z.id}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	for _, n := range nodes {
		waitLeader(t, n, topic, y.id, 2)
	}
	id := topicID(t, x.addr, topic)
	cl := newClient(t, nodes[0].addr, kgo.SeedBrokers(seeds(nodes)...))
	earliest(t, cl, group)

	l := &shareLog{deliveries: map[int]int{}, accepted: map[int]int{}}
	stop := l.consume(t, nodes, group, topic, 2)
	defer stop()
	produceRange(t, cl, topic, 0, 50)
	waitPersisted(t, l, x, group, id, 50)

	admin := pin(t, x)
	reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	reassign.TimeoutMillis = 10000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{z.id, y.id}}}
	reassign.Topics = append(reassign.Topics, rt)
	if resp := admin.ask(t, reassign).(*kmsg.AlterPartitionAssignmentsResponse); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartitionReassignments: %v / %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.TimeoutMillis = 10000
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = topic, []int32{0}
	elect.Topics = append(elect.Topics, et)
	if resp := admin.ask(t, elect).(*kmsg.ElectLeadersResponse); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ElectLeaders: %v / %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	for _, n := range nodes {
		waitLeader(t, n, topic, z.id, 2)
	}
	y.p.waitLog(droppedShares, 30*time.Second)
	produceRange(t, cl, topic, 50, 100)
	waitPersisted(t, l, x, group, id, 100)

	z.p.kill()
	for _, n := range []*clusterNode{x, y} {
		waitLeader(t, n, topic, y.id, 1)
	}
	produceRange(t, cl, topic, 100, 150)
	waitPersisted(t, l, x, group, id, 150)
	stop()
	l.check(t, 150)
}

// TestClusterShareGroupOutlivesItsShareCoordinator runs a share group on
// a partition led by Y whose share state X keeps, two franz-go share
// members consuming throughout: 50 records accepted, X is killed and 50
// more produced at once, whose writes Y sends to X first, then, after
// its retries, to the __share_group_state partition's next leader; each
// of the 100 records is delivered exactly once.
func TestClusterShareGroupOutlivesItsShareCoordinator(t *testing.T) {
	e2e(t)
	nodes, x := shareCluster(t)
	var rest []*clusterNode
	for _, n := range nodes {
		if n != x {
			rest = append(rest, n)
		}
	}
	y := rest[0]
	const topic, group = "queue-c", "gc"
	if resp, err := createAssigned(nodes[0].addr, topic, [][]int32{{y.id}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	for _, n := range nodes {
		waitLeader(t, n, topic, y.id, 1)
	}
	id := topicID(t, y.addr, topic)
	cl := newClient(t, y.addr, kgo.SeedBrokers(seeds(rest)...))
	earliest(t, cl, group)

	l := &shareLog{deliveries: map[int]int{}, accepted: map[int]int{}}
	stop := l.consume(t, nodes, group, topic, 2)
	defer stop()
	produceRange(t, cl, topic, 0, 50)
	waitPersisted(t, l, x, group, id, 50)

	x.p.kill()
	// Produced at once, the records are acknowledged before Y's metadata
	// has X gone: their first writes go to X and break.
	produceRange(t, cl, topic, 50, 100)
	var next *clusterNode
	waitUntil(t, 30*time.Second, "a new leader of __share_group_state", func() (bool, string) {
		m, err := metadataOf(y.addr, "__share_group_state")
		if err != nil {
			return false, err.Error()
		}
		if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
			return false, fmt.Sprintf("%+v", m.Topics)
		}
		leader := m.Topics[0].Partitions[0].Leader
		for _, n := range rest {
			if n.id == leader {
				next = n
				return true, ""
			}
		}
		return false, fmt.Sprintf("leader %d", leader)
	})
	waitPersisted(t, l, next, group, id, 100)
	stop()
	l.check(t, 100)
}
