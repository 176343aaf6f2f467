package kraftmeta

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Metadata record api keys (metadata/src/main/resources/common/metadata/*.json
// in Apache Kafka 4.4) and the newest version of each this decoder knows.
const (
	keyTopic            = 2
	keyPartition        = 3
	keyConfig           = 4
	keyPartitionChange  = 5
	keyRemoveTopic      = 9
	keyProducerIDs      = 15
	keyBeginTransaction = 23
	keyEndTransaction   = 24
	keyAbortTransaction = 25
)

// knownVersions maps every metadata record type of Kafka 4.4 to its newest
// version (4.4 added RegisterBrokerRecord v4, BrokerRegistrationChangeRecord
// v3 and UnregisterControllerRecord, 29). Types Strata does not need (brokers, features, ACLs, quotas,
// SCRAM, delegation tokens, producer ids, ...) are known so that they are
// not counted as skipped.
var knownVersions = map[uint16]uint16{
	0: 4, 1: 0, keyTopic: 0, keyPartition: 2, keyConfig: 0, keyPartitionChange: 2,
	7: 0, 8: 0, keyRemoveTopic: 0, 10: 0, 11: 0, 12: 0, 14: 0, keyProducerIDs: 0, 17: 3, 18: 0,
	19: 0, 20: 0, 21: 0, 22: 0, keyBeginTransaction: 0, keyEndTransaction: 0,
	keyAbortTransaction: 0, 26: 0, 27: 0, 28: 0, 29: 0,
}

// Config resource types of ConfigRecord (ConfigResource.Type).
const (
	ResourceTopic  = 2
	ResourceBroker = 4
)

// frameVersion is the only frame AbstractApiMessageSerde reads and writes
// (frame 0, KRaft's 2.8 preview, is refused).
const frameVersion = 1

// leaderUnchanged is PartitionChangeRecord.Leader's default: no change.
const leaderUnchanged = -2

// Record is one decoded metadata record; only the fields of its Kind are set.
type Record struct {
	Kind    Kind
	APIKey  uint16
	Version uint16

	TopicName   string   // Topic, Config (resource name)
	TopicID     [16]byte // Topic, Partition, PartitionChange, RemoveTopic
	PartitionID int32    // Partition, PartitionChange
	Leader      int32    // Partition; PartitionChange: leaderUnchanged when absent
	LeaderEpoch int32    // Partition

	ResourceType int8    // Config
	ConfigName   string  // Config
	ConfigValue  *string // Config; nil deletes the key

	NextProducerID int64 // ProducerIDs
}

// Kind says what a Record means to Strata.
type Kind int

const (
	KindIgnored Kind = iota // a known type Strata does not need
	KindUnknown             // an unknown type or a newer version: skipped and counted
	KindTopic
	KindPartition
	KindPartitionChange
	KindRemoveTopic
	KindConfig
	KindProducerIDs
	KindBeginTransaction
	KindEndTransaction
	KindAbortTransaction
)

var errShort = errors.New("truncated")

// DecodeRecord decodes a metadata record value as Kafka's
// MetadataRecordSerde: unsigned varint frame version (1), api key and
// version, then the message in the flexible encoding of that version. The
// whole value must be consumed, as Kafka requires.
func DecodeRecord(value []byte) (Record, error) {
	r := reader{b: value}
	frame := r.uvarint()
	key := r.uvarint()
	version := r.uvarint()
	if r.err != nil {
		return Record{}, corruptionf("metadata record header: %w", r.err)
	}
	if frame != frameVersion {
		return Record{}, corruptionf("metadata record frame version %d, want %d", frame, frameVersion)
	}
	if key > 0x7fff || version > 0x7fff {
		return Record{}, corruptionf("metadata record type %d version %d out of range", key, version)
	}
	rec := Record{APIKey: uint16(key), Version: uint16(version)}
	if maxV, ok := knownVersions[rec.APIKey]; !ok || rec.Version > maxV {
		rec.Kind = KindUnknown
		return rec, nil
	}
	switch rec.APIKey {
	case keyTopic:
		rec.Kind = KindTopic
		rec.TopicName = r.compactString()
		rec.TopicID = r.uuid()
		r.skipTaggedFields(nil)
	case keyPartition:
		rec.Kind = KindPartition
		rec.PartitionID = r.int32()
		rec.TopicID = r.uuid()
		for range 4 { // Replicas, Isr, RemovingReplicas, AddingReplicas
			r.skipCompactArray(4)
		}
		rec.Leader = r.int32()
		rec.LeaderEpoch = r.int32()
		r.int32() // PartitionEpoch
		if rec.Version >= 1 {
			r.skipCompactArray(16) // Directories
		}
		r.skipTaggedFields(nil)
	case keyPartitionChange:
		rec.Kind = KindPartitionChange
		rec.PartitionID = r.int32()
		rec.TopicID = r.uuid()
		rec.Leader = leaderUnchanged
		r.skipTaggedFields(func(tag uint64, field []byte) error {
			if tag != 1 { // Leader; the others are replica sets Strata ignores
				return nil
			}
			if len(field) != 4 {
				return fmt.Errorf("leader field of %d bytes", len(field))
			}
			rec.Leader = int32(binary.BigEndian.Uint32(field))
			return nil
		})
	case keyRemoveTopic:
		rec.Kind = KindRemoveTopic
		rec.TopicID = r.uuid()
		r.skipTaggedFields(nil)
	case keyConfig:
		rec.Kind = KindConfig
		rec.ResourceType = int8(r.byte())
		rec.TopicName = r.compactString()
		rec.ConfigName = r.compactString()
		rec.ConfigValue = r.compactNullableString()
		r.skipTaggedFields(nil)
	case keyProducerIDs:
		rec.Kind = KindProducerIDs
		r.int32() // BrokerId
		r.int64() // BrokerEpoch
		rec.NextProducerID = r.int64()
		r.skipTaggedFields(nil)
	case keyBeginTransaction:
		rec.Kind = KindBeginTransaction
		return rec, nil
	case keyEndTransaction:
		rec.Kind = KindEndTransaction
		return rec, nil
	case keyAbortTransaction:
		rec.Kind = KindAbortTransaction
		return rec, nil
	default:
		rec.Kind = KindIgnored
		return rec, nil
	}
	if r.err != nil {
		return Record{}, corruptionf("metadata record type %d version %d: %w", key, version, r.err)
	}
	if len(r.b) > 0 {
		return Record{}, corruptionf("metadata record type %d version %d: %d bytes of garbage after it", key, version, len(r.b))
	}
	return rec, nil
}

// reader decodes Kafka's flexible message encoding from b; the first error
// sticks and every later read returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(errShort)
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) byte() byte {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) int32() int32 {
	if p := r.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *reader) int64() int64 {
	if p := r.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (r *reader) uuid() [16]byte {
	var u [16]byte
	copy(u[:], r.take(16))
	return u
}

// uvarint reads an unsigned varint of at most 32 bits, as Kafka's
// readUnsignedVarint (5 bytes at most).
func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n > 5 || v > 0xffffffff {
		r.fail(errors.New("malformed unsigned varint"))
		return 0
	}
	r.b = r.b[n:]
	return v
}

// compactLength reads a compact length (N+1, 0 = null) and returns N, or
// -1 for null.
func (r *reader) compactLength() int {
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	return int(n) - 1
}

func (r *reader) compactNullableString() *string {
	n := r.compactLength()
	if n < 0 || r.err != nil {
		return nil
	}
	s := string(r.take(n))
	if r.err != nil {
		return nil
	}
	return &s
}

func (r *reader) compactString() string {
	s := r.compactNullableString()
	if s == nil {
		r.fail(errors.New("null string in a non-nullable field"))
		return ""
	}
	return *s
}

// skipCompactArray skips a non-nullable compact array of fixed-size
// elements, bounding the count by the bytes left.
func (r *reader) skipCompactArray(elemSize int) {
	n := r.compactLength()
	if r.err != nil {
		return
	}
	if n < 0 {
		r.fail(errors.New("null array in a non-nullable field"))
		return
	}
	if n > len(r.b)/elemSize {
		r.fail(errShort)
		return
	}
	r.take(n * elemSize)
}

// skipTaggedFields reads the tagged field section, passing each field's tag
// and bytes to fn (nil: all fields are skipped).
func (r *reader) skipTaggedFields(fn func(tag uint64, field []byte) error) {
	count := r.uvarint()
	for i := uint64(0); i < count && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		if r.err != nil {
			return
		}
		field := r.take(int(size))
		if r.err == nil && fn != nil {
			if err := fn(tag, field); err != nil {
				r.fail(fmt.Errorf("tagged field %d: %w", tag, err))
			}
		}
	}
}
