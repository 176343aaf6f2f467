package coordinator

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator's requests: each checks what needs no group
// state, then runs on the group's shard (run), whose answer is final once
// run returned, or (JoinGroup, SyncGroup) arrives on the waiter's channel.

// JoinGroup serves JoinGroup as Kafka's GroupCoordinator.handleJoinGroup.
// It blocks until the rebalance completes, or done is closed (shutdown:
// NOT_COORDINATOR).
func (c *Groups) JoinGroup(req *kmsg.JoinGroupRequest, version int16, client Client, done <-chan struct{}) *kmsg.JoinGroupResponse {
	jr := &joinRequest{
		memberID:     req.MemberID,
		instanceID:   deref(req.InstanceID),
		client:       client,
		session:      time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalance:    time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		protocolType: req.ProtocolType,
		version:      version,
	}
	if version == 0 {
		jr.rebalance = jr.session
	}
	jr.requireKnownID = version >= 4 && jr.instanceID == ""
	for _, p := range req.Protocols {
		// Copied: the request's bytes may alias the connection's buffer.
		jr.protocols = append(jr.protocols, protocolMeta{name: p.Name, metadata: bytes.Clone(p.Metadata)})
	}
	var r joinResult
	switch err := c.checkGroupID(req.Group); {
	case err != nil:
		r = joinResult{err: err, memberID: req.MemberID}
	case jr.session < c.cfg.MinSessionTimeout || jr.session > c.cfg.MaxSessionTimeout:
		r = joinResult{err: kerr.InvalidSessionTimeout, memberID: req.MemberID}
	default:
		var wait chan joinResult
		jr.waiter, wait = c.newJoinWaiter()
		if err := c.run(req.Group, func(s *groupShard) { s.joinGroup(req.Group, jr) }); err != nil {
			c.dropWaiter(jr.waiter)
			r = joinResult{err: err, memberID: req.MemberID}
			break
		}
		select {
		case r = <-wait:
		case <-done:
			c.dropWaiter(jr.waiter)
			r = joinResult{err: kerr.NotCoordinator, memberID: req.MemberID}
		}
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.Generation, resp.MemberID, resp.LeaderID = -1, r.memberID, r.leader
	if r.err != nil {
		resp.ErrorCode = r.err.Code
		return resp
	}
	resp.Generation = r.generation
	if r.protocolType != "" {
		pt := r.protocolType
		resp.ProtocolType = &pt
	}
	p := r.protocol
	resp.Protocol = &p
	resp.SkipAssignment = r.skipAssignment
	resp.Members = r.members
	return resp
}

// SyncGroup serves SyncGroup as Kafka's handleSyncGroup: the leader's
// assignment is persisted with the group metadata, then every member
// waiting in SyncGroup gets its part.
func (c *Groups) SyncGroup(req *kmsg.SyncGroupRequest, version int16, done <-chan struct{}) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	var r syncResult
	if err := c.checkGroupID(req.Group); err != nil {
		r = syncResult{err: err}
	} else {
		waiter, wait := c.newSyncWaiter()
		if err := c.run(req.Group, func(s *groupShard) { s.syncGroup(req, waiter) }); err != nil {
			c.dropWaiter(waiter)
			r = syncResult{err: err}
		} else {
			select {
			case r = <-wait:
			case <-done:
				c.dropWaiter(waiter)
				r = syncResult{err: kerr.NotCoordinator}
			}
		}
	}
	if r.err != nil {
		resp.ErrorCode = r.err.Code
		return resp
	}
	resp.MemberAssignment = r.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
	return resp
}

// Heartbeat serves Heartbeat as Kafka's handleHeartbeat.
func (c *Groups) Heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	if err := c.checkGroupID(req.Group); err != nil {
		return err
	}
	var out *kerr.Error
	if err := c.run(req.Group, func(s *groupShard) { out = s.heartbeat(req) }); err != nil {
		return err
	}
	return out
}

// LeaveGroup serves LeaveGroup as Kafka's handleLeaveGroup; it returns the
// group-level error and one error per member (nil for success).
func (c *Groups) LeaveGroup(groupID string, leaving []LeaveMember) (*kerr.Error, []*kerr.Error) {
	if err := c.checkGroupID(groupID); err != nil {
		return err, nil
	}
	var errs []*kerr.Error
	if err := c.run(groupID, func(s *groupShard) { errs = s.leaveGroup(groupID, leaving) }); err != nil {
		return err, nil
	}
	return nil, errs
}

// CommitOffsets serves OffsetCommit as Kafka's handleCommitOffsets and
// returns one error per commit (nil for success). The offsets are visible
// to OffsetFetch once they are in __consumer_offsets.
func (c *Groups) CommitOffsets(req CommitRequest) []*kerr.Error {
	if err := c.checkGroupID(req.Group); err != nil {
		return fill(make([]*kerr.Error, len(req.Commits)), err)
	}
	var errs []*kerr.Error
	if err := c.run(req.Group, func(s *groupShard) { errs = s.commitOffsets(req) }); err != nil {
		return fill(make([]*kerr.Error, len(req.Commits)), err)
	}
	return errs
}

// TxnCommitOffsets serves TxnOffsetCommit: one error per commit (nil for
// success). The offsets stay pending until the transaction ends.
func (c *Groups) TxnCommitOffsets(req TxnCommitRequest) []*kerr.Error {
	if err := c.checkGroupID(req.Group); err != nil {
		return fill(make([]*kerr.Error, len(req.Commits)), err)
	}
	var errs []*kerr.Error
	if err := c.run(req.Group, func(s *groupShard) { errs = s.txnCommitOffsets(req) }); err != nil {
		return fill(make([]*kerr.Error, len(req.Commits)), err)
	}
	return errs
}

