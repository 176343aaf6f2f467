package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The KIP-1071 streams group records of __consumer_offsets, written from
// Kafka 4.4's coordinator record schemas (kafka-group-coordinator-4.4.0.jar,
// common/message/StreamsGroup*.json), as the consumer group ones
// (consumer_records.go): the key's version is the record type and the key
// is not flexible; the value is version 0 and flexible, and a tagged field
// this code does not know is kept and written back as it came.
const (
	stMetadataType       = 17 // StreamsGroupMetadata: the group epoch, metadata hash, last assignment configs
	stMemberType         = 19 // StreamsGroupMemberMetadata: a member's process, endpoint, tags, topology epoch
	stTargetMetadataType = 20 // StreamsGroupTargetAssignmentMetadata: the assignment epoch (ConsumerGroupTargetAssignmentMetadata's schema)
	stTargetMemberType   = 21 // StreamsGroupTargetAssignmentMember: a member's target tasks
	stCurrentType        = 22 // StreamsGroupCurrentMemberAssignment: a member's epochs and tasks
	stTopologyType       = 23 // StreamsGroupTopology: the group's topology
)

// isStreamsType reports whether typ is a streams group record type.
func isStreamsType(typ int16) bool {
	return typ == stMetadataType || typ >= stMemberType && typ <= stTopologyType
}

// stKeyValue is a key and a value (client tags, topic configs, assignment configs).
type stKeyValue struct {
	key, value string
	unknown    []rawTag
}

// stMetadataValue is StreamsGroupMetadataValue v0; the tagged epochs
// default to -1 (not written), the configs to null.
type stMetadataValue struct {
	epoch                  int32
	metadataHash           int64
	validatedTopologyEpoch int32        // tag 0
	lastAssignmentConfigs  []stKeyValue // tag 1; nil is null
	storedDescriptionEpoch int32        // tag 2
	failedDescriptionEpoch int32        // tag 3
	unknown                []rawTag
}

// stTopicInfo is a topology's internal topic.
type stTopicInfo struct {
	name              string
	partitions        int32
	replicationFactor int16
	configs           []stKeyValue
	unknown           []rawTag
}

type stCopartitionGroup struct {
	sourceTopics, sourceTopicRegex, repartitionSourceTopics []int16
	unknown                                                 []rawTag
}

type stSubtopology struct {
	id                      string
	sourceTopics            []string
	sourceTopicRegex        []string
	stateChangelogTopics    []stTopicInfo
	repartitionSinkTopics   []string
	repartitionSourceTopics []stTopicInfo
	copartitionGroups       []stCopartitionGroup
	unknown                 []rawTag
}

// stTopologyValue is StreamsGroupTopologyValue v0.
type stTopologyValue struct {
	epoch         int32
	subtopologies []stSubtopology
	unknown       []rawTag
}

type stEndpoint struct {
	host    string
	port    uint16
	unknown []rawTag
}

// stMemberValue is StreamsGroupMemberMetadataValue v0.
type stMemberValue struct {
	instanceID, rackID   *string
	clientID, clientHost string
	rebalanceTimeoutMs   int32
	topologyEpoch        int32
	processID            string
	userEndpoint         *stEndpoint
	clientTags           []stKeyValue
	unknown              []rawTag
}

// stTaskIDs is the partitions of one subtopology; epochs (tag 0 of the
// current assignment's TaskIds) is nil when absent.
type stTaskIDs struct {
	subtopology string
	partitions  []int32
	epochs      []int32
	unknown     []rawTag
}

// stTargetMemberValue is StreamsGroupTargetAssignmentMemberValue v0.
type stTargetMemberValue struct {
	active, standby, warmup []stTaskIDs
	unknown                 []rawTag
}

// stCurrentValue is StreamsGroupCurrentMemberAssignmentValue v0.
type stCurrentValue struct {
	memberEpoch, previousMemberEpoch                int32
	state                                           int8
	active, standby, warmup                         []stTaskIDs
	activeRevoking, standbyRevoking, warmupRevoking []stTaskIDs
	unknown                                         []rawTag
}

func (w *recWriter) uint16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }

func (w *recWriter) int16s(vs []int16) {
	w.arrayLen(len(vs))
	for _, v := range vs {
		w.int16(v)
	}
}

func (w *recWriter) keyValues(kvs []stKeyValue) {
	w.arrayLen(len(kvs))
	for _, kv := range kvs {
		w.string(kv.key)
		w.string(kv.value)
		w.tags(nil, kv.unknown)
	}
}

