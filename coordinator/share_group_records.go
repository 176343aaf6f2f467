package coordinator

import "errors"

// The KIP-932 share group records of __consumer_offsets, written from
// Kafka 4.4's coordinator record schemas (kafka-group-coordinator-4.4.0.jar,
// common/message/ShareGroup*.json), with the conventions of the consumer
// group records (consumer_records.go): the key's version is the record
// type and the key is not flexible; the value is version 0, flexible, and
// a tagged field not known here is written back as it came.
const (
	sgMemberType         = 10 // ShareGroupMemberMetadata: a member's subscription
	sgMetadataType       = 11 // ShareGroupMetadata: the group epoch and metadata hash
	sgTargetMetadataType = 12 // ShareGroupTargetAssignmentMetadata: the assignment epoch
	sgTargetMemberType   = 13 // ShareGroupTargetAssignmentMember: a member's target
	sgCurrentType        = 14 // ShareGroupCurrentMemberAssignment: a member's epoch and partitions
	sgStatePartsType     = 15 // ShareGroupStatePartitionMetadata: partitions whose share state is initialized
)

// sgKey is the key of a share group record: the group, and for member
// records the member id.
type sgKey struct {
	typ    int16
	group  string
	member string
}

func (k sgKey) hasMember() bool {
	return k.typ == sgMemberType || k.typ == sgTargetMemberType || k.typ == sgCurrentType
}

func (k sgKey) encode() []byte {
	w := &recWriter{}
	w.int16(k.typ)
	w.b = appendString(w.b, k.group)
	if k.hasMember() {
		w.b = appendString(w.b, k.member)
	}
	return w.b
}

func decodeSGKey(b []byte) (sgKey, error) {
	r := &recReader{b: b}
	k := sgKey{typ: r.int16()}
	if r.err == nil && (k.typ < sgMemberType || k.typ > sgStatePartsType) {
		r.fail(errors.New("not a share group record type"))
	}
	k.group = r.string()
	if k.hasMember() {
		k.member = r.string()
	}
	return k, r.done("share group record key")
}

// sgMemberValue is ShareGroupMemberMetadataValue v0.
type sgMemberValue struct {
	rackID               *string
	clientID, clientHost string
	topics               []string
	unknown              []rawTag
}

// sgMetadataValue is ShareGroupMetadataValue v0.
type sgMetadataValue struct {
	epoch        int32
	metadataHash int64
	unknown      []rawTag
}

// sgTargetMetadataValue is ShareGroupTargetAssignmentMetadataValue v0.
type sgTargetMetadataValue struct {
	assignmentEpoch     int32
	assignmentTimestamp int64 // tag 0; 0 is not written
	unknown             []rawTag
}

// sgTargetMemberValue is ShareGroupTargetAssignmentMemberValue v0.
type sgTargetMemberValue struct {
	topics  []cgTopicPartitions
	unknown []rawTag
}

// sgCurrentValue is ShareGroupCurrentMemberAssignmentValue v0.
type sgCurrentValue struct {
	memberEpoch, previousMemberEpoch int32
	state                            int8
	assigned                         []cgTopicPartitions
	unknown                          []rawTag
}

// sgTopicInfo is a TopicPartitionsInfo (partitions set) or a TopicInfo
// (partitions nil) of ShareGroupStatePartitionMetadataValue.
type sgTopicInfo struct {
	topicID    [16]byte
	name       string
	partitions []int32
	unknown    []rawTag
}

// sgStatePartsValue is ShareGroupStatePartitionMetadataValue v0: the
// partitions whose share state the group is initializing, has
// initialized, and the topics whose state it is deleting.
type sgStatePartsValue struct {
	initializing, initialized []sgTopicInfo
	deleting                  []sgTopicInfo
	unknown                   []rawTag
}

func (v *sgMemberValue) encode() []byte {
	w := newValue()
	w.nullableString(v.rackID)
	w.string(v.clientID)
	w.string(v.clientHost)
	w.strings(v.topics)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSGMember(b []byte) (v sgMemberValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ShareGroupMemberMetadataValue") {
		v.rackID = r.compactNullableString()
		v.clientID = r.compactString()
		v.clientHost = r.compactString()
		v.topics = r.strings()
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ShareGroupMemberMetadataValue")
}

func (v *sgMetadataValue) encode() []byte {
	w := newValue()
	w.int32(v.epoch)
	w.int64(v.metadataHash)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSGMetadata(b []byte) (v sgMetadataValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ShareGroupMetadataValue") {
		v.epoch = r.int32()
		v.metadataHash = r.int64()
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ShareGroupMetadataValue")
}

func (v *sgTargetMetadataValue) encode() []byte {
	w := newValue()
	w.int32(v.assignmentEpoch)
	w.tags(int64Tag(0, v.assignmentTimestamp), v.unknown)
	return w.b
}

func decodeSGTargetMetadata(b []byte) (v sgTargetMetadataValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ShareGroupTargetAssignmentMetadataValue") {
		v.assignmentEpoch = r.int32()
		v.unknown = r.tags(func(tag uint32, data []byte) bool { return tag == 0 && readInt64Tag(data, &v.assignmentTimestamp) })
	}
	return v, r.done("ShareGroupTargetAssignmentMetadataValue")
}

func (v *sgTargetMemberValue) encode() []byte {
	w := newValue()
	w.topicPartitions(v.topics, false)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSGTargetMember(b []byte) (v sgTargetMemberValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ShareGroupTargetAssignmentMemberValue") {
		v.topics = r.topicPartitions(false)
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ShareGroupTargetAssignmentMemberValue")
}

func (v *sgCurrentValue) encode() []byte {
	w := newValue()
	w.int32(v.memberEpoch)
	w.int32(v.previousMemberEpoch)
	w.int8(v.state)
	w.topicPartitions(v.assigned, false)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSGCurrent(b []byte) (v sgCurrentValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ShareGroupCurrentMemberAssignmentValue") {
		v.memberEpoch = r.int32()
		v.previousMemberEpoch = r.int32()
		v.state = r.int8()
		v.assigned = r.topicPartitions(false)
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ShareGroupCurrentMemberAssignmentValue")
}

func (w *recWriter) sgTopics(ts []sgTopicInfo, withPartitions bool) {
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.b = append(w.b, t.topicID[:]...)
		w.string(t.name)
		if withPartitions {
			w.int32s(t.partitions)
		}
		w.tags(nil, t.unknown)
	}
}

func (r *recReader) sgTopics(withPartitions bool) []sgTopicInfo {
	n := r.arrayLen(18)
	if n < 0 {
		r.fail(errors.New("null topics"))
		return nil
	}
	out := make([]sgTopicInfo, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		t := sgTopicInfo{topicID: r.uuid(), name: r.compactString()}
		if withPartitions {
			t.partitions = r.int32s()
		}
		t.unknown = r.tags(noKnownTags)
		out = append(out, t)
	}
	return out
}

func (v *sgStatePartsValue) encode() []byte {
	w := newValue()
	w.sgTopics(v.initializing, true)
	w.sgTopics(v.initialized, true)
	w.sgTopics(v.deleting, false)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSGStateParts(b []byte) (v sgStatePartsValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ShareGroupStatePartitionMetadataValue") {
		v.initializing = r.sgTopics(true)
		v.initialized = r.sgTopics(true)
		v.deleting = r.sgTopics(false)
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ShareGroupStatePartitionMetadataValue")
}
