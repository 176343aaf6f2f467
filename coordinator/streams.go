package coordinator

import (
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Streams groups (KIP-1071, "streams" group type): Kafka Streams members
// heartbeat with StreamsGroupHeartbeat and the coordinator assigns them
// tasks, as Kafka's GroupMetadataManager.streamsGroupHeartbeat:
//
//   - The first member to join sets the group's topology
//     (streams_topology.go), which is configured against the topics; the
//     internal topics it lacks are returned to the broker, which creates
//     them, and the status MISSING_INTERNAL_TOPICS tells the members.
//   - The group epoch is bumped when a member joins, leaves, is fenced or
//     changes its metadata (process, rack, client tags, endpoint, topology
//     epoch), and when the involved topics change. Then the sticky task
//     assignor (streams_assign.go) computes a target assignment of active
//     and standby tasks (streams.num.standby.replicas), and each member
//     reconciles towards it on its heartbeats: active tasks it must give up
//     stay pending revocation until its heartbeat no longer owns them, and
//     a task is given to a new owner only once released.
//   - A member missing its session timeout (streams.session.timeout.ms) or
//     not revoking within its rebalance timeout is fenced. Member epoch -1
//     leaves, -2 is a static member leaving until its session expires.
//
// Every change is written to __consumer_offsets as Kafka's StreamsGroup*
// records before the heartbeat is answered, and replayed on load
// (streams_persist.go), so members keep their epochs and tasks across a
// restart or a coordinator move.
//
// Differences from Kafka: there are no warm-up tasks and no initial
// rebalance delay; standby tasks are not placed by rack or client tags.

// streamsMemberState is Kafka's streams MemberState.
type streamsMemberState int8

const (
	smemberStable streamsMemberState = iota
	smemberUnrevoked
	smemberUnreleased
)

func (s streamsMemberState) String() string {
	return [...]string{"STABLE", "UNREVOKED_TASKS", "UNRELEASED_TASKS"}[s]
}

// smember is one member of a streams group.
type smember struct {
	id, instanceID, rackID string
	clientID, clientHost   string
	epoch, prevEpoch       int32
	state                  streamsMemberState
	rebalanceTimeout       time.Duration
	topologyEpoch          int32
	processID              string
	endpoint               *kmsg.Endpoint
	clientTags             map[string]string
	taskOffsets            []kmsg.TaskOffset
	taskEndOffsets         []kmsg.TaskOffset

	assigned streamsTasks // what the member should own now
	revoking taskSet      // active tasks it must still give up
	// epochs is the assignment epoch of each active task it owns or is
	// revoking: the target's epoch when the task was given to it (Kafka's
	// TasksTupleWithEpochs), which fences its commits at older epochs.
	epochs map[taskID]int32
}

// streamsGroup is the KIP-1071 part of a group; nil for other groups.
type streamsGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32
	endpointEpoch   int32 // bumped with every new target assignment
	topology        *kmsg.StreamsGroupHeartbeatRequestTopology
	configured      configuredTopology
	metadataHash    int64
	members         map[string]*smember
	static          map[string]string // instance id -> member id
	target          map[string]streamsTasks
	owners          map[taskID]string // active task -> member holding it (assigned or pending revocation)
	shutdown        bool              // a member asked the application to shut down
	lastConfigs     string            // the assignment configs of the last target with a ready topology
	assignmentTime  int64             // when the target was computed (Unix ms); 0 for an emptied group's
	stored          consumerImage     // the group's records as last made durable (streams_persist.go)
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{
		members: map[string]*smember{},
		static:  map[string]string{},
		target:  map[string]streamsTasks{},
		owners:  map[taskID]string{},
	}
}

