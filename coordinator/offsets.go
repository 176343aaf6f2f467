package coordinator

import (
	"errors"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// TopicPartitions names partitions of one topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// Commit is one partition's offset to commit.
type Commit struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32   // -1 when the request has none (before v6)
	Metadata    *string // nil is stored as ""
	ExpireTime  int64   // unix ms from a v2-v4 retention time, or -1
}

// CommitRequest is an OffsetCommit for one group.
type CommitRequest struct {
	Group      string
	Generation int32 // -1: a simple commit, outside group management
	MemberID   string
	InstanceID string
	Commits    []Commit
	Version    int16 // of the OffsetCommit request; consumer-group members need v9+
}

// fill is errs set to err, one per commit.
func fill(errs []*kerr.Error, err *kerr.Error) []*kerr.Error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// commitOffsets is Kafka's handleCommitOffsets: one error per commit (nil
// for success), final once the write is done. The offsets are visible to
// OffsetFetch once they are in __consumer_offsets.
func (s *groupShard) commitOffsets(req CommitRequest) []*kerr.Error {
	errs := make([]*kerr.Error, len(req.Commits))
	all := func(err *kerr.Error) []*kerr.Error { return fill(errs, err) }
	g := s.group(req.Group, req.Generation < 0)
	if g == nil {
		if req.Version >= 9 {
			return all(kerr.GroupIDNotFound)
		}
		return all(kerr.IllegalGeneration)
	}
	switch {
	case g.share != nil:
		return all(kerr.GroupIDNotFound)
	case g.streams != nil:
		if err := validateStreamsCommit(g.streams, req.MemberID, req.Generation, req.Commits, false, req.Version); err != nil {
			return all(err)
		}
	case g.consumer != nil:
		if err := s.validateConsumerCommit(g.consumer, req.MemberID, req.Generation, req.Commits, false, req.Version); err != nil {
			return all(err)
		}
	default:
		if err := g.validateCommit(req.MemberID, req.InstanceID, req.Generation, false); err != nil {
			return all(err)
		}
		if m := g.members[req.MemberID]; m != nil {
			s.scheduleHeartbeat(g, m)
		}
	}
	now := s.now.UnixMilli()
	var recs []kv
	var ok []int
	for i, cm := range req.Commits {
		switch {
		case !s.partitionExists(cm.Topic, cm.Partition):
			errs[i] = kerr.UnknownTopicOrPartition
		case cm.Metadata != nil && len(*cm.Metadata) > maxOffsetMetadata:
			errs[i] = kerr.OffsetMetadataTooLarge
		default:
			o := committedOffset{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch, metadata: deref(cm.Metadata), commitTime: now, expireTime: cm.ExpireTime}
			recs = append(recs, kv{key: offsetCommitKey(g.id, cm.Topic, cm.Partition), value: offsetCommitValue(o)})
			ok = append(ok, i)
		}
	}
	s.write(recs, func(err error) {
		if err != nil {
			s.logger.Error("committing offsets", zap.String("group", g.id), zap.Error(err))
			code := kerr.CoordinatorNotAvailable
			if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
				code = kerr.InvalidCommitOffsetSize
			}
			for _, i := range ok {
				errs[i] = code
			}
			return
		}
		for _, i := range ok {
			cm := req.Commits[i]
			s.offsets.put(g.id, topicPartition{cm.Topic, cm.Partition}, committedOffset{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch,
				metadata: deref(cm.Metadata), commitTime: now, expireTime: cm.ExpireTime})
		}
	})
	return errs
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit: generation
// -1 (admin tools such as kafka-consumer-groups --reset-offsets, and
// consumers outside group management) commits while the group is Empty;
// once the group has members such a commit is UNKNOWN_MEMBER_ID, except a
// transactional one, whose member fields are optional (TxnOffsetCommit
// before v3 has none). A commit naming a member, a generation or an
// instance id must come from a member (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID) at the group's generation (ILLEGAL_GENERATION), and
// outside a transaction not while the group completes a rebalance
// (REBALANCE_IN_PROGRESS).
func (g *group) validateCommit(memberID, instanceID string, generation int32, transactional bool) *kerr.Error {
	switch {
	case generation < 0 && g.state == stateEmpty:
		return nil
	case generation >= 0 || memberID != "" || instanceID != "":
		if instanceID != "" {
			id, ok := g.static[instanceID]
			if !ok {
				return kerr.UnknownMemberID
			}
			if id != memberID {
				return kerr.FencedInstanceID
			}
		}
		if g.members[memberID] == nil {
			return kerr.UnknownMemberID
		}
		if generation != g.generation {
			return kerr.IllegalGeneration
		}
	case !transactional:
		return kerr.UnknownMemberID
	}
	if !transactional && g.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

func (s *groupShard) partitionExists(topic string, partition int32) bool {
	t, ok := s.topics.Topic(topic)
	return ok && partition >= 0 && partition < t.partitions
}

// FetchedOffset is one partition's committed offset: -1, epoch -1 and ""
// when there is none.
type FetchedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// fetchOffsets is OffsetFetch for one group: the given partitions, or
// every committed one when topics is nil. A group that does not exist has
// no offsets (no error), as in Kafka. With OffsetFetch v9, which names the
// member asking, in a consumer (KIP-848) group a member id or an epoch
// other than -1 must be a member at its current epoch (UNKNOWN_MEMBER_ID,
// STALE_MEMBER_EPOCH), as Kafka's ConsumerGroup.validateOffsetFetch.
func (s *groupShard) fetchOffsets(groupID string, memberID *string, memberEpoch int32, topics []TopicPartitions) ([]FetchedOffset, *kerr.Error) {
	var out []FetchedOffset
	g := s.group(groupID, false)
	if g == nil {
		for _, t := range topics {
			for _, p := range t.Partitions {
				out = append(out, FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1})
			}
		}
		return out, nil
	}
	if cg := g.consumer; cg != nil && (memberID != nil || memberEpoch >= 0) {
		m := cg.members[deref(memberID)]
		switch {
		case m == nil:
			return nil, kerr.UnknownMemberID
		case m.epoch != memberEpoch:
			return nil, kerr.StaleMemberEpoch
		}
	}
	if topics == nil {
		for tp, o := range s.offsets.of(g.id) {
			out = append(out, FetchedOffset{Topic: tp.topic, Partition: tp.partition, Offset: o.offset, LeaderEpoch: o.leaderEpoch, Metadata: o.metadata})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Topic != out[j].Topic {
				return out[i].Topic < out[j].Topic
			}
			return out[i].Partition < out[j].Partition
		})
		return out, nil
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			f := FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1}
			if o, ok := s.offsets.get(g.id, topicPartition{t.Topic, p}); ok {
				f.Offset, f.LeaderEpoch, f.Metadata = o.offset, o.leaderEpoch, o.metadata
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// PartitionError is one partition's outcome; Err nil is success.
type PartitionError struct {
	Topic     string
	Partition int32
	Err       *kerr.Error
}

// offsetDeleteReply is the outcome of an OffsetDelete, final once its
// write is done.
type offsetDeleteReply struct {
	err   *kerr.Error
	parts []PartitionError
}

// deleteOffsets is Kafka's handleDeleteOffsets: an Empty group loses any
// offsets; a consumer group with members keeps those of topics it
// subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); another group with members
// refuses (NON_EMPTY_GROUP).
func (s *groupShard) deleteOffsets(groupID string, topics []TopicPartitions) *offsetDeleteReply {
	g := s.group(groupID, false)
	if g == nil {
		return &offsetDeleteReply{err: kerr.GroupIDNotFound}
	}
	if g.state != stateEmpty && g.protocolType != "consumer" {
		return &offsetDeleteReply{err: kerr.NonEmptyGroup}
	}
	subscribed := s.subscribedTopics(g)
	var out []PartitionError
	var recs []kv
	var deleted []topicPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			pe := PartitionError{Topic: t.Topic, Partition: p}
			switch {
			case !s.partitionExists(t.Topic, p):
				pe.Err = kerr.UnknownTopicOrPartition
			case subscribed[t.Topic]:
				pe.Err = kerr.GroupSubscribedToTopic
			default:
				tp := topicPartition{t.Topic, p}
				if _, ok := s.offsets.get(g.id, tp); ok {
					recs = append(recs, kv{key: offsetCommitKey(g.id, t.Topic, p)})
					deleted = append(deleted, tp)
				}
			}
			out = append(out, pe)
		}
	}
	reply := &offsetDeleteReply{parts: out}
	s.write(recs, func(err error) {
		if err != nil {
			s.logger.Error("deleting offsets", zap.String("group", g.id), zap.Error(err))
			*reply = offsetDeleteReply{err: kerr.CoordinatorNotAvailable}
			return
		}
		for _, tp := range deleted {
			s.offsets.remove(g.id, tp)
		}
	})
	return reply
}

