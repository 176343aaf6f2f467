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
}

type joinRequest struct {
	memberID, instanceID string
	client               Client
	session, rebalance   time.Duration
	protocolType         string
	protocols            []protocolMeta
	requireKnownID       bool
	version              int16
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
		join:             make(chan joinResult, 1),
	}
}

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
		g := c.lockGroup(req.Group, req.MemberID == "")
		if g == nil {
			r = joinResult{err: kerr.UnknownMemberID, memberID: req.MemberID}
			break
		}
		var wait chan joinResult
		r, wait = c.join(g, jr)
		g.mu.Unlock()
		if wait != nil {
			select {
			case r = <-wait:
			case <-done:
				r = joinResult{err: kerr.NotCoordinator, memberID: req.MemberID}
			}
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

// join handles a JoinGroup with g locked. It returns either a result, or a
// channel the result will be sent on once the rebalance completes.
func (c *Groups) join(g *group, jr *joinRequest) (joinResult, chan joinResult) {
	fail := func(err *kerr.Error, memberID string) (joinResult, chan joinResult) {
		return joinResult{err: err, memberID: memberID}, nil
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// Kafka would migrate a consumer group to classic members
			// (KIP-848 online downgrade); Strata does not mix them.
			return fail(kerr.InconsistentGroupProtocol, jr.memberID)
		}
		g.consumer, g.protocolType = nil, ""
	}
	if !g.supportsProtocols(jr.protocolType, jr.protocols) {
		return fail(kerr.InconsistentGroupProtocol, jr.memberID)
	}
	if !c.acceptJoiningMember(g, jr.memberID) {
		if m := g.members[jr.memberID]; m != nil {
			c.removeMemberAndUpdateGroup(g, m, "member "+m.id+" did not fit group.max.size")
		}
		return fail(kerr.GroupMaxSizeReached, "")
	}
	if jr.memberID == "" {
		id := newMemberID(jr.client.ID)
		switch {
		case jr.instanceID != "":
			return c.staticJoin(g, jr, id)
		case jr.requireKnownID:
			// KIP-394: the client retries with this id; until then it
			// counts as a member the rebalance waits for.
			g.pending[id] = struct{}{}
			c.afterFunc(jr.session, func() {
				g.mu.Lock()
				defer g.mu.Unlock()
				if _, ok := g.pending[id]; ok {
					delete(g.pending, id)
					c.tryCompleteJoin(g)
				}
			})
			return fail(kerr.MemberIDRequired, id)
		}
		m := jr.newMember(id)
		wait := m.join // answered, and cleared, if the join completes at once
		c.addMemberAndRebalance(g, m)
		return joinResult{}, wait
	}
	if _, ok := g.pending[jr.memberID]; ok {
		m := jr.newMember(jr.memberID)
		wait := m.join // answered, and cleared, if the join completes at once
		c.addMemberAndRebalance(g, m)
		return joinResult{}, wait
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
		return c.updateMemberAndRebalance(g, m, jr)
	case stateCompletingRebalance:
		if m.sameProtocols(jr.protocols) {
			// The member missed its JoinGroup response: send it again.
			return c.currentGeneration(g, m), nil
		}
		return c.updateMemberAndRebalance(g, m, jr)
	case stateStable:
		if m.id == g.leader || !m.sameProtocols(jr.protocols) {
			// The leader rejoining asks for a new assignment (its
			// metadata view may have changed), as in Kafka.
			return c.updateMemberAndRebalance(g, m, jr)
		}
		c.scheduleHeartbeat(g, m)
		return c.currentGeneration(g, m), nil
	default:
		return fail(kerr.UnknownMemberID, jr.memberID)
	}
}

// acceptJoiningMember is Kafka's rule for group.max.size: an empty group
// takes anyone; while it prepares a rebalance, a member already waiting in
// it is kept and others come in while fewer than the maximum wait (so a
// lowered maximum sheds the last to rejoin); otherwise existing members are
// kept and new ones come in while the group is below the maximum.
func (c *Groups) acceptJoiningMember(g *group, memberID string) bool {
	limit := c.cfg.MaxSize
	if limit <= 0 || len(g.members) < limit {
		return true // every rule below admits anyone while the group is smaller
	}
	m := g.members[memberID]
	switch g.state {
	case statePreparingRebalance:
		waiting := 0
		for _, o := range g.members {
			if o.join != nil {
				waiting++
			}
		}
		return (m != nil && m.join != nil) || waiting < limit
	case stateCompletingRebalance, stateStable:
		return m != nil || len(g.members) < limit
	default:
		return true
	}
}

