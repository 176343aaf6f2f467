package broker

// DeleteRecords.
//
// Each partition's log start offset moves to the requested offset (-1 =
// the high watermark) and the segments entirely below it are deleted; the
// new start is checkpointed before the answer, whose LowWatermark it is.
// An offset above the high watermark (or below -1) is OFFSET_OUT_OF_RANGE,
// an offset at or below the current start changes nothing and answers the
// current start. An unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION, a
// topic whose cleanup.policy lacks "delete" POLICY_VIOLATION, and a
// partition named twice INVALID_REQUEST; failed partitions answer
// LowWatermark -1, as in Kafka. TimeoutMillis is ignored: the deletion is
// local and done before the response.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerDeleteRecords serves DeleteRecords; its versions are here and nowhere else.
func registerDeleteRecords(r *registry) { r.add(kmsg.DeleteRecords, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	type tp struct {
		topic     string
		partition int32
	}
	named := map[tp]int{}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			named[tp{rt.Topic, rp.Partition}]++
		}
	}
	resp := kmsg.NewPtrDeleteRecordsResponse()
	for _, rt := range r.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := b.logs.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			var err error
			switch {
			case !rc.authorize(OpDelete, ResourceTopic, rt.Topic):
				err = kerr.TopicAuthorizationFailed
			case named[tp{rt.Topic, rp.Partition}] > 1:
				err = kerr.InvalidRequest
			case t != nil && t.Internal:
				err = fmt.Errorf("cannot delete records of internal topic %s: %w", rt.Topic, kerr.InvalidTopicException)
			default:
				sp.LowWatermark, err = b.logs.DeleteRecords(rt.Topic, rp.Partition, rp.Offset)
			}
			if err != nil {
				sp.LowWatermark, sp.ErrorCode = -1, b.errorCode(kmsg.DeleteRecords, err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
