package coordinator

import (
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit: a
// commit with epoch -1 is accepted while the group has no members (admin
// tools, manual commits); otherwise it must come from a member
// (UNKNOWN_MEMBER_ID), outside a transaction with OffsetCommit v9+
// (UNSUPPORTED_VERSION), at its member epoch (STALE_MEMBER_EPOCH). Like
// Kafka 4.3 (KIP-1251), the previous epoch is accepted too when every
// committed partition is still the member's, so a commit racing an epoch
// bump that did not take partitions away succeeds.
func (s *groupShard) validateConsumerCommit(cg *consumerGroup, memberID string, epoch int32, commits []Commit, transactional bool, version int16) *kerr.Error {
	if epoch < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case m.classic != nil && epoch != m.epoch:
		return kerr.IllegalGeneration // a classic member commits at its generation, its member epoch
	case m.classic != nil:
		return nil
	case !transactional && version < 9:
		return kerr.UnsupportedVersion
	case epoch == m.epoch:
		return nil
	case epoch != m.prevEpoch || m.prevEpoch <= 0 || m.epoch < 0:
		return kerr.StaleMemberEpoch
	}
	for _, cm := range commits {
		t, ok := s.topics.Topic(cm.Topic)
		if !ok || !m.assigned.has(t.id, cm.Partition) && !m.revoking.has(t.id, cm.Partition) {
			return kerr.StaleMemberEpoch
		}
	}
	return nil
}

// ConsumerGroupDescribe describes a KIP-848 group as Kafka's
// ConsumerGroup.asDescribedGroup: GROUP_ID_NOT_FOUND for a group that does
// not exist or is a classic group.
func describedConsumerGroup(id string, err *kerr.Error, msg string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = id
	d.AuthorizedOperations = math.MinInt32
	if err != nil {
		d.ErrorCode = err.Code
		if msg != "" {
			d.ErrorMessage = &msg
		}
	}
	return d
}

func (s *groupShard) consumerGroupDescribe(id string, version int16) kmsg.ConsumerGroupDescribeResponseGroup {
	fail := func(err *kerr.Error, msg string) kmsg.ConsumerGroupDescribeResponseGroup {
		return describedConsumerGroup(id, err, msg)
	}
	d := describedConsumerGroup(id, nil, "")
	g := s.group(id, false)
	if g == nil {
		return fail(kerr.GroupIDNotFound, "Group "+id+" not found.")
	}
	cg := g.consumer
	if cg == nil {
		return fail(kerr.GroupIDNotFound, "Group "+id+" is not a consumer group.")
	}
	d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName = cg.state(), cg.epoch, cg.assignmentEpoch, preferredAssignor(cg)
	names := map[[16]byte]string{}
	assignment := func(set partitionSet) kmsg.Assignment {
		a := kmsg.NewAssignment()
		ids := make([][16]byte, 0, len(set))
		for tid := range set {
			ids = append(ids, tid)
		}
		sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
		for _, tid := range ids {
			name, ok := names[tid]
			if !ok {
				if t, ok := s.topics.TopicByID(tid); ok {
					name = t.name
				}
				names[tid] = name
			}
			tp := kmsg.NewAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = tid, name, append([]int32(nil), set[tid]...)
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		return a
	}
	for _, m := range cg.sortedMembers() {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
		if m.instanceID != "" {
			s := m.instanceID
			dm.InstanceID = &s
		}
		if m.rackID != "" {
			s := m.rackID
			dm.RackID = &s
		}
		dm.SubscribedTopics = append([]string{}, m.topics...)
		if m.regex != "" {
			s := m.regex
			dm.SubscribedTopicRegex = &s
		}
		dm.Assignment = assignment(m.assigned)
		dm.TargetAssignment = assignment(cg.target[m.id])
		if version >= 1 {
			dm.MemberType = 1 // consumer protocol
			if m.classic != nil {
				dm.MemberType = 0 // classic protocol
			}
		}
		d.Members = append(d.Members, dm)
	}
	return d
}
