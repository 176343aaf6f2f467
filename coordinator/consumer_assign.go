package coordinator

import (
	"sort"

	"go.uber.org/zap"
)

// topicMeta is a subscribed topic as the assignors see it.
type topicMeta struct {
	name       string
	id         [16]byte
	partitions int32
	internal   bool // a regex of a consumer group matches it anyway, a streams source regex does not
}

// subscribedTopicMeta is every existing topic some member of cg
// subscribes to (by name, or by regex as last resolved), sorted by name.
func (s *groupShard) subscribedTopicMeta(cg *consumerGroup) []topicMeta {
	var out []topicMeta
	seen := map[string]bool{}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if t, ok := s.topics.Topic(name); ok {
			out = append(out, t)
		}
	}
	for _, m := range cg.members {
		for _, name := range m.topics {
			add(name)
		}
		if m.regex != "" {
			for _, name := range cg.resolved[m.regex].topics {
				add(name)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// preferredAssignor is Kafka's: the server assignor most members ask for
// (ties to the earlier in group.consumer.assignors), else the first one.
func preferredAssignor(cg *consumerGroup) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := consumerAssignors[0]
	for _, a := range consumerAssignors {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}

// computeTargetAssignment runs the group's assignor and moves the
// assignment epoch to the group epoch.
func (s *groupShard) computeTargetAssignment(g *group) {
	cg := g.consumer
	members := cg.sortedMembers()
	topics := s.subscribedTopicMeta(cg)
	cg.assignor = preferredAssignor(cg)
	if cg.assignor == "range" {
		cg.target = assignRange(cg, members, topics)
	} else {
		cg.target = assignUniform(cg, members, topics, cg.target)
	}
	cg.assignmentEpoch, cg.assignmentTime = cg.epoch, s.now.UnixMilli()
	s.logger.Info("computed consumer group target assignment", zap.String("group", g.id), zap.Int32("epoch", cg.epoch),
		zap.String("assignor", cg.assignor), zap.Int("members", len(members)), zap.Int("topics", len(topics)))
}

// assignRange is the range assignor: per topic, the subscribed members
// (by member id) get contiguous ranges, the first ones one partition more
// when the count does not divide.
func assignRange(cg *consumerGroup, members []*cmember, topics []topicMeta) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	for _, m := range members {
		out[m.id] = partitionSet{}
	}
	for _, t := range topics {
		var subs []*cmember
		for _, m := range members {
			if cg.subscribes(m, t.name) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n, k := int(t.partitions), len(subs)
		q, r := n/k, n%k
		start := 0
		for i, m := range subs {
			size := q
			if i < r {
				size++
			}
			for p := start; p < start+size; p++ {
				out[m.id].add(t.id, int32(p))
			}
			start += size
		}
	}
	return out
}

// assignUniform is the uniform assignor: every partition goes to one of
// its topic's subscribers, partitions stay with their previous owner where
// that keeps the counts balanced, and a partition moves only while its
// owner has at least two more than another subscriber could take.
func assignUniform(cg *consumerGroup, members []*cmember, topics []topicMeta, prev map[string]partitionSet) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	counts := make(map[string]int, len(members))
	for _, m := range members {
		out[m.id] = partitionSet{}
	}
	type part struct {
		tp   tpID
		subs []*cmember
	}
	var parts []part
	for _, t := range topics {
		var subs []*cmember
		for _, m := range members {
			if cg.subscribes(m, t.name) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		for p := int32(0); p < t.partitions; p++ {
			parts = append(parts, part{tp: tpID{t.id, p}, subs: subs})
		}
	}
	owner := make(map[tpID]string, len(parts))
	prevOwner := map[tpID]string{}
	for id, ps := range prev {
		ps.each(func(t [16]byte, p int32) { prevOwner[tpID{t, p}] = id })
	}
	least := func(subs []*cmember) *cmember {
		best := subs[0]
		for _, m := range subs[1:] {
			if counts[m.id] < counts[best.id] {
				best = m
			}
		}
		return best
	}
	// Sticky first, then the rest to the least loaded subscriber.
	for _, p := range parts {
		if id, ok := prevOwner[p.tp]; ok {
			for _, m := range p.subs {
				if m.id == id {
					owner[p.tp] = id
					counts[id]++
					break
				}
			}
		}
	}
	for _, p := range parts {
		if _, ok := owner[p.tp]; !ok {
			m := least(p.subs)
			owner[p.tp] = m.id
			counts[m.id]++
		}
	}
	// Balance: each move lowers the sum of squared counts, so this ends.
	for moved := true; moved; {
		moved = false
		for _, p := range parts {
			o := owner[p.tp]
			if m := least(p.subs); counts[o]-counts[m.id] > 1 {
				owner[p.tp] = m.id
				counts[o]--
				counts[m.id]++
				moved = true
			}
		}
	}
	for tp, id := range owner {
		out[id].add(tp.topic, tp.partition)
	}
	return out
}

// ownsAny reports whether the member's reported partitions include any of
// set; a heartbeat without its partitions (owned nil) counts as owning.
func ownsAny(owned, set partitionSet) bool {
	if owned == nil {
		return set.count() > 0
	}
	found := false
	set.each(func(id [16]byte, p int32) { found = found || owned.has(id, p) })
	return found
}

// reconcile moves m towards its target assignment (Kafka's
// CurrentAssignmentBuilder); owned is what the heartbeat says m owns, nil
// when the heartbeat did not say.
func (s *groupShard) reconcile(g *group, m *cmember, owned partitionSet) {
	cg := g.consumer
	switch m.state {
	case cmemberStable:
		if m.epoch == cg.assignmentEpoch {
			return
		}
	case cmemberUnrevoked:
		if ownsAny(owned, m.revoking) {
			return
		}
	}
	target := cg.target[m.id]
	assigned, revoke, pending := partitionSet{}, partitionSet{}, partitionSet{}
	unreleased := false
	m.assigned.each(func(id [16]byte, p int32) {
		if target.has(id, p) {
			assigned.add(id, p)
		} else {
			revoke.add(id, p)
		}
	})
	target.each(func(id [16]byte, p int32) {
		switch {
		case m.assigned.has(id, p):
		case cg.freeFor(m, tpID{id, p}):
			pending.add(id, p)
		default:
			unreleased = true
		}
	})
	if revoke.count() > 0 && ownsAny(owned, revoke) {
		// Give up partitions first, at the current epoch.
		cg.setAssignment(m, assigned, revoke)
		m.state = cmemberUnrevoked
		s.scheduleRevocation(g, m)
		return
	}
	pending.each(assigned.add)
	cg.setAssignment(m, assigned, partitionSet{})
	if m.epoch != cg.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
	}
	m.state = cmemberStable
	if unreleased {
		m.state = cmemberUnreleased
	}
	s.stopRevokeTimer(g, m)
}
