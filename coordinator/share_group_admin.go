package coordinator

import (
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// shareHeartbeatReply is the answer to a ShareGroupHeartbeat, final once
// its write is done, and the initialization it asks for.
type shareHeartbeatReply struct {
	resp *kmsg.ShareGroupHeartbeatResponse
	init *ShareInit
}

// shareHeartbeat handles a valid ShareGroupHeartbeat and persists what it
// changed; a failed write answers its error and asks for nothing.
func (s *groupShard) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, client Client) *shareHeartbeatReply {
	reply := &shareHeartbeatReply{}
	reply.resp, reply.init = s.shareGroupHeartbeat(req, client)
	if g := s.groups[req.GroupID]; g != nil && g.share != nil {
		s.persistShare(g, func(err error) {
			if err != nil {
				reply.resp, reply.init = shareHeartbeatError(storeError(err), ""), nil
			}
		})
	}
	return reply
}

// ShareGroupHeartbeat serves ShareGroupHeartbeat (KIP-932) as Kafka's
// GroupCoordinatorService: the heartbeat's records are durable before it
// is answered, and the share state initialization it asks for is done
// (GroupConfig.ShareInitialize) and its outcome recorded first, as Kafka
// completes the heartbeat after the persister's answer.
func (c *Groups) ShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, client Client) *kmsg.ShareGroupHeartbeatResponse {
	if err, msg := validateShareHeartbeat(req); err != nil {
		return shareHeartbeatError(err, msg)
	}
	if err := c.ensure(); err != nil {
		return shareHeartbeatError(err, "")
	}
	var reply *shareHeartbeatReply
	if err := c.run(req.GroupID, func(s *groupShard) { reply = s.shareHeartbeat(req, client) }); err != nil {
		return shareHeartbeatError(err, "")
	}
	if reply.init != nil && c.cfg.ShareInitialize != nil {
		done, failed := map[[16]byte][]int32{}, map[[16]byte][]int32{}
		resp := c.cfg.ShareInitialize(reply.init.Request())
		for _, t := range reply.init.Topics {
			failed[t.TopicID] = slices.Clone(t.Partitions)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					c.logger.Warn("initializing share group state", zap.String("group", req.GroupID), zap.Int32("partition", p.Partition),
						zap.Error(kerr.ErrorForCode(p.ErrorCode)))
					continue
				}
				failed[t.TopicID] = slices.DeleteFunc(failed[t.TopicID], func(q int32) bool { return q == p.Partition })
				done[t.TopicID] = append(done[t.TopicID], p.Partition)
			}
		}
		if err := c.run(req.GroupID, func(s *groupShard) { s.shareStateInitialized(req.GroupID, done, failed) }); err != nil {
			c.logger.Warn("recording share group state initialization", zap.String("group", req.GroupID), zap.Error(err))
		}
	}
	return reply.resp
}

// ShareGroupDescribe describes a share group as Kafka's
// ShareGroup.asDescribedGroup: GROUP_ID_NOT_FOUND for a group that does
// not exist or is of another type.
func (c *Groups) ShareGroupDescribe(id string) kmsg.ShareGroupDescribeResponseGroup {
	if id == "" {
		return describedShareGroup(id, kerr.InvalidGroupID, "")
	}
	var d kmsg.ShareGroupDescribeResponseGroup
	if err := c.run(id, func(s *groupShard) { d = s.shareGroupDescribe(id) }); err != nil {
		return describedShareGroup(id, err, "")
	}
	return d
}

func describedShareGroup(id string, err *kerr.Error, msg string) kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = id
	d.AuthorizedOperations = math.MinInt32
	if err != nil {
		d.ErrorCode = err.Code
		if msg != "" {
			d.ErrorMessage = &msg
		}
	}
	return d
}

func (s *groupShard) shareGroupDescribe(id string) kmsg.ShareGroupDescribeResponseGroup {
	g := s.group(id, false)
	if g == nil {
		return describedShareGroup(id, kerr.GroupIDNotFound, "Group "+id+" not found.")
	}
	sg := g.share
	if sg == nil {
		return describedShareGroup(id, kerr.GroupIDNotFound, "Group "+id+" is not a share group.")
	}
	d := describedShareGroup(id, nil, "")
	d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Assignor = sg.state(), sg.epoch, sg.assignmentEpoch, shareAssignorName
	for _, m := range sg.sortedMembers() {
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
		dm.RackID = optional(m.rackID)
		dm.SubscribedTopicNames = append([]string{}, m.topics...)
		for _, tid := range sortedTopicIDs(m.assigned) {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = tid, slices.Clone(m.assigned[tid])
			if t, ok := s.topics.TopicByID(tid); ok {
				tp.Topic = t.name
			}
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// deleteShareState deletes the share state of an empty share group about
// to be deleted (DeleteShareGroupState through GroupConfig.ShareDelete),
// as Kafka's GroupCoordinatorService.deleteGroups does before deleting
// it; the first error of a partition fails the deletion.
func (c *Groups) deleteShareState(id string) *kerr.Error {
	if c.cfg.ShareDelete == nil {
		return nil
	}
	var parts map[[16]byte][]int32
	if err := c.run(id, func(s *groupShard) { parts = s.shareStatePartitions(id) }); err != nil || len(parts) == 0 {
		return nil // the deletion answers the error
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = id
	for _, tid := range sortedIDs(parts) {
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = tid
		for _, p := range parts[tid] {
			rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			rp.Partition = p
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	for _, t := range c.cfg.ShareDelete(req).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				c.logger.Warn("deleting share group state", zap.String("group", id), zap.Int32("partition", p.Partition),
					zap.Error(kerr.ErrorForCode(p.ErrorCode)))
				return kerr.ErrorForCode(p.ErrorCode).(*kerr.Error)
			}
		}
	}
	return nil
}

// shareStatePartitions is the partitions whose share state an empty share
// group has (initialized or initializing), for DeleteShareGroupState; nil
// when id is no empty share group.
func (s *groupShard) shareStatePartitions(id string) map[[16]byte][]int32 {
	g := s.group(id, false)
	if g == nil || g.share == nil || len(g.share.members) > 0 {
		return nil
	}
	parts := map[[16]byte][]int32{}
	for _, m := range []map[[16]byte]shareTopicState{g.share.initialized, g.share.initializing} {
		for tid, st := range m {
			parts[tid] = slices.Compact(slices.Sorted(slices.Values(append(parts[tid], st.partitions...))))
		}
	}
	return parts
}
