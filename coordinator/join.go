package coordinator

import (
	"bytes"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Client is who sent a request: the header's client id and the peer's
// address as Kafka prints it ("/127.0.0.1").
type Client struct {
	ID, Host string
	// CanDescribe reports whether the client's principal may DESCRIBE a
	// topic, which decides what a regex it subscribes to resolves to; nil
	// allows every topic (no authorizer).
	CanDescribe func(topic string) bool
}

type joinRequest struct {
	memberID, instanceID string
	client               Client
	session, rebalance   time.Duration
	protocolType         string
	protocols            []protocolMeta
	requireKnownID       bool
	version              int16
	waiter               uint64 // answered through the shard's effects
}

func (jr *joinRequest) newMember(id string) *member {
	return &member{
		id:               id,
		instanceID:       jr.instanceID,
		clientID:         jr.client.ID,
		clientHost:       jr.client.Host,
		sessionTimeout:   jr.session,
		rebalanceTimeout: jr.rebalance,
		protocolType:     jr.protocolType,
		protocols:        jr.protocols,
		joinWaiter:       jr.waiter,
	}
}

// joinGroup handles a JoinGroup whose checks passed; the answer goes to
// jr.waiter, now or when the rebalance completes.
func (s *groupShard) joinGroup(groupID string, jr *joinRequest) {
	g := s.group(groupID, jr.memberID == "")
	if g == nil {
		s.answer(jr.waiter, joinResult{err: kerr.UnknownMemberID, memberID: jr.memberID})
		return
	}
	if r, waiting := s.join(g, jr); !waiting {
		s.answer(jr.waiter, r)
	}
}

// answer answers a JoinGroup that is not (or no longer) waiting in a member.
func (s *groupShard) answer(waiter uint64, r joinResult) {
	s.eff.joins = append(s.eff.joins, joinAnswer{waiter: waiter, r: r})
}

// join handles a JoinGroup. It returns either a result, or waiting: the
// result goes to jr.waiter later (when the rebalance completes, or once a
// write is durable).
func (s *groupShard) join(g *group, jr *joinRequest) (r joinResult, waiting bool) {
	fail := func(err *kerr.Error, memberID string) (joinResult, bool) {
		return joinResult{err: err, memberID: memberID}, false
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			return s.classicJoinToConsumerGroup(g, jr) // consumer_migrate.go
		}
		if len(g.consumer.stored) > 0 {
			s.write(consumerTombstones(g), func(err error) {
				if err != nil {
					s.logger.Error("deleting the records of an empty consumer group turning classic", zap.String("group", g.id), zap.Error(err))
				}
			})
		}
		g.consumer, g.protocolType = nil, ""
	}
	if g.share != nil {
		return fail(kerr.InconsistentGroupProtocol, jr.memberID)
	}
	if g.streams != nil {
		if len(g.streams.members) > 0 {
			return fail(kerr.InconsistentGroupProtocol, jr.memberID)
		}
		g.streams, g.protocolType = nil, ""
	}
	if !g.supportsProtocols(jr.protocolType, jr.protocols) {
		return fail(kerr.InconsistentGroupProtocol, jr.memberID)
	}
	if !s.acceptJoiningMember(g, jr.memberID) {
		if m := g.members[jr.memberID]; m != nil {
			s.removeMemberAndUpdateGroup(g, m, "member "+m.id+" did not fit group.max.size")
		}
		return fail(kerr.GroupMaxSizeReached, "")
	}
	if jr.memberID == "" {
		id := s.newMemberID(jr.client.ID)
		switch {
		case jr.instanceID != "":
			return s.staticJoin(g, jr, id)
		case jr.requireKnownID:
			// KIP-394: the client retries with this id; until then it
			// counts as a member the rebalance waits for.
			g.pending[id] = struct{}{}
			s.schedule(timerKey{kind: timerPendingMember, group: g.id, member: id}, jr.session)
			return fail(kerr.MemberIDRequired, id)
		}
		s.addMemberAndRebalance(g, jr.newMember(id))
		return joinResult{}, true
	}
	if _, ok := g.pending[jr.memberID]; ok {
		s.cancel(timerKey{kind: timerPendingMember, group: g.id, member: jr.memberID})
		s.addMemberAndRebalance(g, jr.newMember(jr.memberID))
		return joinResult{}, true
	}
	if g.fenced(jr.instanceID, jr.memberID) {
		return fail(kerr.FencedInstanceID, jr.memberID)
	}
	m := g.members[jr.memberID]
	if m == nil {
		return fail(kerr.UnknownMemberID, jr.memberID)
	}
	switch g.state {
	case statePreparingRebalance:
		return s.updateMemberAndRebalance(g, m, jr)
	case stateCompletingRebalance:
		if m.sameProtocols(jr.protocols) {
			// The member missed its JoinGroup response: send it again.
			return s.currentGeneration(g, m), false
		}
		return s.updateMemberAndRebalance(g, m, jr)
	case stateStable:
		if m.id == g.leader || !m.sameProtocols(jr.protocols) {
			// The leader rejoining asks for a new assignment (its
			// metadata view may have changed), as in Kafka.
			return s.updateMemberAndRebalance(g, m, jr)
		}
		s.scheduleHeartbeat(g, m)
		return s.currentGeneration(g, m), false
	default:
		return fail(kerr.UnknownMemberID, jr.memberID)
	}
}

