package coordinator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// A streams group lives in __consumer_offsets as Kafka's
// GroupMetadataManager keeps it (streams_records.go): per member
// StreamsGroupMemberMetadata, StreamsGroupTargetAssignmentMember and
// StreamsGroupCurrentMemberAssignment, and for the group
// StreamsGroupTopology, StreamsGroupMetadata (the group epoch, metadata
// hash, validated topology epoch, last assignment configs) and
// StreamsGroupTargetAssignmentMetadata (the assignment epoch). As for
// consumer groups (consumer_replay.go), the shard changes the group in
// memory while it handles an input, then persistStreams writes the
// records that differ from the ones last made durable (streamsGroup.stored)
// in Kafka's order: a leaving member's current assignment, target and
// metadata tombstones, the members' metadata, the topology, the group
// epoch, the targets, the assignment epoch, the current assignments. The
// answer waits for the write; a failed write puts the group back as its
// stored records say. Load replays the records (replayStreams) and builds
// the groups once the partition is read (activateStreamsGroups), arming
// the members' session timers (and revocation deadlines) as Kafka does.
//
// The current assignment's active tasks carry their assignment epochs
// (AssignmentEpochs), as Kafka 4.4 writes them.
//
// Differences from Kafka: the topology description plugin's epochs are not
// kept (written as -1).

// replayStreams applies one streams group record during load.
func (s *groupShard) replayStreams(key, value []byte) error {
	k, err := decodeCGKey(key)
	if err != nil {
		return err
	}
	if value != nil {
		if err := validateSTValue(k.typ, value); err != nil {
			return fmt.Errorf("group %s: %w", k.group, err)
		}
	}
	if s.streamsImages == nil {
		s.streamsImages = map[string]consumerImage{}
	}
	img := s.streamsImages[k.group]
	if value == nil {
		delete(img, string(key))
		if len(img) == 0 {
			delete(s.streamsImages, k.group)
		}
		return nil
	}
	if img == nil {
		img = consumerImage{}
		s.streamsImages[k.group] = img
	}
	img[string(key)] = slices.Clone(value) // the batch's buffer is reused
	return nil
}

// activateStreamsGroups builds the replayed streams groups and starts
// their members' sessions (and revocation deadlines).
func (s *groupShard) activateStreamsGroups() {
	for _, id := range slices.Sorted(maps.Keys(s.streamsImages)) {
		img := s.streamsImages[id]
		if _, ok := img[string(cgKey{typ: stMetadataType, group: id}.encode())]; !ok {
			continue // members' records without the group's: Kafka skips them too
		}
		sg, err := s.streamsGroupFromRecords(img)
		if err != nil { // validated on replay
			s.logger.Error("building a replayed streams group", zap.String("group", id), zap.Error(err))
			continue
		}
		g := s.replayGroup(id)
		g.streams, g.consumer, g.protocolType, g.protocol, g.leader = sg, nil, "streams", "", ""
		g.members, g.static = map[string]*member{}, map[string]string{}
		g.state = stateEmpty
		s.armStreamsTimers(g)
	}
	s.streamsImages = nil
}

// armStreamsTimers starts the members' session timers, and the revocation
// deadline of those revoking tasks (not of a static member away with epoch
// -2, whose deadline its leave cancelled).
func (s *groupShard) armStreamsTimers(g *group) {
	for _, m := range g.streams.sortedMembers() {
		s.scheduleStreamsSession(g, m)
		if m.state == smemberUnrevoked && m.epoch != staticLeaveEpoch {
			s.schedule(timerKey{kind: timerStreamsRevoke, group: g.id, member: m.id}, m.rebalanceTimeout)
		}
	}
}

