package broker

// DescribeQuorum (key 55, v0-2) on a cluster node: the metadata quorum's
// leader, its epoch and high watermark, each voter's progress and each
// observer's, for __cluster_metadata partition 0, as Kafka's
// KafkaRaftClient answers it on the active controller. A broker forwards
// it there (forward.go), as KafkaApis does; a controller that does not
// lead the quorum answers NOT_LEADER_OR_FOLLOWER, and a request for any
// other partition is UNKNOWN_TOPIC_OR_PARTITION. Version 2's Nodes carry
// each voter's controller listener endpoint from the quorum's
// configuration, and no observer's, as Kafka's.
//
// Where Strata differs: the quorum is hashicorp/raft, whose leader pushes
// its log with AppendEntries where Kafka's followers fetch it. The leader
// epoch is raft's term, the high watermark the offset after raft's commit
// index (raft's log indexes are the metadata offsets, as the broker epoch
// is the index of the broker's registration), and the leader's log end
// offset the offset after its last index. A follower's log end offset is
// the offset after the last entry its log holds as the leader's raft knows
// it from its replies to AppendEntries (heartbeats included;
// quorum.Store.ReplicaProgress), its last fetch timestamp that reply's
// time, and its last caught-up timestamp follows Kafka's rule
// (LeaderState.ReplicaState.updateFollowerState) with those replies in
// place of fetches: the semantics of Kafka's fetch offset. Until a server
// replies to this leader in its term all three are -1, Kafka's "unknown".
// The observers are the raft non-voters (broker-only nodes) that replied
// in this term within Kafka's observer session timeout, as Kafka lists
// the brokers that fetch the metadata log. Static voters have no
// directory id (the zero id, as Kafka's static controller.quorum.voters).
// A single node (no quorum) does not serve DescribeQuorum: it has no
// metadata log to report on.

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata/quorum"
)

// metadataTopic is the metadata log's topic, Kafka's __cluster_metadata.
const metadataTopic = "__cluster_metadata"

// registerDescribeQuorum serves DescribeQuorum on a cluster node's client
// listener: answered by its controller while it leads the quorum, and
// forwarded to the active controller otherwise (forwarding).
func (b *Broker) registerDescribeQuorum() {
	b.apis.add(kmsg.DescribeQuorum, 0, 2, func(rc *reqCtx) (kmsg.Response, error) {
		return b.controller.handleDescribeQuorum(rc)
	})
}

// observerSessionTimeout is how long an observer that stopped fetching
// stays in the answer: Kafka's LeaderState.OBSERVER_SESSION_TIMEOUT_MS.
const observerSessionTimeout = 5 * time.Minute

func (c *controller) handleDescribeQuorum(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DescribeQuorumRequest)
	resp := kmsg.NewPtrDescribeQuorumResponse()
	if !rc.authorizeCluster(OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if len(r.Topics) != 1 || r.Topics[0].Topic != metadataTopic || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != 0 {
		for _, t := range r.Topics {
			st := kmsg.NewDescribeQuorumResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewDescribeQuorumResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	st := c.store.Status()
	replicas, err := c.store.ReplicaProgress()
	part := kmsg.NewDescribeQuorumResponseTopicPartition()
	switch {
	case err != nil:
		c.logger.Warn("cannot describe the quorum", zap.Error(err))
		part.ErrorCode = kerr.UnknownServerError.Code
	case !st.Leader:
		part.ErrorCode = kerr.NotLeaderForPartition.Code
	default:
		now := time.Now()
		part.LeaderID, part.LeaderEpoch, part.HighWatermark = c.store.NodeID(), int32(st.Term), st.CommitIndex+1
		var voters []quorum.ReplicaProgress
		for _, rp := range replicas {
			switch {
			case rp.Voter:
				voters = append(voters, rp)
				part.CurrentVoters = append(part.CurrentVoters, replicaState(rp))
			case rp.LogEnd >= 0 && now.Sub(rp.LastFetch) < observerSessionTimeout:
				part.Observers = append(part.Observers, replicaState(rp))
			}
		}
		resp.Nodes = c.voterNodes(voters)
	}
	topic := kmsg.NewDescribeQuorumResponseTopic()
	topic.Topic = metadataTopic
	topic.Partitions = append(topic.Partitions, part)
	resp.Topics = append(resp.Topics, topic)
	return resp, nil
}

// replicaState is r as DescribeQuorum reports it, -1 for what is not
// known.
func replicaState(r quorum.ReplicaProgress) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	rs.ReplicaID, rs.LogEndOffset = r.ID, r.LogEnd
	if !r.LastFetch.IsZero() {
		rs.LastFetchTimestamp = r.LastFetch.UnixMilli()
	}
	if !r.LastCaughtUp.IsZero() {
		rs.LastCaughtUpTimestamp = r.LastCaughtUp.UnixMilli()
	}
	return rs
}

// voterNodes are v2's Nodes: each voter's controller listener, named as
// controller.listener.names names it. Kafka lists the voters only
// (RaftUtil.singletonDescribeQuorumResponse): an observer has no
// controller listener.
func (c *controller) voterNodes(voters []quorum.ReplicaProgress) []kmsg.DescribeQuorumResponseNode {
	name, _, _ := strings.Cut(c.cfg.ControllerListener, "://")
	var nodes []kmsg.DescribeQuorumResponseNode
	for _, v := range voters {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		if host, port, err := net.SplitHostPort(v.Addr); err == nil {
			if p, err := strconv.ParseUint(port, 10, 16); err == nil {
				l := kmsg.NewDescribeQuorumResponseNodeListener()
				l.Name, l.Host, l.Port = name, host, uint16(p)
				n.Listeners = append(n.Listeners, l)
			}
		}
		nodes = append(nodes, n)
	}
	return nodes
}
