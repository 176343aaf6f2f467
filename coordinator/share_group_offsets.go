package coordinator

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// The share group offset admin requests (KIP-932) as Kafka 4.4's
// GroupCoordinatorService and GroupMetadataManager serve them; the
// broker authorizes them and reads the share state summaries.
//
//   - InitializedSharePartitions is initializedShareGroupPartitions: the
//     partitions whose share state is initialized, none for a group that
//     does not exist (DescribeShareGroupOffsets of all topics).
//   - AlterShareGroupOffsets creates the share group when it does not
//     exist, refuses one with members (NON_EMPTY_GROUP), records the
//     partitions of existing topics as initializing, initializes their
//     share state at the group epoch with the new start offsets and, when
//     every partition succeeded, records them as initialized.
//   - DeleteShareGroupOffsets refuses a group that does not exist or has
//     members, moves each named topic's initialized partitions to
//     deleting, deletes their share state and drops the topics whose
//     deletion succeeded from deleting.

// shareGroupByID is Kafka's shareGroup(groupId): the share group, else
// GROUP_ID_NOT_FOUND with Kafka's message.
func (s *groupShard) shareGroupByID(id string) (*group, *kerr.Error, string) {
	g := s.group(id, false)
	switch {
	case g == nil:
		return nil, kerr.GroupIDNotFound, "Group " + id + " not found."
	case g.share == nil:
		return nil, kerr.GroupIDNotFound, "Group " + id + " is not a share group."
	}
	return g, nil, ""
}

// InitializedSharePartitions is the partitions by topic whose share state
// group id has initialized.
func (c *Groups) InitializedSharePartitions(id string) (map[[16]byte][]int32, *kerr.Error) {
	if err := c.ensure(); err != nil {
		return nil, err
	}
	out := map[[16]byte][]int32{}
	err := c.run(id, func(s *groupShard) {
		if g := s.group(id, false); g != nil && g.share != nil {
			for tid, st := range g.share.initialized {
				out[tid] = slices.Clone(st.partitions)
			}
		}
	})
	return out, err
}

// alterShareReply is the shard's answer to an AlterShareGroupOffsets: the
// response so far and the initialization it asks for.
type alterShareReply struct {
	resp *kmsg.AlterShareGroupOffsetsResponse
	init *kmsg.InitializeShareGroupStateRequest
}

// AlterShareGroupOffsets serves AlterShareGroupOffsets for the topics the
// broker let through.
func (c *Groups) AlterShareGroupOffsets(r *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	fail := func(err *kerr.Error, msg string) *kmsg.AlterShareGroupOffsetsResponse {
		resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
		resp.ErrorCode = err.Code
		if msg == "" {
			msg = err.Description
		}
		resp.ErrorMessage = &msg
		return resp
	}
	if r.GroupID == "" {
		return fail(kerr.InvalidGroupID, "")
	}
	if err := c.ensure(); err != nil {
		return fail(err, "")
	}
	var reply alterShareReply
	if err := c.run(r.GroupID, func(s *groupShard) { reply = s.alterShareOffsets(r, fail) }); err != nil {
		return fail(err, "")
	}
	if reply.init == nil || len(reply.init.Topics) == 0 || c.cfg.ShareInitialize == nil {
		return reply.resp
	}
	errs := map[[16]byte]map[int32]kmsg.InitializeShareGroupStateResponseTopicPartition{}
	done := map[[16]byte][]int32{}
	for _, t := range c.cfg.ShareInitialize(reply.init).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				done[t.TopicID] = append(done[t.TopicID], p.Partition)
				continue
			}
			if errs[t.TopicID] == nil {
				errs[t.TopicID] = map[int32]kmsg.InitializeShareGroupStateResponseTopicPartition{}
			}
			errs[t.TopicID][p.Partition] = p
		}
	}
	if len(errs) > 0 {
		// As Kafka: the partitions stay initializing, retried by a later heartbeat.
		for i := range reply.resp.Topics {
			t := &reply.resp.Topics[i]
			for j := range t.Partitions {
				p := &t.Partitions[j]
				if e, ok := errs[t.TopicID][p.Partition]; ok && p.ErrorCode == 0 {
					p.ErrorCode, p.ErrorMessage = e.ErrorCode, e.ErrorMessage
				}
			}
		}
		return reply.resp
	}
	if err := c.run(r.GroupID, func(s *groupShard) { s.shareStateInitialized(r.GroupID, done, nil) }); err != nil {
		c.logger.Warn("recording share group state initialization", zap.String("group", r.GroupID), zap.Error(err))
	}
	return reply.resp
}

