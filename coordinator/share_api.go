package coordinator

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator/share"
)

// The share-state requests as Kafka's ShareCoordinatorService serves them:
// a request naming no topic, a topic naming no partition, or no group id
// is answered with no results; otherwise each share-partition is one
// operation on its key's shard, and a failure of the operation (this node
// not its coordinator, loading, a failed write) is that partition's
// error, "Unable to <verb> share group state: " and the cause. The
// results keep the order of the request, a topic repeated answered once
// (Kafka's come from a hash map, in no set order).

// shareParts is a request's share-partitions, by topic in request order,
// each partition once.
type shareParts[P any] struct {
	topics [][16]byte
	parts  map[[16]byte][]P
}

func collect[T, P any](topics []T, id func(T) [16]byte, parts func(T) []P, num func(P) int32) (shareParts[P], bool) {
	out := shareParts[P]{parts: map[[16]byte][]P{}}
	for _, t := range topics {
		ps := parts(t)
		if len(ps) == 0 {
			return out, false
		}
		tid := id(t)
		if _, ok := out.parts[tid]; !ok {
			out.topics = append(out.topics, tid)
		}
		for _, p := range ps {
			replaced := false
			for i, q := range out.parts[tid] {
				if num(q) == num(p) {
					out.parts[tid][i], replaced = p, true
				}
			}
			if !replaced {
				out.parts[tid] = append(out.parts[tid], p)
			}
		}
	}
	return out, len(topics) > 0
}

// failed is the message of an operation that failed: Kafka's prefix and
// the cause.
func failed(what string, e *shareError) *string {
	msg := "Unable to " + what + ": " + e.msg
	return &msg
}

// runOp runs op on k's shard and gives the share-partition's error: the
// operation's own as it is, a failure to run or persist it (c.run) with
// Kafka's prefix for what; ok when neither happened.
func (c *ShareCoordinator) runOp(k sharePartKey, what string, op func(sm *shareStateShard, now time.Time) ([]kv, *shareError)) (code int16, msg *string, ok bool) {
	var opErr *shareError
	err := c.run(k, func(sm *shareStateShard, now time.Time) ([]kv, *shareError) {
		recs, e := op(sm, now)
		opErr = e
		return recs, e
	})
	switch {
	case opErr != nil:
		return opErr.err.Code, &opErr.msg, false
	case err != nil:
		return err.err.Code, failed(what, err), false
	}
	return 0, nil, true
}

