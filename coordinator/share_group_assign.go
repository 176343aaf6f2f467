package coordinator

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"unicode/utf16"
)

// Kafka 4.4's SimpleAssignor, the share groups' assignor: every subscribed
// partition whose share state is initialized goes to at least one member,
// a partition goes to several members when there are more members than
// partitions (desiredSharing = ceil(members/partitions)), each member gets
// its share of the desiredSharing*partitions assignments (member i gets
// ceil(r*(i+1)) - ceil(r*i) of them, r = desiredSharing*partitions/members),
// and what a member had stays with it where that keeps the balance. It is
// SimpleHomogeneousAssignmentBuilder step by step, and since the steps walk
// Java HashMaps and HashSets (which member is index 0, which partitions an
// overfilled member gives up, which partition an unfilled member gets
// first), jset walks keys in the order a Java HashMap of the same keys,
// inserted in the same order, does: by bucket (the spread hash masked by
// the table size, which doubles past 3/4 full) and insertion order within a
// bucket. Where members subscribe to different topics it is
// SimpleHeterogeneousAssignmentBuilder (share_group_assign_hetero.go).

// shareAssignMember is one member as the assignor sees it.
type shareAssignMember struct {
	id     string
	topics [][16]byte   // subscribed topics that exist
	old    partitionSet // its target assignment so far
}

// assignShareGroup is SimpleAssignor.assign: the target assignment of each
// member, given the partitions that may be assigned (assignable: those
// initialized, by topic, sorted).
func assignShareGroup(members []shareAssignMember, partitions func(topic [16]byte) int32, assignable func(topic [16]byte, p int32) bool) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	for _, m := range members {
		out[m.id] = partitionSet{}
	}
	if len(members) == 0 {
		return out
	}
	homogeneous := true
	for _, m := range members[1:] {
		if !sameTopics(m.topics, members[0].topics) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		for id, set := range assignShareTopics(members, members[0].topics, partitions, assignable) {
			out[id] = set
		}
		return out
	}
	return assignShareHeterogeneous(members, partitions, assignable)
}

func sameTopics(a, b [][16]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for _, t := range a {
		if !slices.Contains(b, t) {
			return false
		}
	}
	return true
}

// assignShareTopics is SimpleHomogeneousAssignmentBuilder.build for
// members all subscribed to topics.
func assignShareTopics(members []shareAssignMember, topics [][16]byte, partitions func(topic [16]byte) int32, assignable func(topic [16]byte, p int32) bool) map[string]partitionSet {
	out := make(map[string]partitionSet, len(members))
	if len(topics) == 0 {
		for _, m := range members {
			out[m.id] = partitionSet{}
		}
		return out
	}
	// GroupSpec.memberIds: the keys of a default HashMap of member ids.
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
	var targets []tpID
	for _, t := range topics {
		for p := int32(0); p < partitions(t); p++ {
			if assignable(t, p) {
				targets = append(targets, tpID{t, p})
			}
		}
	}
	sharing := 0
	if len(targets) > 0 {
		sharing = (n + len(targets) - 1) / len(targets)
	}
	desired := make([]int, n)
	ratio := float64(sharing*len(targets)) / float64(n)
	for i := range desired {
		desired[i] = int(math.Ceil(ratio*float64(i+1))) - int(math.Ceil(ratio*float64(i)))
	}
	subscribed := map[[16]byte]bool{}
	for _, t := range topics {
		subscribed[t] = true
	}
	assigned := make([]partitionSet, n) // newGroupAssignment, or the old one
	byPartition := newJSet(javaMapCapacity(len(targets)), tpHash)
	membersOf := map[tpID]*jset[int]{}
	byMember := make([]*jset[tpID], n)
	unfilled, overfilled := newJSet(javaMapCapacity(n), intHash), newJSet(javaMapCapacity(n), intHash)
	addOwner := func(tp tpID, i int) {
		if membersOf[tp] == nil {
			byPartition.add(tp)
			membersOf[tp] = newJSet(16, intHash)
		}
		membersOf[tp].add(i)
	}
	// revokeUnassignablePartitions
	for i, id := range order {
		assigned[i] = partitionSet{}
		byMember[i] = newJSet(16, tpHash)
		count := 0
		old := byID[id].old
		ts := make([][16]byte, 0, len(old))
		for t := range old {
			ts = append(ts, t)
		}
		slices.SortFunc(ts, func(a, b [16]byte) int { return cmp.Compare(string(a[:]), string(b[:])) })
		for _, t := range ts {
			if !subscribed[t] {
				continue
			}
			for _, p := range old[t] {
				count++
				addOwner(tpID{t, p}, i)
				byMember[i].add(tpID{t, p})
				assigned[i].add(t, p)
			}
		}
		switch {
		case count < desired[i]:
			unfilled.add(i)
		case count > desired[i]:
			overfilled.add(i)
		}
	}
	revoke := func(i int, tp tpID) {
		ps := assigned[i][tp.topic]
		if j, ok := slices.BinarySearch(ps, tp.partition); ok {
			assigned[i][tp.topic] = slices.Delete(ps, j, j+1)
			if len(assigned[i][tp.topic]) == 0 {
				delete(assigned[i], tp.topic)
			}
		}
	}
	// revokeOverfilledMembers
	for _, i := range overfilled.order() {
		for _, tp := range byMember[i].order() {
			if byMember[i].len() <= desired[i] {
				break
			}
			revoke(i, tp)
			membersOf[tp].remove(i)
			byMember[i].remove(tp)
		}
	}
	// revokeOversharedPartitions
	for _, tp := range byPartition.order() {
		owners := membersOf[tp]
		if owners.len() <= sharing {
			continue
		}
		for _, i := range owners.order() {
			if assigned[i].has(tp.topic, tp.partition) {
				revoke(i, tp)
				owners.remove(i)
				byMember[i].remove(tp)
				unfilled.add(i)
				if owners.len() <= sharing {
					break
				}
			}
		}
	}
	for _, tp := range targets {
		if membersOf[tp] == nil {
			byPartition.add(tp)
			membersOf[tp] = newJSet(16, intHash)
		}
	}
	// assignRemainingPartitions
	if unfilled.len() > 0 {
		next := unfilled.iterator()
		progressed := false
		for _, tp := range byPartition.order() {
			owners := membersOf[tp]
			need := sharing - owners.len()
			for need > 0 {
				i, ok := next()
				if !ok {
					if !progressed {
						break
					}
					next, progressed = unfilled.iterator(), false
					continue
				}
				if owners.has(i) {
					continue
				}
				assigned[i].add(tp.topic, tp.partition)
				byMember[i].add(tp)
				need--
				progressed = true
				if byMember[i].len() >= desired[i] {
					unfilled.remove(i)
				}
			}
			if unfilled.len() == 0 {
				break
			}
		}
	}
	for i, id := range order {
		out[id] = assigned[i]
	}
	return out
}

