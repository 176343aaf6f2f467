package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The KIP-848 consumer group records of __consumer_offsets, written from
// Kafka 4.4's coordinator record schemas (kafka-group-coordinator-4.4.0.jar,
// common/message/ConsumerGroup*.json): the key's version is the record
// type, the key is not flexible; the value has its own version (0 for all)
// and is flexible (compact strings and arrays, tagged fields). A tagged
// field this code does not know is kept and written back as it came, so
// decode then encode gives the bytes Kafka wrote.
const (
	cgMetadataType          = 3  // ConsumerGroupMetadata: the group epoch
	cgPartitionMetadataType = 4  // ConsumerGroupPartitionMetadata: before 4.1; only tombstoned since
	cgMemberType            = 5  // ConsumerGroupMemberMetadata: a member's subscription
	cgTargetMetadataType    = 6  // ConsumerGroupTargetAssignmentMetadata: the assignment epoch
	cgTargetMemberType      = 7  // ConsumerGroupTargetAssignmentMember: a member's target
	cgCurrentType           = 8  // ConsumerGroupCurrentMemberAssignment: a member's epoch and partitions
	cgRegexType             = 16 // ConsumerGroupRegularExpression: a regex's resolved topics
)

// cgKey is the key of a consumer (or streams, streams_records.go) group
// record: the group, and for member records the member id (for regex
// records the regex).
type cgKey struct {
	typ   int16
	group string
	sub   string // member id or regular expression; "" for group-level types
}

func (k cgKey) hasSub() bool {
	switch k.typ {
	case cgMemberType, cgTargetMemberType, cgCurrentType, cgRegexType, stMemberType, stTargetMemberType, stCurrentType:
		return true
	}
	return false
}

func (k cgKey) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(k.typ))
	b = appendString(b, k.group)
	if k.hasSub() {
		b = appendString(b, k.sub)
	}
	return b
}

func decodeCGKey(b []byte) (cgKey, error) {
	r := &recReader{b: b}
	k := cgKey{typ: r.int16()}
	k.group = r.string()
	if k.hasSub() {
		k.sub = r.string()
	}
	return k, r.done("consumer group record key")
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// rawTag is a tagged field kept as it came.
type rawTag struct {
	tag  uint32
	data []byte
}

// cgMetadataValue is ConsumerGroupMetadataValue v0.
type cgMetadataValue struct {
	epoch        int32
	metadataHash int64 // tag 0, KIP-1101 (4.1); 0 is not written
	unknown      []rawTag
}

// cgMemberValue is ConsumerGroupMemberMetadataValue v0.
type cgMemberValue struct {
	instanceID, rackID   *string
	clientID, clientHost string
	topics               []string
	regex                *string
	rebalanceTimeoutMs   int32
	serverAssignor       *string
	classic              *cgClassicMember // tag 0: set for a member on the classic protocol
	// Kafka writes tag 0 even when it is null (one 0 byte, then the
	// struct after a 1 when it is not); noClassicTag keeps a record that
	// came without it as it was.
	noClassicTag bool
	unknown      []rawTag
}

type cgClassicMember struct {
	sessionTimeoutMs int32
	protocols        []cgClassicProtocol
	unknown          []rawTag
}

type cgClassicProtocol struct {
	name     string
	metadata []byte
	unknown  []rawTag
}

// cgTargetMetadataValue is ConsumerGroupTargetAssignmentMetadataValue v0.
type cgTargetMetadataValue struct {
	assignmentEpoch     int32
	assignmentTimestamp int64 // tag 0, KIP-1263 (4.3); 0 is not written
	unknown             []rawTag
}

// cgTopicPartitions is the partitions of one topic in a target or current
// assignment; epochs (tag 0 of the current assignment's TopicPartitions,
// 4.3) is nil when absent.
type cgTopicPartitions struct {
	topicID    [16]byte
	partitions []int32
	epochs     []int32
	unknown    []rawTag
}

// cgTargetMemberValue is ConsumerGroupTargetAssignmentMemberValue v0.
type cgTargetMemberValue struct {
	topics  []cgTopicPartitions
	unknown []rawTag
}

// cgCurrentValue is ConsumerGroupCurrentMemberAssignmentValue v0.
type cgCurrentValue struct {
	memberEpoch, previousMemberEpoch int32
	state                            int8
	assigned, revoking               []cgTopicPartitions
	unknown                          []rawTag
}

// cgRegexValue is ConsumerGroupRegularExpressionValue v0.
type cgRegexValue struct {
	topics             []string
	version, timestamp int64
	unknown            []rawTag
}

// recWriter appends flexible-version fields.
type recWriter struct{ b []byte }

func (w *recWriter) int8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *recWriter) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *recWriter) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *recWriter) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *recWriter) uvarint(v uint32) {
	w.b = binary.AppendUvarint(w.b, uint64(v))
}
func (w *recWriter) string(s string) { w.uvarint(uint32(len(s)) + 1); w.b = append(w.b, s...) }
func (w *recWriter) nullableString(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.string(*s)
}
func (w *recWriter) bytes(p []byte) { w.uvarint(uint32(len(p)) + 1); w.b = append(w.b, p...) }
func (w *recWriter) arrayLen(n int) { w.uvarint(uint32(n) + 1) }
func (w *recWriter) strings(ss []string) {
	w.arrayLen(len(ss))
	for _, s := range ss {
		w.string(s)
	}
}
func (w *recWriter) int32s(vs []int32) {
	w.arrayLen(len(vs))
	for _, v := range vs {
		w.int32(v)
	}
}

