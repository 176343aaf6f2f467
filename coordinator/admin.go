package coordinator

import (
	"math"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// DescribeGroup is Kafka's GroupMetadata.summary: a group that does not
// exist is described as Dead with no error (DescribeGroups v0-5); member
// metadata and assignments are only given for a Stable group.
func (s *groupShard) describeGroup(id string) kmsg.DescribeGroupsResponseGroup {
	d := describedGroup(id)
	g := s.group(id, false)
	if g == nil {
		d.State = stateDead.String()
		return d
	}
	if g.consumer != nil || g.streams != nil || g.share != nil {
		// As Kafka before DescribeGroups v6: a group of another type is
		// described as Dead (ConsumerGroupDescribe describes it).
		d.State = stateDead.String()
		return d
	}
	d.State, d.ProtocolType = g.state.String(), g.protocolType
	stable := g.state == stateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.clientHost
		if m.instanceID != "" {
			id := m.instanceID
			dm.InstanceID = &id
		}
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if stable {
			dm.ProtocolMetadata, dm.MemberAssignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

func describedGroup(id string) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = id
	d.AuthorizedOperations = math.MinInt32
	return d
}

// listGroups lists the shard's groups, optionally only those in the given
// states (Kafka's state names, any case) and of the given types
// ("classic", or "consumer" for KIP-848 groups, whose states are Kafka's
// Empty, Assigning, Reconciling and Stable).
func (s *groupShard) listGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	gs := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].id < gs[j].id })
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range gs {
		state, protocolType, groupType := g.state.String(), g.protocolType, "classic"
		if g.consumer != nil {
			state, groupType = g.consumer.state(), "consumer"
		}
		if g.streams != nil {
			state, groupType = g.streams.state(), "streams"
		}
		if g.share != nil {
			state, groupType = g.share.state(), "share"
		}
		dead := g.state == stateDead
		if dead || len(states) > 0 && !containsFold(states, state) || len(types) > 0 && !containsFold(types, groupType) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, protocolType, state, groupType
		out = append(out, lg)
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// groupDeleteReply is the outcome of deleting a group, final once its
// write is done.
type groupDeleteReply struct{ err *kerr.Error }

// deleteGroupRequest deletes an Empty group and its offsets (tombstones
// for both), as Kafka's deleteGroups: GROUP_ID_NOT_FOUND when it does not
// exist, NON_EMPTY_GROUP while it has members.
func (s *groupShard) deleteGroupRequest(id string) *groupDeleteReply {
	g := s.group(id, false)
	if g == nil {
		return &groupDeleteReply{err: kerr.GroupIDNotFound}
	}
	if g.state != stateEmpty || g.consumer != nil && len(g.consumer.members) > 0 || g.streams != nil && len(g.streams.members) > 0 ||
		g.share != nil && len(g.share.members) > 0 {
		return &groupDeleteReply{err: kerr.NonEmptyGroup}
	}
	tps := sortedTPs(s.offsets.of(g.id))
	recs := make([]kv, 0, len(tps)+1)
	for _, tp := range tps {
		recs = append(recs, kv{key: offsetCommitKey(g.id, tp.topic, tp.partition)})
	}
	recs = append(recs, groupTombstones(g)...)
	reply := &groupDeleteReply{}
	s.write(recs, func(err error) {
		if err != nil {
			s.logger.Error("deleting group", zap.String("group", g.id), zap.Error(err))
			reply.err = kerr.CoordinatorNotAvailable
			return
		}
		s.deleteGroup(g)
		s.logger.Info("deleted group", zap.String("group", id), zap.Int("offsets", len(tps)))
	})
	return reply
}