// alterShareOffsets is GroupMetadataManager.alterShareGroupOffsets.
func (s *groupShard) alterShareOffsets(r *kmsg.AlterShareGroupOffsetsRequest,
	fail func(*kerr.Error, string) *kmsg.AlterShareGroupOffsetsResponse) alterShareReply {
	g := s.group(r.GroupID, true)
	sg := s.shareGroupOf(g)
	switch {
	case sg == nil:
		return alterShareReply{resp: fail(kerr.GroupIDNotFound, "Group "+r.GroupID+" is not a share group.")}
	case len(sg.members) > 0:
		return alterShareReply{resp: fail(kerr.NonEmptyGroup, "")}
	}
	resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = r.GroupID
	for _, t := range r.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		meta, ok := s.topics.Topic(t.Topic)
		if ok {
			rt.TopicID = meta.id
		}
		it := kmsg.NewInitializeShareGroupStateRequestTopic()
		it.TopicID = meta.id
		var parts []int32
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			if !ok || p.Partition < 0 || p.Partition >= meta.partitions {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rt.Partitions = append(rt.Partitions, rp)
			ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			ip.Partition, ip.StateEpoch, ip.StartOffset = p.Partition, sg.epoch, p.StartOffset
			it.Partitions = append(it.Partitions, ip)
			parts = append(parts, p.Partition)
		}
		resp.Topics = append(resp.Topics, rt)
		if ok {
			// Kafka's addInitializingTopicsRecords: added to what is initializing.
			st := sg.initializing[meta.id]
			st.name, st.since = meta.name, s.now
			st.partitions = slices.Compact(slices.Sorted(slices.Values(append(st.partitions, parts...))))
			sg.initializing[meta.id] = st
			if len(it.Partitions) > 0 {
				init.Topics = append(init.Topics, it)
			}
		}
	}
	reply := alterShareReply{resp: resp, init: init}
	s.persistShare(g, func(err error) {
		if err != nil {
			reply.resp, reply.init = fail(storeError(err), ""), nil
		}
	})
	return reply
}

// deleteShareReply is the shard's answer to the first step of a
// DeleteShareGroupOffsets: a top-level error, the topics refused, and the
// deletion it asks for.
type deleteShareReply struct {
	errCode int16
	errMsg  string
	refused []kmsg.DeleteShareGroupOffsetsResponseTopic
	del     *kmsg.DeleteShareGroupStateRequest
}

