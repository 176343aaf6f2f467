package coordinator

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// groupState is a classic group's state, Kafka's GroupState.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

type protocolMeta struct {
	name     string
	metadata []byte
}

// joinResult is what a waiting JoinGroup is answered with.
type joinResult struct {
	err            *kerr.Error
	memberID       string
	generation     int32
	protocolType   string
	protocol       string
	leader         string
	skipAssignment bool
	members        []kmsg.JoinGroupResponseMember
}

// syncResult is what a waiting SyncGroup is answered with.
type syncResult struct {
	err        *kerr.Error
	assignment []byte
}

type member struct {
	id, instanceID       string // instanceID "" for dynamic members
	clientID, clientHost string
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	protocolType         string
	protocols            []protocolMeta
	assignment           []byte

	joinWaiter uint64 // the JoinGroup waiting for the rebalance, 0 for none
	syncWaiter uint64 // the SyncGroup waiting for the leader, 0 for none
	isNew      bool
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata
		}
	}
	return nil
}

func (m *member) supports(protocol string) bool {
	for _, p := range m.protocols {
		if p.name == protocol {
			return true
		}
	}
	return false
}

func (m *member) sameProtocols(ps []protocolMeta) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || string(ps[i].metadata) != string(m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// topicPartition is a partition by topic name: of a committed offset, or of
// a transaction.
type topicPartition struct {
	topic     string
	partition int32
}

// compareTPs orders partitions by topic, then partition.
func compareTPs(a, b topicPartition) int {
	return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// sortedTPs is m's partitions in compareTPs order.
func sortedTPs[V any](m map[topicPartition]V) []topicPartition {
	return slices.SortedFunc(maps.Keys(m), compareTPs)
}

type committedOffset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // unix ms
	expireTime  int64 // unix ms, -1 unless a v1 value set it
}

// group is one group's membership (its offsets are in the shard's
// offsetStore); id and partition never change.
type group struct {
	id        string
	partition int32

	state        groupState
	stateTime    time.Time
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	static       map[string]string   // instance id -> member id
	pending      map[string]struct{} // member ids handed out with MEMBER_ID_REQUIRED, not yet joined
	pendingSync  map[string]struct{} // members that joined the generation and have not synced yet
	newMember    bool                // a member joined during the initial rebalance delay

	// The join timer ends PreparingRebalance; initialDelay says it is the
	// group.initial.rebalance.delay.ms phase, which no join completes early.
	initialDelay   bool
	delayRemaining time.Duration

	// consumer is set for KIP-848 consumer groups (consumer.go); the
	// classic fields above then stay Empty, with protocolType "consumer".
	consumer *consumerGroup
	// streams is set for KIP-1071 streams groups (streams.go), with
	// protocolType "streams".
	streams *streamsGroup
	// share is set for KIP-932 share groups (share_group.go), with
	// protocolType "share".
	share *shareGroup
}

func newGroup(id string, partition int32, now time.Time) *group {
	return &group{
		id:          id,
		partition:   partition,
		stateTime:   now,
		members:     make(map[string]*member),
		static:      make(map[string]string),
		pending:     make(map[string]struct{}),
		pendingSync: make(map[string]struct{}),
	}
}

func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

func (g *group) transition(s groupState, now time.Time) {
	g.state, g.stateTime = s, now
}

// supportsProtocols is Kafka's GroupMetadata.supportsProtocols: an empty
// group takes any non-empty protocol list; otherwise the type must match
// and one of the protocols must be supported by every current member.
func (g *group) supportsProtocols(protocolType string, ps []protocolMeta) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		all := true
		for _, m := range g.members {
			if !m.supports(p.name) {
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

// selectProtocol is Kafka's GroupMetadata.selectProtocol: among the
// protocols every member supports, each member votes for the first one in
// its own preference order, and the most votes win. Ties go to the earlier
// protocol in the first member's (by id) preference list.
func (g *group) selectProtocol() string {
	ms := g.sortedMembers()
	if len(ms) == 0 {
		return ""
	}
	var candidates []string
	for _, p := range ms[0].protocols {
		all := true
		for _, m := range ms[1:] {
			if !m.supports(p.name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.name)
		}
	}
	votes := make(map[string]int, len(candidates))
	for _, m := range ms {
		for _, p := range m.protocols {
			if contains(candidates, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// rebalanceTimeout is the longest rebalance timeout of the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinWaiter == 0 {
			return false
		}
	}
	return true
}

// fenced reports whether instanceID belongs to a member other than memberID.
func (g *group) fenced(instanceID, memberID string) bool {
	if instanceID == "" {
		return false
	}
	id, ok := g.static[instanceID]
	return ok && id != memberID
}

// currentMembers is the leader's view of the members in a JoinGroup
// response: id, instance id and metadata for the chosen protocol.
func (g *group) currentMembers() []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	for _, m := range g.sortedMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		if m.instanceID != "" {
			id := m.instanceID
			jm.InstanceID = &id
		}
		jm.ProtocolMetadata = m.metadataFor(g.protocol)
		out = append(out, jm)
	}
	return out
}

// addMember registers m and starts (or joins) a rebalance.
func (s *groupShard) addMemberAndRebalance(g *group, m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	delete(g.pending, m.id)
	if g.state == statePreparingRebalance && g.initialDelay {
		g.newMember = true
	}
	m.isNew = true
	if g.leader == "" {
		g.leader = m.id
	}
	s.maybePrepareRebalance(g, "member "+m.id+" joined")
}

// removeMember drops m from the group, answering its waiting requests with
// UNKNOWN_MEMBER_ID.
func (s *groupShard) removeMember(g *group, m *member) {
	delete(g.members, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	delete(g.pendingSync, m.id)
	s.cancel(timerKey{kind: timerHeartbeat, group: g.id, member: m.id})
	s.answerJoin(m, joinResult{err: kerr.UnknownMemberID, memberID: m.id, generation: -1})
	s.answerSync(m, syncResult{err: kerr.UnknownMemberID})
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMemberAndUpdateGroup is Kafka's removeMemberAndUpdateGroup.
func (s *groupShard) removeMemberAndUpdateGroup(g *group, m *member, reason string) {
	s.removeMember(g, m)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		s.prepareRebalance(g, reason)
	case statePreparingRebalance:
		s.tryCompleteJoin(g)
	}
}

func (s *groupShard) maybePrepareRebalance(g *group, reason string) {
	switch g.state {
	case stateStable, stateCompletingRebalance, stateEmpty:
		s.prepareRebalance(g, reason)
	case statePreparingRebalance:
		s.tryCompleteJoin(g)
	}
}

// prepareRebalance moves g to PreparingRebalance and arms the join timer:
// the initial rebalance delay for an empty group, else the longest
// rebalance timeout.
func (s *groupShard) prepareRebalance(g *group, reason string) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.sortedMembers() {
			m.assignment = nil
			s.answerSync(m, syncResult{err: kerr.RebalanceInProgress})
		}
	}
	g.pendingSync = make(map[string]struct{})
	s.cancel(timerKey{kind: timerSync, group: g.id})
	timeout := g.rebalanceTimeout()
	wasEmpty := g.state == stateEmpty
	g.transition(statePreparingRebalance, s.now)
	s.logger.Info("preparing to rebalance group", zap.String("group", g.id), zap.Int32("generation", g.generation), zap.String("reason", reason))
	if wasEmpty {
		delay := s.cfg.InitialRebalanceDelay
		g.initialDelay, g.newMember = true, false
		g.delayRemaining = max(timeout-delay, 0)
		if delay <= 0 {
			g.initialDelay = false
			s.tryCompleteJoin(g)
			return
		}
		s.armJoinTimer(g, delay)
		return
	}
	g.initialDelay = false
	s.armJoinTimer(g, timeout)
	s.tryCompleteJoin(g)
}

func (s *groupShard) armJoinTimer(g *group, d time.Duration) {
	s.schedule(timerKey{kind: timerJoin, group: g.id}, d)
}

// onJoinTimer ends the join phase, or extends the initial delay.
func (s *groupShard) onJoinTimer(g *group) {
	if g.state != statePreparingRebalance {
		return
	}
	if g.initialDelay && g.newMember && g.delayRemaining > 0 {
		// Kafka's InitialDelayedJoin: new members keep extending the
		// delay, within the rebalance timeout.
		next := min(s.cfg.InitialRebalanceDelay, g.delayRemaining)
		g.delayRemaining -= next
		g.newMember = false
		s.armJoinTimer(g, next)
		return
	}
	s.completeJoin(g)
}

// tryCompleteJoin completes the join phase once every member rejoined,
// except during the initial delay, which only its timer ends.
func (s *groupShard) tryCompleteJoin(g *group) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allJoined() {
		s.completeJoin(g)
	}
}

