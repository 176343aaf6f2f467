package coordinator

import (
	"cmp"
	"maps"
	"math"
	"slices"
)

// assignShareHeterogeneous is Kafka 4.4's
// SimpleHeterogeneousAssignmentBuilder, for share groups whose members
// subscribe to different topics: each topic is balanced on its own over
// the members subscribed to it (desiredSharing and each member's count as
// in the homogeneous builder, but over those members), starting from the
// whole old assignment. Its maps are keyed by member index and partition
// number, so jset walks them as Java does. The builder's ways are kept: a
// partition a member held is revoked only to balance (one no longer
// assignable stays where it is), the old assignment of a topic no member
// subscribes to is left as it was, and while filling a partition a member
// already given it in this pass may be counted again.
func assignShareHeterogeneous(members []shareAssignMember, partitions func(topic [16]byte) int32, assignable func(topic [16]byte, p int32) bool) map[string]partitionSet {
	ids := newJSet(16, javaStringHash)
	byID := make(map[string]shareAssignMember, len(members))
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b shareAssignMember) int { return cmp.Compare(a.id, b.id) })
	for _, m := range sorted {
		ids.add(m.id)
		byID[m.id] = m
	}
	order := ids.order()
	n := len(order)
	assigned := make([]partitionSet, n) // the old assignment, changed topic by topic
	for i, id := range order {
		assigned[i] = partitionSet{}
		for t, ps := range byID[id].old {
			assigned[i][t] = slices.Clone(ps)
		}
	}
	topics := map[[16]byte][]int{} // subscribedMembersByTopic, in member order
	for i, id := range order {
		for _, t := range byID[id].topics {
			topics[t] = append(topics[t], i)
		}
	}
	for _, t := range slices.SortedFunc(maps.Keys(topics), func(a, b [16]byte) int { return cmp.Compare(string(a[:]), string(b[:])) }) {
		var targets []int32
		for p := int32(0); p < partitions(t); p++ {
			if assignable(t, p) {
				targets = append(targets, p)
			}
		}
		assignShareTopicOf(t, topics[t], targets, assigned)
	}
	out := make(map[string]partitionSet, n)
	for i, id := range order {
		out[id] = assigned[i]
	}
	return out
}

// assignShareTopicOf is TopicAssignmentPartialBuilder.build: topic t's
// targets balanced over the subscribed member indices, in assigned.
func assignShareTopicOf(t [16]byte, subscribed []int, targets []int32, assigned []partitionSet) {
	n := len(assigned)
	sharing := 0
	if len(targets) > 0 {
		sharing = (len(subscribed) + len(targets) - 1) / len(targets)
	}
	desired := make([]int, n)
	ratio := float64(sharing*len(targets)) / float64(len(subscribed))
	for k, i := range subscribed {
		desired[i] = int(math.Ceil(ratio*float64(k+1))) - int(math.Ceil(ratio*float64(k)))
	}
	byPartition := newJSet(javaMapCapacity(len(targets)), partitionHash)
	owners := map[int32]*jset[int]{}
	byMember := newJSet(javaMapCapacity(len(subscribed)), intHash)
	held := map[int]*jset[int32]{}
	hold := func(i int, p int32) {
		if held[i] == nil {
			byMember.add(i)
			held[i] = newJSet(16, partitionHash)
		}
		held[i].add(p)
	}
	owned := func(p int32) *jset[int] {
		if owners[p] == nil {
			byPartition.add(p)
			owners[p] = newJSet(16, intHash)
		}
		return owners[p]
	}
	revoke := func(i int, p int32) {
		ps := assigned[i][t]
		if j, ok := slices.BinarySearch(ps, p); ok {
			assigned[i][t] = slices.Delete(ps, j, j+1)
		}
	}
	// revokeUnassignablePartitions: what each member held of t.
	for i := range n {
		old := newJSet(16, partitionHash)
		for _, p := range assigned[i][t] {
			old.add(p)
		}
		for _, p := range old.order() {
			owned(p).add(i)
			hold(i, p)
		}
	}
	// revokeOverfilledMembers
	for _, i := range byMember.order() {
		for _, p := range held[i].order() {
			if held[i].len() <= desired[i] {
				break
			}
			owners[p].remove(i)
			held[i].remove(p)
			revoke(i, p)
		}
	}
	// revokeOversharedPartitions
	for _, p := range byPartition.order() {
		o := owners[p]
		count := o.len()
		if count <= sharing {
			continue
		}
		for _, i := range o.order() {
			if assigned[i].has(t, p) {
				revoke(i, p)
				count--
				o.remove(i)
				held[i].remove(p)
			}
			if count <= sharing {
				break
			}
		}
	}
	for _, p := range targets {
		owned(p)
	}
	// assignRemainingPartitions
	unfilled := newJSet(javaMapCapacity(n), intHash)
	for _, i := range subscribed {
		if held[i] == nil && desired[i] > 0 || held[i] != nil && held[i].len() < desired[i] {
			unfilled.add(i)
		}
	}
	next, progressed := unfilled.iterator(), false
	for _, p := range byPartition.order() {
		o := owners[p]
		for need := sharing - o.len(); need > 0; {
			i, ok := next()
			if !ok {
				if !progressed {
					break
				}
				next, progressed = unfilled.iterator(), false
				continue
			}
			if o.has(i) {
				continue
			}
			assigned[i].add(t, p)
			hold(i, p)
			need--
			progressed = true
			if held[i].len() >= desired[i] {
				unfilled.remove(i)
			}
		}
		if unfilled.len() == 0 {
			break
		}
	}
	for i := range assigned {
		if ps, ok := assigned[i][t]; ok && len(ps) == 0 {
			delete(assigned[i], t)
		}
	}
}

func partitionHash(p int32) int32 { return p }
