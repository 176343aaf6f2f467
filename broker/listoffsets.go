package broker

// ListOffsets.
//
// Each partition is answered on its own; a partition named twice in one
// request gets INVALID_REQUEST (KafkaApis does the same). An unknown topic or
// partition gets UNKNOWN_TOPIC_OR_PARTITION; a CurrentLeaderEpoch (v4+) other
// than -1 must equal the partition's epoch: older is FENCED_LEADER_EPOCH,
// newer is UNKNOWN_LEADER_EPOCH; then only the partition's leader answers
// (NOT_LEADER_OR_FOLLOWER elsewhere), except to the debug id (ReplicaID
// -2), as Kafka's fetchOnlyFromLeader. Then, by Timestamp:
//
//   - -2 earliest and -4 earliest local (v8+): the log start offset. With no
//     tiered storage the local log starts where the log does.
//   - -1 latest: the high watermark for read_uncommitted, the last stable
//     offset for read_committed (v2+ IsolationLevel 1). A request from a
//     replica or the debug id (ReplicaID != -1) gets the log end offset, as
//     in Kafka. Timestamp lookups are bounded the same way.
//   - -5 latest tiered (v9+) and -6 earliest pending upload (v11,
//     KIP-1023): offset -1 and epoch -1, Kafka's answer when remote storage
//     is disabled.
//   - -3 max timestamp (v7+): the first record carrying the largest timestamp.
//   - anything else: the first record whose timestamp is >= Timestamp.
//
// Timestamp is -1 in the earliest and latest answers. A lookup that finds
// nothing, or finds a record at or past the last offset the client may fetch,
// answers offset -1 and timestamp -1 with no error, as Kafka does.
// TimeoutMillis (v10) bounds remote-storage lookups in Kafka and is ignored.
//
// Difference from Kafka: LeaderEpoch (v4+) is the partition's current epoch
// in every answer, where Kafka reports the epoch of the batch found for the
// earliest and timestamp lookups. Storage has no offset-to-epoch lookup, and
// a single broker leads every partition at one epoch, so the two agree until
// leader epochs change.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

// registerListOffsets serves ListOffsets; its versions are here and nowhere else.
func registerListOffsets(r *registry) { r.add(kmsg.ListOffsets, 1, 11, handleListOffsets) }

// ListOffsets special timestamps (Kafka's ListOffsetsRequest constants).
const (
	latestTimestamp        = -1
	earliestTimestamp      = -2
	maxTimestamp           = -3
	earliestLocalTimestamp = -4
	latestTieredTimestamp  = -5
	earliestPendingUpload  = -6
)

// consumerReplicaID is the ReplicaID of requests sent by clients, as opposed
// to followers (their broker id) or debugging tools (debugReplicaID).
const (
	consumerReplicaID = -1
	debugReplicaID    = -2
)

func handleListOffsets(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ListOffsetsRequest)
	type topicPartition struct {
		topic     string
		partition int32
	}
	named := make(map[topicPartition]int)
	names := make([]string, len(r.Topics))
	for i, rt := range r.Topics {
		names[i] = rt.Topic
		for _, rp := range rt.Partitions {
			named[topicPartition{rt.Topic, rp.Partition}]++
		}
	}
	allowed := rc.authorizedTopics(OpDescribe, names)
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			t := b.logs.Topic(rt.Topic)
			switch p := lookupPartition(t, rp.Partition); {
			case !allowed[rt.Topic]:
				sp.ErrorCode, sp.Timestamp, sp.Offset = kerr.TopicAuthorizationFailed.Code, -1, -1
			case named[topicPartition{rt.Topic, rp.Partition}] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case p == nil:
				sp.ErrorCode = missingPartition(t, rp.Partition).Code
			default:
				b.listOffset(p, rp, r.ReplicaID, r.IsolationLevel == 1, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// listOffset answers one partition; sp starts with Kafka's "not found"
// values (offset, timestamp and epoch -1). Only the leader answers, except
// to the debug id, as Kafka's fetchOnlyFromLeader.
func (b *services) listOffset(p *storage.Partition, rp kmsg.ListOffsetsRequestTopicPartition, replicaID int32, readCommitted bool, sp *kmsg.ListOffsetsResponseTopicPartition) {
	fromClient := replicaID == consumerReplicaID
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		sp.ErrorCode = b.errorCode(kmsg.ListOffsets, err)
		return
	}
	if replicaID != debugReplicaID {
		if _, err := b.replicas.Partition(p); err != nil {
			sp.ErrorCode = b.errorCode(kmsg.ListOffsets, err)
			return
		}
	}
	epoch := p.LeaderEpoch()
	l := p.Log
	lastFetchable := l.LogEndOffset()
	switch {
	case fromClient && readCommitted:
		lastFetchable = l.LastStableOffset()
	case fromClient:
		lastFetchable = l.HighWatermark()
	}
	switch rp.Timestamp {
	case earliestTimestamp, earliestLocalTimestamp:
		sp.Offset, sp.LeaderEpoch = l.LogStartOffset(), epoch
	case latestTimestamp:
		sp.Offset, sp.LeaderEpoch = lastFetchable, epoch
	case latestTieredTimestamp, earliestPendingUpload:
		// The defaults already say "none": offset -1, epoch -1.
	default:
		var (
			offset, ts int64
			ok         bool
		)
		if rp.Timestamp == maxTimestamp {
			offset, ts = l.MaxTimestamp()
			ok = offset >= 0
		} else {
			offset, ts, ok = l.OffsetForTimestamp(rp.Timestamp)
		}
		if ok && offset < lastFetchable {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = offset, ts, epoch
		}
	}
}