// tags writes the tagged fields: the known ones (in tag order, each
// encoded by its function) merged with the unknown ones kept from a read.
func (w *recWriter) tags(known []rawTag, unknown []rawTag) {
	all := make([]rawTag, 0, len(known)+len(unknown))
	i, j := 0, 0
	for i < len(known) || j < len(unknown) {
		if j == len(unknown) || i < len(known) && known[i].tag < unknown[j].tag {
			all = append(all, known[i])
			i++
		} else {
			all = append(all, unknown[j])
			j++
		}
	}
	w.uvarint(uint32(len(all)))
	for _, t := range all {
		w.uvarint(t.tag)
		w.uvarint(uint32(len(t.data)))
		w.b = append(w.b, t.data...)
	}
}

// recReader reads fields, remembering the first error; every length is
// checked against the bytes left before anything is allocated.
type recReader struct {
	b   []byte
	err error
}

var errShortRecord = errors.New("record ends early")

func (r *recReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *recReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.fail(errShortRecord)
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *recReader) int8() int8 {
	if p := r.take(1); p != nil {
		return int8(p[0])
	}
	return 0
}

func (r *recReader) int16() int16 {
	if p := r.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *recReader) int32() int32 {
	if p := r.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *recReader) int64() int64 {
	if p := r.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (r *recReader) uuid() (id [16]byte) {
	copy(id[:], r.take(16))
	return id
}

// string is a non-flexible (int16 length) string, as in the keys.
func (r *recReader) string() string {
	n := r.int16()
	return string(r.take(int(n)))
}

func (r *recReader) uvarint() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<31-1 {
		r.fail(errors.New("malformed unsigned varint"))
		return 0
	}
	r.b = r.b[n:]
	return uint32(v)
}

// compactLen is a compact length (-1 for null).
func (r *recReader) compactLen() int {
	return int(r.uvarint()) - 1
}

func (r *recReader) compactString() string {
	n := r.compactLen()
	if n < 0 {
		r.fail(errors.New("null string in a non-nullable field"))
		return ""
	}
	return string(r.take(n))
}

func (r *recReader) compactNullableString() *string {
	n := r.compactLen()
	if n < 0 {
		return nil
	}
	s := string(r.take(n))
	return &s
}

func (r *recReader) compactBytes() []byte {
	n := r.compactLen()
	if n < 0 {
		r.fail(errors.New("null bytes in a non-nullable field"))
		return nil
	}
	return append([]byte{}, r.take(n)...)
}

// arrayLen is a compact array's length, each element at least minSize
// bytes; -1 for null.
func (r *recReader) arrayLen(minSize int) int {
	n := r.compactLen()
	if n > 0 && n*minSize > len(r.b) {
		r.fail(errShortRecord)
		return 0
	}
	return n
}

func (r *recReader) strings() []string {
	n := r.arrayLen(1)
	if n < 0 {
		r.fail(errors.New("null array in a non-nullable field"))
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.compactString())
	}
	return out
}

func (r *recReader) int32s() []int32 {
	n := r.arrayLen(4)
	if n < 0 {
		r.fail(errors.New("null array in a non-nullable field"))
		return nil
	}
	out := make([]int32, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.int32())
	}
	return out
}

