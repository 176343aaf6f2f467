package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// denyDescribeAuthorizer refuses DESCRIBE on one topic and allows the rest.
type denyDescribeAuthorizer struct{ topic string }

func (a denyDescribeAuthorizer) Authorize(_, _ string, op Operation, resource ResourceType, name string) bool {
	return op != OpDescribe || resource != ResourceTopic || name != a.topic
}

// describeTopicPartitions sends one DescribeTopicPartitions through cl,
// which picks the version from the broker's ApiVersions.
func describeTopicPartitions(t *testing.T, cl *kgo.Client, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("DescribeTopicPartitions %v: %v", topics, err)
	}
	return resp
}

// pages follows NextCursor from the first answer on and returns each
// page's partitions as "topic-p" and each refused or missing topic as
// "topic:ERROR".
func pages(t *testing.T, cl *kgo.Client, limit int32, topics ...string) [][]string {
	t.Helper()
	var out [][]string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 50 {
		resp := describeTopicPartitions(t, cl, limit, cursor, topics...)
		var page []string
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				page = append(page, *rt.Topic+":"+kerr.ErrorForCode(rt.ErrorCode).(*kerr.Error).Message)
				continue
			}
			for _, p := range rt.Partitions {
				page = append(page, fmt.Sprintf("%s-%d", *rt.Topic, p.Partition))
			}
		}
		out = append(out, page)
		if resp.NextCursor == nil {
			return out
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	t.Fatalf("more than 50 pages for %v", topics)
	return nil
}

// TestDescribeTopicPartitionsPages checks DescribeTopicPartitions answers
// as Kafka's handler: the named topics in name order, at most the limit of
// partitions per answer with the cursor at the first one left out (within
// a topic and between topics), a missing topic UNKNOWN_TOPIC_OR_PARTITION
// and an invalid name INVALID_TOPIC_EXCEPTION, a topic the principal may
// not describe refused at the end when named and left out of an
// all-topics answer, and a cursor outside the named topics
// INVALID_REQUEST.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Authorizer = denyDescribeAuthorizer{topic: "secret"} })
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	for name, n := range map[string]int32{"a": 3, "b": 2, "c": 1, "secret": 1} {
		createTopic(t, adm, name, n)
	}

	got := pages(t, cl, 2, "c", "a", "b", "a")
	want := [][]string{{"a-0", "a-1"}, {"a-2", "b-0"}, {"b-1", "c-0"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("named topics by 2: %v, want %v", got, want)
	}
	if got := pages(t, cl, 5, "a", "nope", "secret", "b", "bad/name"); !slices.EqualFunc(got, [][]string{
		{"a-0", "a-1", "a-2", "b-0", "b-1"},
		{"bad/name:" + kerr.InvalidTopicException.Message, "nope:" + kerr.UnknownTopicOrPartition.Message, "secret:" + kerr.TopicAuthorizationFailed.Message},
	}, slices.Equal) {
		t.Fatalf("with a missing, an invalid and a refused topic, by 5: %v", got)
	}
	var all []string
	for _, page := range pages(t, cl, 1) {
		if len(page) != 1 {
			t.Fatalf("a page of %v with a limit of 1", page)
		}
		all = append(all, page...)
	}
	if i := slices.Index(all, "a-0"); i < 0 || !slices.Equal(all[i:i+6], []string{"a-0", "a-1", "a-2", "b-0", "b-1", "c-0"}) || slices.ContainsFunc(all, func(s string) bool { return strings.HasPrefix(s, "secret") }) {
		t.Fatalf("every topic by 1: %v", all)
	}

	resp := describeTopicPartitions(t, cl, 2000, nil, "a")
	a := resp.Topics[0]
	if a.TopicID != b.logs.Topic("a").ID || a.IsInternal || len(a.Partitions) != 3 {
		t.Fatalf("a: %+v", a)
	}
	for _, p := range a.Partitions {
		if p.ErrorCode != 0 || p.LeaderID != testNodeID || p.LeaderEpoch != 0 || !slices.Equal(p.Replicas, []int32{testNodeID}) ||
			!slices.Equal(p.ISR, []int32{testNodeID}) || len(p.EligibleLeaderReplicas) != 0 || len(p.LastKnownELR) != 0 || len(p.OfflineReplicas) != 0 {
			t.Fatalf("a-%d: %+v", p.Partition, p)
		}
	}
	for _, cursor := range []kmsg.DescribeTopicPartitionsRequestCursor{{Topic: "b"}, {Topic: "a", Partition: -1}} {
		resp := describeTopicPartitions(t, cl, 2000, &cursor, "a")
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("cursor %+v: %+v", cursor, resp.Topics)
		}
	}
}

// TestClusterDescribeTopicPartitions checks every node of a cluster
// answers DescribeTopicPartitions from the image: the leader, replicas and
// ISR, and a fenced replica offline (still the leader, as Kafka's metadata
// cache names a registered leader).
func TestClusterDescribeTopicPartitions(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	id := c.createTopic(t, "t", [][]int32{{3, 1}, {1, 2}})
	reg, _ := c.store.Image().Cluster.Broker(3)
	if _, err := c.store.Propose(metadata.RegisterBrokerRecord{BrokerID: 3, Endpoints: reg.Endpoints, Fenced: true}); err != nil {
		t.Fatal(err)
	}
	for node := int32(1); node <= 3; node++ {
		resp := describeTopicPartitions(t, newClient(t, c.brokers[node-1]), 2000, nil, "t")
		if len(resp.Topics) != 1 || resp.Topics[0].TopicID != id || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("node %d: %+v", node, resp.Topics)
		}
		p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
		if p0.LeaderID != 3 || !slices.Equal(p0.Replicas, []int32{3, 1}) || !slices.Equal(p0.ISR, []int32{3, 1}) || !slices.Equal(p0.OfflineReplicas, []int32{3}) {
			t.Fatalf("node %d: partition 0: %+v", node, p0)
		}
		if p1.LeaderID != 1 || !slices.Equal(p1.Replicas, []int32{1, 2}) || len(p1.OfflineReplicas) != 0 {
			t.Fatalf("node %d: partition 1: %+v", node, p1)
		}
	}
}