// streamsGroupFromRecords is the group the records say.
func (s *groupShard) streamsGroupFromRecords(img consumerImage) (*streamsGroup, error) {
	sg := newStreamsGroup()
	currents := map[string]*stCurrentValue{}
	for _, key := range slices.Sorted(maps.Keys(img)) {
		value := img[key]
		k, err := decodeCGKey([]byte(key))
		if err != nil {
			return nil, err
		}
		switch k.typ {
		case stMetadataType:
			v, err := decodeSTMetadata(value)
			if err != nil {
				return nil, err
			}
			sg.epoch, sg.metadataHash, sg.lastConfigs = v.epoch, v.metadataHash, configsString(v.lastAssignmentConfigs)
		case stTopologyType:
			v, err := decodeSTTopology(value)
			if err != nil {
				return nil, err
			}
			sg.topology = topologyFromRecord(&v)
		case stTargetMetadataType:
			v, err := decodeCGTargetMetadata(value)
			if err != nil {
				return nil, err
			}
			sg.assignmentEpoch, sg.assignmentTime = v.assignmentEpoch, v.assignmentTimestamp
		case stMemberType:
			v, err := decodeSTMember(value)
			if err != nil {
				return nil, err
			}
			sg.members[k.sub] = smemberFromRecord(k.sub, &v)
		case stTargetMemberType:
			v, err := decodeSTTargetMember(value)
			if err != nil {
				return nil, err
			}
			sg.target[k.sub] = streamsTasks{active: taskSetOfRecord(v.active), standby: taskSetOfRecord(v.standby), warmup: taskSetOfRecord(v.warmup)}
		case stCurrentType:
			v, err := decodeSTCurrent(value)
			if err != nil {
				return nil, err
			}
			currents[k.sub] = &v
		}
	}
	for id, c := range currents {
		m := sg.members[id]
		if m == nil {
			continue // tombstoned by the next write
		}
		m.epoch, m.prevEpoch = c.memberEpoch, c.previousMemberEpoch
		m.state = smemberStable
		if c.state > 0 && c.state <= int8(smemberUnreleased)+1 {
			m.state = streamsMemberState(c.state - 1)
		}
		m.assigned.standby, m.assigned.warmup = taskSetOfRecord(c.standby), taskSetOfRecord(c.warmup)
		m.epochs = taskEpochsOfRecord(c.memberEpoch, c.active, c.activeRevoking)
		sg.setActive(m, taskSetOfRecord(c.active), taskSetOfRecord(c.activeRevoking))
	}
	for id := range sg.target {
		if sg.members[id] == nil {
			delete(sg.target, id)
		}
	}
	for _, m := range sg.members {
		if m.instanceID != "" {
			sg.static[m.instanceID] = m.id
		}
	}
	if sg.topology == nil { // members' records without a topology: Kafka's heartbeat would not have written them
		sg.members, sg.static, sg.target, sg.owners = map[string]*smember{}, map[string]string{}, map[string]streamsTasks{}, map[taskID]string{}
	}
	sg.configured = s.configureStreamsTopology(sg.topology)
	// The endpoint epoch is not stored: members holding an older one get
	// the endpoints again.
	sg.endpointEpoch = sg.assignmentEpoch
	sg.stored = img
	return sg, nil
}

func smemberFromRecord(id string, v *stMemberValue) *smember {
	m := &smember{
		id:               id,
		instanceID:       deref(v.instanceID),
		rackID:           deref(v.rackID),
		clientID:         v.clientID,
		clientHost:       v.clientHost,
		rebalanceTimeout: time.Duration(v.rebalanceTimeoutMs) * time.Millisecond,
		topologyEpoch:    v.topologyEpoch,
		processID:        v.processID,
		clientTags:       make(map[string]string, len(v.clientTags)),
		assigned:         emptyStreamsTasks(),
		revoking:         taskSet{},
	}
	if e := v.userEndpoint; e != nil {
		ep := kmsg.NewEndpoint()
		ep.Host, ep.Port = e.host, e.port
		m.endpoint = &ep
	}
	for _, t := range v.clientTags {
		m.clientTags[t.key] = t.value
	}
	return m
}

func taskSetOfRecord(ts []stTaskIDs) taskSet {
	out := taskSet{}
	for _, t := range ts {
		for _, p := range t.partitions {
			out.add(taskID{t.subtopology, p})
		}
	}
	return out
}

