package broker

// DescribeQuorum (key 55, v0-2) on a cluster node: the metadata quorum's
// leader, its epoch and high watermark, and each voter's progress, for
// __cluster_metadata partition 0, as Kafka's KafkaRaftClient answers it
// on the active controller. A broker forwards it there (forward.go), as
// KafkaApis does; a controller that does not lead the quorum answers
// NOT_LEADER_OR_FOLLOWER, and a request for any other partition is
// UNKNOWN_TOPIC_OR_PARTITION. Version 2's Nodes carry each voter's
// controller listener endpoint from the quorum's configuration.
//
// Where Strata differs: the quorum is hashicorp/raft, which does not tell
// its leader how far each follower's log reaches. The leader epoch is
// raft's term, the high watermark the offset after raft's commit index
// (raft's log indexes are the metadata offsets, as the broker epoch is the
// index of the broker's registration), and the leader's log end offset the
// offset after its last index. A follower's log end offset is the offset
// after the metadata offset it had applied at its last BrokerHeartbeat to
// this controller (CurrentMetadataOffset), its last fetch timestamp that
// heartbeat's time, and its last caught-up timestamp follows Kafka's rule
// (LeaderState.ReplicaState.updateFollowerState) with heartbeats in place
// of fetches. Until a voter heartbeats to this controller in its term all
// three are -1, Kafka's "unknown". Kafka's follower reports the end of the
// log it fetched, which may be ahead of what it applied, so Strata's lag
// reads larger, never smaller. Static voters have no directory id (the
// zero id, as Kafka's static controller.quorum.voters). Strata has no
// observers: every node is a voter. A single node (no quorum) does not
// serve DescribeQuorum: it has no metadata log to report on.

import (
	"net"
	"strconv"
	"strings"
	"sync"
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

// voterProgress is what the active controller knows of one voter's
// metadata log, from its heartbeats in one term.
type voterProgress struct {
	term         uint64
	logEnd       int64 // the offset after the one it had applied
	lastFetch    time.Time
	lastCaughtUp time.Time // zero: never caught up in this term
	// fetchLeaderEnd is the leader's log end offset at lastFetch.
	fetchLeaderEnd int64
}

// quorumProgress is every voter's progress as heartbeats report it.
type quorumProgress struct {
	mu     sync.Mutex
	voters map[int32]*voterProgress
}

// heartbeat records that broker id had applied the metadata offset
// applied at now, when this controller's log ended at leaderEnd in term.
func (p *quorumProgress) heartbeat(id int32, applied int64, term uint64, leaderEnd int64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.voters == nil {
		p.voters = map[int32]*voterProgress{}
	}
	v := p.voters[id]
	if v == nil || v.term != term {
		v = &voterProgress{term: term}
		p.voters[id] = v
	}
	logEnd := applied + 1
	switch {
	case logEnd >= leaderEnd:
		v.lastCaughtUp = now
	case v.fetchLeaderEnd > 0 && logEnd >= v.fetchLeaderEnd && v.lastFetch.After(v.lastCaughtUp):
		v.lastCaughtUp = v.lastFetch
	}
	v.logEnd, v.lastFetch, v.fetchLeaderEnd = logEnd, now, leaderEnd
}

// of is voter id's progress in term, nil when it has none.
func (p *quorumProgress) of(id int32, term uint64) *voterProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v := p.voters[id]; v != nil && v.term == term {
		c := *v
		return &c
	}
	return nil
}

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
	voters, err := c.store.CurrentVoters()
	part := kmsg.NewDescribeQuorumResponseTopicPartition()
	switch {
	case err != nil:
		c.logger.Warn("cannot describe the quorum", zap.Error(err))
		part.ErrorCode = kerr.UnknownServerError.Code
	case !st.Leader:
		part.ErrorCode = kerr.NotLeaderForPartition.Code
	default:
		c.describeQuorum(&part, st, voters, time.Now())
		resp.Nodes = c.voterNodes(voters)
	}
	topic := kmsg.NewDescribeQuorumResponseTopic()
	topic.Topic = metadataTopic
	topic.Partitions = append(topic.Partitions, part)
	resp.Topics = append(resp.Topics, topic)
	return resp, nil
}

// describeQuorum fills part from this leader's status and its voters'
// progress.
func (c *controller) describeQuorum(part *kmsg.DescribeQuorumResponseTopicPartition, st quorum.Status, voters []quorum.Voter, now time.Time) {
	self := c.store.NodeID()
	part.LeaderID, part.LeaderEpoch, part.HighWatermark = self, int32(st.Term), st.CommitIndex+1
	for _, v := range voters {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset = v.ID, -1
		switch p := c.progress.of(v.ID, st.Term); {
		case v.ID == self:
			rs.LogEndOffset = st.LastIndex + 1
			rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = now.UnixMilli(), now.UnixMilli()
		case p != nil:
			rs.LogEndOffset, rs.LastFetchTimestamp = p.logEnd, p.lastFetch.UnixMilli()
			if !p.lastCaughtUp.IsZero() {
				rs.LastCaughtUpTimestamp = p.lastCaughtUp.UnixMilli()
			}
		}
		part.CurrentVoters = append(part.CurrentVoters, rs)
	}
}

// voterNodes are v2's Nodes: each voter's controller listener, named as
// controller.listener.names names it.
func (c *controller) voterNodes(voters []quorum.Voter) []kmsg.DescribeQuorumResponseNode {
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