// completeJoin is Kafka's onCompleteJoin: members that did not rejoin are
// dropped (static ones are kept until their session expires), the next
// generation starts and every waiting JoinGroup is answered.
func (s *groupShard) completeJoin(g *group) {
	s.cancel(timerKey{kind: timerJoin, group: g.id})
	g.initialDelay = false
	for _, m := range g.sortedMembers() {
		if m.joinWaiter == 0 && m.instanceID == "" {
			s.logger.Info("member did not rejoin in time, removing it", zap.String("group", g.id), zap.String("member", m.id))
			s.removeMember(g, m)
		}
	}
	g.pending = make(map[string]struct{})
	if l, ok := g.members[g.leader]; !ok || l.joinWaiter == 0 {
		g.leader = ""
		for _, m := range g.sortedMembers() {
			if m.joinWaiter != 0 {
				g.leader = m.id
				break
			}
		}
		if g.leader == "" && len(g.members) > 0 {
			// Only static members that have not rejoined are left: wait
			// for them to rejoin or for their sessions to expire.
			s.armJoinTimer(g, g.rebalanceTimeout())
			return
		}
	}
	now := s.now
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader = "", "" // the protocol type stays, as in Kafka
		g.transition(stateEmpty, now)
		s.logger.Info("group is empty", zap.String("group", g.id), zap.Int32("generation", g.generation))
		s.storeGroup(g, func(err error) {
			if err != nil {
				s.logger.Error("storing group metadata", zap.String("group", g.id), zap.Error(err))
			}
		})
		return
	}
	g.protocol = g.selectProtocol()
	g.transition(stateCompletingRebalance, now)
	s.logger.Info("stabilized group", zap.String("group", g.id), zap.Int32("generation", g.generation),
		zap.String("protocol", g.protocol), zap.Int("members", len(g.members)))
	for _, m := range g.sortedMembers() {
		r := joinResult{memberID: m.id, generation: g.generation, protocolType: g.protocolType, protocol: g.protocol, leader: g.leader}
		if m.id == g.leader {
			r.members = g.currentMembers()
		}
		s.answerJoin(m, r)
		s.scheduleHeartbeat(g, m)
		m.isNew = false
		g.pendingSync[m.id] = struct{}{}
	}
	s.armSyncTimer(g)
}