// acceptJoiningMember is Kafka's rule for group.max.size: an empty group
// takes anyone; while it prepares a rebalance, a member already waiting in
// it is kept and others come in while fewer than the maximum wait (so a
// lowered maximum sheds the last to rejoin); otherwise existing members are
// kept and new ones come in while the group is below the maximum.
func (s *groupShard) acceptJoiningMember(g *group, memberID string) bool {
	limit := s.cfg.MaxSize
	if limit <= 0 || len(g.members) < limit {
		return true // every rule below admits anyone while the group is smaller
	}
	m := g.members[memberID]
	switch g.state {
	case statePreparingRebalance:
		waiting := 0
		for _, o := range g.members {
			if o.joinWaiter != 0 {
				waiting++
			}
		}
		return (m != nil && m.joinWaiter != 0) || waiting < limit
	case stateCompletingRebalance, stateStable:
		return m != nil || len(g.members) < limit
	default:
		return true
	}
}

// currentGeneration answers a JoinGroup without a rebalance.
func (s *groupShard) currentGeneration(g *group, m *member) joinResult {
	r := joinResult{memberID: m.id, generation: g.generation, protocolType: g.protocolType, protocol: g.protocol, leader: g.leader}
	if m.id == g.leader {
		r.members = g.currentMembers()
	}
	return r
}

func (s *groupShard) updateMemberAndRebalance(g *group, m *member, jr *joinRequest) (joinResult, bool) {
	s.updateMember(m, jr)
	s.maybePrepareRebalance(g, "member "+m.id+" rejoined")
	return joinResult{}, true
}

func (s *groupShard) updateMember(m *member, jr *joinRequest) {
	m.protocols, m.protocolType = jr.protocols, jr.protocolType
	m.sessionTimeout, m.rebalanceTimeout = jr.session, jr.rebalance
	m.clientID, m.clientHost = jr.client.ID, jr.client.Host
	// A second JoinGroup from the same member replaces the first.
	s.answerJoin(m, joinResult{err: kerr.RebalanceInProgress, memberID: m.id})
	m.joinWaiter = jr.waiter
}

