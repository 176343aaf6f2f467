package main

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeQuorumRequest(version int16, topic string, partition int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(version)
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// describeQuorum is addr's answer for __cluster_metadata-0 at version.
func describeQuorum(addr string, version int16) (*kmsg.DescribeQuorumResponse, *kmsg.DescribeQuorumResponseTopicPartition, error) {
	resp, err := request(addr, describeQuorumRequest(version, "__cluster_metadata", 0))
	if err != nil {
		return nil, nil, err
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return r, nil, fmt.Errorf("error %v, %d topics", kerr.ErrorForCode(r.ErrorCode), len(r.Topics))
	}
	return r, &r.Topics[0].Partitions[0], nil
}

var controllerListenerProp = regexp.MustCompile(`CONTROLLER://([0-9.]+:[0-9]+)`)

// controllerAddr is node n's controller listener, from its properties.
func controllerAddr(t *testing.T, n *clusterNode) string {
	t.Helper()
	props, err := os.ReadFile(n.props)
	if err != nil {
		t.Fatal(err)
	}
	m := controllerListenerProp.FindSubmatch(props)
	if m == nil {
		t.Fatalf("no CONTROLLER listener in %s", n.props)
	}
	return string(m[1])
}

// TestClusterDescribeQuorum: every node's client listener answers
// DescribeQuorum with the active controller's view (the brokers forward
// it): the leader, its epoch and high watermark, each voter's log end
// offset and fetch times (no lag and fetching now once idle), and at v2
// each voter's controller endpoint.
// Another partition is UNKNOWN_TOPIC_OR_PARTITION, and a controller that
// does not lead answers NOT_LEADER_OR_FOLLOWER on its controller listener.
// A single node does not advertise the key.
func TestClusterDescribeQuorum(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	leader := activeController(t, nodes)
	start := time.Now()
	for _, n := range nodes {
		waitUntil(t, 15*time.Second, fmt.Sprintf("node %d describes the quorum", n.id), func() (bool, string) {
			_, p, err := describeQuorum(n.addr, 1)
			if err != nil {
				return false, err.Error()
			}
			if p.ErrorCode != 0 || p.LeaderID != leader.id || p.LeaderEpoch < 1 || p.HighWatermark < 1 {
				return false, fmt.Sprintf("error %v, leader %d epoch %d high watermark %d", kerr.ErrorForCode(p.ErrorCode), p.LeaderID, p.LeaderEpoch, p.HighWatermark)
			}
			var ids []int32
			for _, v := range p.CurrentVoters {
				ids = append(ids, v.ReplicaID)
				switch {
				case v.ReplicaID == leader.id && v.LogEndOffset < p.HighWatermark:
					return false, fmt.Sprintf("the leader's log end offset %d is below the high watermark %d", v.LogEndOffset, p.HighWatermark)
				case v.ReplicaID != leader.id && (v.LogEndOffset < 1 || v.LogEndOffset > p.HighWatermark):
					return false, fmt.Sprintf("voter %d's log end offset %d is not in 1..%d", v.ReplicaID, v.LogEndOffset, p.HighWatermark)
				case v.LastFetchTimestamp < start.UnixMilli() || v.LastCaughtUpTimestamp < start.UnixMilli() || v.LastFetchTimestamp > time.Now().UnixMilli():
					return false, fmt.Sprintf("voter %d: last fetch %d, last caught up %d, the test started at %d", v.ReplicaID, v.LastFetchTimestamp, v.LastCaughtUpTimestamp, start.UnixMilli())
				}
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []int32{1, 2, 3}) || len(p.Observers) != 0 {
				return false, fmt.Sprintf("voters %v, %d observers", ids, len(p.Observers))
			}
			return true, ""
		})
	}

	// Idle, every follower has the leader's whole log (no lag), fetched
	// (answered the leader's AppendEntries) within the last second and so
	// caught up: Kafka's figures for a quiet quorum.
	waitUntil(t, 15*time.Second, "every voter caught up, fetching now", func() (bool, string) {
		_, p, err := describeQuorum(leader.addr, 1)
		if err != nil {
			return false, err.Error()
		}
		var leaderEnd int64
		for _, v := range p.CurrentVoters {
			if v.ReplicaID == leader.id {
				leaderEnd = v.LogEndOffset
			}
		}
		now := time.Now().UnixMilli()
		for _, v := range p.CurrentVoters {
			if v.LogEndOffset != leaderEnd || now-v.LastFetchTimestamp > 1000 || v.LastCaughtUpTimestamp != v.LastFetchTimestamp {
				return false, fmt.Sprintf("voter %d: log end offset %d (the leader's %d), last fetch %d ms ago, last caught up %d ms ago",
					v.ReplicaID, v.LogEndOffset, leaderEnd, now-v.LastFetchTimestamp, now-v.LastCaughtUpTimestamp)
			}
		}
		t.Logf("now %d high watermark %d, voters %+v", now, p.HighWatermark, p.CurrentVoters)
		return true, ""
	})

	r, _, err := describeQuorum(nodes[0].addr, 2)
	if err != nil {
		t.Fatal(err)
	}
	endpoints := map[int32]string{}
	for _, node := range r.Nodes {
		for _, l := range node.Listeners {
			endpoints[node.NodeID] += fmt.Sprintf("%s://%s", l.Name, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
		}
	}
	for _, n := range nodes {
		if want := "CONTROLLER://" + controllerAddr(t, n); endpoints[n.id] != want {
			t.Errorf("v2 Nodes: node %d's endpoint %q, want %q", n.id, endpoints[n.id], want)
		}
	}

	resp, err := request(nodes[1].addr, describeQuorumRequest(1, "__cluster_metadata", 1))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.DescribeQuorumResponse); len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("__cluster_metadata-1: %+v, want UNKNOWN_TOPIC_OR_PARTITION", r)
	}

	for _, n := range nodes {
		if n == leader {
			continue
		}
		_, p, err := describeQuorum(controllerAddr(t, n), 2)
		if err != nil {
			t.Fatalf("node %d's controller listener: %v", n.id, err)
		}
		if p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("node %d's controller listener, not the leader: %v, want NOT_LEADER_OR_FOLLOWER", n.id, kerr.ErrorForCode(p.ErrorCode))
		}
	}

	single := startBroker(t, "")
	vresp, err := request(single.addr, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range vresp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == int16(kmsg.DescribeQuorum) {
			t.Errorf("a single node advertises DescribeQuorum %d-%d", k.MinVersion, k.MaxVersion)
		}
	}
}
