package broker

// InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
// DeleteShareGroupState and ReadShareGroupStateSummary (KIP-932).
//
// The share coordinator's requests, which share-partition leaders send to
// the leader of the __share_group_state partition their key hashes to
// (FindCoordinator key type 2), answered by the share coordinator
// (coordinator/share_driver.go) as Kafka's KafkaApis hands them to its
// ShareCoordinatorService: CLUSTER_ACTION on the cluster, else every
// share-partition of the request is CLUSTER_AUTHORIZATION_FAILED with
// Kafka's message; each share-partition is answered by its key's shard
// once what it wrote is durable. Like Kafka's they are served whatever
// share.version is finalized. Kafka 4.4's versions: Write and
// ReadSummary v0-1 (v1: KIP-1226's delivery-complete count), the others
// v0. As in Kafka, the answer lists the request's topics in no set order
// (Strata: the request's), each once.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerShareGroupState serves the share-state requests; their versions
// are here and nowhere else.
func registerShareGroupState(r *registry) {
	r.add(kmsg.InitializeShareGroupState, 0, 0, handleInitializeShareGroupState)
	r.add(kmsg.ReadShareGroupState, 0, 0, handleReadShareGroupState)
	r.add(kmsg.WriteShareGroupState, 0, 1, handleWriteShareGroupState)
	r.add(kmsg.DeleteShareGroupState, 0, 0, handleDeleteShareGroupState)
	r.add(kmsg.ReadShareGroupStateSummary, 0, 1, handleReadShareGroupStateSummary)
}

// clusterRefused is Kafka's toGlobalErrorResponse code and message.
func clusterRefused() (int16, *string) {
	msg := kerr.ClusterAuthorizationFailed.Description
	return kerr.ClusterAuthorizationFailed.Code, &msg
}

func handleInitializeShareGroupState(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.InitializeShareGroupStateRequest)
	if rc.authorizeCluster(OpClusterAction) {
		return rc.svc.shares.InitializeState(r), nil
	}
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = clusterRefused()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func handleReadShareGroupState(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ReadShareGroupStateRequest)
	if rc.authorizeCluster(OpClusterAction) {
		return rc.svc.shares.ReadState(r), nil
	}
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = clusterRefused()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func handleWriteShareGroupState(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.WriteShareGroupStateRequest)
	if rc.authorizeCluster(OpClusterAction) {
		return rc.svc.shares.WriteState(r), nil
	}
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = clusterRefused()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func handleDeleteShareGroupState(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DeleteShareGroupStateRequest)
	if rc.authorizeCluster(OpClusterAction) {
		return rc.svc.shares.DeleteState(r), nil
	}
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = clusterRefused()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func handleReadShareGroupStateSummary(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ReadShareGroupStateSummaryRequest)
	if rc.authorizeCluster(OpClusterAction) {
		return rc.svc.shares.ReadStateSummary(r), nil
	}
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = clusterRefused()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
