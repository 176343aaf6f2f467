package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterShareDeadLettersToAnotherNode: on a 3-node cluster a share
// group's dead-letter topic is led by another node than its source
// partition (src on A, dlq.remote on B); the rejected and the poison
// record's dead letters are produced to B, as Kafka's DLQ sends its
// Produce to the partition's leader, with Kafka's headers.
func TestClusterShareDeadLettersToAnotherNode(t *testing.T) {
	e2e(t)
	nodes, _ := shareCluster(t)
	a, b := nodes[0], nodes[1]
	for topic, leader := range map[string]*clusterNode{"src": a, "dlq.remote": b} {
		if resp, err := createAssigned(a.addr, topic, [][]int32{{leader.id}}); err != nil || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s: %v %+v", topic, err, resp)
		}
		for _, n := range nodes {
			waitLeader(t, n, topic, leader.id, 1)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, a.addr, kgo.SeedBrokers(seeds(nodes)...))
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range []struct {
		typ     kmsg.ConfigResourceType
		name    string
		configs map[string]string
	}{
		{kmsg.ConfigResourceTypeTopic, "dlq.remote", map[string]string{"errors.deadletterqueue.group.enable": "true"}},
		{kmsg.ConfigResourceTypeGroupConfig, "g-remote", map[string]string{"errors.deadletterqueue.topic.name": "dlq.remote",
			"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2"}},
	} {
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = r.typ, r.name
		for k, v := range r.configs {
			res.Configs = append(res.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: k, Value: kmsg.StringPtr(v)})
		}
		alter.Resources = append(alter.Resources, res)
	}
	ar, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ar.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("configs of %s: %+v", r.ResourceName, r)
		}
	}
	var recs []*kgo.Record
	for _, v := range []string{"ok", "bad", "poison"} {
		recs = append(recs, &kgo.Record{Topic: "src", Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	shareDLQRun(t, ctx, a.addr, "g-remote")
	got := readDeadLetters(t, ctx, b.addr, "dlq.remote", 2)
	want := []string{
		`dlq.remote/0@0 key=null value=null headers=[__dlq.errors.topic="src" __dlq.errors.partition="0" __dlq.errors.offset="1" __dlq.errors.group="g-remote" __dlq.errors.delivery.count="1" __dlq.errors.message="Offset rejected by client."]`,
		`dlq.remote/0@1 key=null value=null headers=[__dlq.errors.topic="src" __dlq.errors.partition="0" __dlq.errors.offset="2" __dlq.errors.group="g-remote" __dlq.errors.delivery.count="2" __dlq.errors.message="Offset delivery count exceeded the threshold."]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dead letters:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestClusterShareGroupOffsetsLagFromTheLeader: DescribeShareGroupOffsets
// sent to a share group's coordinator on a 3-node cluster, for a partition
// another node leads, answers the lag from that leader's latest offset:
// 10 records accepted, 5 more produced, lag 5.
func TestClusterShareGroupOffsetsLagFromTheLeader(t *testing.T) {
	e2e(t)
	nodes, x := shareCluster(t)
	const topic, group = "lagged", "g-lag"
	gc := waitCoordinator(t, nodes, 0, group)
	var leader *clusterNode
	for _, n := range nodes {
		if n != gc {
			leader = n
			break
		}
	}
	if resp, err := createAssigned(nodes[0].addr, topic, [][]int32{{leader.id}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	for _, n := range nodes {
		waitLeader(t, n, topic, leader.id, 1)
	}
	id := topicID(t, leader.addr, topic)
	cl := newClient(t, nodes[0].addr, kgo.SeedBrokers(seeds(nodes)...))
	earliest(t, cl, group)
	produceRange(t, cl, topic, 0, 10)
	l := &shareLog{deliveries: map[int]int{}, accepted: map[int]int{}}
	stop := l.consume(t, nodes, group, topic, 1)
	waitPersisted(t, l, x, group, id, 10)
	stop()
	produceRange(t, cl, topic, 10, 15)
	waitUntil(t, 30*time.Second, "lag 5", func() (bool, string) {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.SetVersion(1)
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
		resp, err := request(gc.addr, req)
		if err != nil {
			return false, err.Error()
		}
		g := resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
		if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			return false, fmt.Sprintf("%+v", g)
		}
		p := g.Topics[0].Partitions[0]
		return p.ErrorCode == 0 && p.Lag == 5, fmt.Sprintf("error %v, start offset %d, lag %d", kerr.ErrorForCode(p.ErrorCode), p.StartOffset, p.Lag)
	})
}