// staticJoin is Kafka's doStaticMemberJoinGroup for a join with an
// instance id and no member id: a known instance replaces its old member id
// (fencing it) and, in a Stable group whose protocol would not change, gets
// its current assignment back without a rebalance.
func (s *groupShard) staticJoin(g *group, jr *joinRequest, newID string) (joinResult, bool) {
	oldID, known := g.static[jr.instanceID]
	if !known || g.members[oldID] == nil {
		s.addMemberAndRebalance(g, jr.newMember(newID))
		return joinResult{}, true
	}
	old := g.members[oldID]
	oldLeader := g.leader
	oldMember := *old
	s.replaceMember(g, old, newID)
	m := g.members[newID]
	s.updateMember(m, jr)
	s.scheduleHeartbeat(g, m)
	s.logger.Info("static member rejoined with a new member id", zap.String("group", g.id),
		zap.String("instance_id", jr.instanceID), zap.String("old_member", oldID), zap.String("member", newID))
	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocol {
			s.prepareRebalance(g, "static member "+newID+" changed the group protocol")
			return joinResult{}, true
		}
		m.joinWaiter = 0 // answered once the new member id is durable
		s.storeGroup(g, func(err error) {
			if err != nil {
				s.logger.Error("storing group metadata after a static member rejoined", zap.String("group", g.id), zap.Error(err))
				s.replaceMember(g, m, oldID)
				restored := g.members[oldID]
				*restored = oldMember
				restored.joinWaiter, restored.syncWaiter = 0, 0 // both were answered with FENCED_INSTANCE_ID
				s.scheduleHeartbeat(g, restored)
				s.answer(jr.waiter, joinResult{err: storeError(err), memberID: newID})
				return
			}
			r := joinResult{memberID: newID, generation: g.generation, protocolType: g.protocolType, protocol: g.protocol, leader: oldLeader}
			if jr.version >= 9 && g.leader == newID {
				// KIP-814: the leader learns it leads but skips the
				// assignment, which a Stable group would not propagate.
				r.leader, r.skipAssignment, r.members = newID, true, g.currentMembers()
			}
			s.answer(jr.waiter, r)
		})
		return joinResult{}, true
	case stateCompletingRebalance:
		// The old member id may already be in the leader's assignment:
		// rebalance so the new id gets one.
		s.prepareRebalance(g, "static member "+newID+" rejoined during a sync")
	default:
		s.tryCompleteJoin(g)
	}
	return joinResult{}, true
}

// replaceMember moves member old to a new id, fencing its waiting requests.
func (s *groupShard) replaceMember(g *group, old *member, newID string) {
	s.answerJoin(old, joinResult{err: kerr.FencedInstanceID, memberID: old.id})
	s.answerSync(old, syncResult{err: kerr.FencedInstanceID})
	s.cancel(timerKey{kind: timerHeartbeat, group: g.id, member: old.id})
	m := &member{}
	*m = *old
	m.id, m.joinWaiter, m.syncWaiter = newID, 0, 0
	delete(g.members, old.id)
	g.members[newID] = m
	g.static[m.instanceID] = newID
	if g.leader == old.id {
		g.leader = newID
	}
	if _, ok := g.pendingSync[old.id]; ok {
		delete(g.pendingSync, old.id)
		g.pendingSync[newID] = struct{}{}
	}
}

// storeError maps a failed group metadata write to the code Kafka's
// storeGroup answers with.
func storeError(err error) *kerr.Error {
	switch {
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return kerr.UnknownServerError
	default:
		return kerr.CoordinatorNotAvailable
	}
}

// syncGroup handles a SyncGroup whose checks passed; the answer goes to
// waiter, now or when the leader's assignment is durable.
func (s *groupShard) syncGroup(req *kmsg.SyncGroupRequest, waiter uint64) {
	if r, waiting := s.sync(req, waiter); !waiting {
		s.eff.syncs = append(s.eff.syncs, syncAnswer{waiter: waiter, r: r})
	}
}