// armSyncTimer drops the members that do not send SyncGroup within the
// rebalance timeout and rebalances (Kafka's pending-sync expiration).
func (s *groupShard) armSyncTimer(g *group) {
	s.schedule(timerKey{kind: timerSync, group: g.id}, g.rebalanceTimeout())
}

func (s *groupShard) onSyncTimer(g *group) {
	if len(g.pendingSync) == 0 || (g.state != stateCompletingRebalance && g.state != stateStable) {
		return
	}
	for _, id := range sortedKeys(g.pendingSync) {
		if m := g.members[id]; m != nil {
			s.logger.Info("member did not sync in time, removing it", zap.String("group", g.id), zap.String("member", id))
			s.removeMember(g, m)
		}
	}
	s.prepareRebalance(g, "members did not sync in time")
}

// scheduleHeartbeat (re)starts m's session timer.
func (s *groupShard) scheduleHeartbeat(g *group, m *member) {
	s.schedule(timerKey{kind: timerHeartbeat, group: g.id, member: m.id}, m.sessionTimeout)
}

func (s *groupShard) onHeartbeatTimer(g *group, id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	if m.joinWaiter != 0 || m.syncWaiter != 0 {
		// A member waiting on us is alive; the rebalance and sync
		// timeouts bound how long it can wait.
		s.scheduleHeartbeat(g, m)
		return
	}
	s.logger.Info("member session expired", zap.String("group", g.id), zap.String("member", m.id),
		zap.Duration("session_timeout", m.sessionTimeout))
	s.removeMemberAndUpdateGroup(g, m, "session of member "+m.id+" expired")
}

func sortedKeys(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