// tags reads the tagged fields, handing each known one to known (which
// reports whether it took it) and returning the rest.
func (r *recReader) tags(known func(tag uint32, data []byte) bool) []rawTag {
	n := int(r.uvarint())
	if n > len(r.b) {
		r.fail(errShortRecord)
		return nil
	}
	var unknown []rawTag
	last := int64(-1)
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.uvarint()
		data := r.take(int(r.uvarint()))
		if r.err != nil {
			break
		}
		if int64(tag) <= last {
			r.fail(fmt.Errorf("tagged field %d out of order", tag))
			break
		}
		last = int64(tag)
		if !known(tag, data) {
			unknown = append(unknown, rawTag{tag: tag, data: append([]byte{}, data...)})
		}
	}
	return unknown
}

func noKnownTags(uint32, []byte) bool { return false }

// done reports the first error, or bytes left over.
func (r *recReader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the end", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	return nil
}

// sub reads a tagged field's data with fn, which must use all of it.
func (r *recReader) sub(data []byte, what string, fn func(*recReader)) {
	s := &recReader{b: data}
	fn(s)
	if err := s.done(what); err != nil {
		r.fail(err)
	}
}

// valueHeader starts a value: its version, which must be 0.
func valueHeader(r *recReader, what string) bool {
	if v := r.int16(); r.err == nil && v != 0 {
		r.fail(fmt.Errorf("%s version %d, know only 0", what, v))
	}
	return r.err == nil
}

func newValue() *recWriter { w := &recWriter{}; w.int16(0); return w }

func int64Tag(tag uint32, v int64) []rawTag {
	if v == 0 {
		return nil
	}
	return []rawTag{{tag: tag, data: binary.BigEndian.AppendUint64(nil, uint64(v))}}
}

func readInt64Tag(data []byte, dst *int64) bool {
	if len(data) != 8 {
		return false
	}
	*dst = int64(binary.BigEndian.Uint64(data))
	return true
}

func (v *cgMetadataValue) encode() []byte {
	w := newValue()
	w.int32(v.epoch)
	w.tags(int64Tag(0, v.metadataHash), v.unknown)
	return w.b
}

func decodeCGMetadata(b []byte) (v cgMetadataValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ConsumerGroupMetadataValue") {
		v.epoch = r.int32()
		v.unknown = r.tags(func(tag uint32, data []byte) bool { return tag == 0 && readInt64Tag(data, &v.metadataHash) })
	}
	return v, r.done("ConsumerGroupMetadataValue")
}

func (v *cgTargetMetadataValue) encode() []byte {
	w := newValue()
	w.int32(v.assignmentEpoch)
	w.tags(int64Tag(0, v.assignmentTimestamp), v.unknown)
	return w.b
}

func decodeCGTargetMetadata(b []byte) (v cgTargetMetadataValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ConsumerGroupTargetAssignmentMetadataValue") {
		v.assignmentEpoch = r.int32()
		v.unknown = r.tags(func(tag uint32, data []byte) bool { return tag == 0 && readInt64Tag(data, &v.assignmentTimestamp) })
	}
	return v, r.done("ConsumerGroupTargetAssignmentMetadataValue")
}

func (v *cgMemberValue) encode() []byte {
	w := newValue()
	w.nullableString(v.instanceID)
	w.nullableString(v.rackID)
	w.string(v.clientID)
	w.string(v.clientHost)
	w.strings(v.topics)
	w.nullableString(v.regex)
	w.int32(v.rebalanceTimeoutMs)
	w.nullableString(v.serverAssignor)
	var known []rawTag
	if c := v.classic; c == nil && !v.noClassicTag {
		known = []rawTag{{tag: 0, data: []byte{0}}}
	} else if c != nil {
		cw := &recWriter{b: []byte{1}}
		cw.int32(c.sessionTimeoutMs)
		cw.arrayLen(len(c.protocols))
		for _, p := range c.protocols {
			cw.string(p.name)
			cw.bytes(p.metadata)
			cw.tags(nil, p.unknown)
		}
		cw.tags(nil, c.unknown)
		known = []rawTag{{tag: 0, data: cw.b}}
	}
	w.tags(known, v.unknown)
	return w.b
}

