package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// KIP-848 consumer groups ("consumer" group type): members heartbeat with
// ConsumerGroupHeartbeat and the coordinator computes the assignment. The
// model is Kafka's GroupMetadataManager.consumerGroupHeartbeat:
//
//   - The group epoch is bumped whenever a member joins, leaves, is fenced
//     or changes its subscription, and whenever the subscribed topics'
//     metadata (ids, partition counts) changes.
//   - When the group epoch is ahead of the assignment epoch, the group's
//     server assignor (uniform or range, the most common choice of the
//     members) computes a target assignment for every member, and the
//     assignment epoch catches up.
//   - Each member reconciles towards its target on its own heartbeats
//     (Kafka's CurrentAssignmentBuilder): partitions it must give up are
//     first taken out of its assignment and stay "pending revocation" at
//     its current epoch until a heartbeat shows it no longer owns them
//     (UNREVOKED_PARTITIONS); only then does it move to the assignment
//     epoch. A partition is never handed to a member while another member
//     still holds it (assigned or pending revocation); the new owner waits
//     for it in UNRELEASED_PARTITIONS and gets it on a later heartbeat.
//   - A member missing its session timeout (group.consumer.session.timeout.ms)
//     or not revoking within its rebalance timeout is fenced: removed, its
//     partitions free.
//   - Member epoch -1 leaves; -2 is a static member leaving for a while: it
//     keeps its assignment until its session expires, and a new member id
//     with the same group.instance.id takes it over.
//
// The group lives in __consumer_offsets as Kafka's ConsumerGroup* records
// (consumer_records.go, consumer_replay.go): every change is durable before
// the heartbeat that made it is answered, and a restart or a coordinator
// move keeps members, epochs and assignments. Committed offsets are the
// same OffsetCommit records as for classic groups.

// Consumer group member states (Kafka's MemberState).
type cmemberState int8

const (
	cmemberStable cmemberState = iota
	cmemberUnrevoked
	cmemberUnreleased
)

// Special member epochs of ConsumerGroupHeartbeat.
const (
	leaveEpoch       = -1
	staticLeaveEpoch = -2
)

// Server assignors, in preference order (group.consumer.assignors default).
var consumerAssignors = []string{"uniform", "range"}

// tpID is a partition of a topic named by its id.
type tpID struct {
	topic     [16]byte
	partition int32
}

// partitionSet is an assignment: partitions by topic id, each sorted.
type partitionSet map[[16]byte][]int32

func (s partitionSet) has(id [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(s[id], p)
	return ok
}

func (s partitionSet) add(id [16]byte, p int32) {
	ps := s[id]
	if i, ok := slices.BinarySearch(ps, p); !ok {
		s[id] = slices.Insert(ps, i, p)
	}
}

func (s partitionSet) count() int {
	n := 0
	for _, ps := range s {
		n += len(ps)
	}
	return n
}

func (s partitionSet) equal(o partitionSet) bool {
	if s.count() != o.count() {
		return false
	}
	for id, ps := range s {
		if !slices.Equal(ps, o[id]) {
			return false
		}
	}
	return true
}

func (s partitionSet) each(fn func(id [16]byte, p int32)) {
	for id, ps := range s {
		for _, p := range ps {
			fn(id, p)
		}
	}
}

// cmember is one member of a consumer group.
type cmember struct {
	id, instanceID, rackID string
	clientID, clientHost   string
	epoch, prevEpoch       int32
	state                  cmemberState
	rebalanceTimeout       time.Duration
	assignor               string   // requested server assignor, "" for none
	topics                 []string // subscribed topic names, sorted
	regex                  string   // subscribed topic regex (v1), resolved by the group (consumer_regex.go)

	assigned partitionSet // what the member should own now
	revoking partitionSet // what it must still give up

	classic *cgClassicMember // as a Kafka record of a member on the classic protocol said
}

// consumerGroup is the KIP-848 part of a group; nil for classic groups.
type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32
	assignor        string // of the last target assignment
	members         map[string]*cmember
	static          map[string]string // instance id -> member id
	target          map[string]partitionSet
	owners          map[tpID]string // partition -> member holding it (assigned or pending revocation)
	metadataHash    int64           // of the subscribed topics' metadata (subscriptionHash)
	assignmentTime  int64           // unix ms of the last target assignment

	resolved map[string]resolvedRegex // the members' regexes as last resolved; nil for none
	// regexAuth is the CanDescribe of the member whose heartbeat started
	// the pending resolution, as Kafka resolves with that request's context.
	regexAuth func(topic string) bool

	stored          consumerImage       // the group's records as last made durable (consumer_replay.go)
	storedIDs       map[string]struct{} // its members then
	storedRegexes   map[string]struct{} // its resolved regexes then
	replacesClassic bool                // a classic group turned into this one; its record's tombstone goes with the first write
	upgradedFrom    *classicSnapshot    // the non-empty classic group it replaced, until that first write (consumer_migrate.go)
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*cmember{},
		static:  map[string]string{},
		target:  map[string]partitionSet{},
		owners:  map[tpID]string{},
	}
}

