package broker

// DescribeProducers (KIP-664, what `kafka-transactions describe-producers`
// sends).
//
// Each partition's active producers from its log's producer state, as
// Kafka's handleDescribeProducersRequest and UnifiedLog.activeProducers:
// producer id and epoch, the last sequence of its last batch (-1 when its
// epoch has none), the max timestamp of its last batch or marker, the
// coordinator epoch of its last marker and the first offset of its open
// transaction (-1 when none). A topic is checked whole first: an
// invalid name is INVALID_TOPIC_EXCEPTION, no READ on it
// TOPIC_AUTHORIZATION_FAILED, a topic the metadata does not know
// UNKNOWN_TOPIC_OR_PARTITION, each for every partition asked and with
// Kafka's message (ApiError falls back to the error's own); then a partition
// this node holds no replica of is NOT_LEADER_OR_FOLLOWER when it exists,
// else UNKNOWN_TOPIC_OR_PARTITION, without a message. Followers answer from
// their own replica, as Kafka's do.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

// registerDescribeProducers serves DescribeProducers; its versions are here and nowhere else.
func registerDescribeProducers(r *registry) {
	r.add(kmsg.DescribeProducers, 0, 0, handleDescribeProducers)
}

func handleDescribeProducers(rc *reqCtx) (kmsg.Response, error) {
	b := rc.svc
	r := rc.req.Body.(*kmsg.DescribeProducersRequest)
	resp := kmsg.NewPtrDescribeProducersResponse()
	img := b.meta.Image()
	for _, rt := range r.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var topicErr *kerr.Error
		var topicMsg *string
		if err := storage.ValidateTopicName(rt.Topic); err != nil {
			topicErr, topicMsg = kerr.InvalidTopicException, errorMessage(err)
		} else if !rc.authorize(OpRead, ResourceTopic, rt.Topic) {
			topicErr = kerr.TopicAuthorizationFailed
		} else if img.Topics.ByName(rt.Topic) == nil {
			topicErr = kerr.UnknownTopicOrPartition
		}
		if topicErr != nil && topicMsg == nil {
			topicMsg = kmsg.StringPtr(topicErr.Description)
		}
		t := b.logs.Topic(rt.Topic)
		ti := img.Topics.ByName(rt.Topic)
		for _, i := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = i
			p := lookupPartition(t, i)
			switch {
			case topicErr != nil:
				sp.ErrorCode, sp.ErrorMessage = topicErr.Code, topicMsg
			case p == nil || !replicaOf(ti, i, b.cfg.NodeID):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if _, exists := ti.Partition(i); exists {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
			default:
				for _, ap := range p.Log.ActiveProducers() {
					sp.ActiveProducers = append(sp.ActiveProducers, kmsg.DescribeProducersResponseTopicPartitionActiveProducer{
						ProducerID: ap.ProducerID, ProducerEpoch: int32(ap.ProducerEpoch), LastSequence: ap.LastSequence,
						LastTimestamp: ap.LastTimestamp, CoordinatorEpoch: ap.CoordinatorEpoch,
						CurrentTxnStartOffset: ap.CurrentTxnStartOffset,
					})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