func (sg *streamsGroup) sortedMembers() []*smember {
	ms := make([]*smember, 0, len(sg.members))
	for _, m := range sg.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

// state is Kafka's StreamsGroupState name.
func (sg *streamsGroup) state() string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case !sg.configured.ready:
		return "NotReady"
	case sg.epoch > sg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignmentEpoch || m.state != smemberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// setActive replaces m's active and pending tasks, keeping owners in step;
// a task m keeps keeps its assignment epoch, a new one gets the target's
// (Kafka's CurrentAssignmentBuilder.computeAssignmentDifferenceWithEpoch).
func (sg *streamsGroup) setActive(m *smember, active, revoking taskSet) {
	for _, set := range []taskSet{m.assigned.active, m.revoking} {
		for _, t := range set.tasks() {
			if sg.owners[t] == m.id {
				delete(sg.owners, t)
			}
		}
	}
	m.assigned.active, m.revoking = active, revoking
	epochs := make(map[taskID]int32, active.count()+revoking.count())
	for _, set := range []taskSet{active, revoking} {
		for _, t := range set.tasks() {
			sg.owners[t] = m.id
			e, ok := m.epochs[t]
			if !ok {
				e = sg.assignmentEpoch
			}
			epochs[t] = e
		}
	}
	m.epochs = epochs
}

// streamsHeartbeatError is a failed StreamsGroupHeartbeat.
func streamsHeartbeatError(err *kerr.Error, msg string) *kmsg.StreamsGroupHeartbeatResponse {
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.ErrorCode = err.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// validateStreamsHeartbeat is Kafka's
// throwIfStreamsGroupHeartbeatRequestIsInvalid.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (*kerr.Error, string) {
	switch {
	case req.MemberID == "":
		return kerr.InvalidRequest, "MemberId can't be empty."
	case req.Group == "":
		return kerr.InvalidRequest, "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return kerr.InvalidRequest, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest, "RackId can't be empty."
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case len(req.ActiveTasks) > 0:
			return kerr.InvalidRequest, "ActiveTasks must be empty when (re-)joining."
		case len(req.StandbyTasks) > 0:
			return kerr.InvalidRequest, "StandbyTasks must be empty when (re-)joining."
		case len(req.WarmupTasks) > 0:
			return kerr.InvalidRequest, "WarmupTasks must be empty when (re-)joining."
		case req.Topology == nil:
			return kerr.InvalidRequest, "Topology must be non-null when (re-)joining."
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return kerr.InvalidRequest, "InstanceId can't be null."
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return kerr.InvalidRequest, fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	}
	if tasks := []bool{req.ActiveTasks != nil, req.StandbyTasks != nil, req.WarmupTasks != nil}; tasks[0] != tasks[1] || tasks[1] != tasks[2] {
		return kerr.InvalidRequest, "If one task-type is non-null, all must be non-null."
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return kerr.InvalidRequest, "Topology can only be provided when (re-)joining."
	}
	return nil, ""
}

// streamsGroupHeartbeat handles a valid StreamsGroupHeartbeat; it returns
// the answer and the internal topics the broker must create.
func (s *groupShard) streamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, client Client) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
	g := s.group(req.Group, req.MemberEpoch == 0)
	if g == nil {
		return streamsHeartbeatError(kerr.GroupIDNotFound, "Streams group "+req.Group+" not found."), nil
	}
	if g.streams == nil {
		if g.consumer != nil || g.share != nil || len(g.members) > 0 || g.state != stateEmpty || req.MemberEpoch != 0 {
			return streamsHeartbeatError(kerr.GroupIDNotFound, "Group "+req.Group+" is not a streams group."), nil
		}
		g.streams = newStreamsGroup()
		g.protocolType, g.protocol, g.leader = "streams", "", ""
	}
	sg := g.streams
	if _, known := sg.members[req.MemberID]; !known && s.cfg.StreamsMaxSize > 0 && len(sg.members) >= s.cfg.StreamsMaxSize {
		return streamsHeartbeatError(kerr.GroupMaxSizeReached, fmt.Sprintf("The streams group has reached its maximum capacity of %d members.", s.cfg.StreamsMaxSize)), nil
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return s.streamsLeave(g, req), nil
	}
	m, errResp := s.streamsMember(g, req)
	if errResp != nil {
		return errResp, nil
	}
	var status []kmsg.StreamsGroupHeartbeatResponseStatus
	bump := false
	if _, ok := sg.members[m.id]; !ok {
		sg.members[m.id] = m
		if m.instanceID != "" {
			sg.static[m.instanceID] = m.id
		}
		bump = true
		s.logger.Info("member joined streams group", zap.String("group", g.id), zap.String("member", m.id))
	}
	if req.Topology != nil {
		switch t := req.Topology; {
		case sg.topology == nil || len(sg.members) == 1 && t.Epoch != sg.topology.Epoch:
			sg.topology, bump = t, true
			s.logger.Info("streams group topology initialized", zap.String("group", g.id), zap.Int32("topology_epoch", t.Epoch))
		case t.Epoch > sg.topology.Epoch:
			return streamsHeartbeatError(kerr.InvalidRequest, "Topology updates are not supported yet."), nil
		}
	}
	if s.updateStreamsMember(m, req, client) {
		bump = true
	}
	sg.configured = s.configureStreamsTopology(sg.topology)
	if sg.configured.hash != sg.metadataHash {
		sg.metadataHash, bump = sg.configured.hash, true
	}
	if bump {
		sg.epoch++
	}
	if sg.configured.ready && s.assignmentConfigs(g.id) != sg.lastConfigs {
		// As Kafka: a change of the assignment configs (none before the
		// first ready topology) triggers a rebalance of its own.
		sg.epoch++
	}
	if sg.epoch > sg.assignmentEpoch {
		s.computeStreamsTarget(g)
	}
	before := m.assigned
	s.reconcileStreams(g, m, taskSetOf(req.ActiveTasks))
	s.scheduleStreamsSession(g, m)

	if req.ShutdownApplication && !sg.shutdown {
		sg.shutdown = true
		s.logger.Info("streams group member requested the application's shutdown", zap.String("group", g.id), zap.String("member", m.id))
	}
	if m.topologyEpoch < sg.topology.Epoch {
		status = append(status, streamsStatus(streamsStatusStaleTopology,
			fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, sg.topology.Epoch)))
	}
	status = append(status, sg.configured.status...)
	if sg.shutdown {
		status = append(status, streamsStatus(streamsStatusShutdownApplication,
			fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", m.id)))
	}

	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = m.id
	resp.MemberEpoch = m.epoch
	set := s.streamsSettings(g.id)
	resp.HeartbeatIntervalMillis = int32(set.HeartbeatInterval.Milliseconds())
	resp.AcceptableRecoveryLagLegacy = int32(min(set.AcceptableRecoveryLag, 1<<31-1))
	resp.AcceptableRecoveryLag = set.AcceptableRecoveryLag
	resp.TaskOffsetIntervalMillis = int32(set.TaskOffsetInterval.Milliseconds())
	resp.Status = status
	if resp.Status == nil {
		resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	}
	if req.MemberEpoch == 0 || !before.equal(m.assigned) {
		resp.ActiveTasks = m.assigned.active.taskIDs()
		resp.StandbyTasks = m.assigned.standby.taskIDs()
		resp.WarmupTasks = m.assigned.warmup.taskIDs()
	}
	resp.EndpointInformationEpoch = sg.endpointEpoch
	if m.endpoint != nil && req.EndpointInformationEpoch < sg.endpointEpoch {
		resp.PartitionsByUserEndpoint = s.partitionsByEndpoint(sg)
	}
	return resp, sg.configured.missing
}

// streamsMember finds or creates the member a heartbeat is from, checking
// its epoch and static identity as Kafka's
// getOrMaybeCreateDynamic/StaticStreamsGroupMember do.
func (s *groupShard) streamsMember(g *group, req *kmsg.StreamsGroupHeartbeatRequest) (*smember, *kmsg.StreamsGroupHeartbeatResponse) {
	sg := g.streams
	instance := deref(req.InstanceID)
	m := sg.members[req.MemberID]
	if instance != "" {
		if oldID, ok := sg.static[instance]; ok && oldID != req.MemberID {
			old := sg.members[oldID]
			switch {
			case req.MemberEpoch != 0:
				return nil, streamsHeartbeatError(kerr.FencedInstanceID, "Static member "+req.MemberID+" with instance id "+instance+" was fenced by member "+oldID+".")
			case old != nil && old.epoch != staticLeaveEpoch:
				return nil, streamsHeartbeatError(kerr.UnreleasedInstanceID, "Static member "+req.MemberID+" with instance id "+instance+" cannot join the group because the instance id is owned by "+oldID+" member.")
			case old != nil:
				return s.replaceStaticStreamsMember(g, old, req.MemberID), nil
			}
		}
	}
	if m == nil {
		if req.MemberEpoch != 0 {
			return nil, streamsHeartbeatError(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		}
		return &smember{id: req.MemberID, assigned: emptyStreamsTasks(), revoking: taskSet{}, clientTags: map[string]string{}}, nil
	}
	switch {
	case req.MemberEpoch == 0:
		if m.epoch == staticLeaveEpoch {
			m.epoch = m.prevEpoch
		}
	case req.MemberEpoch > m.epoch:
		return nil, streamsHeartbeatError(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch))
	case req.MemberEpoch < m.epoch:
		// As Kafka: the previous epoch, owning only tasks still assigned
		// (not those pending revocation), of each kind.
		ok := req.MemberEpoch == m.prevEpoch && ownedWithin(req.ActiveTasks, m.assigned.active) &&
			ownedWithin(req.StandbyTasks, m.assigned.standby) && ownedWithin(req.WarmupTasks, m.assigned.warmup)
		if !ok {
			return nil, streamsHeartbeatError(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch))
		}
	}
	return m, nil
}

