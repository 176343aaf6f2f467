package coordinator

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"

	"go.uber.org/zap"
)

// A share group lives in __consumer_offsets as Kafka's GroupMetadataManager
// keeps it: ShareGroupMemberMetadata (a member's subscription),
// ShareGroupMetadata (the group epoch and metadata hash),
// ShareGroupTargetAssignmentMember and -Metadata (the target and the
// assignment epoch), ShareGroupCurrentMemberAssignment (a member's epochs
// and partitions) and ShareGroupStatePartitionMetadata (the partitions
// whose share state is initializing or initialized). As for consumer groups
// (consumer_replay.go), the shard changes the group in memory, persistShare
// writes the records that differ from those last made durable
// (shareGroup.stored) in Kafka's order, tombstones first, and the answer
// waits for the write; a failed write puts the group back as stored.

// replayShare applies one share group record during load.
func (s *groupShard) replayShare(key, value []byte) error {
	k, err := decodeSGKey(key)
	if err != nil {
		return err
	}
	if value != nil {
		if err := validateSGValue(k.typ, value); err != nil {
			return fmt.Errorf("share group %s: %w", k.group, err)
		}
	}
	if s.shareImages == nil {
		s.shareImages = map[string]consumerImage{}
	}
	img := s.shareImages[k.group]
	if value == nil {
		delete(img, string(key))
		if k.typ == sgMetadataType && len(img) == 0 {
			delete(s.shareImages, k.group)
		}
		return nil
	}
	if img == nil {
		img = consumerImage{}
		s.shareImages[k.group] = img
	}
	img[string(key)] = bytes.Clone(value) // the batch's buffer is reused
	return nil
}

func validateSGValue(typ int16, value []byte) error {
	var err error
	switch typ {
	case sgMemberType:
		_, err = decodeSGMember(value)
	case sgMetadataType:
		_, err = decodeSGMetadata(value)
	case sgTargetMetadataType:
		_, err = decodeSGTargetMetadata(value)
	case sgTargetMemberType:
		_, err = decodeSGTargetMember(value)
	case sgCurrentType:
		_, err = decodeSGCurrent(value)
	case sgStatePartsType:
		_, err = decodeSGStateParts(value)
	}
	return err
}

// activateShareGroups builds the replayed share groups and starts their
// members' sessions, as Kafka does on load.
func (s *groupShard) activateShareGroups() {
	ids := make([]string, 0, len(s.shareImages))
	for id := range s.shareImages {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		sg, err := s.shareGroupFromRecords(s.shareImages[id])
		if err != nil { // validated on replay
			s.logger.Error("building a replayed share group", zap.String("group", id), zap.Error(err))
			continue
		}
		g := s.replayGroup(id)
		g.share, g.protocolType = sg, "share"
		for _, m := range sg.sortedMembers() {
			s.schedule(timerKey{kind: timerShareSession, group: id, member: m.id}, s.shareSettings(id).SessionTimeout)
		}
	}
	s.shareImages = nil
}

// shareGroupFromRecords is the group the records say.
func (s *groupShard) shareGroupFromRecords(img consumerImage) (*shareGroup, error) {
	sg := newShareGroup()
	keys := make([]string, 0, len(img))
	for k := range img {
		keys = append(keys, k)
	}
	sort.Strings(keys) // by type: a member's metadata before its assignment
	for _, key := range keys {
		value := img[key]
		k, err := decodeSGKey([]byte(key))
		if err != nil {
			return nil, err
		}
		switch k.typ {
		case sgMemberType:
			v, err := decodeSGMember(value)
			if err != nil {
				return nil, err
			}
			sg.members[k.member] = &shmember{id: k.member, rackID: deref(v.rackID), clientID: v.clientID, clientHost: v.clientHost,
				topics: slices.Compact(slices.Sorted(slices.Values(v.topics))), assigned: partitionSet{}}
		case sgMetadataType:
			v, err := decodeSGMetadata(value)
			if err != nil {
				return nil, err
			}
			sg.epoch, sg.metadataHash = v.epoch, v.metadataHash
		case sgTargetMetadataType:
			v, err := decodeSGTargetMetadata(value)
			if err != nil {
				return nil, err
			}
			sg.assignmentEpoch, sg.assignmentTime = v.assignmentEpoch, v.assignmentTimestamp
		case sgTargetMemberType:
			v, err := decodeSGTargetMember(value)
			if err != nil {
				return nil, err
			}
			sg.target[k.member] = partitionSetOf(v.topics)
		case sgCurrentType:
			v, err := decodeSGCurrent(value)
			if err != nil {
				return nil, err
			}
			if m := sg.members[k.member]; m != nil {
				m.epoch, m.prevEpoch, m.assigned = v.memberEpoch, v.previousMemberEpoch, partitionSetOf(v.assigned)
			}
		case sgStatePartsType:
			v, err := decodeSGStateParts(value)
			if err != nil {
				return nil, err
			}
			for _, t := range v.initializing {
				sg.initializing[t.topicID] = shareTopicState{name: t.name, partitions: slices.Sorted(slices.Values(t.partitions)), since: s.now}
			}
			for _, t := range v.initialized {
				sg.initialized[t.topicID] = shareTopicState{name: t.name, partitions: slices.Sorted(slices.Values(t.partitions))}
			}
			for _, t := range v.deleting {
				sg.deleting[t.topicID] = t.name
			}
		}
	}
	for id := range sg.target {
		if sg.members[id] == nil {
			delete(sg.target, id)
		}
	}
	sg.stored, sg.written = img, applyShareRecords(nil, img, nil)
	return sg, nil
}

