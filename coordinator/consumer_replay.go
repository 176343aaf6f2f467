package coordinator

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// A KIP-848 group lives in __consumer_offsets as Kafka's
// GroupMetadataManager keeps it: ConsumerGroupMetadata (the group epoch),
// per member ConsumerGroupMemberMetadata (its subscription),
// ConsumerGroupTargetAssignmentMember and ConsumerGroupCurrentMemberAssignment
// (its epochs and partitions), and ConsumerGroupTargetAssignmentMetadata
// (the assignment epoch). The shard changes the group in memory while it
// handles an input, then persistConsumer writes the records that differ
// from the ones last made durable (consumerGroup.stored), tombstones for
// those that went away, in Kafka's order: a leaving member's current
// assignment, target and metadata, then the members' metadata, the group
// epoch, the targets, the assignment epoch and the current assignments.
// The answer that depends on them waits for the write; a failed write puts
// the group back as the stored records say, as Kafka reverts to its last
// committed snapshot. Load replays the records (replayConsumer) and builds
// the groups from them once the partition is read (activateConsumerGroups).

// consumerImage is the consumer group records of one group read so far
// during load: the latest value of each key.
type consumerImage map[string][]byte

// replayConsumer applies one KIP-848 record during load; other coordinator
// record types (share and streams groups) are skipped.
func (s *groupShard) replayConsumer(key, value []byte) error {
	if typ, _ := keyVersion(key); typ < cgMetadataType || typ > cgCurrentType && typ != cgRegexType {
		return nil
	}
	k, err := decodeCGKey(key)
	if err != nil {
		return err
	}
	if s.consumerImages == nil {
		s.consumerImages = map[string]consumerImage{}
	}
	if value != nil {
		if err := validateCGValue(k.typ, value); err != nil {
			return fmt.Errorf("group %s: %w", k.group, err)
		}
	}
	img := s.consumerImages[k.group]
	if value == nil {
		delete(img, string(key))
		if k.typ == cgMetadataType && len(img) == 0 {
			delete(s.consumerImages, k.group)
		}
		return nil
	}
	if img == nil {
		img = consumerImage{}
		s.consumerImages[k.group] = img
	}
	img[string(key)] = bytes.Clone(value) // the batch's buffer is reused
	return nil
}

// validateCGValue decodes a value of a consumer group record type, so a
// malformed one fails the load where it is read.
func validateCGValue(typ int16, value []byte) error {
	var err error
	switch typ {
	case cgMetadataType:
		_, err = decodeCGMetadata(value)
	case cgMemberType:
		_, err = decodeCGMember(value)
	case cgTargetMetadataType:
		_, err = decodeCGTargetMetadata(value)
	case cgTargetMemberType:
		_, err = decodeCGTargetMember(value)
	case cgCurrentType:
		_, err = decodeCGCurrent(value)
	case cgRegexType:
		_, err = decodeCGRegex(value)
	}
	return err
}

// activateConsumerGroups builds the replayed consumer groups, replacing
// what a classic record of the same group said, and starts their members'
// sessions (and revocation deadlines) as Kafka does on load.
func (s *groupShard) activateConsumerGroups() {
	ids := make([]string, 0, len(s.consumerImages))
	for id := range s.consumerImages {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		cg, err := s.consumerGroupFromRecords(s.consumerImages[id])
		if err != nil { // validated on replay
			s.logger.Error("building a replayed consumer group", zap.String("group", id), zap.Error(err))
			continue
		}
		g := s.replayGroup(id)
		g.consumer, g.protocolType, g.protocol, g.leader = cg, "consumer", "", ""
		g.members, g.static = map[string]*member{}, map[string]string{}
		g.state = stateEmpty
		for _, m := range cg.sortedMembers() {
			// Kafka's onLoaded gives every member the group's session
			// timeout, a classic one too: its own comes back with its next
			// heartbeat.
			s.schedule(timerKey{kind: timerConsumerSession, group: g.id, member: m.id}, s.consumerSessionTimeout(g.id))
			if m.state == cmemberUnrevoked {
				s.scheduleRevocation(g, m)
			}
		}
	}
	s.consumerImages = nil
}