// subscribedTopics are the topics in the members' consumer-protocol
// subscriptions (none for an Empty group or another protocol type).
func (s *groupShard) subscribedTopics(g *group) map[string]bool {
	topics := map[string]bool{}
	if g.consumer != nil {
		for _, m := range g.consumer.members {
			for _, t := range m.topics {
				topics[t] = true
			}
		}
		for _, t := range s.subscribedTopicMeta(g.consumer) {
			topics[t.name] = true
		}
		return topics
	}
	if g.state == stateEmpty || g.protocolType != "consumer" {
		return topics
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			continue // not a consumer subscription Kafka could read either
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

// expireOffsets is Kafka's cleanupGroupMetadata, every
// offsets.retention.check.interval.ms: offsets of an Empty group expire
// offsets.retention.minutes after it became empty (after their commit for
// groups that never had members, and for topics a Stable consumer group no
// longer subscribes to); a group left Empty without offsets is deleted,
// except a share group, which never expires.
// Tombstones make both permanent.
func (s *groupShard) expireOffsets() {
	for _, id := range s.sortedGroupIDs() {
		s.expireGroup(s.groups[id])
	}
}

func (s *groupShard) expireGroup(g *group) {
	nowMs, retention := s.now.UnixMilli(), s.cfg.OffsetsRetention.Milliseconds()
	var subscribed map[string]bool
	base := func(o committedOffset) int64 { return o.commitTime }
	switch {
	case g.share != nil:
		return // Kafka's ShareGroup.shouldExpire: a share group is deleted only by DeleteGroups
	case g.streams != nil && len(g.streams.members) > 0:
		return // as a group with members whose topics are not known
	case g.consumer != nil && len(g.consumer.members) > 0:
		subscribed = s.subscribedTopics(g)
	case g.consumer != nil:
		base = func(committedOffset) int64 { return g.stateTime.UnixMilli() }
	case g.protocolType != "" && g.state == stateEmpty:
		base = func(committedOffset) int64 { return g.stateTime.UnixMilli() }
	case g.protocolType == "consumer" && g.state == stateStable:
		subscribed = s.subscribedTopics(g)
	case g.protocolType != "":
		return
	}
	var recs []kv
	var expired []topicPartition
	offsets := s.offsets.of(g.id)
	for tp, o := range offsets {
		if subscribed[tp.topic] {
			continue
		}
		if (o.expireTime >= 0 && nowMs >= o.expireTime) || (o.expireTime < 0 && nowMs-base(o) >= retention) {
			recs = append(recs, kv{key: offsetCommitKey(g.id, tp.topic, tp.partition)})
			expired = append(expired, tp)
		}
	}
	slices.SortFunc(expired, compareTPs)
	recs = recs[:0]
	for _, tp := range expired {
		recs = append(recs, kv{key: offsetCommitKey(g.id, tp.topic, tp.partition)})
	}
	dead := g.state == stateEmpty && len(offsets) == len(expired) && (g.consumer == nil || len(g.consumer.members) == 0) && (g.streams == nil || len(g.streams.members) == 0)
	if dead {
		recs = append(recs, groupTombstones(g)...)
	}
	if len(recs) == 0 {
		return
	}
	s.write(recs, func(err error) {
		if err != nil {
			s.logger.Error("expiring offsets", zap.String("group", g.id), zap.Error(err))
			return
		}
		for _, tp := range expired {
			s.offsets.remove(g.id, tp)
		}
		if len(expired) > 0 {
			s.logger.Info("expired offsets", zap.String("group", g.id), zap.Int("partitions", len(expired)))
		}
		if dead {
			s.deleteGroup(g)
		}
	})
}