func decodeCGMember(b []byte) (v cgMemberValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ConsumerGroupMemberMetadataValue") {
		v.instanceID = r.compactNullableString()
		v.rackID = r.compactNullableString()
		v.clientID = r.compactString()
		v.clientHost = r.compactString()
		v.topics = r.strings()
		v.regex = r.compactNullableString()
		v.rebalanceTimeoutMs = r.int32()
		v.serverAssignor = r.compactNullableString()
		classicTag := false
		v.unknown = r.tags(func(tag uint32, data []byte) bool {
			if tag != 0 {
				return false
			}
			classicTag = true
			c := &cgClassicMember{}
			r.sub(data, "ClassicMemberMetadata", func(s *recReader) {
				if present := s.int8(); present == 0 {
					c = nil
					return
				} else if present != 1 {
					s.fail(fmt.Errorf("nullable struct marker %d", present))
					return
				}
				c.sessionTimeoutMs = s.int32()
				n := s.arrayLen(3)
				for i := 0; i < n && s.err == nil; i++ {
					p := cgClassicProtocol{name: s.compactString(), metadata: s.compactBytes()}
					p.unknown = s.tags(noKnownTags)
					c.protocols = append(c.protocols, p)
				}
				c.unknown = s.tags(noKnownTags)
			})
			v.classic = c
			return true
		})
		v.noClassicTag = !classicTag
	}
	return v, r.done("ConsumerGroupMemberMetadataValue")
}

// topicPartitions writes an assignment; withEpochs is set for the
// current assignment, whose TopicPartitions has the AssignmentEpochs tag.
func (w *recWriter) topicPartitions(ts []cgTopicPartitions, withEpochs bool) {
	w.arrayLen(len(ts))
	for _, t := range ts {
		w.b = append(w.b, t.topicID[:]...)
		w.int32s(t.partitions)
		w.tags(epochsTag(t.epochs, withEpochs), t.unknown)
	}
}

// epochsTag is the AssignmentEpochs tagged field (tag 0) of a current
// assignment's topic or subtopology entry, when the record has one.
func epochsTag(epochs []int32, withEpochs bool) []rawTag {
	if !withEpochs || epochs == nil {
		return nil
	}
	ew := &recWriter{}
	ew.int32s(epochs)
	return []rawTag{{tag: 0, data: ew.b}}
}

// epochsTagParser reads the AssignmentEpochs tagged field into dst; other
// tags are left to the caller's unknown tags.
func (r *recReader) epochsTagParser(withEpochs bool, dst *[]int32) func(tag uint32, data []byte) bool {
	return func(tag uint32, data []byte) bool {
		if !withEpochs || tag != 0 {
			return false
		}
		r.sub(data, "AssignmentEpochs", func(s *recReader) {
			if n := s.arrayLen(4); n >= 0 {
				*dst = make([]int32, 0, n)
				for j := 0; j < n && s.err == nil; j++ {
					*dst = append(*dst, s.int32())
				}
			}
		})
		return true
	}
}

func (r *recReader) topicPartitions(withEpochs bool) []cgTopicPartitions {
	n := r.arrayLen(18)
	if n < 0 {
		r.fail(errors.New("null topic partitions"))
		return nil
	}
	out := make([]cgTopicPartitions, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		t := cgTopicPartitions{topicID: r.uuid(), partitions: r.int32s()}
		t.unknown = r.tags(r.epochsTagParser(withEpochs, &t.epochs))
		out = append(out, t)
	}
	return out
}

func (v *cgTargetMemberValue) encode() []byte {
	w := newValue()
	w.topicPartitions(v.topics, false)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeCGTargetMember(b []byte) (v cgTargetMemberValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ConsumerGroupTargetAssignmentMemberValue") {
		v.topics = r.topicPartitions(false)
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ConsumerGroupTargetAssignmentMemberValue")
}

func (v *cgCurrentValue) encode() []byte {
	w := newValue()
	w.int32(v.memberEpoch)
	w.int32(v.previousMemberEpoch)
	w.int8(v.state)
	w.topicPartitions(v.assigned, true)
	w.topicPartitions(v.revoking, true)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeCGCurrent(b []byte) (v cgCurrentValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ConsumerGroupCurrentMemberAssignmentValue") {
		v.memberEpoch = r.int32()
		v.previousMemberEpoch = r.int32()
		v.state = r.int8()
		v.assigned = r.topicPartitions(true)
		v.revoking = r.topicPartitions(true)
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ConsumerGroupCurrentMemberAssignmentValue")
}

func (v *cgRegexValue) encode() []byte {
	w := newValue()
	w.strings(v.topics)
	w.int64(v.version)
	w.int64(v.timestamp)
	w.tags(nil, v.unknown)
	return w.b
}

func decodeCGRegex(b []byte) (v cgRegexValue, err error) {
	r := &recReader{b: b}
	if valueHeader(r, "ConsumerGroupRegularExpressionValue") {
		v.topics = r.strings()
		v.version = r.int64()
		v.timestamp = r.int64()
		v.unknown = r.tags(noKnownTags)
	}
	return v, r.done("ConsumerGroupRegularExpressionValue")
}
