package broker

// ElectLeaders.
//
// This node is the only replica and already the leader (and preferred
// leader) of every partition, so, as Kafka answers when the preferred
// leader already leads, every named partition gets ELECTION_NOT_NEEDED,
// for preferred (0) and unclean (1) elections alike. Unknown topics or
// partitions get UNKNOWN_TOPIC_OR_PARTITION; another ElectionType is
// INVALID_REQUEST at the top level (v1+). Null Topics means every
// partition; as the KRaft controller does, partitions that need no
// election are then left out, so the answer is empty. TimeoutMillis is
// ignored.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerElectLeaders serves ElectLeaders; its versions are here and nowhere else.
func registerElectLeaders(r *registry) { r.add(kmsg.ElectLeaders, 0, 2, handleElectLeaders) }

func handleElectLeaders(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := kmsg.NewPtrElectLeadersResponse()
	if !rc.authorizeCluster(OpAlter) {
		// Kafka's ElectLeadersRequest.getErrorResponse: the error at the top
		// and on every named partition.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		msg := kerr.ClusterAuthorizationFailed.Description
		for _, rt := range r.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = p, resp.ErrorCode, &msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	if r.ElectionType != 0 && r.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	for _, rt := range r.Topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		t := b.logs.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			if lookupPartition(t, p) == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				sp.ErrorCode = kerr.ElectionNotNeeded.Code
				msg := "Leader election not needed for topic partition"
				sp.ErrorMessage = &msg
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