// CompleteTxnOffsets applies the end of a transaction whose marker was just
// written to __consumer_offsets: on commit the producer's pending offsets
// become committed, on abort they are dropped.
func (c *Groups) CompleteTxnOffsets(producerID int64, commit bool) {
	for _, sl := range c.sortedSlots() {
		sl.mu.Lock()
		if !sl.loading && !sl.resigned {
			sl.shard.begin(c.clock.Now())
			sl.shard.completeTxnOffsets(producerID, commit)
			c.execute(sl)
		}
		sl.mu.Unlock()
	}
}

// HasPendingTxnOffset reports whether a transactional commit for the
// group's partition awaits its transaction's end (OffsetFetch
// require_stable answers UNSTABLE_OFFSET_COMMIT then).
func (c *Groups) HasPendingTxnOffset(group, topic string, partition int32) bool {
	pending := false
	_ = c.run(group, func(s *groupShard) { pending = s.offsets.hasPending(group, topicPartition{topic, partition}) })
	return pending
}

// FetchOffsets serves OffsetFetch for one group: the given partitions, or
// every committed one when topics is nil. A group that does not exist has
// no offsets (no error), as in Kafka.
func (c *Groups) FetchOffsets(groupID string, topics []TopicPartitions) ([]FetchedOffset, *kerr.Error) {
	return c.FetchOffsetsAs(groupID, nil, -1, topics)
}

// FetchOffsetsAs is FetchOffsets for OffsetFetch v9, which names the
// member asking (checked in a consumer group, see fetchOffsets).
func (c *Groups) FetchOffsetsAs(groupID string, memberID *string, memberEpoch int32, topics []TopicPartitions) ([]FetchedOffset, *kerr.Error) {
	var out []FetchedOffset
	var ferr *kerr.Error
	if err := c.run(groupID, func(s *groupShard) { out, ferr = s.fetchOffsets(groupID, memberID, memberEpoch, topics) }); err != nil {
		return nil, err
	}
	return out, ferr
}

// DeleteOffsets serves OffsetDelete as Kafka's handleDeleteOffsets.
func (c *Groups) DeleteOffsets(groupID string, topics []TopicPartitions) (*kerr.Error, []PartitionError) {
	if groupID == "" {
		return kerr.InvalidGroupID, nil
	}
	var reply *offsetDeleteReply
	if err := c.run(groupID, func(s *groupShard) { reply = s.deleteOffsets(groupID, topics) }); err != nil {
		return err, nil
	}
	return reply.err, reply.parts
}

// DescribeGroup is Kafka's GroupMetadata.summary: a group that does not
// exist is described as Dead with no error (DescribeGroups v0-5); member
// metadata and assignments are only given for a Stable group.
func (c *Groups) DescribeGroup(id string) kmsg.DescribeGroupsResponseGroup {
	if id == "" {
		d := describedGroup(id)
		d.ErrorCode = kerr.InvalidGroupID.Code
		return d
	}
	var d kmsg.DescribeGroupsResponseGroup
	if err := c.run(id, func(s *groupShard) { d = s.describeGroup(id) }); err != nil {
		d = describedGroup(id)
		d.ErrorCode = err.Code
	}
	return d
}

// ListGroups lists every group of the partitions this node leads,
// optionally only those in the given states and of the given types (see
// listGroups). While a partition loads it answers
// COORDINATOR_LOAD_IN_PROGRESS.
func (c *Groups) ListGroups(states, types []string) ([]kmsg.ListGroupsResponseGroup, *kerr.Error) {
	var out []kmsg.ListGroupsResponseGroup
	for _, sl := range c.sortedSlots() {
		sl.mu.Lock()
		loading, resigned := sl.loading, sl.resigned
		if !loading && !resigned {
			out = append(out, sl.shard.listGroups(states, types)...)
		}
		sl.mu.Unlock()
		if loading {
			return nil, kerr.CoordinatorLoadInProgress
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// DeleteGroup deletes an Empty group and its offsets, as Kafka's
// deleteGroups (see deleteGroupRequest).
func (c *Groups) DeleteGroup(id string) *kerr.Error {
	if id == "" {
		return kerr.InvalidGroupID
	}
	if err := c.deleteShareState(id); err != nil {
		return err
	}
	var reply *groupDeleteReply
	if err := c.run(id, func(s *groupShard) { reply = s.deleteGroupRequest(id) }); err != nil {
		return err
	}
	return reply.err
}

// ConsumerGroupHeartbeat serves ConsumerGroupHeartbeat (KIP-848).
func (c *Groups) ConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, version int16, client Client) *kmsg.ConsumerGroupHeartbeatResponse {
	if err, msg := validateHeartbeat(req, version); err != nil {
		return heartbeatError(err, msg)
	}
	if err := c.ensure(); err != nil {
		return heartbeatError(err, "")
	}
	var reply *heartbeatReply
	if err := c.run(req.Group, func(s *groupShard) { reply = s.consumerHeartbeat(req, version, client) }); err != nil {
		return heartbeatError(err, "")
	}
	return reply.resp
}

// ConsumerGroupDescribe describes a KIP-848 group as Kafka's
// ConsumerGroup.asDescribedGroup: GROUP_ID_NOT_FOUND for a group that does
// not exist or is a classic group.
func (c *Groups) ConsumerGroupDescribe(id string, version int16) kmsg.ConsumerGroupDescribeResponseGroup {
	if id == "" {
		return describedConsumerGroup(id, kerr.InvalidGroupID, "")
	}
	var d kmsg.ConsumerGroupDescribeResponseGroup
	if err := c.run(id, func(s *groupShard) { d = s.consumerGroupDescribe(id, version) }); err != nil {
		return describedConsumerGroup(id, err, "")
	}
	return d
}
