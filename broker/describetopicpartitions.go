package broker

// DescribeTopicPartitions (KIP-966), what kafka-topics --describe and the
// admin client's describeTopics ask from Kafka 3.8 on.
//
// As Kafka's DescribeTopicPartitionsRequestHandler and
// KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse: the named
// topics, or every topic when none is named, from the cursor's topic on,
// in name order; at most ResponsePartitionLimit partitions (clamped to
// 1..2000, Kafka's max.request.partition.size.limit default) are answered,
// and NextCursor names the first partition left out. A cursor topic that is
// not among the named ones, or a negative cursor partition, is
// INVALID_REQUEST for every named topic. A topic the principal may not
// DESCRIBE is left out of an all-topics answer and is
// TOPIC_AUTHORIZATION_FAILED, without its id, at the end of the answer
// when named (the ones past the cursor are not looked at); a named topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name Kafka
// refuses) and takes none of the limit. A partition's leader is -1 when it
// is not a registered broker with the client listener, and its replicas on
// brokers that are gone, fenced or without the listener are offline.
// Strata has no eligible leader replicas (a Kafka cluster without the
// eligible.leader.replicas.version feature): both ELR lists are empty.
// Each topic described has its authorized operations, as Kafka's
// DescribeTopicPartitionsRequestHandler always computes them; a refused
// one has "not requested" (INT32_MIN).

import (
	"errors"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// registerDescribeTopicPartitions serves DescribeTopicPartitions; its versions are here and nowhere else.
func registerDescribeTopicPartitions(r *registry) {
	r.add(kmsg.DescribeTopicPartitions, 0, 0, handleDescribeTopicPartitions)
}

// maxResponsePartitions is Kafka's max.request.partition.size.limit
// default, the most partitions one answer holds.
const maxResponsePartitions = 2000

func handleDescribeTopicPartitions(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := kmsg.NewPtrDescribeTopicPartitionsResponse()
	img := b.meta.Image()
	all := len(r.Topics) == 0
	from := ""
	if r.Cursor != nil {
		from = r.Cursor.Topic
	}
	var names []string
	if all {
		for _, t := range img.Topics.All() {
			names = append(names, t.Name)
		}
	} else {
		for _, rt := range r.Topics {
			names = append(names, rt.Topic)
		}
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n < from })
	slices.Sort(names)
	names = slices.Compact(names)
	if r.Cursor != nil && (!all && !slices.Contains(names, r.Cursor.Topic) || r.Cursor.Partition < 0) {
		for _, rt := range r.Topics {
			t := kmsg.NewDescribeTopicPartitionsResponseTopic()
			t.Topic, t.ErrorCode = kmsg.StringPtr(rt.Topic), kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}

	var refused []kmsg.DescribeTopicPartitionsResponseTopic
	remaining := min(max(r.ResponsePartitionLimit, 1), maxResponsePartitions)
	for _, name := range names {
		if !rc.authorize(OpDescribe, ResourceTopic, name) {
			if !all {
				t := kmsg.NewDescribeTopicPartitionsResponseTopic()
				t.Topic, t.ErrorCode = kmsg.StringPtr(name), kerr.TopicAuthorizationFailed.Code
				t.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
				refused = append(refused, t)
			}
			continue
		}
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		ti := img.Topics.ByName(name)
		if ti == nil {
			if !all {
				resp.Topics = append(resp.Topics, unknownTopicPartitions(name))
			}
			continue
		}
		start := int32(0)
		if r.Cursor != nil && name == r.Cursor.Topic {
			start = r.Cursor.Partition
		}
		t, next := b.describeTopicPartitions(img, ti, start, remaining)
		resp.Topics = append(resp.Topics, t)
		remaining -= int32(len(t.Partitions))
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
	}
	for i := range resp.Topics {
		resp.Topics[i].AuthorizedOperations = rc.authorizedOperations(ResourceTopic, *resp.Topics[i].Topic)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}

// unknownTopicPartitions is the answer for a named topic the image does
// not have: Kafka's Topic.validate decides between the two codes.
func unknownTopicPartitions(name string) kmsg.DescribeTopicPartitionsResponseTopic {
	t := kmsg.NewDescribeTopicPartitionsResponseTopic()
	t.Topic, t.ErrorCode = kmsg.StringPtr(name), kerr.UnknownTopicOrPartition.Code
	if err := storage.ValidateTopicName(name); errors.Is(err, kerr.InvalidTopicException) {
		t.ErrorCode = kerr.InvalidTopicException.Code
	}
	t.IsInternal = storage.IsInternalTopic(name)
	t.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	return t
}

// describeTopicPartitions is ti's partitions from start on, at most limit
// of them, and the index of the first one left out (-1 when none is).
func (b *services) describeTopicPartitions(img *metadata.Image, ti *metadata.TopicImage, start, limit int32) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	t := kmsg.NewDescribeTopicPartitionsResponseTopic()
	t.Topic, t.TopicID = kmsg.StringPtr(ti.Name), ti.ID
	t.IsInternal = storage.IsInternalTopic(ti.Name)
	t.AuthorizedOperations = math.MinInt32
	t.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
	n := int32(len(ti.Partitions))
	upper := min(n, start+limit)
	next := int32(-1)
	if upper < n {
		next = upper
	}
	for i := start; i < upper; i++ {
		p := ti.Partitions[i]
		dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		dp.Partition, dp.LeaderEpoch = i, p.LeaderEpoch
		dp.LeaderID = metadata.NoLeader
		if reg, ok := img.Cluster.Broker(p.Leader); ok {
			if _, _, listens := b.endpoint(reg); listens {
				dp.LeaderID = p.Leader
			}
		}
		dp.Replicas, dp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
		dp.EligibleLeaderReplicas, dp.LastKnownELR = []int32{}, []int32{}
		dp.OfflineReplicas = []int32{}
		for _, id := range p.Replicas {
			reg, ok := img.Cluster.Broker(id)
			if _, _, listens := b.endpoint(reg); !ok || reg.Fenced || !listens {
				dp.OfflineReplicas = append(dp.OfflineReplicas, id)
			}
		}
		t.Partitions = append(t.Partitions, dp)
	}
	return t, next
}