// consumerGroupFromRecords is the group the records say.
func (s *groupShard) consumerGroupFromRecords(img consumerImage) (*consumerGroup, error) {
	cg := newConsumerGroup()
	type current struct{ assigned, revoking partitionSet }
	currents := map[string]current{}
	keys := make([]string, 0, len(img))
	for k := range img {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		value := img[key]
		k, err := decodeCGKey([]byte(key))
		if err != nil {
			return nil, err
		}
		switch k.typ {
		case cgMetadataType:
			v, err := decodeCGMetadata(value)
			if err != nil {
				return nil, err
			}
			cg.epoch, cg.metadataHash = v.epoch, v.metadataHash
		case cgTargetMetadataType:
			v, err := decodeCGTargetMetadata(value)
			if err != nil {
				return nil, err
			}
			cg.assignmentEpoch, cg.assignmentTime = v.assignmentEpoch, v.assignmentTimestamp
		case cgMemberType:
			v, err := decodeCGMember(value)
			if err != nil {
				return nil, err
			}
			cg.members[k.sub] = memberFromRecord(k.sub, &v)
		case cgTargetMemberType:
			v, err := decodeCGTargetMember(value)
			if err != nil {
				return nil, err
			}
			cg.target[k.sub] = partitionSetOf(v.topics)
		case cgRegexType:
			v, err := decodeCGRegex(value)
			if err != nil {
				return nil, err
			}
			cg.setResolved(k.sub, resolvedRegex{topics: slices.Compact(slices.Sorted(slices.Values(v.topics))), version: v.version, timestamp: v.timestamp})
		case cgCurrentType:
			v, err := decodeCGCurrent(value)
			if err != nil {
				return nil, err
			}
			currents[k.sub] = current{partitionSetOf(v.assigned), partitionSetOf(v.revoking)}
			if m := cg.members[k.sub]; m != nil {
				m.epoch, m.prevEpoch, m.state = v.memberEpoch, v.previousMemberEpoch, cmemberState(v.state)
			}
		}
	}
	// Keys sort by type, so a member's current assignment came after its
	// metadata; records of a member without metadata are dropped (and
	// tombstoned by the next write).
	for id, c := range currents {
		if m := cg.members[id]; m != nil {
			cg.setAssignment(m, c.assigned, c.revoking)
		}
	}
	for id := range cg.target {
		if cg.members[id] == nil {
			delete(cg.target, id)
		}
	}
	for _, m := range cg.members {
		if m.instanceID != "" {
			cg.static[m.instanceID] = m.id
		}
	}
	cg.stored, cg.storedIDs, cg.storedRegexes = img, cg.memberIDs(), cg.regexSet()
	return cg, nil
}

func memberFromRecord(id string, v *cgMemberValue) *cmember {
	m := &cmember{
		id:               id,
		instanceID:       deref(v.instanceID),
		rackID:           deref(v.rackID),
		clientID:         v.clientID,
		clientHost:       v.clientHost,
		rebalanceTimeout: time.Duration(v.rebalanceTimeoutMs) * time.Millisecond,
		assignor:         deref(v.serverAssignor),
		regex:            deref(v.regex),
		classic:          v.classic,
		assigned:         partitionSet{},
		revoking:         partitionSet{},
	}
	m.topics = slices.Compact(slices.Sorted(slices.Values(v.topics)))
	return m
}

func partitionSetOf(ts []cgTopicPartitions) partitionSet {
	set := partitionSet{}
	for _, t := range ts {
		for _, p := range t.partitions {
			set.add(t.topicID, p)
		}
	}
	return set
}