// shareRecords is g's share group as records, in Kafka's write order.
func shareRecords(g *group) []kv {
	sg := g.share
	members := sg.sortedMembers()
	key := func(typ int16, member string) []byte { return sgKey{typ: typ, group: g.id, member: member}.encode() }
	recs := make([]kv, 0, 3*len(members)+4)
	for _, m := range members {
		v := sgMemberValue{rackID: optional(m.rackID), clientID: m.clientID, clientHost: m.clientHost, topics: m.topics}
		if v.topics == nil {
			v.topics = []string{}
		}
		recs = append(recs, kv{key: key(sgMemberType, m.id), value: v.encode()})
	}
	recs = append(recs, kv{key: key(sgMetadataType, ""), value: (&sgMetadataValue{epoch: sg.epoch, metadataHash: sg.metadataHash}).encode()})
	for _, m := range members {
		if t, ok := sg.target[m.id]; ok {
			recs = append(recs, kv{key: key(sgTargetMemberType, m.id), value: (&sgTargetMemberValue{topics: topicPartitionsOf(t)}).encode()})
		}
	}
	recs = append(recs, kv{key: key(sgTargetMetadataType, ""),
		value: (&sgTargetMetadataValue{assignmentEpoch: sg.assignmentEpoch, assignmentTimestamp: sg.assignmentTime}).encode()})
	for _, m := range members {
		v := sgCurrentValue{memberEpoch: m.epoch, previousMemberEpoch: m.prevEpoch, assigned: topicPartitionsOf(m.assigned)}
		recs = append(recs, kv{key: key(sgCurrentType, m.id), value: v.encode()})
	}
	if len(sg.initializing)+len(sg.initialized)+len(sg.deleting) > 0 || sg.stored[string(key(sgStatePartsType, ""))] != nil {
		v := sgStatePartsValue{initializing: shareTopicInfos(sg.initializing), initialized: shareTopicInfos(sg.initialized), deleting: []sgTopicInfo{}}
		for _, id := range sortedIDs(sg.deleting) {
			v.deleting = append(v.deleting, sgTopicInfo{topicID: id, name: sg.deleting[id]})
		}
		recs = append(recs, kv{key: key(sgStatePartsType, ""), value: v.encode()})
	}
	return recs
}

func shareTopicInfos(m map[[16]byte]shareTopicState) []sgTopicInfo {
	out := []sgTopicInfo{}
	for _, id := range sortedIDs(m) {
		out = append(out, sgTopicInfo{topicID: id, name: m[id].name, partitions: m[id].partitions})
	}
	return out
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return cmp.Compare(string(a[:]), string(b[:])) })
	return ids
}

// shareTombstoneRank orders tombstones as Kafka writes them: a member's
// current assignment, target and subscription, then the group's
// assignment epoch, state partitions and epoch.
var shareTombstoneRank = map[int16]int{sgCurrentType: 0, sgTargetMemberType: 1, sgMemberType: 2,
	sgTargetMetadataType: 3, sgStatePartsType: 4, sgMetadataType: 5}

