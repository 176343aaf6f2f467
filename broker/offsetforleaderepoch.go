package broker

// OffsetForLeaderEpoch.
//
// Per partition: an unknown topic or partition gets
// UNKNOWN_TOPIC_OR_PARTITION; a CurrentLeaderEpoch other than -1 must equal
// the partition's epoch (older: FENCED_LEADER_EPOCH, newer:
// UNKNOWN_LEADER_EPOCH). The answer comes from the partition's leader-epoch
// cache: the largest epoch at or below the requested one, and its end offset
// (the start offset of the next epoch, or the log end offset for the latest
// one). When there is no such epoch the answer is epoch -1 and offset -1
// with no error, as Kafka's EpochEndOffset defaults.
//
// ReplicaID (v3+) tells consumers (-1) from followers; with one replica
// there are no followers, and both get the same answer.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerOffsetForLeaderEpoch serves OffsetForLeaderEpoch; its versions are here and nowhere else.
func registerOffsetForLeaderEpoch(r *registry) {
	r.add(kmsg.OffsetForLeaderEpoch, 2, 4, handleOffsetForLeaderEpoch)
}

func handleOffsetForLeaderEpoch(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	// CLUSTER_ACTION (a follower) reads every topic, else DESCRIBE on each
	// (KIP-320 consumers), as Kafka.
	cluster := rc.authorizeCluster(OpClusterAction)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		allowed := cluster || rc.authorize(OpDescribe, ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			t := b.logs.Topic(rt.Topic)
			p := lookupPartition(t, rp.Partition)
			if !allowed {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if p == nil {
				sp.ErrorCode = missingPartition(t, rp.Partition).Code
			} else if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
				sp.ErrorCode = b.errorCode(kmsg.OffsetForLeaderEpoch, err)
			} else {
				sp.LeaderEpoch, sp.EndOffset = p.Log.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
