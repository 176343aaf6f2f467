package coordinator

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// KIP-932 share groups ("share" group type): members heartbeat with
// ShareGroupHeartbeat and the coordinator assigns partitions with Kafka's
// SimpleAssignor (share_group_assign.go), as Kafka 4.4's
// GroupMetadataManager.shareGroupHeartbeat:
//
//   - The group epoch is bumped when a member joins, leaves, is fenced or
//     changes its subscription, when the subscribed topics' metadata hash
//     changes, and when partitions whose share state was initialized since
//     are not in the target assignment yet.
//   - When the group epoch is ahead of the assignment epoch, a target
//     assignment is computed over the partitions whose share state is
//     initialized, at most once per share.assignment.interval.ms (the
//     heartbeats in between reconcile to the target there is); a member
//     takes its target at once (a partition may be read by several members,
//     so there is no revocation phase).
//   - A subscribed partition is assignable once the share coordinator
//     initialized its state: the heartbeat that first sees it records it
//     as initializing (ShareGroupStatePartitionMetadata), the driver sends
//     InitializeShareGroupState (GroupConfig.ShareInitialize) with start
//     offset -1 for a new topic (the share-partition applies
//     share.auto.offset.reset) and 0 for partitions added to a topic
//     already known, and records the outcome: initialized, or dropped from
//     initializing (retried by a later heartbeat). An initialization
//     pending for longer than shareInitRetryInterval is asked again.
//   - A member missing its session timeout (group.share.session.timeout.ms,
//     or the group's share.session.timeout.ms) is fenced; member epoch -1
//     leaves.
//
// The group lives in __consumer_offsets as Kafka's ShareGroup* records
// (share_group_records.go, share_group_replay.go), written before the
// heartbeat is answered and replayed on load.

// shareInitRetryInterval is Kafka's group.share.initialize.retry.interval.ms
// default.
const shareInitRetryInterval = 30 * time.Second

// shareAssignorName is the assignor share groups are described with.
const shareAssignorName = "simple"

// ShareSettings is a share group's settings: its share.* group configs,
// else the broker's group.share.* ones.
type ShareSettings struct {
	SessionTimeout     time.Duration // share.session.timeout.ms
	HeartbeatInterval  time.Duration // share.heartbeat.interval.ms
	AssignmentInterval time.Duration // share.assignment.interval.ms
	MaxSize            int           // group.share.max.size
}

// defaultShareSettings is Kafka 4.4's defaults.
var defaultShareSettings = ShareSettings{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second,
	AssignmentInterval: time.Second, MaxSize: 200}

// shmember is one member of a share group.
type shmember struct {
	id, rackID, clientID, clientHost string
	epoch, prevEpoch                 int32
	topics                           []string // subscribed topic names, sorted
	assigned                         partitionSet
}

// shareTopicState is a topic of ShareGroupStatePartitionMetadata: its name
// and the partitions initializing or initialized; since is when an
// initialization was asked for (kept in memory only, as Kafka does).
type shareTopicState struct {
	name       string
	partitions []int32
	since      time.Time
}

// shareGroup is the KIP-932 part of a group; nil for other groups.
type shareGroup struct {
	epoch, assignmentEpoch int32
	metadataHash           int64
	assignmentTime         int64 // unix ms of the last target assignment
	members                map[string]*shmember
	target                 map[string]partitionSet

	initializing, initialized map[[16]byte]shareTopicState
	deleting                  map[[16]byte]string

	stored  consumerImage // the group's records as last made durable
	written consumerImage // stored and the writes queued since, which the next write is compared with
}

// newShareGroup is a new group at Kafka's first group epoch, 1 (a
// ModernGroup starts there; the first member's join bumps it to 2).
func newShareGroup() *shareGroup {
	return &shareGroup{
		epoch:        1,
		members:      map[string]*shmember{},
		target:       map[string]partitionSet{},
		initializing: map[[16]byte]shareTopicState{},
		initialized:  map[[16]byte]shareTopicState{},
		deleting:     map[[16]byte]string{},
	}
}

