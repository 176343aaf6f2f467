package coordinator

import (
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf16"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record key versions of __consumer_offsets, as Kafka's coordinator writes
// them: the key's version is the record type (0 and 1 offset commits, 2
// group metadata; 3 and above are KIP-848 records, consumer_records.go).
const (
	offsetCommitKeyVersion  = 1
	groupMetadataKeyVersion = 2
	// Kafka 4 writes OffsetCommitValue v3 (v1 only with an explicit expire
	// timestamp) and GroupMetadataValue v3.
	offsetCommitValueVersion  = 3
	groupMetadataValueVersion = 3
)

// javaStringHashCode is Java's String.hashCode over UTF-16 code units.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// partitionFor is Kafka's GroupMetadataManager.partitionFor:
// Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount, where
// Utils.abs maps Integer.MIN_VALUE to 0.
func partitionFor(groupID string, partitions int32) int32 {
	h := javaStringHashCode(groupID)
	if h < 0 {
		h = -h // MIN_VALUE stays negative
	}
	if h < 0 {
		h = 0
	}
	return h % partitions
}

// kv is one record to write: value nil is a tombstone.
type kv struct {
	key, value []byte
}

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetCommitKeyVersion, group, topic, partition
	return k.AppendTo(nil)
}

func offsetCommitValue(o committedOffset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.offset, o.leaderEpoch, o.metadata, o.commitTime
	if o.expireTime >= 0 {
		v.Version, v.ExpireTimestamp = 1, o.expireTime
	}
	return v.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupMetadataKeyVersion, group
	return k.AppendTo(nil)
}

// groupMetadataValue encodes g's generation and members as Kafka's
// GroupMetadataManager.groupMetadataValue does.
func groupMetadataValue(g *group, now time.Time) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = now.UnixMilli()
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		if m.instanceID != "" {
			id := m.instanceID
			vm.InstanceID = &id
		}
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

// buildBatch is an uncompressed magic-2 record batch of recs, without a
// producer id, as Kafka's coordinator appends to __consumer_offsets.
func buildBatch(recs []kv, now time.Time) []byte {
	return encodeBatch(recs, batch.Header{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, now)
}

// encodeBatch is an uncompressed batch of recs with h's attributes and
// producer fields, timestamped now.
func encodeBatch(recs []kv, h batch.Header, now time.Time) []byte {
	h.Magic = batch.Magic
	h.LastOffsetDelta = int32(len(recs) - 1)
	h.BaseTimestamp, h.MaxTimestamp = now.UnixMilli(), now.UnixMilli()
	h.RecordCount = int32(len(recs))
	out := make([]byte, batch.HeaderSize)
	h.Put(out)
	for i, r := range recs {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Key, rec.Value = r.key, r.value
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // Length 0 is one varint byte
		out = rec.AppendTo(out)
	}
	batch.Seal(out)
	return out
}

// batchRecords calls fn for every record of the batches in data (whole
// batches, as a log read returns them) and returns the offset after the
// last batch. Control batches (transaction markers) are skipped.
func batchRecords(data []byte, fn func(key, value []byte) error) (next int64, err error) {
	return forEachRecord(data, func(b *batchInfo, key, value []byte) error {
		if b.control {
			return nil
		}
		return fn(key, value)
	})
}

// batchInfo is what replay needs to know of a record's batch.
type batchInfo struct {
	offset        int64 // of the record
	producerID    int64
	producerEpoch int16
	transactional bool
	control       bool
}

// forEachRecord calls fn for every record of the batches in data, control
// records included, with its batch's producer and attributes, and returns
// the offset after the last batch.
func forEachRecord(data []byte, fn func(b *batchInfo, key, value []byte) error) (next int64, err error) {
	for len(data) > 0 {
		raw, rest, ok := batch.Next(data)
		if !ok {
			return next, fmt.Errorf("torn or malformed batch: %d bytes left", len(data))
		}
		data = rest
		h := batch.DecodeHeader(raw)
		next = h.NextOffset()
		bi := batchInfo{producerID: h.ProducerID, producerEpoch: h.ProducerEpoch,
			transactional: h.Transactional(), control: h.Control()}
		recs, err := batch.Decompress(h.Compression(), raw[batch.HeaderSize:])
		if err != nil {
			return next, fmt.Errorf("decompress batch at offset %d: %w", h.BaseOffset, err)
		}
		it := batch.NewRecords(recs, h.RecordCount)
		var r batch.Record
		for it.Next(&r) {
			if err := r.CheckHeaders(); err != nil {
				return next, fmt.Errorf("record at offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
			}
			bi.offset = h.BaseOffset + int64(r.OffsetDelta)
			if err := fn(&bi, r.Key, r.Value); err != nil {
				return next, err
			}
		}
		if err := it.Err(); err != nil {
			return next, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	return next, nil
}

// keyVersion is the record type of a __consumer_offsets key.
func keyVersion(key []byte) (int16, error) {
	if len(key) < 2 {
		return 0, fmt.Errorf("key of %d bytes", len(key))
	}
	return int16(binary.BigEndian.Uint16(key)), nil
}