// shareTombstones deletes the keys of stored that want lacks.
func shareTombstones(stored consumerImage, want []kv) []kv {
	wanted := make(map[string]bool, len(want))
	for _, r := range want {
		wanted[string(r.key)] = true
	}
	var gone []sgKey
	for k := range stored {
		if !wanted[k] {
			if sk, err := decodeSGKey([]byte(k)); err == nil {
				gone = append(gone, sk)
			}
		}
	}
	slices.SortFunc(gone, func(a, b sgKey) int {
		return cmp.Or(cmp.Compare(boolRank(!a.hasMember()), boolRank(!b.hasMember())), cmp.Compare(a.member, b.member),
			cmp.Compare(shareTombstoneRank[a.typ], shareTombstoneRank[b.typ]))
	})
	out := make([]kv, 0, len(gone))
	for _, k := range gone {
		out = append(out, kv{key: k.encode()})
	}
	return out
}

// persistShare writes what changed in g's share group since the last
// durable write; then learns the outcome, after which a failed write has
// put the group back as it was stored.
func (s *groupShard) persistShare(g *group, then func(error)) {
	sg := g.share
	if sg == nil {
		then(nil)
		return
	}
	if len(sg.written) == 0 && len(sg.members) == 0 && sg.epoch <= 1 && len(sg.initializing) == 0 {
		if s.groups[g.id] == g && s.offsets.count(g.id) == 0 {
			delete(s.groups, g.id) // made by a heartbeat that failed, or an alter of no topic: nothing happened
		}
		then(nil)
		return
	}
	want := shareRecords(g)
	recs := shareTombstones(sg.written, want)
	for _, r := range want {
		if v, ok := sg.written[string(r.key)]; !ok || string(v) != string(r.value) {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		then(nil)
		return
	}
	sg.written = applyShareRecords(sg.written, nil, recs)
	s.write(recs, func(err error) {
		if err != nil {
			s.logger.Error("storing share group", zap.String("group", g.id), zap.Error(err))
			if g.share == sg {
				s.restoreShare(g)
			}
			then(err)
			return
		}
		if g.share == sg {
			sg.stored = applyShareRecords(sg.stored, nil, recs)
		}
		then(nil)
	})
}

// applyShareRecords is img (copied from base when img is nil) after recs.
func applyShareRecords(img, base consumerImage, recs []kv) consumerImage {
	if img == nil {
		img = make(consumerImage, len(base))
		for k, v := range base {
			img[k] = v
		}
	}
	for _, r := range recs {
		if r.value == nil {
			delete(img, string(r.key))
		} else {
			img[string(r.key)] = r.value
		}
	}
	return img
}

// restoreShare puts g's share group back as its stored records say.
func (s *groupShard) restoreShare(g *group) {
	sg := g.share
	for _, m := range sg.sortedMembers() {
		s.cancel(timerKey{kind: timerShareSession, group: g.id, member: m.id})
	}
	if len(sg.stored) == 0 {
		if s.groups[g.id] == g && s.offsets.count(g.id) == 0 {
			delete(s.groups, g.id)
		}
		g.share = newShareGroup()
		return
	}
	restored, err := s.shareGroupFromRecords(sg.stored)
	if err != nil {
		s.logger.Error("restoring share group from its records", zap.String("group", g.id), zap.Error(err))
		restored = newShareGroup()
	}
	for id, st := range sg.initializing {
		if _, ok := restored.initializing[id]; ok {
			st.partitions = restored.initializing[id].partitions
			restored.initializing[id] = st
		}
	}
	g.share = restored
	for _, m := range restored.sortedMembers() {
		s.schedule(timerKey{kind: timerShareSession, group: g.id, member: m.id}, s.shareSettings(g.id).SessionTimeout)
	}
}

// shareGroupTombstones is the records deleting g's share group: every
// stored record, and the group's own as Kafka writes them.
func shareGroupTombstones(g *group) []kv {
	stored := consumerImage{}
	for k, v := range g.share.stored {
		stored[k] = v
	}
	for _, typ := range []int16{sgTargetMetadataType, sgStatePartsType, sgMetadataType} {
		stored[string(sgKey{typ: typ, group: g.id}.encode())] = []byte{}
	}
	return shareTombstones(stored, nil)
}