func topicPartitionsOf(set partitionSet) []cgTopicPartitions {
	out := make([]cgTopicPartitions, 0, len(set))
	for id, ps := range set {
		out = append(out, cgTopicPartitions{topicID: id, partitions: slices.Clone(ps)})
	}
	slices.SortFunc(out, func(a, b cgTopicPartitions) int { return cmp.Compare(string(a.topicID[:]), string(b.topicID[:])) })
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// consumerRecords is g's consumer group as records, in Kafka's write
// order (members' subscriptions, the resolved regexes, the group epoch,
// ...); with only set, the group's records and only's.
func consumerRecords(g *group, only *cmember) []kv {
	cg := g.consumer
	members := []*cmember{only}
	if only == nil {
		members = cg.sortedMembers()
	}
	recs := make([]kv, 0, 3*len(members)+2)
	key := func(typ int16, sub string) []byte { return cgKey{typ: typ, group: g.id, sub: sub}.encode() }
	for _, m := range members {
		regex := m.regex
		v := cgMemberValue{instanceID: optional(m.instanceID), rackID: optional(m.rackID), clientID: m.clientID,
			clientHost: m.clientHost, topics: m.topics, regex: &regex, rebalanceTimeoutMs: int32(m.rebalanceTimeout.Milliseconds()),
			serverAssignor: optional(m.assignor), classic: m.classic}
		if v.topics == nil {
			v.topics = []string{}
		}
		recs = append(recs, kv{key: key(cgMemberType, m.id), value: v.encode()})
	}
	regexes := make([]string, 0, len(cg.resolved))
	for regex := range cg.resolved {
		regexes = append(regexes, regex)
	}
	slices.Sort(regexes)
	for _, regex := range regexes {
		r := cg.resolved[regex]
		recs = append(recs, kv{key: key(cgRegexType, regex), value: (&cgRegexValue{topics: r.topics, version: r.version, timestamp: r.timestamp}).encode()})
	}
	recs = append(recs, kv{key: key(cgMetadataType, ""), value: (&cgMetadataValue{epoch: cg.epoch, metadataHash: cg.metadataHash}).encode()})
	for _, m := range members {
		if t, ok := cg.target[m.id]; ok {
			recs = append(recs, kv{key: key(cgTargetMemberType, m.id), value: (&cgTargetMemberValue{topics: topicPartitionsOf(t)}).encode()})
		}
	}
	recs = append(recs, kv{key: key(cgTargetMetadataType, ""),
		value: (&cgTargetMetadataValue{assignmentEpoch: cg.assignmentEpoch, assignmentTimestamp: cg.assignmentTime}).encode()})
	for _, m := range members {
		v := cgCurrentValue{memberEpoch: m.epoch, previousMemberEpoch: m.prevEpoch, state: int8(m.state),
			assigned: topicPartitionsOf(m.assigned), revoking: topicPartitionsOf(m.revoking)}
		recs = append(recs, kv{key: key(cgCurrentType, m.id), value: v.encode()})
	}
	return recs
}

// tombstoneOrder is the order Kafka writes tombstones in: a member's
// current assignment, target and metadata, the regexes, then the group's
// records.
var tombstoneOrder = map[int16]int{cgCurrentType: 0, cgTargetMemberType: 1, cgMemberType: 2, cgRegexType: 3,
	cgTargetMetadataType: 4, cgPartitionMetadataType: 5, cgMetadataType: 6}

// consumerDiff is the records that turn stored into want: tombstones for
// the keys want lacks (Kafka's order; none when want is partial), then
// want's new or changed values.
func consumerDiff(stored consumerImage, want []kv, partial bool) []kv {
	var out []kv
	if !partial {
		out = tombstones(stored, want)
	}
	for _, r := range want {
		if v, ok := stored[string(r.key)]; !ok || string(v) != string(r.value) {
			out = append(out, r)
		}
	}
	return out
}

// tombstones deletes the keys of stored that want lacks, in Kafka's order.
func tombstones(stored consumerImage, want []kv) []kv {
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
	rank := func(k cgKey) int { // members' records, then regexes, then the group's
		switch {
		case k.typ == cgRegexType:
			return 1
		case k.sub == "":
			return 2
		}
		return 0
	}
	slices.SortFunc(gone, func(a, b cgKey) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.sub, b.sub), cmp.Compare(tombstoneOrder[a.typ], tombstoneOrder[b.typ]))
	})
	out := make([]kv, 0, len(gone))
	for _, k := range gone {
		out = append(out, kv{key: k.encode()})
	}
	return out
}

