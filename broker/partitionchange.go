package broker

// partitionChange is Kafka's PartitionChangeBuilder, the one place a
// partition's next leader, ISR and replicas are worked out on the image,
// whatever asked for the change (an election, an ISR change, a fenced
// broker, a reassignment): set the targets, then build the
// PartitionChangeRecord, if anything changes. As Kafka's it completes a
// reassignment once every target replica is in the ISR, then elects a
// leader when the current one may not lead on (out of the ISR or the
// replicas, fenced, or not the preferred one in a preferred election),
// and bumps the leader epoch when replicas leave. Kafka's eligible leader
// replicas (KIP-966), log directories and leader recovery states are not
// here: Strata has none of them.

import (
	"slices"

	"github.com/strata-io/strata/metadata"
)

// election is how a partitionChange may choose a leader.
type election int8

const (
	// electionOnline takes a leader from the ISR only when the current one
	// cannot lead on (Kafka's Election.ONLINE).
	electionOnline election = iota
	// electionPreferred prefers the first replica (Election.PREFERRED).
	electionPreferred
	// electionUnclean falls back to any unfenced replica, which then is
	// the ISR alone (Election.UNCLEAN).
	electionUnclean
)

// partitionChange builds one PartitionChangeRecord.
type partitionChange struct {
	img     *metadata.Image
	topicID [16]byte
	id      int32
	part    metadata.PartitionRegistration

	// The targets, the partition's own until set.
	isr, replicas, adding, removing []int32
	election                        election
	// removed may not lead (a broker being fenced or shutting down);
	// added may, though the image still has it fenced (one being
	// unfenced); metadata.NoLeader for neither.
	removed, added int32
}

func newPartitionChange(img *metadata.Image, topicID [16]byte, id int32, part metadata.PartitionRegistration) *partitionChange {
	return &partitionChange{img: img, topicID: topicID, id: id, part: part,
		isr: part.ISR, replicas: part.Replicas, adding: part.AddingReplicas, removing: part.RemovingReplicas,
		removed: metadata.NoLeader, added: metadata.NoLeader}
}

// acceptable reports whether broker may lead: registered and unfenced,
// or being unfenced, and not being removed (Kafka's LeaderAcceptor).
func (c *partitionChange) acceptable(broker int32) bool {
	if broker < 0 || broker == c.removed {
		return false
	}
	b, ok := c.img.Cluster.Broker(broker)
	return ok && (!b.Fenced || broker == c.added)
}

func (c *partitionChange) validLeader(broker int32) bool {
	return slices.Contains(c.isr, broker) && c.acceptable(broker)
}

// build is the change, ok false when there is none to make.
func (c *partitionChange) build() (rec metadata.PartitionChangeRecord, ok bool) {
	rec = metadata.PartitionChangeRecord{PartitionID: c.id, TopicID: c.topicID, Leader: metadata.NoLeaderChange}
	c.completeReassignment()
	leader, unclean := c.electLeader()
	if leader != c.part.Leader {
		rec.Leader = leader
		if unclean {
			rec.ISR = []int32{leader}
		}
	}
	if rec.Leader == metadata.NoLeaderChange && !containsAll(c.replicas, c.part.Replicas) {
		// Replicas leave: a new leader epoch fences them (Kafka's
		// triggerLeaderEpochBumpForReplicaReassignmentIfNeeded).
		rec.Leader = c.part.Leader
	}
	if rec.ISR == nil && len(c.isr) > 0 && !slices.Equal(c.isr, c.part.ISR) {
		rec.ISR = slices.Clone(c.isr)
	}
	if !slices.Equal(c.replicas, c.part.Replicas) {
		rec.Replicas = slices.Clone(c.replicas)
	}
	if !slices.Equal(c.adding, c.part.AddingReplicas) {
		rec.AddingReplicas = append([]int32{}, c.adding...)
	}
	if !slices.Equal(c.removing, c.part.RemovingReplicas) {
		rec.RemovingReplicas = append([]int32{}, c.removing...)
	}
	ok = rec.Leader != metadata.NoLeaderChange || rec.ISR != nil || rec.Replicas != nil || rec.AddingReplicas != nil || rec.RemovingReplicas != nil
	return rec, ok
}