func (sg *shareGroup) sortedMembers() []*shmember {
	ms := make([]*shmember, 0, len(sg.members))
	for _, m := range sg.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

// state is Kafka's ShareGroupState name.
func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// ShareInit is the InitializeShareGroupState a heartbeat asks for: the
// group, its epoch (the state epoch) and the partitions by topic, each
// with its start offset.
type ShareInit struct {
	Group  string
	Epoch  int32
	Topics []ShareInitTopic
}

// ShareInitTopic is a topic's partitions to initialize.
type ShareInitTopic struct {
	TopicID     [16]byte
	Partitions  []int32
	StartOffset int64
}

// Request is the InitializeShareGroupState request of i.
func (i *ShareInit) Request() *kmsg.InitializeShareGroupStateRequest {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = i.Group
	for _, t := range i.Topics {
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p, i.Epoch, t.StartOffset
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// shareHeartbeatError is a failed ShareGroupHeartbeat.
func shareHeartbeatError(err *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.ErrorCode = err.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// validateShareHeartbeat is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid;
// an empty member id is refused earlier in Kafka (KafkaApis), without a
// message.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.MemberID == "":
		return kerr.InvalidRequest, ""
	case req.GroupID == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return kerr.InvalidRequest, "SubscribedTopicNames must be set in first request."
	case req.MemberEpoch < leaveEpoch:
		return kerr.InvalidRequest, "MemberEpoch is invalid."
	}
	return nil, ""
}

// shareSettings is the group's settings.
func (s *groupShard) shareSettings(group string) ShareSettings {
	if s.cfg.ShareSettings == nil {
		return defaultShareSettings
	}
	return s.cfg.ShareSettings(group)
}

// shareGroupOf returns g's share group, making a new group one; nil with
// the error when g is another kind of group.
func (s *groupShard) shareGroupOf(g *group) *shareGroup {
	if g.share == nil && g.consumer == nil && g.streams == nil && len(g.members) == 0 && g.generation == 0 &&
		g.protocolType == "" && s.offsets.count(g.id) == 0 {
		g.share, g.protocolType = newShareGroup(), "share"
	}
	return g.share
}

// shareGroupHeartbeat handles a valid ShareGroupHeartbeat; init is the
// share state initialization it asks for, nil for none.
func (s *groupShard) shareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, client Client) (resp *kmsg.ShareGroupHeartbeatResponse, init *ShareInit) {
	g := s.group(req.GroupID, req.MemberEpoch == 0)
	if g == nil {
		return shareHeartbeatError(kerr.GroupIDNotFound, "Share group "+req.GroupID+" not found."), nil
	}
	sg := s.shareGroupOf(g)
	if sg == nil {
		return shareHeartbeatError(kerr.GroupIDNotFound, "Group "+req.GroupID+" is not a share group."), nil
	}
	if max := s.shareSettings(g.id).MaxSize; max > 0 && len(sg.members) >= max && sg.members[req.MemberID] == nil {
		return shareHeartbeatError(kerr.GroupMaxSizeReached, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", max)), nil
	}
	if req.MemberEpoch == leaveEpoch {
		return s.shareLeave(g, req.MemberID), nil
	}
	m := sg.members[req.MemberID]
	switch {
	case m == nil && req.MemberEpoch != 0:
		return shareHeartbeatError(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+"."), nil
	case m == nil:
		m = &shmember{id: req.MemberID, assigned: partitionSet{}}
		s.logger.Info("member joins the share group", zap.String("group", g.id), zap.String("member", m.id))
	case req.MemberEpoch > m.epoch:
		return shareHeartbeatError(kerr.FencedMemberEpoch, "The share group member has a greater member epoch ("+itoa(req.MemberEpoch)+
			") than the one known by the group coordinator ("+itoa(m.epoch)+"). The member must abandon all its partitions and rejoin."), nil
	case req.MemberEpoch != 0 && req.MemberEpoch < m.epoch && req.MemberEpoch != m.prevEpoch:
		return shareHeartbeatError(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch ("+itoa(req.MemberEpoch)+
			") than the one known by the group coordinator ("+itoa(m.epoch)+"), and it does not match the previous member epoch ("+
			itoa(m.prevEpoch)+"). The member must abandon all its partitions and rejoin."), nil
	}
	bump := false
	if sg.assignmentEpoch >= sg.epoch && s.initializedAssignmentPending(sg) {
		bump = true
	}
	if req.RackID != nil {
		m.rackID = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		topics := slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
		if !slices.Equal(topics, m.topics) {
			m.topics, bump = topics, true
		}
	}
	m.clientID, m.clientHost = client.ID, client.Host
	if _, ok := sg.members[m.id]; !ok {
		sg.members[m.id] = m
		bump = true
	}
	if h := groupHash(s.shareTopicMeta(sg), s.partitionRacks); h != sg.metadataHash {
		sg.metadataHash, bump = h, true
	}
	if bump {
		sg.epoch++
		s.logger.Info("bumped share group epoch", zap.String("group", g.id), zap.Int32("epoch", sg.epoch))
	}
	if sg.epoch > sg.assignmentEpoch && !s.now.Before(time.UnixMilli(sg.assignmentTime).Add(s.shareSettings(g.id).AssignmentInterval)) {
		s.computeShareTarget(sg)
	}
	before := m.assigned
	if m.epoch != sg.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, sg.assignmentEpoch
		m.assigned = clonePartitionSet(sg.target[m.id])
	}
	s.schedule(timerKey{kind: timerShareSession, group: g.id, member: m.id}, s.shareSettings(g.id).SessionTimeout)

	resp = kmsg.NewPtrShareGroupHeartbeatResponse()
	id := m.id
	resp.MemberID, resp.MemberEpoch = &id, m.epoch
	resp.HeartbeatIntervalMillis = int32(s.shareSettings(g.id).HeartbeatInterval.Milliseconds())
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || !before.equal(m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, tid := range sortedTopicIDs(m.assigned) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = tid, slices.Clone(m.assigned[tid])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	return resp, s.maybeInitializeShareState(g)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func sortedTopicIDs(set partitionSet) [][16]byte {
	ids := make([][16]byte, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return cmp.Compare(string(a[:]), string(b[:])) })
	return ids
}

func clonePartitionSet(set partitionSet) partitionSet {
	out := make(partitionSet, len(set))
	for id, ps := range set {
		out[id] = slices.Clone(ps)
	}
	return out
}

// shareTopicMeta is every existing topic some member subscribes to,
// sorted by name.
func (s *groupShard) shareTopicMeta(sg *shareGroup) []topicMeta {
	var out []topicMeta
	for _, name := range s.shareTopicNames(sg) {
		if t, ok := s.topics.Topic(name); ok {
			out = append(out, t)
		}
	}
	return out
}

// shareTopicNames is the topic names the members subscribe to, sorted.
func (s *groupShard) shareTopicNames(sg *shareGroup) []string {
	var names []string
	for _, m := range sg.members {
		names = append(names, m.topics...)
	}
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// initializedAssignmentPending is Kafka's: some subscribed topic has
// initialized partitions the target assignment does not hold exactly.
func (s *groupShard) initializedAssignmentPending(sg *shareGroup) bool {
	if len(sg.members) == 0 || len(sg.initialized) == 0 {
		return false
	}
	names := s.shareTopicNames(sg)
	if len(names) == 0 {
		return false
	}
	assigned := partitionSet{}
	for _, t := range sg.target {
		t.each(func(id [16]byte, p int32) { assigned.add(id, p) })
	}
	for id, st := range sg.initialized {
		if _, ok := slices.BinarySearch(names, st.name); ok && !slices.Equal(assigned[id], st.partitions) {
			return true
		}
	}
	return false
}

// computeShareTarget runs the assignor over the members and the
// partitions whose share state is initialized; the assignment epoch
// catches up with the group epoch.
func (s *groupShard) computeShareTarget(sg *shareGroup) {
	members := make([]shareAssignMember, 0, len(sg.members))
	for _, m := range sg.sortedMembers() {
		am := shareAssignMember{id: m.id, old: sg.target[m.id]}
		for _, name := range m.topics {
			if t, ok := s.topics.Topic(name); ok {
				am.topics = append(am.topics, t.id)
			}
		}
		members = append(members, am)
	}
	partitions := func(id [16]byte) int32 {
		t, _ := s.topics.TopicByID(id)
		return t.partitions
	}
	assignable := func(id [16]byte, p int32) bool {
		_, ok := slices.BinarySearch(sg.initialized[id].partitions, p)
		return ok
	}
	sg.target = assignShareGroup(members, partitions, assignable)
	sg.assignmentEpoch, sg.assignmentTime = sg.epoch, s.now.UnixMilli()
}

// maybeInitializeShareState is Kafka's
// maybeCreateInitializeShareGroupStateRequest: the subscribed partitions
// neither initialized nor initializing (recently) become initializing,
// and are returned to be initialized.
func (s *groupShard) maybeInitializeShareState(g *group) *ShareInit {
	sg := g.share
	known := map[[16]byte]bool{}
	for id := range sg.initialized {
		known[id] = true
	}
	for id := range sg.initializing {
		known[id] = true
	}
	init := &ShareInit{Group: g.id, Epoch: sg.epoch}
	for _, t := range s.shareTopicMeta(sg) {
		have := slices.Clone(sg.initialized[t.id].partitions)
		if st, ok := sg.initializing[t.id]; ok && !s.now.After(st.since.Add(shareInitRetryInterval)) {
			have = append(have, st.partitions...)
		}
		var missing []int32
		for p := int32(0); p < t.partitions; p++ {
			if !slices.Contains(have, p) {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			continue
		}
		start := int64(-1)
		if known[t.id] {
			start = 0
		}
		init.Topics = append(init.Topics, ShareInitTopic{TopicID: t.id, Partitions: missing, StartOffset: start})
		st := sg.initializing[t.id]
		st.name, st.since = t.name, s.now
		st.partitions = slices.Compact(slices.Sorted(slices.Values(append(st.partitions, missing...))))
		sg.initializing[t.id] = st
		delete(sg.deleting, t.id)
	}
	if len(init.Topics) == 0 {
		return nil
	}
	return init
}

// shareStateInitialized records the outcome of an initialization: the
// partitions done move from initializing to initialized (Kafka's
// initializeShareGroupState), the failed ones leave initializing
// (uninitializeShareGroupState).
func (s *groupShard) shareStateInitialized(groupID string, done, failed map[[16]byte][]int32) {
	g := s.groups[groupID]
	if g == nil || g.share == nil {
		return
	}
	sg := g.share
	drop := func(id [16]byte, ps []int32) {
		st, ok := sg.initializing[id]
		if !ok {
			return
		}
		st.partitions = slices.DeleteFunc(st.partitions, func(p int32) bool { return slices.Contains(ps, p) })
		if len(st.partitions) == 0 {
			delete(sg.initializing, id)
		} else {
			sg.initializing[id] = st
		}
	}
	for id, ps := range done {
		name := sg.initializing[id].name
		if name == "" {
			if t, ok := s.topics.TopicByID(id); ok {
				name = t.name
			}
		}
		drop(id, ps)
		st := sg.initialized[id]
		st.name = name
		st.partitions = slices.Compact(slices.Sorted(slices.Values(append(st.partitions, ps...))))
		sg.initialized[id] = st
	}
	for id, ps := range failed {
		drop(id, ps)
	}
	s.persistShare(g, func(error) {})
}

// shareLeave handles member epoch -1.
func (s *groupShard) shareLeave(g *group, memberID string) *kmsg.ShareGroupHeartbeatResponse {
	m := g.share.members[memberID]
	if m == nil {
		return shareHeartbeatError(kerr.UnknownMemberID, "Member "+memberID+" is not a member of group "+g.id+".")
	}
	s.logger.Info("member left the share group", zap.String("group", g.id), zap.String("member", m.id))
	s.removeShareMember(g, m)
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	id := m.id
	resp.MemberID, resp.MemberEpoch = &id, leaveEpoch
	return resp
}

// removeShareMember is Kafka's shareGroupFenceMember: the member goes,
// the group epoch is bumped (the others get a new target on their next
// heartbeat), and the last member leaving brings the assignment epoch
// along.
func (s *groupShard) removeShareMember(g *group, m *shmember) {
	sg := g.share
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	s.cancel(timerKey{kind: timerShareSession, group: g.id, member: m.id})
	sg.metadataHash = groupHash(s.shareTopicMeta(sg), s.partitionRacks)
	sg.epoch++
	if len(sg.members) == 0 {
		sg.assignmentEpoch = sg.epoch
		g.stateTime = s.now
	}
}

// onShareSessionTimeout fences a member whose session expired.
func (s *groupShard) onShareSessionTimeout(g *group, memberID string) {
	if g.share == nil || g.share.members[memberID] == nil {
		return
	}
	s.logger.Info("fencing share group member", zap.String("group", g.id), zap.String("member", memberID),
		zap.String("reason", "session timeout of "+s.shareSettings(g.id).SessionTimeout.String()+" expired"))
	s.removeShareMember(g, g.share.members[memberID])
	s.persistShare(g, func(error) {})
}
