package broker

// OffsetDelete.
//
// Deletes committed offsets of a group (tombstones in __consumer_offsets)
// as Kafka's handleDeleteOffsets: any offsets of an Empty group; for a
// consumer group with members only those of topics no member subscribes to
// (GROUP_SUBSCRIBED_TO_TOPIC for the others); NON_EMPTY_GROUP for another
// protocol type with members; GROUP_ID_NOT_FOUND for an unknown group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerOffsetDelete serves OffsetDelete; its versions are here and nowhere else.
func registerOffsetDelete(r *registry) { r.add(kmsg.OffsetDelete, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	resp := kmsg.NewPtrOffsetDeleteResponse()
	if !rc.authorize(OpDelete, ResourceGroup, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	names := make([]string, len(r.Topics))
	for i, t := range r.Topics {
		names[i] = t.Topic
	}
	allowed := rc.authorizedTopics(OpRead, names)
	var topics []coordinator.TopicPartitions
	var denied []coordinator.PartitionError // answered first, as Kafka's response builder
	for _, t := range r.Topics {
		tp := coordinator.TopicPartitions{Topic: t.Topic}
		for _, p := range t.Partitions {
			if !allowed[t.Topic] {
				denied = append(denied, coordinator.PartitionError{Topic: t.Topic, Partition: p.Partition, Err: kerr.TopicAuthorizationFailed})
				continue
			}
			tp.Partitions = append(tp.Partitions, p.Partition)
		}
		if allowed[t.Topic] {
			topics = append(topics, tp)
		}
	}
	groupErr, results := b.groups.DeleteOffsets(r.Group, topics)
	if groupErr != nil {
		resp.ErrorCode = groupErr.Code
		return resp, nil
	}
	results = append(denied, results...)
	for _, pe := range results {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != pe.Topic {
			t := kmsg.NewOffsetDeleteResponseTopic()
			t.Topic = pe.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewOffsetDeleteResponseTopicPartition()
		p.Partition, p.ErrorCode = pe.Partition, errCode(pe.Err)
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	return resp, nil
}