// currentGeneration answers a JoinGroup without a rebalance.
func (c *Groups) currentGeneration(g *group, m *member) joinResult {
	r := joinResult{memberID: m.id, generation: g.generation, protocolType: g.protocolType, protocol: g.protocol, leader: g.leader}
	if m.id == g.leader {
		r.members = g.currentMembers()
	}
	return r
}

func (c *Groups) updateMemberAndRebalance(g *group, m *member, jr *joinRequest) (joinResult, chan joinResult) {
	c.updateMember(m, jr)
	wait := m.join
	c.maybePrepareRebalance(g, "member "+m.id+" rejoined")
	return joinResult{}, wait
}

func (c *Groups) updateMember(m *member, jr *joinRequest) {
	m.protocols, m.protocolType = jr.protocols, jr.protocolType
	m.sessionTimeout, m.rebalanceTimeout = jr.session, jr.rebalance
	m.clientID, m.clientHost = jr.client.ID, jr.client.Host
	// A second JoinGroup from the same member replaces the first.
	m.answerJoin(joinResult{err: kerr.RebalanceInProgress, memberID: m.id})
	m.join = make(chan joinResult, 1)
}

// staticJoin is Kafka's doStaticMemberJoinGroup for a join with an
// instance id and no member id: a known instance replaces its old member id
// (fencing it) and, in a Stable group whose protocol would not change, gets
// its current assignment back without a rebalance.
func (c *Groups) staticJoin(g *group, jr *joinRequest, newID string) (joinResult, chan joinResult) {
	oldID, known := g.static[jr.instanceID]
	if !known || g.members[oldID] == nil {
		m := jr.newMember(newID)
		wait := m.join // answered, and cleared, if the join completes at once
		c.addMemberAndRebalance(g, m)
		return joinResult{}, wait
	}
	old := g.members[oldID]
	oldLeader := g.leader
	oldMember := *old
	c.replaceMember(g, old, newID)
	m := g.members[newID]
	c.updateMember(m, jr)
	wait := m.join
	c.scheduleHeartbeat(g, m)
	c.logger.Info("static member rejoined with a new member id", zap.String("group", g.id),
		zap.String("instance_id", jr.instanceID), zap.String("old_member", oldID), zap.String("member", newID))
	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocol {
			c.prepareRebalance(g, "static member "+newID+" changed the group protocol")
			return joinResult{}, wait
		}
		m.join = nil
		if err := c.storeGroup(g); err != nil {
			c.logger.Error("storing group metadata after a static member rejoined", zap.String("group", g.id), zap.Error(err))
			c.replaceMember(g, m, oldID)
			restored := g.members[oldID]
			*restored = oldMember
			restored.join, restored.sync = nil, nil // both were answered with FENCED_INSTANCE_ID
			c.scheduleHeartbeat(g, restored)
			return joinResult{err: storeError(err), memberID: newID}, nil
		}
		r := joinResult{memberID: newID, generation: g.generation, protocolType: g.protocolType, protocol: g.protocol, leader: oldLeader}
		if jr.version >= 9 && g.leader == newID {
			// KIP-814: the leader learns it leads but skips the
			// assignment, which a Stable group would not propagate.
			r.leader, r.skipAssignment, r.members = newID, true, g.currentMembers()
		}
		return r, nil
	case stateCompletingRebalance:
		// The old member id may already be in the leader's assignment:
		// rebalance so the new id gets one.
		c.prepareRebalance(g, "static member "+newID+" rejoined during a sync")
	default:
		c.tryCompleteJoin(g)
	}
	return joinResult{}, wait
}

