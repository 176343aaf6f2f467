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
func (c *Groups) DescribeGroup(id string) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = id
	d.AuthorizedOperations = math.MinInt32
	if err := c.checkGroupRead(id); err != nil {
		d.ErrorCode = err.Code
		return d
	}
	g := c.lockGroup(id, false)
	if g == nil {
		d.State = stateDead.String()
		return d
	}
	defer g.mu.Unlock()
	if g.consumer != nil {
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

// ListGroups lists every group, optionally only those in the given states
// (Kafka's state names, any case) and of the given types ("classic", or
// "consumer" for KIP-848 groups, whose states are Kafka's Empty, Assigning,
// Reconciling and Stable). Until the load finishes it answers
// COORDINATOR_LOAD_IN_PROGRESS.
func (c *Groups) ListGroups(states, types []string) ([]kmsg.ListGroupsResponseGroup, *kerr.Error) {
	if !c.loaded.Load() {
		return nil, kerr.CoordinatorLoadInProgress
	}

	c.mu.RLock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.RUnlock()
	sort.Slice(gs, func(i, j int) bool { return gs[i].id < gs[j].id })
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range gs {
		g.mu.Lock()
		state, protocolType, groupType := g.state.String(), g.protocolType, "classic"
		if g.consumer != nil {
			state, groupType = g.consumer.state(), "consumer"
		}
		dead := g.state == stateDead
		g.mu.Unlock()
		if dead || len(states) > 0 && !containsFold(states, state) || len(types) > 0 && !containsFold(types, groupType) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, protocolType, state, groupType
		out = append(out, lg)
	}
	return out, nil
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// DeleteGroup deletes an Empty group and its offsets (tombstones for
// both), as Kafka's deleteGroups: GROUP_ID_NOT_FOUND when it does not
// exist, NON_EMPTY_GROUP while it has members.
func (c *Groups) DeleteGroup(id string) *kerr.Error {
	if err := c.checkGroupRead(id); err != nil {
		return err
	}
	g := c.lockGroup(id, false)
	if g == nil {
		return kerr.GroupIDNotFound
	}
	defer g.mu.Unlock()
	if g.state != stateEmpty || g.consumer != nil && len(g.consumer.members) > 0 {
		return kerr.NonEmptyGroup
	}
	recs := make([]kv, 0, len(g.offsets)+1)
	for tp := range g.offsets {
		recs = append(recs, kv{key: offsetCommitKey(g.id, tp.topic, tp.partition)})
	}
	recs = append(recs, kv{key: groupMetadataKey(g.id)})
	if err := c.append(g, recs); err != nil {
		c.logger.Error("deleting group", zap.String("group", g.id), zap.Error(err))
		return kerr.CoordinatorNotAvailable
	}
	c.deleteGroup(g)
	c.logger.Info("deleted group", zap.String("group", id), zap.Int("offsets", len(recs)-1))
	return nil
}