func (r *recReader) uint16() uint16 {
	if p := r.take(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (r *recReader) int16s() []int16 {
	n := r.arrayLen(2)
	if n < 0 {
		r.fail(errors.New("null array in a non-nullable field"))
		return nil
	}
	out := make([]int16, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.int16())
	}
	return out
}

// keyValues reads an array of key-value structs; null is an error unless
// nullable, when it is nil.
func (r *recReader) keyValues(nullable bool) []stKeyValue {
	n := r.arrayLen(3)
	if n < 0 {
		if !nullable {
			r.fail(errors.New("null array in a non-nullable field"))
		}
		return nil
	}
	out := make([]stKeyValue, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		kv := stKeyValue{key: r.compactString(), value: r.compactString()}
		kv.unknown = r.tags(noKnownTags)
		out = append(out, kv)
	}
	return out
}

func readInt32Tag(data []byte, dst *int32) bool {
	if len(data) != 4 {
		return false
	}
	*dst = int32(binary.BigEndian.Uint32(data))
	return true
}

func (v *stMetadataValue) encode() []byte {
	w := newValue()
	w.int32(v.epoch)
	w.int64(v.metadataHash)
	known := int32Tag(0, v.validatedTopologyEpoch, -1)
	if v.lastAssignmentConfigs != nil {
		cw := &recWriter{}
		cw.keyValues(v.lastAssignmentConfigs)
		known = append(known, rawTag{tag: 1, data: cw.b})
	}
	known = append(known, int32Tag(2, v.storedDescriptionEpoch, -1)...)
	known = append(known, int32Tag(3, v.failedDescriptionEpoch, -1)...)
	w.tags(known, v.unknown)
	return w.b
}

func decodeSTMetadata(b []byte) (v stMetadataValue, err error) {
	r := &recReader{b: b}
	v.validatedTopologyEpoch, v.storedDescriptionEpoch, v.failedDescriptionEpoch = -1, -1, -1
	if valueHeader(r, "StreamsGroupMetadataValue") {
		v.epoch = r.int32()
		v.metadataHash = r.int64()
		v.unknown = r.tags(func(tag uint32, data []byte) bool {
			switch tag {
			case 0:
				return readInt32Tag(data, &v.validatedTopologyEpoch)
			case 1:
				r.sub(data, "LastAssignmentConfigs", func(s *recReader) { v.lastAssignmentConfigs = s.keyValues(true) })
				return true
			case 2:
				return readInt32Tag(data, &v.storedDescriptionEpoch)
			case 3:
				return readInt32Tag(data, &v.failedDescriptionEpoch)
			}
			return false
		})
	}
	return v, r.done("StreamsGroupMetadataValue")
}

func (w *recWriter) topicInfos(ts []stTopicInfo) {
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.string(t.name)
		w.int32(t.partitions)
		w.int16(t.replicationFactor)
		w.keyValues(t.configs)
		w.tags(nil, t.unknown)
	}
}

func (r *recReader) topicInfos() []stTopicInfo {
	n := r.arrayLen(9)
	if n < 0 {
		r.fail(errors.New("null topic infos"))
		return nil
	}
	out := make([]stTopicInfo, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		t := stTopicInfo{name: r.compactString(), partitions: r.int32(), replicationFactor: r.int16()}
		t.configs = r.keyValues(false)
		t.unknown = r.tags(noKnownTags)
		out = append(out, t)
	}
	return out
}

