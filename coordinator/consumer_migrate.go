package coordinator

import (
	"encoding/binary"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Online migration between the classic and the consumer group protocols
// (KIP-848 upgrade and downgrade), as Kafka 4.4's GroupMetadataManager does
// it under group.consumer.migration.policy:
//
//   - Upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group of
//     protocol type "consumer" converts it in place (convertToConsumerGroup):
//     a GroupMetadata tombstone, then the consumer group's records, its
//     epoch and every member's epoch the classic generation, each member's
//     target and current assignment what its classic assignment was. The
//     classic members stay members of the consumer group and keep using
//     JoinGroup, SyncGroup, Heartbeat and LeaveGroup (their
//     ClassicMemberMetadata keeps their session timeout and protocols): a
//     JoinGroup reconciles the member with the group's target assignment and
//     answers its member epoch as the generation, SyncGroup answers its
//     assigned partitions as a ConsumerProtocolAssignment, and Heartbeat
//     answers REBALANCE_IN_PROGRESS while the member must rejoin.
//   - Downgrade: when the members leaving or fenced are the last ones on the
//     consumer protocol and classic members remain, the group turns classic
//     again (convertToClassicGroup): tombstones for its consumer records, a
//     GroupMetadata record at generation = group epoch with each member's
//     target assignment, and a rebalance. So it does when a classic static
//     member replaces the last static member on the consumer protocol
//     (validateOnlineDowngradeWithReplacedMember): the joining member takes
//     the replaced one's place and target assignment, reconciled, in a
//     Stable classic group, rebalanced only when its subscription moved the
//     group epoch past the target assignment's ("with stale assignment").
//     Kafka writes the replacement's and the joining member's consumer
//     records before the tombstones; Strata writes only the tombstones (the
//     replaced and the joining member's among them) and the GroupMetadata
//     record, the same group once replayed.
//
// A policy that forbids the conversion answers as Kafka does:
// GROUP_ID_NOT_FOUND with Kafka's message for the upgrade, and a leave that
// leaves a consumer group of classic members only for the downgrade.

// Kafka's ConsumerGroupMigrationPolicy values (group.consumer.migration.policy).
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

func (s *groupShard) upgradeEnabled() bool {
	p := s.cfg.ConsumerMigrationPolicy
	return p == "" || p == MigrationBidirectional || p == MigrationUpgrade
}

func (s *groupShard) downgradeEnabled() bool {
	p := s.cfg.ConsumerMigrationPolicy
	return p == "" || p == MigrationBidirectional || p == MigrationDowngrade
}

// classicSnapshot is a classic group as it was before an upgrade, put back
// when the upgrade's write fails.
type classicSnapshot struct {
	state                  groupState
	stateTime              time.Time
	generation             int32
	protocolType, protocol string
	leader                 string
	members                map[string]*member
	static                 map[string]string
}

// heartbeatToClassicGroup is a ConsumerGroupHeartbeat to classic group g
// (Kafka's getOrMaybeCreateConsumerGroup): an empty one becomes a consumer
// group keeping its offsets, a non-empty one is upgraded when the policy
// and the group allow it. It answers the error when it does neither.
func (s *groupShard) heartbeatToClassicGroup(g *group, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	if req.MemberEpoch != 0 {
		return heartbeatError(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
	}
	if len(g.members) == 0 && g.state == stateEmpty {
		// An empty classic group (offsets only, or left over from a
		// restart) becomes a consumer group, keeping its offsets.
		g.consumer = newConsumerGroup()
		g.consumer.replacesClassic = g.generation > 0 || s.offsets.count(g.id) > 0 // it may have a GroupMetadata record
		g.protocolType, g.protocol, g.leader = "consumer", "", ""
		return nil
	}
	cannot := func(why string) *kmsg.ConsumerGroupHeartbeatResponse {
		s.logger.Info("cannot upgrade classic group to consumer group", zap.String("group", g.id), zap.String("reason", why))
		return heartbeatError(kerr.GroupIDNotFound, "Cannot upgrade classic group "+g.id+" to consumer group because "+why+".")
	}
	switch {
	case !s.upgradeEnabled():
		return cannot("online upgrade is disabled")
	case g.protocolType != "consumer":
		return cannot("the group does not use the consumer embedded protocol")
	case s.cfg.ConsumerMaxSize > 0 && len(g.members) > s.cfg.ConsumerMaxSize:
		return cannot("the group size exceeds the consumer group maximum size")
	}
	cg, why := s.consumerGroupFromClassic(g)
	if why != "" {
		return cannot(why)
	}
	s.convertToConsumerGroup(g, cg)
	return nil
}

// consumerGroupFromClassic is Kafka's ConsumerGroup.fromClassicGroup: every
// member at the generation, Stable, its target and assignment its classic
// assignment; why says what kept the conversion from happening.
func (s *groupShard) consumerGroupFromClassic(g *group) (*consumerGroup, string) {
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch, cg.assignmentTime = g.generation, g.generation, s.now.UnixMilli()
	for _, cm := range g.sortedMembers() {
		metadata := cm.metadataFor(g.protocol)
		if g.protocol == "" && len(cm.protocols) > 0 {
			metadata = cm.protocols[0].metadata
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(metadata); err != nil {
			return nil, "the embedded consumer protocol is malformed"
		}
		assigned := partitionSet{}
		if len(cm.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(cm.assignment); err != nil {
				return nil, "the embedded consumer protocol is malformed"
			}
			if len(a.UserData) > 0 {
				return nil, "an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade"
			}
			for _, t := range a.Topics {
				if meta, ok := s.topics.Topic(t.Topic); ok {
					for _, p := range t.Partitions {
						assigned.add(meta.id, p)
					}
				}
			}
		}
		m := &cmember{
			id: cm.id, instanceID: cm.instanceID, rackID: deref(sub.Rack),
			clientID: cm.clientID, clientHost: cm.clientHost,
			epoch: g.generation, prevEpoch: g.generation, state: cmemberStable,
			rebalanceTimeout: cm.rebalanceTimeout,
			topics:           slices.Compact(slices.Sorted(slices.Values(sub.Topics))),
			assigned:         partitionSet{}, revoking: partitionSet{},
			classic: classicMetadata(cm.sessionTimeout, cm.protocols),
		}
		cg.members[m.id] = m
		if m.instanceID != "" {
			cg.static[m.instanceID] = m.id
		}
		cg.setAssignment(m, assigned, partitionSet{})
		target := partitionSet{}
		assigned.each(target.add)
		cg.target[m.id] = target
	}
	cg.metadataHash = s.subscriptionHash(cg)
	return cg, ""
}

func classicMetadata(session time.Duration, protocols []protocolMeta) *cgClassicMember {
	c := &cgClassicMember{sessionTimeoutMs: int32(session.Milliseconds())}
	for _, p := range protocols {
		c.protocols = append(c.protocols, cgClassicProtocol{name: p.name, metadata: p.metadata})
	}
	return c
}

// convertToConsumerGroup replaces classic group g with cg (Kafka's
// convertToConsumerGroup): waiting JoinGroup and SyncGroup requests are
// answered REBALANCE_IN_PROGRESS, the classic timers stop, the members'
// sessions start. The first write of the group tombstones its GroupMetadata
// record; if it fails, restoreClassicGroup puts the classic group back.
func (s *groupShard) convertToConsumerGroup(g *group, cg *consumerGroup) {
	snap := &classicSnapshot{state: g.state, stateTime: g.stateTime, generation: g.generation, protocolType: g.protocolType,
		protocol: g.protocol, leader: g.leader, members: map[string]*member{}, static: g.static}
	for _, m := range g.sortedMembers() {
		s.answerJoin(m, joinResult{err: kerr.RebalanceInProgress, memberID: m.id})
		s.answerSync(m, syncResult{err: kerr.RebalanceInProgress})
		s.cancel(timerKey{kind: timerHeartbeat, group: g.id, member: m.id})
		snap.members[m.id] = m
	}
	for _, id := range sortedKeys(g.pending) {
		s.cancel(timerKey{kind: timerPendingMember, group: g.id, member: id})
	}
	s.cancel(timerKey{kind: timerJoin, group: g.id})
	s.cancel(timerKey{kind: timerSync, group: g.id})
	g.members, g.static = map[string]*member{}, map[string]string{}
	g.pending, g.pendingSync = map[string]struct{}{}, map[string]struct{}{}
	g.initialDelay, g.newMember = false, false
	g.transition(stateEmpty, s.now)
	g.protocolType, g.protocol, g.leader = "consumer", "", ""
	cg.replacesClassic, cg.upgradedFrom = true, snap
	g.consumer = cg
	for _, m := range cg.sortedMembers() {
		s.scheduleConsumerSession(g, m)
	}
	s.logger.Info("converted the classic group to a consumer group", zap.String("group", g.id), zap.Int32("epoch", cg.epoch),
		zap.Int("members", len(cg.members)))
}

// restoreClassicGroup puts back the classic group an upgrade replaced,
// after the upgrade's write failed; its members rejoin.
func (s *groupShard) restoreClassicGroup(g *group, snap *classicSnapshot) {
	g.consumer = nil
	g.state, g.stateTime, g.generation = snap.state, snap.stateTime, snap.generation
	g.protocolType, g.protocol, g.leader = snap.protocolType, snap.protocol, snap.leader
	g.members, g.static = snap.members, snap.static
	for _, m := range g.sortedMembers() {
		m.joinWaiter, m.syncWaiter = 0, 0
		s.scheduleHeartbeat(g, m)
	}
	if g.state == statePreparingRebalance || g.state == stateCompletingRebalance {
		s.prepareRebalance(g, "the upgrade to a consumer group failed")
	}
}

// classicJoinToConsumerGroup is a JoinGroup to a non-empty consumer group
// (Kafka's classicGroupJoinToConsumerGroup): the member joins or updates its
// subscription as a consumer group member on the classic protocol, is
// reconciled with the target assignment (the partitions its subscription
// says it owns are those it still holds), and is answered once its records
// are durable, its member epoch as the generation.
func (s *groupShard) classicJoinToConsumerGroup(g *group, jr *joinRequest) (joinResult, bool) {
	cg := g.consumer
	fail := func(err *kerr.Error, why string) (joinResult, bool) {
		if why != "" {
			s.logger.Info("classic member cannot join consumer group", zap.String("group", g.id), zap.String("member", jr.memberID), zap.String("reason", why))
		}
		return joinResult{err: err, memberID: jr.memberID}, false
	}
	id := jr.memberID
	unknown := id == ""
	if unknown {
		id = s.newMemberID("")[1:]
	}
	if cg.members[id] == nil && s.cfg.ConsumerMaxSize > 0 && len(cg.members) >= s.cfg.ConsumerMaxSize {
		return fail(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of "+strconv.Itoa(s.cfg.ConsumerMaxSize)+" members.")
	}
	if !cg.supportsClassicProtocols(jr.protocolType, jr.protocols) {
		return fail(kerr.InconsistentGroupProtocol, "Member "+id+"'s protocols are not supported.")
	}
	if unknown && jr.requireKnownID {
		return joinResult{err: kerr.MemberIDRequired, memberID: id}, false
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(jr.protocols[0].metadata); err != nil {
		return fail(kerr.UnknownServerError, "Malformed embedded consumer protocol in subscription deserialization.") // Kafka's IllegalStateException
	}
	m := cg.members[id]
	downgrade, replaced := false, false
	if jr.instanceID != "" {
		old := cg.members[cg.static[jr.instanceID]]
		switch {
		case old == nil:
		case unknown:
			downgrade = s.downgradesReplacing(g, old)
			m, replaced = s.replaceStaticMember(g, old, id), true
		case old.id != id:
			return fail(kerr.FencedInstanceID, "Static member "+jr.instanceID+" was replaced by member "+old.id+".")
		}
	}
	if m != nil && m.classic == nil && !replaced {
		return fail(kerr.UnknownMemberID, "Member "+id+" does not use the classic protocol.")
	}
	bump := false
	if m == nil {
		m = &cmember{id: id, assigned: partitionSet{}, revoking: partitionSet{}}
		cg.members[id] = m
		bump = true
		s.logger.Info("classic member joined consumer group", zap.String("group", g.id), zap.String("member", id))
	}
	if jr.instanceID != "" {
		m.instanceID = jr.instanceID
		cg.static[m.instanceID] = m.id
	}
	if sub.Rack != nil {
		m.rackID = *sub.Rack
	}
	m.rebalanceTimeout = jr.rebalance
	if topics := slices.Compact(slices.Sorted(slices.Values(sub.Topics))); !slices.Equal(topics, m.topics) {
		m.topics, bump = topics, true
	}
	m.clientID, m.clientHost = jr.client.ID, jr.client.Host
	m.classic = classicMetadata(jr.session, jr.protocols)
	if h := s.subscriptionHash(cg); h != cg.metadataHash {
		cg.metadataHash, bump = h, true
	}
	owned := partitionSet{}
	for _, t := range sub.OwnedPartitions {
		if meta, ok := s.topics.Topic(t.Topic); ok {
			for _, p := range t.Partitions {
				owned.add(meta.id, p)
			}
		}
	}
	if downgrade {
		return s.classicJoinDowngrade(g, jr, m, owned, bump || cg.epoch > cg.assignmentEpoch), true
	}
	if bump {
		cg.epoch++
	}
	if cg.epoch > cg.assignmentEpoch {
		s.computeTargetAssignment(g)
	}
	s.reconcile(g, m, owned)
	s.stopRevokeTimer(g, m) // a classic member has its join and sync timeouts only, as in Kafka
	r := joinResult{memberID: m.id, generation: m.epoch, protocolType: "consumer", protocol: m.classic.protocols[0].name}
	session, rebalance := jr.session, jr.rebalance
	s.persistConsumerMember(g, m.id, func(err error) {
		if err != nil {
			s.answer(jr.waiter, joinResult{err: storeError(err), memberID: jr.memberID})
			return
		}
		if g.consumer == cg && cg.members[r.memberID] != nil {
			s.cancel(timerKey{kind: timerConsumerJoin, group: g.id, member: r.memberID})
			s.schedule(timerKey{kind: timerConsumerSession, group: g.id, member: r.memberID}, session)
			s.schedule(timerKey{kind: timerConsumerSync, group: g.id, member: r.memberID}, rebalance)
		}
		s.answer(jr.waiter, r)
	})
	return joinResult{}, true
}

// downgradesReplacing says whether a classic static member replacing
// replaced turns consumer group g classic (Kafka's
// validateOnlineDowngradeWithReplacedMember): replaced is on the consumer
// protocol and every other member on the classic one, the policy allows
// the downgrade and the group fits a classic group.
func (s *groupShard) downgradesReplacing(g *group, replaced *cmember) bool {
	cg := g.consumer
	if replaced.classic != nil {
		return false
	}
	for _, m := range cg.members {
		if m != replaced && (m.classic == nil || len(m.classic.protocols) == 0) {
			return false
		}
	}
	switch {
	case !s.downgradeEnabled():
		s.logger.Info("cannot downgrade consumer group to classic group because the online downgrade is disabled", zap.String("group", g.id))
		return false
	case s.cfg.MaxSize > 0 && len(cg.members) > s.cfg.MaxSize:
		s.logger.Info("cannot downgrade consumer group to classic group because its group size is greater than classic group max size", zap.String("group", g.id))
		return false
	}
	return true
}

// classicJoinDowngrade turns consumer group g classic as the classic
// static member m, which has just replaced the last consumer-protocol
// member, joins (Kafka's classicGroupJoinToConsumerGroup with a valid
// downgrade): no new target assignment; unless stale (the join moved the
// group epoch, or it was already past the target assignment's), m is
// reconciled with the replaced member's target, and the group converted at
// its group epoch, Stable, with a rebalance only when stale. The join is
// answered with m's member epoch once the conversion is stored.
func (s *groupShard) classicJoinDowngrade(g *group, jr *joinRequest, m *cmember, owned partitionSet, stale bool) joinResult {
	cg := g.consumer
	if !stale {
		s.reconcile(g, m, owned)
	}
	r := joinResult{memberID: m.id, generation: m.epoch, protocolType: "consumer", protocol: m.classic.protocols[0].name}
	reason := ""
	if stale {
		reason = "Downgrade group " + g.id + " from consumer to classic with stale assignment."
	}
	s.convertToClassicGroup(g, cg.sortedMembers(), reason, func(err error) {
		if err != nil {
			r = joinResult{err: storeError(err), memberID: jr.memberID}
		}
		s.answer(jr.waiter, r)
	})
	return joinResult{}
}

// supportsClassicProtocols is Kafka's ConsumerGroup.supportsClassicProtocols:
// the consumer protocol type, and one of the protocols supported by every
// member on the classic protocol.
func (cg *consumerGroup) supportsClassicProtocols(protocolType string, ps []protocolMeta) bool {
	if protocolType != "consumer" || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		all := true
		for _, m := range cg.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(c cgClassicProtocol) bool { return c.name == p.name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// classicMember is Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol: the member a SyncGroup or
// Heartbeat is from, by instance id when it has one.
func (cg *consumerGroup) classicMember(memberID, instanceID string) (*cmember, *kerr.Error) {
	var m *cmember
	if instanceID == "" {
		m = cg.members[memberID]
	} else {
		m = cg.members[cg.static[instanceID]]
		if m != nil && m.id != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// scheduleClassicRejoin arms the member's join timeout unless it is armed:
// a classic member told to rejoin is fenced if it does not within its
// rebalance timeout.
func (s *groupShard) scheduleClassicRejoin(g *group, m *cmember) {
	k := timerKey{kind: timerConsumerJoin, group: g.id, member: m.id}
	if _, armed := s.timers.deadlines[k]; !armed {
		s.schedule(k, s.revokeTimeout(m))
	}
}

// classicSyncToConsumerGroup is Kafka's classicGroupSyncToConsumerGroup:
// the member's assigned partitions, unless the group moved past its epoch
// (REBALANCE_IN_PROGRESS: it must rejoin first).
func (s *groupShard) classicSyncToConsumerGroup(g *group, req *kmsg.SyncGroupRequest) syncResult {
	cg := g.consumer
	m, err := cg.classicMember(req.MemberID, deref(req.InstanceID))
	switch {
	case err != nil:
		return syncResult{err: err}
	case req.Generation != m.epoch:
		return syncResult{err: kerr.IllegalGeneration}
	case req.ProtocolType != nil && *req.ProtocolType != "consumer",
		req.Protocol != nil && *req.Protocol != m.classic.protocols[0].name:
		return syncResult{err: kerr.InconsistentGroupProtocol}
	case cg.epoch > m.epoch && m.state != cmemberUnrevoked:
		s.scheduleClassicRejoin(g, m)
		return syncResult{err: kerr.RebalanceInProgress}
	}
	s.cancel(timerKey{kind: timerConsumerSync, group: g.id, member: m.id})
	s.scheduleConsumerSession(g, m)
	return syncResult{assignment: s.classicAssignment(m.assigned, m.classic.protocols[0].metadata)}
}

// classicHeartbeatToConsumerGroup is Kafka's
// classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when the
// member must rejoin (the group epoch moved, it has partitions to revoke,
// or the partitions it waits for are free).
func (s *groupShard) classicHeartbeatToConsumerGroup(g *group, req *kmsg.HeartbeatRequest) *kerr.Error {
	cg := g.consumer
	m, err := cg.classicMember(req.MemberID, deref(req.InstanceID))
	switch {
	case err != nil:
		return err
	case req.Generation != m.epoch:
		return kerr.IllegalGeneration
	}
	s.scheduleConsumerSession(g, m)
	if m.epoch < cg.epoch || m.state == cmemberUnrevoked || m.state == cmemberUnreleased && !cg.waitingOnUnreleased(m) {
		s.scheduleClassicRejoin(g, m)
		return kerr.RebalanceInProgress
	}
	return nil
}

// waitingOnUnreleased reports whether a partition of m's target is still
// held by another member.
func (cg *consumerGroup) waitingOnUnreleased(m *cmember) bool {
	waiting := false
	cg.target[m.id].each(func(id [16]byte, p int32) {
		waiting = waiting || !m.assigned.has(id, p) && !cg.freeFor(m, tpID{id, p})
	})
	return waiting
}

// classicLeaveToConsumerGroup is Kafka's classicGroupLeaveToConsumerGroup:
// each classic member named leaves; then the group epoch is bumped once,
// or the group turns classic when only classic members remain.
func (s *groupShard) classicLeaveToConsumerGroup(g *group, leaving []LeaveMember) []*kerr.Error {
	cg := g.consumer
	errs := make([]*kerr.Error, len(leaving))
	var gone []*cmember
	for i, l := range leaving {
		var m *cmember
		if l.InstanceID == "" {
			m = cg.members[l.MemberID]
		} else {
			m = cg.members[cg.static[l.InstanceID]]
			if m != nil && l.MemberID != "" && m.id != l.MemberID {
				errs[i] = kerr.FencedInstanceID
				continue
			}
		}
		if m == nil || m.classic == nil || slices.Contains(gone, m) {
			errs[i] = kerr.UnknownMemberID
			continue
		}
		s.logger.Info("classic member left consumer group", zap.String("group", g.id), zap.String("member", m.id))
		gone = append(gone, m)
	}
	if len(gone) == 0 {
		return errs
	}
	failAll := func(err error) {
		for i := range errs {
			errs[i] = storeError(err)
		}
	}
	if s.downgradeOnLeave(g, gone, failAll) {
		return errs
	}
	for _, m := range gone {
		s.removeConsumerMember(g, m, false)
	}
	cg.epoch++
	s.persistConsumer(g, func(err error) {
		if err != nil {
			failAll(err)
		}
	})
	return errs
}

// onClassicMemberTimeout fences a classic member that did not rejoin or
// sync within its rebalance timeout.
func (s *groupShard) onClassicMemberTimeout(g *group, k timerKey) {
	m := g.consumerMember(k.member)
	if m == nil {
		return
	}
	why := "the classic member failed to join within the rebalance timeout"
	if k.kind == timerConsumerSync {
		why = "the member failed to sync within timeout"
	}
	s.fenceConsumerMember(g, m, why)
	s.persistConsumer(g, func(error) {})
}

func (s *groupShard) cancelClassicMemberTimers(g *group, id string) {
	s.cancel(timerKey{kind: timerConsumerJoin, group: g.id, member: id})
	s.cancel(timerKey{kind: timerConsumerSync, group: g.id, member: id})
}

// downgradeOnLeave turns consumer group g classic when the members leaving
// are the last on the consumer protocol and others remain (Kafka's
// validateOnlineDowngradeWithFencedMembers and convertToClassicGroup),
// reporting whether it did. onFail, when set, learns a failed write, after
// which the consumer group is back as stored.
func (s *groupShard) downgradeOnLeave(g *group, leaving []*cmember, onFail func(error)) bool {
	cg := g.consumer
	var remaining []*cmember
	for _, m := range cg.sortedMembers() {
		if slices.Contains(leaving, m) {
			continue
		}
		if m.classic == nil || len(m.classic.protocols) == 0 {
			s.logger.Debug("not downgrading: a member remains on the consumer protocol", zap.String("group", g.id), zap.String("member", m.id))
			return false
		}
		remaining = append(remaining, m)
	}
	switch {
	case len(remaining) == 0:
		return false
	case !s.downgradeEnabled():
		s.logger.Info("cannot downgrade consumer group to classic group because the online downgrade is disabled", zap.String("group", g.id))
		return false
	case s.cfg.MaxSize > 0 && len(remaining) > s.cfg.MaxSize:
		s.logger.Info("cannot downgrade consumer group to classic group because its group size is greater than classic group max size", zap.String("group", g.id))
		return false
	}
	s.convertToClassicGroup(g, remaining, "Downgrade group "+g.id+" from consumer to classic.", func(err error) {
		if err != nil && onFail != nil {
			onFail(err)
		}
	})
	return true
}

// convertToClassicGroup is Kafka's convertToClassicGroup: consumer group g
// becomes a Stable classic group of its members remaining (each on the
// classic protocol) at generation = its group epoch, each member's
// assignment its target; the consumer records' tombstones and the
// GroupMetadata record are written, then, when reason is not empty, a
// rebalance is prepared. then learns the write's error; after a failed
// write the consumer group is back as stored.
func (s *groupShard) convertToClassicGroup(g *group, remaining []*cmember, reason string, then func(error)) {
	cg := g.consumer
	recs := downgradeTombstones(g)
	for _, m := range cg.sortedMembers() {
		s.cancel(timerKey{kind: timerConsumerSession, group: g.id, member: m.id})
		s.stopRevokeTimer(g, m)
		s.cancelClassicMemberTimers(g, m.id)
	}
	g.consumer = nil
	g.members, g.static = map[string]*member{}, map[string]string{}
	g.pending, g.pendingSync = map[string]struct{}{}, map[string]struct{}{}
	g.generation, g.protocolType, g.leader = cg.epoch, "consumer", ""
	for _, cm := range remaining {
		m := &member{id: cm.id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			sessionTimeout:   time.Duration(cm.classic.sessionTimeoutMs) * time.Millisecond,
			rebalanceTimeout: cm.rebalanceTimeout, protocolType: "consumer"}
		for _, p := range cm.classic.protocols {
			m.protocols = append(m.protocols, protocolMeta{name: p.name, metadata: p.metadata})
		}
		g.members[m.id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
		if g.leader == "" {
			g.leader = m.id
		}
	}
	g.protocol = g.selectProtocol()
	for _, m := range g.members {
		m.assignment = s.classicAssignment(cg.target[m.id], m.metadataFor(g.protocol))
	}
	g.transition(stateStable, s.now)
	recs = append(recs, kv{key: groupMetadataKey(g.id), value: groupMetadataValue(g, s.now)})
	for _, m := range g.sortedMembers() {
		s.scheduleHeartbeat(g, m)
	}
	s.logger.Info("converted the consumer group to a classic group", zap.String("group", g.id), zap.Int32("generation", g.generation),
		zap.Int("members", len(g.members)))
	s.write(recs, func(err error) {
		if err == nil {
			then(nil)
			return
		}
		s.logger.Error("storing the downgrade of a consumer group", zap.String("group", g.id), zap.Error(err))
		for _, m := range g.sortedMembers() {
			s.answerJoin(m, joinResult{err: storeError(err), memberID: m.id})
			s.answerSync(m, syncResult{err: storeError(err)})
			s.cancel(timerKey{kind: timerHeartbeat, group: g.id, member: m.id})
		}
		s.cancel(timerKey{kind: timerJoin, group: g.id})
		s.cancel(timerKey{kind: timerSync, group: g.id})
		g.members, g.static = map[string]*member{}, map[string]string{}
		g.pendingSync = map[string]struct{}{}
		g.transition(stateEmpty, s.now)
		g.protocol, g.leader = "", ""
		g.consumer = cg
		s.restoreConsumer(g)
		then(err)
	})
	if reason != "" {
		s.prepareRebalance(g, reason)
	}
}

// downgradeTombstones deletes g's consumer group records in Kafka's order
// (ConsumerGroup.createGroupTombstoneRecords): the members' current
// assignments, their targets, the assignment epoch, the members'
// metadata, the regexes, the pre-4.1 partition metadata and the group
// epoch.
func downgradeTombstones(g *group) []kv {
	cg := g.consumer
	ids := map[int16][]string{}
	for k := range cg.stored {
		if ck, err := decodeCGKey([]byte(k)); err == nil && ck.sub != "" {
			ids[ck.typ] = append(ids[ck.typ], ck.sub)
		}
	}
	for _, m := range cg.members {
		for _, typ := range []int16{cgCurrentType, cgTargetMemberType, cgMemberType} {
			if !slices.Contains(ids[typ], m.id) {
				ids[typ] = append(ids[typ], m.id)
			}
		}
	}
	var out []kv
	add := func(typ int16) {
		subs := ids[typ]
		sort.Strings(subs)
		for _, sub := range subs {
			out = append(out, kv{key: cgKey{typ: typ, group: g.id, sub: sub}.encode()})
		}
	}
	add(cgCurrentType)
	add(cgTargetMemberType)
	out = append(out, kv{key: cgKey{typ: cgTargetMetadataType, group: g.id}.encode()})
	add(cgMemberType)
	add(cgRegexType)
	out = append(out, kv{key: cgKey{typ: cgPartitionMetadataType, group: g.id}.encode()},
		kv{key: cgKey{typ: cgMetadataType, group: g.id}.encode()})
	return out
}

// classicAssignment is a member's partitions as the ConsumerProtocolAssignment
// a classic member gets, at the version of its subscription metadata
// (Kafka's prepareAssignment: ConsumerProtocol.serializeAssignment, capped
// at version 3), topics by name in name order.
func (s *groupShard) classicAssignment(set partitionSet, metadata []byte) []byte {
	version := int16(0)
	if len(metadata) >= 2 {
		version = min(max(int16(binary.BigEndian.Uint16(metadata)), 0), 3)
	}
	a := kmsg.ConsumerMemberAssignment{Version: version, Topics: []kmsg.ConsumerMemberAssignmentTopic{}}
	for id, ps := range set {
		if t, ok := s.topics.TopicByID(id); ok && len(ps) > 0 {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t.name, Partitions: slices.Clone(ps)})
		}
	}
	sort.Slice(a.Topics, func(i, j int) bool { return strings.Compare(a.Topics[i].Topic, a.Topics[j].Topic) < 0 })
	return a.AppendTo(nil)
}