// heartbeatReply is the answer to a ConsumerGroupHeartbeat, final once
// its write is done.
type heartbeatReply struct {
	resp *kmsg.ConsumerGroupHeartbeatResponse
}

// consumerHeartbeat handles a valid ConsumerGroupHeartbeat and persists
// what it changed; a failed write answers its error.
func (s *groupShard) consumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, version int16, client Client) *heartbeatReply {
	reply := &heartbeatReply{resp: s.consumerGroupHeartbeat(req, version, client)}
	if g := s.groups[req.Group]; g != nil {
		s.persistConsumerMember(g, deref(reply.resp.MemberID), func(err error) {
			if err != nil {
				reply.resp = heartbeatError(storeError(err), "")
			}
		})
	}
	return reply
}

// persistConsumer writes what changed in g's consumer group since the last
// durable write; then learns the outcome, after which a failed write has
// put the group back as it was stored.
func (s *groupShard) persistConsumer(g *group, then func(error)) {
	s.persistConsumerMember(g, "", then)
}

// persistConsumerMember is persistConsumer after an input of member id: when
// the group's epochs and members are as stored, only that member's records
// can have changed, and only they are compared (a heartbeat costs one
// member's records, not the group's).
func (s *groupShard) persistConsumerMember(g *group, id string, then func(error)) {
	cg := g.consumer
	if cg == nil {
		then(nil)
		return
	}
	if len(cg.stored) == 0 && len(cg.members) == 0 && cg.epoch == 0 {
		then(nil) // created by a heartbeat that failed: nothing happened
		return
	}
	var recs []kv
	if m := cg.members[id]; m != nil && cg.sameMembersAsStored(id) && cg.sameRegexesAsStored() {
		recs = consumerDiff(cg.stored, consumerRecords(g, m), true)
		for _, r := range recs {
			if typ, _ := keyVersion(r.key); typ == cgMetadataType || typ == cgTargetMetadataType || typ == cgRegexType {
				recs = nil // the epochs or the regexes moved: compare everything
				break
			}
		}
	}
	if recs == nil {
		recs = consumerDiff(cg.stored, consumerRecords(g, nil), false)
	}
	if cg.replacesClassic {
		recs = append([]kv{{key: groupMetadataKey(g.id)}}, recs...)
	}
	if len(recs) == 0 {
		then(nil)
		return
	}
	s.write(recs, func(err error) {
		if err != nil {
			s.logger.Error("storing consumer group", zap.String("group", g.id), zap.Error(err))
			s.restoreConsumer(g)
			then(err)
			return
		}
		if g.consumer == cg {
			cg.replacesClassic, cg.upgradedFrom = false, nil
			cg.stored = applyRecords(cg.stored, recs)
			cg.storedIDs, cg.storedRegexes = cg.memberIDs(), cg.regexSet()
		}
		then(nil)
	})
}

// memberIDs is the set of the group's member ids.
func (cg *consumerGroup) memberIDs() map[string]struct{} {
	ids := make(map[string]struct{}, len(cg.members))
	for id := range cg.members {
		ids[id] = struct{}{}
	}
	return ids
}

// sameMembersAsStored reports whether the group has the members it had at
// its last write, id among them.
func (cg *consumerGroup) sameMembersAsStored(id string) bool {
	if _, ok := cg.storedIDs[id]; !ok || len(cg.storedIDs) != len(cg.members) {
		return false
	}
	for mid := range cg.members {
		if _, ok := cg.storedIDs[mid]; !ok {
			return false
		}
	}
	return true
}