func (s *groupShard) sync(req *kmsg.SyncGroupRequest, waiter uint64) (r syncResult, waiting bool) {
	fail := func(err *kerr.Error) (syncResult, bool) { return syncResult{err: err}, false }
	g := s.group(req.Group, false)
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	if g.consumer != nil {
		return s.classicSyncToConsumerGroup(g, req), false
	}
	if g.fenced(deref(req.InstanceID), req.MemberID) {
		return fail(kerr.FencedInstanceID)
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return fail(kerr.UnknownMemberID)
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(kerr.InconsistentGroupProtocol)
	}
	switch g.state {
	case stateCompletingRebalance:
		s.answerSync(m, syncResult{err: kerr.RebalanceInProgress}) // a duplicate SyncGroup replaces the first
		m.syncWaiter = waiter
		delete(g.pendingSync, m.id)
		s.scheduleHeartbeat(g, m)
		if m.id == g.leader {
			s.applyAssignment(g, req.GroupAssignment)
		}
		return syncResult{}, true
	case stateStable:
		delete(g.pendingSync, m.id)
		s.scheduleHeartbeat(g, m)
		return syncResult{assignment: m.assignment}, false
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	default:
		return fail(kerr.UnknownMemberID)
	}
}

// applyAssignment persists the leader's assignment and completes the
// rebalance, or fails every waiting SyncGroup and rebalances again.
func (s *groupShard) applyAssignment(g *group, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	for _, a := range assignments {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = bytes.Clone(a.MemberAssignment)
		}
	}
	s.storeGroup(g, func(err error) {
		if err != nil {
			s.logger.Error("storing group assignment", zap.String("group", g.id), zap.Error(err))
			code := storeError(err)
			for _, m := range g.sortedMembers() {
				m.assignment = nil
				s.answerSync(m, syncResult{err: code})
			}
			s.prepareRebalance(g, "storing the assignment failed")
			return
		}
		for _, m := range g.sortedMembers() {
			s.answerSync(m, syncResult{assignment: m.assignment})
		}
		g.transition(stateStable, s.now)
	})
}

// heartbeat is Kafka's handleHeartbeat.
func (s *groupShard) heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	g := s.group(req.Group, false)
	if g == nil {
		return kerr.UnknownMemberID
	}
	if g.consumer != nil {
		return s.classicHeartbeatToConsumerGroup(g, req)
	}
	if g.fenced(deref(req.InstanceID), req.MemberID) {
		return kerr.FencedInstanceID
	}
	m := g.members[req.MemberID]
	switch {
	case g.state == stateEmpty || m == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	}
	s.scheduleHeartbeat(g, m)
	if g.state == statePreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// LeaveMember is one member leaving: by member id, or (member id empty) by
// instance id, which is how an administrator removes a static member.
type LeaveMember struct {
	MemberID, InstanceID string
}

// leaveGroup is Kafka's handleLeaveGroup: one error per member (nil for
// success).
func (s *groupShard) leaveGroup(groupID string, leaving []LeaveMember) []*kerr.Error {
	errs := make([]*kerr.Error, len(leaving))
	g := s.group(groupID, false)
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return errs
	}
	if g.consumer != nil {
		return s.classicLeaveToConsumerGroup(g, leaving)
	}
	for i, l := range leaving {
		if l.MemberID == "" {
			id, ok := g.static[l.InstanceID]
			if m := g.members[id]; ok && l.InstanceID != "" && m != nil {
				s.removeMemberAndUpdateGroup(g, m, "static member "+l.InstanceID+" removed")
			} else {
				errs[i] = kerr.UnknownMemberID
			}
			continue
		}
		if _, ok := g.pending[l.MemberID]; ok {
			delete(g.pending, l.MemberID)
			s.cancel(timerKey{kind: timerPendingMember, group: g.id, member: l.MemberID})
			s.tryCompleteJoin(g)
			continue
		}
		if g.fenced(l.InstanceID, l.MemberID) {
			errs[i] = kerr.FencedInstanceID
			continue
		}
		m := g.members[l.MemberID]
		if m == nil {
			errs[i] = kerr.UnknownMemberID
			continue
		}
		s.logger.Info("member left", zap.String("group", g.id), zap.String("member", m.id))
		s.removeMemberAndUpdateGroup(g, m, "member "+m.id+" left")
	}
	return errs
}