// taskEpochsOfRecord is the active tasks' assignment epochs, as Kafka's
// TasksTupleWithEpochs.fromCurrentAssignmentRecord: a subtopology without
// them (or with as many as it has partitions) takes the member epoch.
func taskEpochsOfRecord(memberEpoch int32, lists ...[]stTaskIDs) map[taskID]int32 {
	out := map[taskID]int32{}
	for _, ts := range lists {
		for _, t := range ts {
			for i, p := range t.partitions {
				e := memberEpoch
				if len(t.epochs) == len(t.partitions) {
					e = t.epochs[i]
				}
				out[taskID{t.subtopology, p}] = e
			}
		}
	}
	return out
}

// taskIDsWithEpochs is the active tasks with their assignment epochs, as
// Kafka's StreamsCoordinatorRecordHelpers.toTaskIdsWithEpochs.
func taskIDsWithEpochs(set taskSet, epochs map[taskID]int32) []stTaskIDs {
	out := taskIDsOf(set)
	for i := range out {
		t := &out[i]
		t.epochs = make([]int32, 0, len(t.partitions))
		for _, p := range t.partitions {
			t.epochs = append(t.epochs, epochs[taskID{t.subtopology, p}])
		}
	}
	return out
}

func taskIDsOf(set taskSet) []stTaskIDs {
	out := []stTaskIDs{}
	for _, t := range set.taskIDs() {
		out = append(out, stTaskIDs{subtopology: t.SubtopologyID, partitions: t.Partitions})
	}
	return out
}

// configsString and configsRecord convert the last assignment configs
// between Strata's "k=v,k=v" and the record's key-value list.
func configsString(kvs []stKeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, kv.key+"="+kv.value)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func configsRecord(s string) []stKeyValue {
	if s == "" {
		return nil
	}
	var out []stKeyValue
	for _, part := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(part, "=")
		out = append(out, stKeyValue{key: k, value: v})
	}
	return out
}

func topicInfosOf(ts []kmsg.TopicInfo) []stTopicInfo {
	out := make([]stTopicInfo, 0, len(ts))
	for _, t := range ts {
		ti := stTopicInfo{name: t.Topic, partitions: t.NumPartitions, replicationFactor: t.ReplicationFactor, configs: []stKeyValue{}}
		for _, c := range t.Configs {
			ti.configs = append(ti.configs, stKeyValue{key: c.Key, value: c.Value})
		}
		out = append(out, ti)
	}
	return out
}

func topicInfosFrom(ts []stTopicInfo) []kmsg.TopicInfo {
	out := make([]kmsg.TopicInfo, 0, len(ts))
	for _, t := range ts {
		ti := kmsg.NewTopicInfo()
		ti.Topic, ti.NumPartitions, ti.ReplicationFactor = t.name, t.partitions, t.replicationFactor
		for _, c := range t.configs {
			ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: c.key, Value: c.value})
		}
		out = append(out, ti)
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// topologyRecord is the topology as Kafka's convertToStreamsGroupTopologyRecord.
func topologyRecord(t *kmsg.StreamsGroupHeartbeatRequestTopology) *stTopologyValue {
	v := &stTopologyValue{epoch: t.Epoch, subtopologies: []stSubtopology{}}
	for _, st := range t.Subtopologies {
		sub := stSubtopology{id: st.SubtopologyID, sourceTopics: nonNil(st.SourceTopics), sourceTopicRegex: nonNil(st.SourceTopicRegex),
			stateChangelogTopics: topicInfosOf(st.StateChangelogTopics), repartitionSinkTopics: nonNil(st.RepartitionSinkTopics),
			repartitionSourceTopics: topicInfosOf(st.RepartitionSourceTopics), copartitionGroups: []stCopartitionGroup{}}
		for _, cg := range st.CopartitionGroups {
			sub.copartitionGroups = append(sub.copartitionGroups, stCopartitionGroup{sourceTopics: nonNil(cg.SourceTopics),
				sourceTopicRegex: nonNil(cg.SourceTopicRegex), repartitionSourceTopics: nonNil(cg.RepartitionSourceTopics)})
		}
		v.subtopologies = append(v.subtopologies, sub)
	}
	return v
}