// DeleteShareGroupOffsets serves DeleteShareGroupOffsets for the topics
// the broker let through.
func (c *Groups) DeleteShareGroupOffsets(r *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	fail := func(err *kerr.Error, msg string) *kmsg.DeleteShareGroupOffsetsResponse {
		resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
		resp.ErrorCode = err.Code
		if msg == "" {
			msg = err.Description
		}
		resp.ErrorMessage = &msg
		return resp
	}
	if r.GroupID == "" {
		return fail(kerr.InvalidGroupID, "")
	}
	if err := c.ensure(); err != nil {
		return fail(err, "")
	}
	var reply deleteShareReply
	if err := c.run(r.GroupID, func(s *groupShard) { reply = s.initiateShareOffsetsDelete(r) }); err != nil {
		return fail(err, "")
	}
	if reply.errCode != 0 {
		return fail(kerr.TypedErrorForCode(reply.errCode), reply.errMsg)
	}
	resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	if reply.del == nil || c.cfg.ShareDelete == nil {
		resp.Topics = reply.refused
		return resp
	}
	var deleted [][16]byte
	var failed []kmsg.DeleteShareGroupOffsetsResponseTopic
	for _, t := range c.cfg.ShareDelete(reply.del).Topics {
		code := int16(0)
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				code = p.ErrorCode
				break
			}
		}
		if code == 0 {
			deleted = append(deleted, t.TopicID)
			continue
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.TopicID, rt.ErrorCode = t.TopicID, code
		rt.ErrorMessage = kmsg.StringPtr(kerr.TypedErrorForCode(code).Description)
		if meta, ok := c.topics.TopicByID(t.TopicID); ok {
			rt.Topic = meta.name
		}
		failed = append(failed, rt)
	}
	if len(deleted) > 0 {
		var done []kmsg.DeleteShareGroupOffsetsResponseTopic
		if err := c.run(r.GroupID, func(s *groupShard) { done = s.completeShareOffsetsDelete(r.GroupID, deleted) }); err != nil {
			return fail(err, "")
		}
		resp.Topics = append(resp.Topics, done...)
	}
	resp.Topics = append(append(resp.Topics, reply.refused...), failed...)
	return resp
}

// initiateShareOffsetsDelete is GroupCoordinatorShard.initiateDeleteShareGroupOffsets.
func (s *groupShard) initiateShareOffsetsDelete(r *kmsg.DeleteShareGroupOffsetsRequest) deleteShareReply {
	g, err, msg := s.shareGroupByID(r.GroupID)
	if err != nil {
		return deleteShareReply{errCode: err.Code, errMsg: msg}
	}
	sg := g.share
	if len(sg.members) > 0 {
		return deleteShareReply{errCode: kerr.NonEmptyGroup.Code, errMsg: kerr.NonEmptyGroup.Description}
	}
	var reply deleteShareReply
	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = r.GroupID
	refuse := func(topic, msg string) {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = topic, kerr.UnknownTopicOrPartition.Code, kmsg.StringPtr(msg)
		reply.refused = append(reply.refused, rt)
	}
	for _, t := range r.Topics {
		meta, ok := s.topics.Topic(t.Topic)
		if !ok {
			refuse(t.Topic, kerr.UnknownTopicOrPartition.Description)
			continue
		}
		var parts []int32
		if st, ok := sg.initialized[meta.id]; ok {
			parts = st.partitions
			delete(sg.initialized, meta.id)
			sg.deleting[meta.id] = meta.name
		} else if _, ok := sg.deleting[meta.id]; ok {
			for p := int32(0); p < meta.partitions; p++ {
				parts = append(parts, p)
			}
		} else {
			refuse(t.Topic, "There is no offset information to delete.")
			continue
		}
		dt := kmsg.NewDeleteShareGroupStateRequestTopic()
		dt.TopicID = meta.id
		for _, p := range parts {
			dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			dp.Partition = p
			dt.Partitions = append(dt.Partitions, dp)
		}
		del.Topics = append(del.Topics, dt)
	}
	if len(del.Topics) > 0 {
		reply.del = del
	}
	s.persistShare(g, func(err error) {
		if err != nil {
			reply = deleteShareReply{errCode: storeError(err).Code, errMsg: storeError(err).Description}
		}
	})
	return reply
}

// completeShareOffsetsDelete drops the topics whose share state was
// deleted from deleting and answers them.
func (s *groupShard) completeShareOffsetsDelete(id string, deleted [][16]byte) []kmsg.DeleteShareGroupOffsetsResponseTopic {
	var out []kmsg.DeleteShareGroupOffsetsResponseTopic
	g := s.groups[id]
	for _, tid := range deleted {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.TopicID = tid
		if meta, ok := s.topics.TopicByID(tid); ok {
			rt.Topic = meta.name
		}
		if g != nil && g.share != nil {
			delete(g.share.deleting, tid)
		}
		out = append(out, rt)
	}
	if g != nil && g.share != nil {
		s.persistShare(g, func(error) {})
	}
	return out
}