// ownedWithin is Kafka's areOwnedTasksContainedInAssignedTasks: a null
// list is not, and a subtopology m has no tasks of is not either.
func ownedWithin(owned []kmsg.TaskIDs, assigned taskSet) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		if _, ok := assigned[t.SubtopologyID]; !ok {
			return false
		}
		for _, p := range t.Partitions {
			if !assigned.has(taskID{t.SubtopologyID, p}) {
				return false
			}
		}
	}
	return true
}

// replaceStaticStreamsMember gives a static member that left with epoch -2
// a new member id, keeping its tasks.
func (s *groupShard) replaceStaticStreamsMember(g *group, old *smember, newID string) *smember {
	sg := g.streams
	m := &smember{}
	*m = *old
	m.id = newID
	m.epochs = maps.Clone(old.epochs)
	m.epoch, m.state = old.prevEpoch, smemberStable
	active, revoking := old.assigned.active, old.revoking
	s.removeStreamsMember(g, old, false)
	m.assigned.active, m.revoking = taskSet{}, taskSet{}
	sg.members[m.id] = m
	sg.static[m.instanceID] = m.id
	sg.setActive(m, active, revoking)
	if t, ok := sg.target[old.id]; ok {
		sg.target[m.id] = t
		delete(sg.target, old.id)
	}
	s.logger.Info("static member rejoined streams group with a new member id", zap.String("group", g.id),
		zap.String("instance_id", m.instanceID), zap.String("old_member", old.id), zap.String("member", m.id))
	return m
}

