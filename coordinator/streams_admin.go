package coordinator

import (
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroupHeartbeat serves StreamsGroupHeartbeat (KIP-1071): the
// answer, and the internal topics the group lacks, which the broker
// creates.
func (c *Groups) StreamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, client Client) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsInternalTopic) {
	if err, msg := validateStreamsHeartbeat(req); err != nil {
		return streamsHeartbeatError(err, msg), nil
	}
	if err := c.ensure(); err != nil {
		return streamsHeartbeatError(err, ""), nil
	}
	var reply *streamsReply
	if err := c.run(req.Group, func(s *groupShard) { reply = s.streamsHeartbeat(req, client) }); err != nil {
		return streamsHeartbeatError(err, ""), nil
	}
	return reply.resp, reply.missing
}

// StreamsGroupDescribe describes a streams group as Kafka's
// StreamsGroup.asDescribedGroup: GROUP_ID_NOT_FOUND for a group that does
// not exist or is of another type.
func (c *Groups) StreamsGroupDescribe(id string, version int16, includeDescription bool) kmsg.StreamsGroupDescribeResponseGroup {
	if id == "" {
		return describedStreamsGroup(id, kerr.InvalidGroupID, "")
	}
	var d kmsg.StreamsGroupDescribeResponseGroup
	if err := c.run(id, func(s *groupShard) { d = s.streamsGroupDescribe(id, version, includeDescription) }); err != nil {
		return describedStreamsGroup(id, err, "")
	}
	return d
}

func describedStreamsGroup(id string, err *kerr.Error, msg string) kmsg.StreamsGroupDescribeResponseGroup {
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.Group = id
	d.AuthorizedOperations = math.MinInt32
	if err != nil {
		d.ErrorCode = err.Code
		if msg != "" {
			d.ErrorMessage = &msg
		}
	}
	return d
}

// Topology description statuses of StreamsGroupDescribe v1.
const (
	topologyDescriptionNotRequested int8 = 0
	topologyDescriptionNotStored    int8 = 1
)

func (s *groupShard) streamsGroupDescribe(id string, version int16, includeDescription bool) kmsg.StreamsGroupDescribeResponseGroup {
	g := s.group(id, false)
	if g == nil {
		return describedStreamsGroup(id, kerr.GroupIDNotFound, "Group "+id+" not found.")
	}
	sg := g.streams
	if sg == nil {
		return describedStreamsGroup(id, kerr.GroupIDNotFound, "Group "+id+" is not a streams group.")
	}
	d := describedStreamsGroup(id, nil, "")
	d.State, d.Epoch, d.AssignmentEpoch = sg.state(), sg.epoch, sg.assignmentEpoch
	if version >= 1 {
		name := "sticky"
		d.AssignorName = &name
		d.TopologyDescriptionStatus = topologyDescriptionNotRequested
		if includeDescription {
			d.TopologyDescriptionStatus = topologyDescriptionNotStored
		}
	}
	if t := sg.topology; t != nil {
		dt := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		dt.Epoch = t.Epoch
		dt.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
		for _, st := range t.Subtopologies {
			ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
			ds.SubtopologyID = st.SubtopologyID
			ds.SourceTopics = append([]string{}, st.SourceTopics...)
			ds.RepartitionSinkTopics = append([]string{}, st.RepartitionSinkTopics...)
			ds.StateChangelogTopics = append([]kmsg.TopicInfo{}, st.StateChangelogTopics...)
			ds.RepartitionSourceTopics = append([]kmsg.TopicInfo{}, st.RepartitionSourceTopics...)
			dt.Subtopologies = append(dt.Subtopologies, ds)
		}
		sort.Slice(dt.Subtopologies, func(i, j int) bool { return dt.Subtopologies[i].SubtopologyID < dt.Subtopologies[j].SubtopologyID })
		d.Topology = &dt
	}
	d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, m := range sg.sortedMembers() {
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
		if m.instanceID != "" {
			v := m.instanceID
			dm.InstanceID = &v
		}
		if m.rackID != "" {
			v := m.rackID
			dm.RackID = &v
		}
		dm.TopologyEpoch, dm.ProcessID = m.topologyEpoch, m.processID
		if m.endpoint != nil {
			e := kmsg.NewStreamsGroupDescribeResponseGroupMemberUserEndpoint()
			e.Host, e.Port = m.endpoint.Host, m.endpoint.Port
			dm.UserEndpoint = &e
		}
		keys := make([]string, 0, len(m.clientTags))
		for k := range m.clientTags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, k := range keys {
			ct := kmsg.NewStreamsGroupDescribeResponseGroupMemberClientTag()
			ct.Key, ct.Value = k, m.clientTags[k]
			dm.ClientTags = append(dm.ClientTags, ct)
		}
		dm.TaskOffsets = append([]kmsg.TaskOffset{}, m.taskOffsets...)
		dm.TaskEndOffsets = append([]kmsg.TaskOffset{}, m.taskEndOffsets...)
		dm.Assignment = m.assigned.assignment()
		target, ok := sg.target[m.id]
		if !ok {
			target = emptyStreamsTasks()
		}
		dm.TargetAssignment = target.assignment()
		d.Members = append(d.Members, dm)
	}
	return d
}

// validateStreamsCommit is Kafka's StreamsGroup.validateOffsetCommit: an
// admin commit (epoch < 0) only while the group is empty; otherwise a
// member at its epoch, or at an older one for tasks it holds (assigned or
// pending revocation) that were given to it at that epoch or before
// (createAssignmentEpochValidator). The topics map to tasks by the
// topology's source and repartition source topics.
func validateStreamsCommit(sg *streamsGroup, memberID string, epoch int32, commits []Commit, transactional bool, version int16) *kerr.Error {
	if epoch < 0 && len(sg.members) == 0 {
		return nil
	}
	m := sg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID
	case !transactional && version < 9:
		return kerr.UnsupportedVersion
	case epoch == m.epoch:
		return nil
	case epoch > m.epoch || sg.topology == nil:
		return kerr.StaleMemberEpoch
	}
	subtopologyOf := map[string]string{}
	for _, st := range sg.topology.Subtopologies {
		for _, t := range st.SourceTopics {
			subtopologyOf[t] = st.SubtopologyID
		}
		for _, t := range st.RepartitionSourceTopics {
			subtopologyOf[t.Topic] = st.SubtopologyID
		}
	}
	for _, cm := range commits {
		if cm.Metadata != nil && len(*cm.Metadata) > maxOffsetMetadata {
			continue // OFFSET_METADATA_TOO_LARGE, not validated
		}
		st, ok := subtopologyOf[cm.Topic]
		if !ok {
			return kerr.StaleMemberEpoch
		}
		if e, ok := m.epochs[taskID{st, cm.Partition}]; !ok || epoch < e {
			return kerr.StaleMemberEpoch
		}
	}
	return nil
}