func (cg *consumerGroup) sortedMembers() []*cmember {
	ms := make([]*cmember, 0, len(cg.members))
	for _, m := range cg.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

// state is Kafka's ConsumerGroup state name.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != cmemberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// setAssignment replaces m's assigned and pending partitions, keeping the
// owners map in step.
func (cg *consumerGroup) setAssignment(m *cmember, assigned, revoking partitionSet) {
	release := func(id [16]byte, p int32) {
		if cg.owners[tpID{id, p}] == m.id {
			delete(cg.owners, tpID{id, p})
		}
	}
	m.assigned.each(release)
	m.revoking.each(release)
	m.assigned, m.revoking = assigned, revoking
	claim := func(id [16]byte, p int32) { cg.owners[tpID{id, p}] = m.id }
	m.assigned.each(claim)
	m.revoking.each(claim)
}

// freeFor reports whether partition tp can be given to m.
func (cg *consumerGroup) freeFor(m *cmember, tp tpID) bool {
	o, ok := cg.owners[tp]
	return !ok || o == m.id
}

// heartbeatError is a failed ConsumerGroupHeartbeat.
func heartbeatError(err *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.ErrorCode = err.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	resp.MemberEpoch = -1
	return resp
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, version int16) (*kerr.Error, string) {
	switch {
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return kerr.InvalidRequest, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	case version >= 1 && req.MemberID == "":
		return kerr.InvalidRequest, "MemberId can't be empty."
	case version == 0 && req.MemberEpoch != 0 && req.MemberID == "":
		return kerr.InvalidRequest, "MemberId can't be empty."
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return kerr.InvalidRequest, "InstanceId can't be null."
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	}
	if req.ServerAssignor != nil && !slices.Contains(consumerAssignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor, "ServerAssignor " + *req.ServerAssignor + " is not supported. Supported assignors: " +
			strings.Join(consumerAssignors, ", ") + "."
	}
	return nil, ""
}

// consumerGroupHeartbeat handles a valid ConsumerGroupHeartbeat (KIP-848)
// as Kafka's consumerGroupHeartbeat.
func (s *groupShard) consumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, version int16, client Client) *kmsg.ConsumerGroupHeartbeatResponse {
	g := s.group(req.Group, req.MemberEpoch == 0)
	if g == nil {
		return heartbeatError(kerr.UnknownMemberID, "Consumer group "+req.Group+" not found.")
	}
	if g.consumer == nil {
		if g.streams != nil || g.share != nil {
			return heartbeatError(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group.")
		}
		if resp := s.heartbeatToClassicGroup(g, req); resp != nil {
			return resp
		}
	}
	cg := g.consumer
	if _, known := cg.members[req.MemberID]; !known && s.cfg.ConsumerMaxSize > 0 && len(cg.members) >= s.cfg.ConsumerMaxSize {
		return heartbeatError(kerr.GroupMaxSizeReached, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", s.cfg.ConsumerMaxSize))
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return s.consumerLeave(g, req)
	}
	m, errResp := s.consumerMember(g, req, version)
	if errResp != nil {
		return errResp
	}
	oldRegex := m.regex
	if r := req.SubscribedTopicRegex; r != nil && *r != "" && *r != oldRegex {
		if resp := regexError(*r); resp != nil {
			return resp
		}
	}
	joining := req.MemberEpoch == 0
	bump := false
	if s.updateConsumerMember(m, req, client) {
		bump = true
	}
	if _, ok := cg.members[m.id]; !ok {
		cg.members[m.id] = m
		if m.instanceID != "" {
			cg.static[m.instanceID] = m.id
		}
		bump = true
		s.logger.Info("member joined consumer group", zap.String("group", g.id), zap.String("member", m.id))
	}
	if s.maybeUpdateRegexes(g, m, oldRegex, client) {
		bump = true
	}
	if h := s.subscriptionHash(cg); h != cg.metadataHash {
		cg.metadataHash = h
		bump = true
	}
	if bump {
		cg.epoch++
	}
	if cg.epoch > cg.assignmentEpoch {
		s.computeTargetAssignment(g)
	}
	var owned partitionSet
	if req.Topics != nil {
		owned = partitionSet{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				owned.add(t.TopicID, p)
			}
		}
	}
	before := m.assigned
	s.reconcile(g, m, owned)
	s.scheduleConsumerSession(g, m)

	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(s.consumerHeartbeatInterval(g.id).Milliseconds())
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if joining || full || !before.equal(m.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		ids := make([][16]byte, 0, len(m.assigned))
		for id := range m.assigned {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
		for _, id := range ids {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, slices.Clone(m.assigned[id])
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return resp
}

// consumerMember finds or creates the member a heartbeat is from, checking
// its epoch and static identity as Kafka's
// getOrMaybeSubscribeDynamic/StaticConsumerGroupMember do.
func (s *groupShard) consumerMember(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, version int16) (*cmember, *kmsg.ConsumerGroupHeartbeatResponse) {
	cg := g.consumer
	instance := deref(req.InstanceID)
	m := cg.members[req.MemberID]
	if instance != "" {
		if oldID, ok := cg.static[instance]; ok && oldID != req.MemberID {
			old := cg.members[oldID]
			switch {
			case req.MemberEpoch != 0:
				return nil, heartbeatError(kerr.FencedInstanceID, "Static member "+instance+" was replaced by member "+oldID+".")
			case old != nil && old.epoch != staticLeaveEpoch:
				return nil, heartbeatError(kerr.UnreleasedInstanceID, "Static member "+instance+" with member id "+oldID+" has not left the group.")
			case old != nil:
				return s.replaceStaticMember(g, old, req.MemberID), nil
			}
		}
	}
	if m == nil {
		if req.MemberEpoch != 0 {
			return nil, heartbeatError(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		}
		id := req.MemberID
		if id == "" { // v0: the coordinator names the member
			id = s.newMemberID("")[1:]
		}
		return &cmember{id: id, assigned: partitionSet{}, revoking: partitionSet{}}, nil
	}
	if req.MemberEpoch == 0 {
		// A rejoin (e.g. after a lost response, or of a static member
		// that left with -2): the current assignment is sent again.
		if m.epoch == staticLeaveEpoch {
			m.epoch = m.prevEpoch
		}
		return m, nil
	}
	if req.MemberEpoch > m.epoch {
		return nil, heartbeatError(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch ("+
			strconv.Itoa(int(req.MemberEpoch))+") than the one known by the group coordinator ("+strconv.Itoa(int(m.epoch))+
			"). The member must abandon all its partitions and rejoin.")
	}
	if req.MemberEpoch < m.epoch {
		ok := req.MemberEpoch == m.prevEpoch
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				ok = ok && m.assigned.has(t.TopicID, p)
			}
		}
		if !ok {
			return nil, heartbeatError(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch ("+
				strconv.Itoa(int(req.MemberEpoch))+") than the one known by the group coordinator ("+strconv.Itoa(int(m.epoch))+
				"). The member must abandon all its partitions and rejoin.")
		}
	}
	return m, nil
}

// replaceStaticMember gives a static member that left with epoch -2 a new
// member id, keeping its assignment (Kafka's static member replacement).
func (s *groupShard) replaceStaticMember(g *group, old *cmember, newID string) *cmember {
	cg := g.consumer
	m := &cmember{}
	*m = *old
	m.id = newID
	m.epoch, m.state = old.prevEpoch, cmemberStable
	assigned, revoking := old.assigned, old.revoking
	target, hasTarget := cg.target[old.id]
	s.removeConsumerMember(g, old, false) // drops old's target
	cg.members[m.id] = m
	cg.static[m.instanceID] = m.id
	m.assigned, m.revoking = partitionSet{}, partitionSet{}
	cg.setAssignment(m, assigned, revoking)
	if hasTarget {
		cg.target[m.id] = target
	}
	s.logger.Info("static member rejoined consumer group with a new member id", zap.String("group", g.id),
		zap.String("instance_id", m.instanceID), zap.String("old_member", old.id), zap.String("member", m.id))
	return m
}

// updateConsumerMember applies the request's non-null fields to m and
// reports whether its subscription changed (which bumps the group epoch); a
// new regex bumps it once resolved (maybeUpdateRegexes).
func (s *groupShard) updateConsumerMember(m *cmember, req *kmsg.ConsumerGroupHeartbeatRequest, client Client) bool {
	changed := false
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, changed = *req.ServerAssignor, true
	}
	if req.SubscribedTopicNames != nil {
		topics := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.topics) {
			m.topics, changed = topics, true
		}
	}
	if req.SubscribedTopicRegex != nil {
		m.regex = *req.SubscribedTopicRegex
	}
	m.clientID, m.clientHost = client.ID, client.Host
	return changed
}

// consumerLeave handles member epoch -1 (leave) and -2 (a static member
// leaving for a while).
func (s *groupShard) consumerLeave(g *group, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	cg := g.consumer
	m := cg.members[req.MemberID]
	instance := deref(req.InstanceID)
	if m == nil && instance != "" {
		m = cg.members[cg.static[instance]]
		if m != nil && m.id != req.MemberID {
			return heartbeatError(kerr.FencedInstanceID, "Static member "+instance+" was replaced by member "+m.id+".")
		}
	}
	if m == nil {
		return heartbeatError(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch && m.instanceID != "" {
		s.logger.Info("static member left consumer group temporarily", zap.String("group", g.id), zap.String("member", m.id),
			zap.String("instance_id", m.instanceID))
		if m.epoch != staticLeaveEpoch {
			m.prevEpoch = m.epoch
		}
		m.epoch = staticLeaveEpoch
		s.stopRevokeTimer(g, m)
		s.scheduleConsumerSession(g, m) // the session expiring removes it for good
		return resp
	}
	s.logger.Info("member left consumer group", zap.String("group", g.id), zap.String("member", m.id))
	if s.downgradeOnLeave(g, []*cmember{m}, func(err error) { *resp = *heartbeatError(storeError(err), "") }) {
		return resp
	}
	s.removeConsumerMember(g, m, true)
	cg.pruneRegexes()
	return resp
}

// removeConsumerMember drops m (leave, fencing, or static replacement),
// freeing its partitions; bump bumps the group epoch so the others get a
// new target.
func (s *groupShard) removeConsumerMember(g *group, m *cmember, bump bool) {
	cg := g.consumer
	cg.setAssignment(m, partitionSet{}, partitionSet{})
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != "" && cg.static[m.instanceID] == m.id {
		delete(cg.static, m.instanceID)
	}
	s.cancel(timerKey{kind: timerConsumerSession, group: g.id, member: m.id})
	s.stopRevokeTimer(g, m)
	s.cancelClassicMemberTimers(g, m.id)
	if bump {
		cg.epoch++
	}
	if len(cg.members) == 0 {
		g.stateTime = s.now
	}
}

// fenceConsumerMember removes m after its session or revocation timed out.
func (s *groupShard) fenceConsumerMember(g *group, m *cmember, why string) {
	s.logger.Info("fencing consumer group member", zap.String("group", g.id), zap.String("member", m.id), zap.String("reason", why))
	if !s.downgradeOnLeave(g, []*cmember{m}, nil) {
		s.removeConsumerMember(g, m, true)
		g.consumer.pruneRegexes()
	}
}

// scheduleConsumerSession (re)starts m's session timer: a member on the
// classic protocol has its own session timeout.
func (s *groupShard) scheduleConsumerSession(g *group, m *cmember) {
	d := s.consumerSessionTimeout(g.id)
	if m.classic != nil {
		d = time.Duration(m.classic.sessionTimeoutMs) * time.Millisecond
	}
	s.schedule(timerKey{kind: timerConsumerSession, group: g.id, member: m.id}, d)
}

// consumerSessionTimeout is the group's own session timeout, else the
// broker's, as Kafka's GroupMetadataManager reads a group's config.
func (s *groupShard) consumerSessionTimeout(group string) time.Duration {
	if s.cfg.GroupOverrides != nil {
		if d, _ := s.cfg.GroupOverrides(group); d > 0 {
			return d
		}
	}
	return s.cfg.ConsumerSessionTimeout
}

// consumerHeartbeatInterval is the group's own heartbeat interval, else
// the broker's.
func (s *groupShard) consumerHeartbeatInterval(group string) time.Duration {
	if s.cfg.GroupOverrides != nil {
		if _, d := s.cfg.GroupOverrides(group); d > 0 {
			return d
		}
	}
	return s.cfg.ConsumerHeartbeatInterval
}

func (s *groupShard) stopRevokeTimer(g *group, m *cmember) {
	s.cancel(timerKey{kind: timerConsumerRevoke, group: g.id, member: m.id})
}

// revokeTimeout is how long m has to revoke: its rebalance timeout.
func (s *groupShard) revokeTimeout(m *cmember) time.Duration {
	if m.rebalanceTimeout <= 0 {
		return s.cfg.ConsumerSessionTimeout
	}
	return m.rebalanceTimeout
}

// scheduleRevocation fences m unless it revokes within its rebalance timeout.
func (s *groupShard) scheduleRevocation(g *group, m *cmember) {
	s.schedule(timerKey{kind: timerConsumerRevoke, group: g.id, member: m.id}, s.revokeTimeout(m))
}

// consumerMember is the consumer group member id, or nil.
func (g *group) consumerMember(id string) *cmember {
	if g.consumer == nil {
		return nil
	}
	return g.consumer.members[id]
}