// updateStreamsMember applies the request's non-null fields to m and
// reports whether its metadata changed (which bumps the group epoch).
func (s *groupShard) updateStreamsMember(m *smember, req *kmsg.StreamsGroupHeartbeatRequest, client Client) bool {
	changed := false
	if req.InstanceID != nil && *req.InstanceID != m.instanceID {
		m.instanceID, changed = *req.InstanceID, true
	}
	if req.RackID != nil && *req.RackID != m.rackID {
		m.rackID, changed = *req.RackID, true
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.Topology != nil && req.Topology.Epoch != m.topologyEpoch {
		m.topologyEpoch, changed = req.Topology.Epoch, true
	}
	if req.ProcessID != nil && *req.ProcessID != m.processID {
		m.processID, changed = *req.ProcessID, true
	}
	if req.UserEndpoint != nil {
		e := kmsg.NewEndpoint()
		e.Host, e.Port = req.UserEndpoint.Host, req.UserEndpoint.Port
		if m.endpoint == nil || m.endpoint.Host != e.Host || m.endpoint.Port != e.Port {
			m.endpoint, changed = &e, true
		}
	}
	if req.ClientTags != nil {
		tags := make(map[string]string, len(req.ClientTags))
		for _, t := range req.ClientTags {
			tags[t.Key] = t.Value
		}
		if !mapsEqual(tags, m.clientTags) {
			m.clientTags, changed = tags, true
		}
	}
	if req.TaskOffsets != nil {
		m.taskOffsets = req.TaskOffsets
	}
	if req.TaskEndOffsets != nil {
		m.taskEndOffsets = req.TaskEndOffsets
	}
	m.clientID, m.clientHost = client.ID, client.Host
	return changed
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// streamsLeave handles member epoch -1 (leave) and -2 (a static member
// leaving for a while).
func (s *groupShard) streamsLeave(g *group, req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	sg := g.streams
	m := sg.members[req.MemberID]
	instance := deref(req.InstanceID)
	if m == nil && instance != "" {
		m = sg.members[sg.static[instance]]
		if m != nil && m.id != req.MemberID {
			return streamsHeartbeatError(kerr.FencedInstanceID, "Static member "+req.MemberID+" with instance id "+instance+" was fenced by member "+m.id+".")
		}
	}
	if m == nil {
		return streamsHeartbeatError(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = m.id
	resp.MemberEpoch = req.MemberEpoch
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if req.MemberEpoch == staticLeaveEpoch && m.instanceID != "" {
		s.logger.Info("static member left streams group temporarily", zap.String("group", g.id), zap.String("member", m.id),
			zap.String("instance_id", m.instanceID))
		if m.epoch != staticLeaveEpoch {
			m.prevEpoch = m.epoch
		}
		m.epoch = staticLeaveEpoch
		// As Kafka's streamsGroupStaticMemberGroupLeave: the tasks pending
		// revocation are given up and the assigned ones' epochs reset to 0.
		sg.setActive(m, m.assigned.active, taskSet{})
		for t := range m.epochs {
			m.epochs[t] = 0
		}
		s.cancel(timerKey{kind: timerStreamsRevoke, group: g.id, member: m.id})
		s.scheduleStreamsSession(g, m)
		return resp
	}
	s.logger.Info("member left streams group", zap.String("group", g.id), zap.String("member", m.id))
	s.removeStreamsMember(g, m, true)
	return resp
}

// removeStreamsMember drops m, freeing its tasks; bump bumps the group
// epoch so the others get a new target.
func (s *groupShard) removeStreamsMember(g *group, m *smember, bump bool) {
	sg := g.streams
	sg.setActive(m, taskSet{}, taskSet{})
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	if m.instanceID != "" && sg.static[m.instanceID] == m.id {
		delete(sg.static, m.instanceID)
	}
	s.cancel(timerKey{kind: timerStreamsSession, group: g.id, member: m.id})
	s.cancel(timerKey{kind: timerStreamsRevoke, group: g.id, member: m.id})
	if bump {
		sg.epoch++
	}
	if len(sg.members) == 0 {
		g.stateTime = s.now
		sg.shutdown = false
		// As Kafka: the empty group's target is itself, at its epoch.
		sg.assignmentEpoch, sg.assignmentTime = sg.epoch, 0
	}
}

// fenceStreamsMember removes m after its session or revocation timed out.
func (s *groupShard) fenceStreamsMember(g *group, m *smember, why string) {
	s.logger.Info("fencing streams group member", zap.String("group", g.id), zap.String("member", m.id), zap.String("reason", why))
	s.removeStreamsMember(g, m, true)
}

func (s *groupShard) scheduleStreamsSession(g *group, m *smember) {
	s.schedule(timerKey{kind: timerStreamsSession, group: g.id, member: m.id}, s.streamsSettings(g.id).SessionTimeout)
}

// StreamsSettings are a streams group's settings: its own group configs
// (streams.*) where set, else the broker's (group.streams.*).
type StreamsSettings struct {
	SessionTimeout        time.Duration
	HeartbeatInterval     time.Duration
	NumStandbyReplicas    int
	AcceptableRecoveryLag int64
	TaskOffsetInterval    time.Duration
}

func (s *groupShard) streamsSettings(group string) StreamsSettings {
	if s.cfg.StreamsSettings != nil {
		return s.cfg.StreamsSettings(group)
	}
	return StreamsSettings{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, AcceptableRecoveryLag: 10000, TaskOffsetInterval: time.Minute}
}

// assignmentConfigs are the group's configs the assignor reads, as
// Kafka's streamsGroupAssignmentConfigs: num.standby.replicas.
func (s *groupShard) assignmentConfigs(group string) string {
	return fmt.Sprintf("num.standby.replicas=%d", s.streamsSettings(group).NumStandbyReplicas)
}

// onStreamsTimer runs a streams group's session or revocation timer.
func (s *groupShard) onStreamsTimer(g *group, k timerKey) {
	if g.streams == nil {
		return
	}
	m := g.streams.members[k.member]
	if m == nil {
		return
	}
	switch {
	case k.kind == timerStreamsSession:
		s.fenceStreamsMember(g, m, "the member's session of "+s.streamsSettings(g.id).SessionTimeout.String()+" expired")
	case m.state == smemberUnrevoked:
		s.fenceStreamsMember(g, m, "tasks not revoked within the rebalance timeout of "+m.rebalanceTimeout.String())
	default:
		return
	}
	s.persistStreams(g, func(error) {})
}

// partitionsByEndpoint is the group's assignment by user endpoint, for
// interactive queries: one entry per member with an endpoint.
func (s *groupShard) partitionsByEndpoint(sg *streamsGroup) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	for _, m := range sg.sortedMembers() {
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint = *m.endpoint
		for topic, ps := range s.taskPartitions(sg, m.assigned.active) {
			p := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition()
			p.Topic, p.Partitions = topic, ps
			e.ActivePartitions = append(e.ActivePartitions, p)
		}
		standby := m.assigned.standby.clone()
		for _, t := range m.assigned.warmup.tasks() {
			standby.add(t)
		}
		for topic, ps := range s.taskPartitions(sg, standby) {
			p := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition()
			p.Topic, p.Partitions = topic, ps
			e.StandbyPartitions = append(e.StandbyPartitions, p)
		}
		sort.Slice(e.ActivePartitions, func(i, j int) bool { return e.ActivePartitions[i].Topic < e.ActivePartitions[j].Topic })
		sort.Slice(e.StandbyPartitions, func(i, j int) bool { return e.StandbyPartitions[i].Topic < e.StandbyPartitions[j].Topic })
		out = append(out, e)
	}
	return out
}

// taskPartitions maps tasks to the source (and repartition source) topic
// partitions they read.
func (s *groupShard) taskPartitions(sg *streamsGroup, tasks taskSet) map[string][]int32 {
	out := map[string][]int32{}
	if sg.topology == nil {
		return out
	}
	for _, st := range sg.topology.Subtopologies {
		ps := tasks[st.SubtopologyID]
		if len(ps) == 0 {
			continue
		}
		topics := append([]string{}, sg.configured.sources[st.SubtopologyID]...)
		for _, ti := range st.RepartitionSourceTopics {
			topics = append(topics, ti.Topic)
		}
		for _, t := range topics {
			out[t] = append(out[t], ps...)
		}
	}
	return out
}
