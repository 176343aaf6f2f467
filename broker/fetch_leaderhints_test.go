package broker

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// consumerFetch sends a consumer's Fetch of topic-0 at version (v13+: by
// topic id) from rack to node, at fetchOffset with currentEpoch (-1:
// none), waiting up to fetchWait for a record, and returns the response.
func consumerFetch(t *testing.T, c *testCluster, node int32, version int16, topic, rack string, fetchOffset int64, currentEpoch int32) *kmsg.FetchResponse {
	t.Helper()
	conn, err := net.Dial("tcp", c.brokers[node-1].Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID, req.ReplicaState.ID = -1, -1
	req.MaxBytes, req.SessionEpoch, req.Rack = 1<<20, finalFetchEpoch, rack
	req.MaxWaitMillis, req.MinBytes = int32(fetchWait.Milliseconds()), 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, c.store.Image().Topics.ByName(topic).ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = fetchOffset, currentEpoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if err := conn.SetDeadline(time.Now().Add(fetchWait + 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	frame, err := protocol.ReadFrame(conn, 64<<20, nil)
	if err != nil {
		t.Fatalf("fetch v%d from node %d: %v", version, node, err)
	}
	body := frame[4:] // the correlation id
	if protocol.FlexibleResponseHeader(req.Key(), version) {
		body = body[1:] // no header tags
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode fetch v%d from node %d: %v", version, node, err)
	}
	return resp
}

const fetchWait = 2 * time.Second

// TestFetchNamesTheLeader checks KIP-951 in Fetch as Kafka's
// handleFetchRequest: from v16 a partition answered NOT_LEADER_OR_FOLLOWER
// (a consumer at a broker that is not a replica) or FENCED_LEADER_EPOCH
// (an older leader epoch) carries its current leader and epoch, and the
// response that leader's endpoint and rack; at v15 neither a consumer's
// fetch nor a follower's at a follower carries them.
func TestFetchNamesTheLeader(t *testing.T) {
	c := startTestCluster(t, 3, func(cfg *Config) { cfg.Cluster.Rack = "r" + strconv.Itoa(int(cfg.NodeID)) })
	c.createTopic(t, "a", [][]int32{{1, 2}})
	c.moveLeader(t, "a", 0, 2, nil) // epoch 1, leader 2
	waitUntil(t, 10*time.Second, func() (bool, string) {
		_, ok := c.brokers[1].replicas.Leader(c.hosted(t, 2, "a", 0))
		return ok, "node 2 does not lead a-0 yet"
	})
	leader := c.brokers[1].Addr().(*net.TCPAddr)
	for _, tc := range []struct {
		name    string
		node    int32
		epoch   int32
		version int16
		want    *kerr.Error
	}{
		{"a consumer at a broker that is not a replica", 3, -1, 17, kerr.NotLeaderForPartition},
		{"a consumer at v16", 3, -1, 16, kerr.NotLeaderForPartition},
		{"a consumer at an older leader epoch", 1, 0, 17, kerr.FencedLeaderEpoch},
	} {
		resp := consumerFetch(t, c, tc.node, tc.version, "a", "", 0, tc.epoch)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != tc.want.Code || p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 1 || len(resp.Brokers) != 1 ||
			resp.Brokers[0].NodeID != 2 || resp.Brokers[0].Host != leader.IP.String() || int(resp.Brokers[0].Port) != leader.Port ||
			resp.Brokers[0].Rack == nil || *resp.Brokers[0].Rack != "r2" {
			t.Errorf("%s (v%d): %v, current leader %+v, nodes %+v; want %v naming leader 2 at epoch 1 at %v in r2",
				tc.name, tc.version, kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader, resp.Brokers, tc.want, leader)
		}
	}
	if p := replicaFetch(t, c, 1, 3, "a", 0, -1, -1); p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != -1 {
		t.Errorf("a follower's fetch (v15) at a follower: %v, current leader %+v; want NOT_LEADER_OR_FOLLOWER and no leader (v16+ only)",
			kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader)
	}
	resp := consumerFetch(t, c, 3, 15, "a", "", 0, -1)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != -1 || len(resp.Brokers) != 0 {
		t.Errorf("a consumer at v15: %v, current leader %+v, nodes %+v; want NOT_LEADER_OR_FOLLOWER alone", kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader, resp.Brokers)
	}
}
