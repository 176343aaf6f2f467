package broker

// CreatePartitions.
//
// As in the KRaft controller (ControllerApis.createPartitions and
// ReplicationControlManager.createPartitions), with its messages: a topic
// named twice in one request gets INVALID_REQUEST "Duplicate topic name."
// once, after the other results; an unknown topic gets
// UNKNOWN_TOPIC_OR_PARTITION; a Count equal to or below the current count is
// INVALID_PARTITIONS; an Assignment, when given, must list exactly the added
// partitions, each a list of registered brokers as long as the topic's
// replication factor (on one node, [node.id]), else
// INVALID_REPLICA_ASSIGNMENT; without one the new partitions are placed as
// a new topic's (placement.go). ValidateOnly runs every check and adds
// nothing. The added partitions are charged to the client's
// controller_mutation_rate, validate-only too (mutationquota.go).
//
// Partitions are added locally before the response, so TimeoutMillis is
// ignored.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerCreatePartitions serves CreatePartitions; its versions are here and nowhere else.
func registerCreatePartitions(r *registry) {
	r.add(kmsg.CreatePartitions, 0, 3, handleCreatePartitions)
}

func handleCreatePartitions(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	count := make(map[string]int, len(r.Topics))
	for _, t := range r.Topics {
		count[t.Topic]++
	}
	resp := kmsg.NewPtrCreatePartitionsResponse()
	quota := rc.mutationQuota(strictCreatePartitions)
	var dups []kmsg.CreatePartitionsResponseTopic
	for _, t := range r.Topics {
		switch n := count[t.Topic]; {
		case n > 1:
			dups = append(dups, createPartitionsFailed(t.Topic, kerr.InvalidRequest.Code, "Duplicate topic name."))
			count[t.Topic] = -1 // report it once
		case n == 1 && !rc.authorize(OpAlter, ResourceTopic, t.Topic):
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
		case n == 1:
			resp.Topics = append(resp.Topics, b.createPartitions(t, r.ValidateOnly, &quota))
		}
	}
	resp.Topics = append(resp.Topics, dups...)
	resp.ThrottleMillis = quota.throttle()
	return resp, nil
}

// createPartitions adds t's partitions, or with validateOnly checks them,
// charged to quota once the count is known good, before the assignment's
// brokers are checked, in Kafka's order.
func (b *services) createPartitions(t kmsg.CreatePartitionsRequestTopic, validateOnly bool, quota *mutationQuota) kmsg.CreatePartitionsResponseTopic {
	topic := b.meta.Image().Topics.ByName(t.Topic)
	if topic == nil {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = t.Topic
		st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return st
	}
	current := int32(len(topic.Partitions))
	switch {
	case t.Count == current:
		return createPartitionsFailed(t.Topic, kerr.InvalidPartitions.Code,
			fmt.Sprintf("Topic already has %d partition(s).", current))
	case t.Count < current:
		return createPartitionsFailed(t.Topic, kerr.InvalidPartitions.Code,
			fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, current, t.Count))
	}
	added := t.Count - current
	if t.Assignment != nil && int64(len(t.Assignment)) != int64(added) {
		return createPartitionsFailed(t.Topic, kerr.InvalidReplicaAssignment.Code,
			fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", added, len(t.Assignment)))
	}
	if !quota.allow(added) {
		return createPartitionsFailed(t.Topic, kerr.ThrottlingQuotaExceeded.Code, throttlingQuotaExceeded)
	}
	var manual [][]int32
	if t.Assignment != nil {
		for _, a := range t.Assignment {
			if msg := b.checkReplicas(a.Replicas, len(topic.Partitions[0].Replicas)); msg != "" {
				return createPartitionsFailed(t.Topic, kerr.InvalidReplicaAssignment.Code, msg)
			}
			manual = append(manual, a.Replicas)
		}
	}
	st := kmsg.NewCreatePartitionsResponseTopic()
	st.Topic = t.Topic
	if validateOnly {
		return st
	}
	if err := b.addPartitions(t.Topic, t.Count, manual); err != nil {
		st.ErrorCode = b.errorCode(kmsg.CreatePartitions, err)
		st.ErrorMessage = errorMessage(err)
	}
	return st
}

func createPartitionsFailed(name string, code int16, msg string) kmsg.CreatePartitionsResponseTopic {
	st := kmsg.NewCreatePartitionsResponseTopic()
	st.Topic = name
	st.ErrorCode = code
	st.ErrorMessage = &msg
	return st
}