// sameRegexesAsStored reports whether the group resolves the regexes it
// had at its last write (a regex dropped needs a tombstone, which only the
// whole group's comparison writes).
func (cg *consumerGroup) sameRegexesAsStored() bool {
	if len(cg.resolved) != len(cg.storedRegexes) {
		return false
	}
	for regex := range cg.resolved {
		if _, ok := cg.storedRegexes[regex]; !ok {
			return false
		}
	}
	return true
}

// regexSet is the set of the group's resolved regexes.
func (cg *consumerGroup) regexSet() map[string]struct{} {
	set := make(map[string]struct{}, len(cg.resolved))
	for regex := range cg.resolved {
		set[regex] = struct{}{}
	}
	return set
}

// applyRecords is stored after recs.
func applyRecords(stored consumerImage, recs []kv) consumerImage {
	if stored == nil {
		stored = consumerImage{}
	}
	for _, r := range recs {
		if typ, _ := keyVersion(r.key); typ < cgMetadataType {
			continue
		}
		if r.value == nil {
			delete(stored, string(r.key))
		} else {
			stored[string(r.key)] = r.value
		}
	}
	return stored
}

// restoreConsumer puts g's consumer group back as its stored records say,
// after a write failed.
func (s *groupShard) restoreConsumer(g *group) {
	cg := g.consumer
	if cg == nil {
		return
	}
	for id := range cg.members {
		s.cancel(timerKey{kind: timerConsumerSession, group: g.id, member: id})
		s.cancel(timerKey{kind: timerConsumerRevoke, group: g.id, member: id})
		s.cancelClassicMemberTimers(g, id)
	}
	if cg.upgradedFrom != nil {
		s.restoreClassicGroup(g, cg.upgradedFrom)
		return
	}
	restored, err := s.consumerGroupFromRecords(cg.stored)
	if err != nil {
		s.logger.Error("restoring consumer group from its records", zap.String("group", g.id), zap.Error(err))
		restored = newConsumerGroup()
	}
	restored.replacesClassic = cg.replacesClassic
	g.consumer = restored
	for _, m := range restored.sortedMembers() {
		s.scheduleConsumerSession(g, m)
		if m.state == cmemberUnrevoked {
			s.scheduleRevocation(g, m)
		}
	}
}

// groupTombstones is the records deleting g after its offsets' tombstones:
// its classic GroupMetadata, or its consumer, streams or share group records.
func groupTombstones(g *group) []kv {
	switch {
	case g.share != nil:
		return shareGroupTombstones(g)
	case g.streams != nil:
		return streamsTombstones(g)
	case g.consumer == nil:
		return []kv{{key: groupMetadataKey(g.id)}}
	}
	return consumerTombstones(g)
}

// consumerTombstones is the records deleting g's consumer group: a
// tombstone for each stored record and, as Kafka writes them, for the
// assignment epoch, the pre-4.1 partition metadata and the group epoch.
func consumerTombstones(g *group) []kv {
	stored := consumerImage{}
	for k, v := range g.consumer.stored {
		stored[k] = v
	}
	for _, typ := range []int16{cgTargetMetadataType, cgPartitionMetadataType, cgMetadataType} {
		stored[string(cgKey{typ: typ, group: g.id}.encode())] = []byte{}
	}
	return tombstones(stored, nil)
}

// subscriptionHash is the group's MetadataHash over the topics its members
// subscribe to that exist (Kafka's ModernGroup.computeMetadataHash): when
// it changes, the group epoch is bumped.
func (s *groupShard) subscriptionHash(cg *consumerGroup) int64 {
	return groupHash(s.subscribedTopicMeta(cg), s.partitionRacks)
}

// partitionRacks is the racks of partition p's replicas (GroupConfig.PartitionRacks).
func (s *groupShard) partitionRacks(t topicMeta, p int32) []string {
	if s.cfg.PartitionRacks == nil {
		return nil
	}
	return s.cfg.PartitionRacks(t.id, p)
}