// jset is a set walked in a Java HashMap's order (see above).
type jset[K comparable] struct {
	capacity int
	hash     func(K) int32
	seq      map[K]int
	next     int
}

// newJSet is a set like a Java HashMap made with initial capacity c
// (16 for the default constructor).
func newJSet[K comparable](c int, hash func(K) int32) *jset[K] {
	capacity := 1
	for capacity < c {
		capacity <<= 1
	}
	return &jset[K]{capacity: capacity, hash: hash, seq: map[K]int{}}
}

// javaMapCapacity is the initial capacity AssignorHelpers.newHashMap(n)
// and newHashSet(n) ask for.
func javaMapCapacity(n int) int { return int(float32(n+1)/0.75 + 1) }

func (s *jset[K]) len() int     { return len(s.seq) }
func (s *jset[K]) has(k K) bool { _, ok := s.seq[k]; return ok }
func (s *jset[K]) remove(k K)   { delete(s.seq, k) }
func (s *jset[K]) bucket(k K) int {
	h := uint32(s.hash(k))
	return int((h ^ h>>16) & uint32(s.capacity-1))
}

func (s *jset[K]) add(k K) {
	if s.has(k) {
		return
	}
	s.seq[k] = s.next
	s.next++
	if len(s.seq) > s.capacity*3/4 {
		s.capacity <<= 1
	}
}

// order is the keys as a Java iterator gives them.
func (s *jset[K]) order() []K {
	keys := make([]K, 0, len(s.seq))
	for k := range s.seq {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		return cmp.Or(cmp.Compare(s.bucket(a), s.bucket(b)), cmp.Compare(s.seq[a], s.seq[b]))
	})
	return keys
}

// iterator walks the keys present when it was made, skipping those
// removed since (Java's iterator, where only the current key is removed).
func (s *jset[K]) iterator() func() (K, bool) {
	keys, i := s.order(), 0
	return func() (K, bool) {
		for i < len(keys) {
			k := keys[i]
			i++
			if s.has(k) {
				return k, true
			}
		}
		var zero K
		return zero, false
	}
}

// javaStringHash is Java's String.hashCode.
func javaStringHash(str string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(str)) {
		h = 31*h + int32(c)
	}
	return h
}

// tpHash is the hashCode of Kafka's TopicIdPartition record: 31 times
// Uuid.hashCode plus the partition.
func tpHash(tp tpID) int32 {
	x := binary.BigEndian.Uint64(tp.topic[:8]) ^ binary.BigEndian.Uint64(tp.topic[8:])
	return 31*(int32(x>>32)^int32(x)) + tp.partition
}

func intHash(i int) int32 { return int32(i) }