func topologyFromRecord(v *stTopologyValue) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: v.epoch}
	for _, st := range v.subtopologies {
		sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		sub.SubtopologyID, sub.SourceTopics, sub.SourceTopicRegex = st.id, st.sourceTopics, st.sourceTopicRegex
		sub.StateChangelogTopics, sub.RepartitionSinkTopics = topicInfosFrom(st.stateChangelogTopics), st.repartitionSinkTopics
		sub.RepartitionSourceTopics = topicInfosFrom(st.repartitionSourceTopics)
		for _, cg := range st.copartitionGroups {
			c := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
			c.SourceTopics, c.SourceTopicRegex, c.RepartitionSourceTopics = cg.sourceTopics, cg.sourceTopicRegex, cg.repartitionSourceTopics
			sub.CopartitionGroups = append(sub.CopartitionGroups, c)
		}
		t.Subtopologies = append(t.Subtopologies, sub)
	}
	return t
}

// streamsRecords is g's streams group as records, in Kafka's write order.
func streamsRecords(g *group) []kv {
	sg := g.streams
	members := sg.sortedMembers()
	recs := make([]kv, 0, 3*len(members)+3)
	key := func(typ int16, sub string) []byte { return cgKey{typ: typ, group: g.id, sub: sub}.encode() }
	for _, m := range members {
		v := stMemberValue{instanceID: optional(m.instanceID), rackID: optional(m.rackID), clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeoutMs: int32(m.rebalanceTimeout.Milliseconds()), topologyEpoch: m.topologyEpoch, processID: m.processID,
			clientTags: []stKeyValue{}}
		if m.endpoint != nil {
			v.userEndpoint = &stEndpoint{host: m.endpoint.Host, port: m.endpoint.Port}
		}
		for _, k := range slices.Sorted(maps.Keys(m.clientTags)) {
			v.clientTags = append(v.clientTags, stKeyValue{key: k, value: m.clientTags[k]})
		}
		recs = append(recs, kv{key: key(stMemberType, m.id), value: v.encode()})
	}
	if sg.topology != nil {
		recs = append(recs, kv{key: key(stTopologyType, ""), value: topologyRecord(sg.topology).encode()})
	}
	validated := int32(-1)
	if sg.configured.ready && sg.topology != nil {
		validated = sg.topology.Epoch
	}
	meta := stMetadataValue{epoch: sg.epoch, metadataHash: sg.metadataHash, validatedTopologyEpoch: validated,
		lastAssignmentConfigs: configsRecord(sg.lastConfigs), storedDescriptionEpoch: -1, failedDescriptionEpoch: -1}
	recs = append(recs, kv{key: key(stMetadataType, ""), value: meta.encode()})
	for _, m := range members {
		if t, ok := sg.target[m.id]; ok {
			v := stTargetMemberValue{active: taskIDsOf(t.active), standby: taskIDsOf(t.standby), warmup: taskIDsOf(t.warmup)}
			recs = append(recs, kv{key: key(stTargetMemberType, m.id), value: v.encode()})
		}
	}
	recs = append(recs, kv{key: key(stTargetMetadataType, ""),
		value: (&cgTargetMetadataValue{assignmentEpoch: sg.assignmentEpoch, assignmentTimestamp: sg.assignmentTime}).encode()})
	for _, m := range members {
		v := stCurrentValue{memberEpoch: m.epoch, previousMemberEpoch: m.prevEpoch, state: int8(m.state) + 1,
			active: taskIDsWithEpochs(m.assigned.active, m.epochs), standby: taskIDsOf(m.assigned.standby), warmup: taskIDsOf(m.assigned.warmup),
			activeRevoking: taskIDsWithEpochs(m.revoking, m.epochs), standbyRevoking: []stTaskIDs{}, warmupRevoking: []stTaskIDs{}}
		recs = append(recs, kv{key: key(stCurrentType, m.id), value: v.encode()})
	}
	return recs
}

// streamsTombstoneOrder is the order Kafka writes a streams group's
// tombstones in: a member's current assignment, target and metadata, then
// the group's assignment epoch, group epoch and topology.
var streamsTombstoneOrder = map[int16]int{stCurrentType: 0, stTargetMemberType: 1, stMemberType: 2,
	stTargetMetadataType: 3, stMetadataType: 4, stTopologyType: 5}