// replaceMember moves member old to a new id, fencing its waiting requests.
func (c *Groups) replaceMember(g *group, old *member, newID string) {
	old.answerJoin(joinResult{err: kerr.FencedInstanceID, memberID: old.id})
	old.answerSync(syncResult{err: kerr.FencedInstanceID})
	if old.hbTimer != nil {
		old.hbTimer.Stop()
	}
	m := &member{}
	*m = *old
	old.hbSeq++
	m.id, m.hbTimer, m.join, m.sync = newID, nil, nil, nil
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

// SyncGroup serves SyncGroup as Kafka's handleSyncGroup: the leader's
// assignment is persisted with the group metadata, then every member
// waiting in SyncGroup gets its part.
func (c *Groups) SyncGroup(req *kmsg.SyncGroupRequest, version int16, done <-chan struct{}) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	r, wait := c.sync(req)
	if wait != nil {
		select {
		case r = <-wait:
		case <-done:
			r = syncResult{err: kerr.NotCoordinator}
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

func (c *Groups) sync(req *kmsg.SyncGroupRequest) (syncResult, chan syncResult) {
	fail := func(err *kerr.Error) (syncResult, chan syncResult) { return syncResult{err: err}, nil }
	if err := c.checkGroupID(req.Group); err != nil {
		return fail(err)
	}
	g := c.lockGroup(req.Group, false)
	if g == nil {
		return fail(kerr.UnknownMemberID)
	}
	defer g.mu.Unlock()
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
		m.answerSync(syncResult{err: kerr.RebalanceInProgress}) // a duplicate SyncGroup replaces the first
		wait := make(chan syncResult, 1)
		m.sync = wait
		delete(g.pendingSync, m.id)
		c.scheduleHeartbeat(g, m)
		if m.id == g.leader {
			c.applyAssignment(g, req.GroupAssignment)
		}
		return syncResult{}, wait
	case stateStable:
		delete(g.pendingSync, m.id)
		c.scheduleHeartbeat(g, m)
		return syncResult{assignment: m.assignment}, nil
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	default:
		return fail(kerr.UnknownMemberID)
	}
}

// applyAssignment persists the leader's assignment and completes the
// rebalance, or fails every waiting SyncGroup and rebalances again.
func (c *Groups) applyAssignment(g *group, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	for _, a := range assignments {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = bytes.Clone(a.MemberAssignment)
		}
	}
	if err := c.storeGroup(g); err != nil {
		c.logger.Error("storing group assignment", zap.String("group", g.id), zap.Error(err))
		code := storeError(err)
		for _, m := range g.members {
			m.assignment = nil
			m.answerSync(syncResult{err: code})
		}
		c.prepareRebalance(g, "storing the assignment failed")
		return
	}
	for _, m := range g.members {
		m.answerSync(syncResult{assignment: m.assignment})
	}
	g.transition(stateStable, c.now())
}

// Heartbeat serves Heartbeat as Kafka's handleHeartbeat.
func (c *Groups) Heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	if err := c.checkGroupID(req.Group); err != nil {
		return err
	}
	g := c.lockGroup(req.Group, false)
	if g == nil {
		return kerr.UnknownMemberID
	}
	defer g.mu.Unlock()
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
	c.scheduleHeartbeat(g, m)
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

// LeaveGroup serves LeaveGroup as Kafka's handleLeaveGroup; it returns the
// group-level error and one error per member (nil for success).
func (c *Groups) LeaveGroup(groupID string, leaving []LeaveMember) (*kerr.Error, []*kerr.Error) {
	if err := c.checkGroupID(groupID); err != nil {
		return err, nil
	}
	errs := make([]*kerr.Error, len(leaving))
	g := c.lockGroup(groupID, false)
	if g == nil {
		for i := range errs {
			errs[i] = kerr.UnknownMemberID
		}
		return nil, errs
	}
	defer g.mu.Unlock()
	for i, l := range leaving {
		if l.MemberID == "" {
			id, ok := g.static[l.InstanceID]
			if m := g.members[id]; ok && l.InstanceID != "" && m != nil {
				c.removeMemberAndUpdateGroup(g, m, "static member "+l.InstanceID+" removed")
			} else {
				errs[i] = kerr.UnknownMemberID
			}
			continue
		}
		if _, ok := g.pending[l.MemberID]; ok {
			delete(g.pending, l.MemberID)
			c.tryCompleteJoin(g)
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
		c.logger.Info("member left", zap.String("group", g.id), zap.String("member", m.id))
		c.removeMemberAndUpdateGroup(g, m, "member "+m.id+" left")
	}
	return nil, errs
}