// InitializeState serves InitializeShareGroupState.
func (c *ShareCoordinator) InitializeState(r *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	ps, ok := collect(r.Topics, func(t kmsg.InitializeShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t kmsg.InitializeShareGroupStateRequestTopic) []kmsg.InitializeShareGroupStateRequestTopicPartition {
			return t.Partitions
		},
		func(p kmsg.InitializeShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	if !ok || r.GroupID == "" {
		return resp
	}
	for _, tid := range ps.topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = tid
		for _, p := range ps.parts[tid] {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := sharePartKey{group: r.GroupID, topicID: tid, partition: p.Partition}
			rp.ErrorCode, rp.ErrorMessage, _ = c.runOp(k, "initialize share group state", func(sm *shareStateShard, now time.Time) ([]kv, *shareError) {
				return sm.initializeState(k, p.StateEpoch, p.StartOffset, now)
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ReadState serves ReadShareGroupState: the share-partition's state for
// its leader, whose epoch, when new, is recorded first.
func (c *ShareCoordinator) ReadState(r *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	ps, ok := collect(r.Topics, func(t kmsg.ReadShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t kmsg.ReadShareGroupStateRequestTopic) []kmsg.ReadShareGroupStateRequestTopicPartition {
			return t.Partitions
		},
		func(p kmsg.ReadShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	if !ok || r.GroupID == "" {
		return resp
	}
	for _, tid := range ps.topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = tid
		for _, p := range ps.parts[tid] {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := sharePartKey{group: r.GroupID, topicID: tid, partition: p.Partition}
			var st *share.Persisted
			var ok bool
			rp.ErrorCode, rp.ErrorMessage, ok = c.runOp(k, "read share group state", func(sm *shareStateShard, now time.Time) ([]kv, *shareError) {
				recs, s, e := sm.readState(k, p.LeaderEpoch, now)
				st = s
				return recs, e
			})
			if ok {
				rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
				for _, b := range st.Batches {
					rb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					rb.FirstOffset, rb.LastOffset, rb.DeliveryState, rb.DeliveryCount = b.First, b.Last, int8(b.State), b.DeliveryCount
					rp.StateBatches = append(rp.StateBatches, rb)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// WriteState serves WriteShareGroupState.
func (c *ShareCoordinator) WriteState(r *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	ps, ok := collect(r.Topics, func(t kmsg.WriteShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t kmsg.WriteShareGroupStateRequestTopic) []kmsg.WriteShareGroupStateRequestTopicPartition {
			return t.Partitions
		},
		func(p kmsg.WriteShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	if !ok || r.GroupID == "" {
		return resp
	}
	for _, tid := range ps.topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = tid
		for _, p := range ps.parts[tid] {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := sharePartKey{group: r.GroupID, topicID: tid, partition: p.Partition}
			w := writeFromRequest(&p)
			rp.ErrorCode, rp.ErrorMessage, _ = c.runOp(k, "write share group state", func(sm *shareStateShard, now time.Time) ([]kv, *shareError) {
				return sm.writeState(k, w, now)
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// DeleteState serves DeleteShareGroupState.
func (c *ShareCoordinator) DeleteState(r *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	ps, ok := collect(r.Topics, func(t kmsg.DeleteShareGroupStateRequestTopic) [16]byte { return t.TopicID },
		func(t kmsg.DeleteShareGroupStateRequestTopic) []kmsg.DeleteShareGroupStateRequestTopicPartition {
			return t.Partitions
		},
		func(p kmsg.DeleteShareGroupStateRequestTopicPartition) int32 { return p.Partition })
	if !ok || r.GroupID == "" {
		return resp
	}
	for _, tid := range ps.topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = tid
		for _, p := range ps.parts[tid] {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := sharePartKey{group: r.GroupID, topicID: tid, partition: p.Partition}
			rp.ErrorCode, rp.ErrorMessage, _ = c.runOp(k, "delete share group state", func(sm *shareStateShard, _ time.Time) ([]kv, *shareError) {
				return sm.deleteState(k)
			})
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ReadStateSummary serves ReadShareGroupStateSummary.
func (c *ShareCoordinator) ReadStateSummary(r *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	ps, ok := collect(r.Topics, func(t kmsg.ReadShareGroupStateSummaryRequestTopic) [16]byte { return t.TopicID },
		func(t kmsg.ReadShareGroupStateSummaryRequestTopic) []kmsg.ReadShareGroupStateSummaryRequestTopicPartition {
			return t.Partitions
		},
		func(p kmsg.ReadShareGroupStateSummaryRequestTopicPartition) int32 { return p.Partition })
	if !ok || r.GroupID == "" {
		return resp
	}
	for _, tid := range ps.topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = tid
		for _, p := range ps.parts[tid] {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			k := sharePartKey{group: r.GroupID, topicID: tid, partition: p.Partition}
			var sum shareSummary
			var ok bool
			rp.ErrorCode, rp.ErrorMessage, ok = c.runOp(k, "read share group state summary", func(sm *shareStateShard, _ time.Time) ([]kv, *shareError) {
				var e *shareError
				sum, e = sm.readStateSummary(k)
				return nil, e
			})
			if ok {
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = sum.stateEpoch, sum.leaderEpoch, sum.startOffset
				rp.DeliveryCompleteCount = sum.deliveryCompleteCount
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