// completeReassignment is PartitionReassignmentReplicas.maybeCompleteReassignment:
// once every target replica (the replicas less the removing ones) is in
// the ISR less the removing ones, those become the replicas and the ISR.
func (c *partitionChange) completeReassignment() {
	if len(c.adding) == 0 && len(c.removing) == 0 {
		return
	}
	isr, replicas := c.isr, c.replicas
	if len(c.removing) > 0 {
		leaving := func(r int32) bool { return slices.Contains(c.removing, r) }
		isr = slices.DeleteFunc(slices.Clone(c.isr), leaving)
		replicas = slices.DeleteFunc(slices.Clone(c.replicas), leaving)
		if len(isr) == 0 || len(replicas) == 0 {
			return
		}
	}
	if !containsAll(isr, replicas) {
		return
	}
	c.isr, c.replicas, c.adding, c.removing = isr, replicas, nil, nil
}

// electLeader is PartitionChangeBuilder.electLeader: the current leader
// while it may lead on (and, in a preferred election, the preferred
// replica first), else the first valid replica, else in an unclean
// election the first unfenced one; NoLeader when there is none.
func (c *partitionChange) electLeader() (leader int32, unclean bool) {
	if c.election == electionPreferred && c.validLeader(c.replicas[0]) {
		return c.replicas[0], false
	}
	if c.validLeader(c.part.Leader) && slices.Contains(c.replicas, c.part.Leader) {
		return c.part.Leader, false
	}
	for _, r := range c.replicas {
		if c.validLeader(r) {
			return r, false
		}
	}
	if c.election == electionUnclean {
		for _, r := range c.replicas {
			if c.acceptable(r) {
				return r, true
			}
		}
	}
	return metadata.NoLeader, false
}

// containsAll reports whether every element of sub is in set.
func containsAll(set, sub []int32) bool {
	for _, x := range sub {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// leaderAndIsrUpdates is ReplicationControlManager.generateLeaderAndIsrUpdates:
// the changes of the partitions parts selects once broker removed may no
// longer lead or be in sync (it is fenced or shutting down cleanly) or
// once broker added may lead again (it is unfenced): removed leaves each
// ISR, except as its last member, and leaders are elected where needed,
// uncleanly where unclean(topic) allows it. Pass metadata.NoLeader for the
// broker not concerned.
func leaderAndIsrUpdates(img *metadata.Image, removed, added int32, parts func(metadata.PartitionRegistration) bool, unclean func(topic string) bool) []metadata.Record {
	var out []metadata.Record
	for _, t := range img.Topics.All() {
		for p, reg := range t.Partitions {
			if !parts(reg) {
				continue
			}
			c := newPartitionChange(img, t.ID, int32(p), reg)
			c.removed, c.added = removed, added
			if unclean(t.Name) {
				c.election = electionUnclean
			}
			c.isr = slices.DeleteFunc(slices.Clone(reg.ISR), func(r int32) bool { return r == removed })
			if rec, ok := c.build(); ok {
				out = append(out, rec)
			}
		}
	}
	return out
}

// fenceChanges are the changes of fencing broker (or of its controlled
// shutdown): it leaves the ISR of its partitions and the ones it led get
// new leaders, as Kafka's handleBrokerFenced.
func fenceChanges(img *metadata.Image, broker int32, unclean func(topic string) bool) []metadata.Record {
	inISR := func(reg metadata.PartitionRegistration) bool { return slices.Contains(reg.ISR, broker) }
	return leaderAndIsrUpdates(img, broker, metadata.NoLeader, inISR, unclean)
}

// unfenceChanges are the changes of unfencing broker: the partitions
// without a leader get one, it among the candidates, as Kafka's
// handleBrokerUnfenced.
func unfenceChanges(img *metadata.Image, broker int32, unclean func(topic string) bool) []metadata.Record {
	leaderless := func(reg metadata.PartitionRegistration) bool { return reg.Leader == metadata.NoLeader }
	return leaderAndIsrUpdates(img, metadata.NoLeader, broker, leaderless, unclean)
}