// streamsDiff is the records that turn stored into want: tombstones for
// the keys want lacks (Kafka's order), then want's new or changed values.
func streamsDiff(stored consumerImage, want []kv) []kv {
	wanted := make(map[string]bool, len(want))
	for _, r := range want {
		wanted[string(r.key)] = true
	}
	var gone []cgKey
	for k := range stored {
		if !wanted[k] {
			if ck, err := decodeCGKey([]byte(k)); err == nil {
				gone = append(gone, ck)
			}
		}
	}
	slices.SortFunc(gone, func(a, b cgKey) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(boolRank(a.sub == ""), boolRank(b.sub == "")),
			cmp.Compare(a.sub, b.sub), cmp.Compare(streamsTombstoneOrder[a.typ], streamsTombstoneOrder[b.typ]))
	})
	out := make([]kv, 0, len(gone)+len(want))
	for _, k := range gone {
		out = append(out, kv{key: k.encode()})
	}
	for _, r := range want {
		if v, ok := stored[string(r.key)]; !ok || string(v) != string(r.value) {
			out = append(out, r)
		}
	}
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// streamsHeartbeat handles a valid StreamsGroupHeartbeat and persists
// what it changed before answering; a failed write answers its error.
func (s *groupShard) streamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, client Client) *streamsReply {
	reply := &streamsReply{}
	reply.resp, reply.missing = s.streamsGroupHeartbeat(req, client)
	if g := s.groups[req.Group]; g != nil && g.streams != nil {
		s.persistStreams(g, func(err error) {
			if err != nil {
				reply.resp, reply.missing = streamsHeartbeatError(storeError(err), ""), nil
			}
		})
	}
	return reply
}

// streamsReply is the answer to a StreamsGroupHeartbeat, final once its
// write is done, and the internal topics to create.
type streamsReply struct {
	resp    *kmsg.StreamsGroupHeartbeatResponse
	missing []StreamsInternalTopic
}

// persistStreams writes what changed in g's streams group since the last
// durable write; then learns the outcome, after which a failed write has
// put the group back as it was stored.
func (s *groupShard) persistStreams(g *group, then func(error)) {
	sg := g.streams
	if sg == nil || len(sg.stored) == 0 && len(sg.members) == 0 && sg.epoch == 0 {
		then(nil) // created by a heartbeat that failed: nothing happened
		return
	}
	recs := streamsDiff(sg.stored, streamsRecords(g))
	if len(recs) == 0 {
		then(nil)
		return
	}
	s.write(recs, func(err error) {
		if err != nil {
			s.logger.Error("storing streams group", zap.String("group", g.id), zap.Error(err))
			s.restoreStreams(g)
			then(err)
			return
		}
		if g.streams == sg {
			sg.stored = applyRecords(sg.stored, recs)
		}
		then(nil)
	})
}

// restoreStreams puts g's streams group back as its stored records say,
// after a write failed; a group never stored goes away.
func (s *groupShard) restoreStreams(g *group) {
	sg := g.streams
	if sg == nil {
		return
	}
	for id := range sg.members {
		s.cancel(timerKey{kind: timerStreamsSession, group: g.id, member: id})
		s.cancel(timerKey{kind: timerStreamsRevoke, group: g.id, member: id})
	}
	if len(sg.stored) == 0 {
		g.streams = newStreamsGroup()
		return
	}
	restored, err := s.streamsGroupFromRecords(sg.stored)
	if err != nil {
		s.logger.Error("restoring streams group from its records", zap.String("group", g.id), zap.Error(err))
		restored = newStreamsGroup()
	}
	g.streams = restored
	s.armStreamsTimers(g)
}

// streamsTombstones is the records deleting g's streams group: a
// tombstone for each stored record and, as Kafka writes them, for the
// assignment epoch, the group epoch and the topology.
func streamsTombstones(g *group) []kv {
	stored := consumerImage{}
	for k, v := range g.streams.stored {
		stored[k] = v
	}
	for _, typ := range []int16{stTargetMetadataType, stMetadataType, stTopologyType} {
		stored[string(cgKey{typ: typ, group: g.id}.encode())] = []byte{}
	}
	return streamsDiff(stored, nil)
}
