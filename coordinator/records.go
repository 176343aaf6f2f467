package coordinator

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record key versions of __consumer_offsets, as Kafka's coordinator writes
// them: the key's version is the record type (0 and 1 offset commits, 2
// group metadata; 3 and above are KIP-848 records, skipped on replay).
const (
	offsetCommitKeyVersion  = 1
	groupMetadataKeyVersion = 2
	// Kafka 4 writes OffsetCommitValue v3 (v1 only with an explicit expire
	// timestamp) and GroupMetadataValue v3.
	offsetCommitValueVersion  = 3
	groupMetadataValueVersion = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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
// GroupMetadataManager.groupMetadataValue does; the caller holds g.mu.
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
	var raw []byte
	for i, r := range recs {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Key, rec.Value = r.key, r.value
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // Length 0 is one varint byte
		raw = rec.AppendTo(raw)
	}
	ts := now.UnixMilli()
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = int32(len(recs) - 1)
	b.FirstTimestamp, b.MaxTimestamp = ts, ts
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.NumRecords = int32(len(recs))
	b.Records = raw
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
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
	decompressor := kgo.DefaultDecompressor()
	for len(data) > 0 {
		if len(data) < 12 {
			return next, fmt.Errorf("short batch header: %d bytes", len(data))
		}
		size := 12 + int(int32(binary.BigEndian.Uint32(data[8:])))
		if size < 61 || size > len(data) {
			return next, fmt.Errorf("batch length %d with %d bytes left", size, len(data))
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data[:size]); err != nil {
			return next, fmt.Errorf("decode batch at offset %d: %w", b.FirstOffset, err)
		}
		data = data[size:]
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		bi := batchInfo{producerID: b.ProducerID, producerEpoch: b.ProducerEpoch,
			transactional: b.Attributes&0x10 != 0, control: b.Attributes&0x20 != 0}
		recs := b.Records
		if codec := kgo.CompressionCodecType(b.Attributes & 0x7); codec != 0 {
			if recs, err = decompressor.Decompress(recs, codec); err != nil {
				return next, fmt.Errorf("decompress batch at offset %d: %w", b.FirstOffset, err)
			}
		}
		for i := int32(0); i < b.NumRecords; i++ {
			n, w := binary.Varint(recs)
			if w <= 0 || n < 0 || int64(len(recs)-w) < n {
				return next, fmt.Errorf("record %d of batch at offset %d: bad length", i, b.FirstOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:w+int(n)]); err != nil {
				return next, fmt.Errorf("record %d of batch at offset %d: %w", i, b.FirstOffset, err)
			}
			recs = recs[w+int(n):]
			bi.offset = b.FirstOffset + int64(r.OffsetDelta)
			if err := fn(&bi, r.Key, r.Value); err != nil {
				return next, err
			}
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