func (v *stTopologyValue) encode() []byte {
	w := newValue()
	w.int32(v.epoch)
	w.arrayLen(len(v.subtopologies))
	for _, st := range v.subtopologies {
		w.string(st.id)
		w.strings(st.sourceTopics)
		w.strings(st.sourceTopicRegex)
		w.topicInfos(st.stateChangelogTopics)
		w.strings(st.repartitionSinkTopics)
		w.topicInfos(st.repartitionSourceTopics)
		w.arrayLen(len(st.copartitionGroups))
		for _, cg := range st.copartitionGroups {
			w.int16s(cg.sourceTopics)
			w.int16s(cg.sourceTopicRegex)
			w.int16s(cg.repartitionSourceTopics)
			w.tags(nil, cg.unknown)
		}
		w.tags(nil, st.unknown)
	}
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSTTopology(b []byte) (v stTopologyValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "StreamsGroupTopologyValue") {
		v.epoch = r.int32()
		n := r.arrayLen(8)
		if n < 0 {
			r.fail(errors.New("null subtopologies"))
		}
		for i := 0; i < n && r.err == nil; i++ {
			st := stSubtopology{id: r.compactString(), sourceTopics: r.strings(), sourceTopicRegex: r.strings()}
			st.stateChangelogTopics = r.topicInfos()
			st.repartitionSinkTopics = r.strings()
			st.repartitionSourceTopics = r.topicInfos()
			m := r.arrayLen(4)
			if m < 0 {
				r.fail(errors.New("null copartition groups"))
			}
			for j := 0; j < m && r.err == nil; j++ {
				cg := stCopartitionGroup{sourceTopics: r.int16s(), sourceTopicRegex: r.int16s(), repartitionSourceTopics: r.int16s()}
				cg.unknown = r.tags(noKnownTags)
				st.copartitionGroups = append(st.copartitionGroups, cg)
			}
			st.unknown = r.tags(noKnownTags)
			v.subtopologies = append(v.subtopologies, st)
		}
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("StreamsGroupTopologyValue")
}

func (v *stMemberValue) encode() []byte {
	w := newValue()
	w.nullableString(v.instanceID)
	w.nullableString(v.rackID)
	w.string(v.clientID)
	w.string(v.clientHost)
	w.int32(v.rebalanceTimeoutMs)
	w.int32(v.topologyEpoch)
	w.string(v.processID)
	if e := v.userEndpoint; e == nil {
		w.int8(-1)
	} else {
		w.int8(1)
		w.string(e.host)
		w.uint16(e.port)
		w.tags(nil, e.unknown)
	}
	w.keyValues(v.clientTags)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSTMember(b []byte) (v stMemberValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "StreamsGroupMemberMetadataValue") {
		v.instanceID = r.compactNullableString()
		v.rackID = r.compactNullableString()
		v.clientID = r.compactString()
		v.clientHost = r.compactString()
		v.rebalanceTimeoutMs = r.int32()
		v.topologyEpoch = r.int32()
		v.processID = r.compactString()
		switch marker := r.int8(); {
		case marker == 1:
			e := &stEndpoint{host: r.compactString(), port: r.uint16()}
			e.unknown = r.tags(noKnownTags)
			v.userEndpoint = e
		case marker != -1 && r.err == nil:
			r.fail(fmt.Errorf("nullable struct marker %d", marker))
		}
		v.clientTags = r.keyValues(false)
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("StreamsGroupMemberMetadataValue")
}

// taskIDs writes a task list; withEpochs is set for the current
// assignment, whose TaskIds has the AssignmentEpochs tag.
func (w *recWriter) taskIDs(ts []stTaskIDs, withEpochs bool) {
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.string(t.subtopology)
		w.int32s(t.partitions)
		w.tags(epochsTag(t.epochs, withEpochs), t.unknown)
	}
}

func (r *recReader) taskIDs(withEpochs bool) []stTaskIDs {
	n := r.arrayLen(3)
	if n < 0 {
		r.fail(errors.New("null task ids"))
		return nil
	}
	out := make([]stTaskIDs, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		t := stTaskIDs{subtopology: r.compactString(), partitions: r.int32s()}
		t.unknown = r.tags(r.epochsTagParser(withEpochs, &t.epochs))
		out = append(out, t)
	}
	return out
}

func (v *stTargetMemberValue) encode() []byte {
	w := newValue()
	w.taskIDs(v.active, false)
	w.taskIDs(v.standby, false)
	w.taskIDs(v.warmup, false)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSTTargetMember(b []byte) (v stTargetMemberValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "StreamsGroupTargetAssignmentMemberValue") {
		v.active = r.taskIDs(false)
		v.standby = r.taskIDs(false)
		v.warmup = r.taskIDs(false)
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("StreamsGroupTargetAssignmentMemberValue")
}

func (v *stCurrentValue) encode() []byte {
	w := newValue()
	w.int32(v.memberEpoch)
	w.int32(v.previousMemberEpoch)
	w.int8(v.state)
	for _, ts := range [][]stTaskIDs{v.active, v.standby, v.warmup, v.activeRevoking, v.standbyRevoking, v.warmupRevoking} {
		w.taskIDs(ts, true)
	}
	w.tags(nil, v.unknown)
	return w.b
}

func decodeSTCurrent(b []byte) (v stCurrentValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "StreamsGroupCurrentMemberAssignmentValue") {
		v.memberEpoch = r.int32()
		v.previousMemberEpoch = r.int32()
		v.state = r.int8()
		for _, dst := range []*[]stTaskIDs{&v.active, &v.standby, &v.warmup, &v.activeRevoking, &v.standbyRevoking, &v.warmupRevoking} {
			*dst = r.taskIDs(true)
		}
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("StreamsGroupCurrentMemberAssignmentValue")
}

// validateSTValue decodes a value of a streams group record type, so a
// malformed one fails the load where it is read.
func validateSTValue(typ int16, value []byte) error {
	var err error
	switch typ {
	case stMetadataType:
		_, err = decodeSTMetadata(value)
	case stMemberType:
		_, err = decodeSTMember(value)
	case stTargetMetadataType:
		_, err = decodeCGTargetMetadata(value)
	case stTargetMemberType:
		_, err = decodeSTTargetMember(value)
	case stCurrentType:
		_, err = decodeSTCurrent(value)
	case stTopologyType:
		_, err = decodeSTTopology(value)
	}
	return err
}
