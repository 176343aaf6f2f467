package coordinator

import (
	"encoding/binary"
	"slices"
	"unicode/utf16"

	"github.com/zeebo/xxh3"
)

// The group's MetadataHash (KIP-1101, ConsumerGroupMetadataValue tag 0):
// Kafka 4.4's Utils.computeTopicHash and computeGroupHash, byte for byte,
// so a group Kafka wrote keeps its epoch here and a topic change Kafka
// would see (id, name, partition count, the racks of a partition's
// replicas) bumps it. Both are XXH3-64 (seed 0) over what Kafka feeds
// hash4j's HashStream64: little-endian integers, a string as its UTF-16
// code units then its length in them.

// topicHashMagic is Kafka's TOPIC_HASH_MAGIC_BYTE, the hash's version.
const topicHashMagic = 0

// hashStream is the bytes a hash4j HashStream64 would hash.
type hashStream []byte

func (h hashStream) putInt(v int32) hashStream { return binary.LittleEndian.AppendUint32(h, uint32(v)) }
func (h hashStream) putLong(v int64) hashStream {
	return binary.LittleEndian.AppendUint64(h, uint64(v))
}

// putString is hash4j's putString: the UTF-16 code units, then their count.
func (h hashStream) putString(s string) hashStream {
	units := utf16.Encode([]rune(s))
	for _, u := range units {
		h = binary.LittleEndian.AppendUint16(h, u)
	}
	return h.putInt(int32(len(units)))
}

// topicHash is Kafka's computeTopicHash of a topic that exists; racks(p)
// is the racks of partition p's replicas (those brokers that have one).
func topicHash(t topicMeta, racks func(p int32) []string) int64 {
	h := hashStream{topicHashMagic}
	h = h.putLong(int64(binary.BigEndian.Uint64(t.id[:8]))).putLong(int64(binary.BigEndian.Uint64(t.id[8:])))
	h = h.putString(t.name).putInt(t.partitions)
	for p := int32(0); p < t.partitions; p++ {
		h = h.putInt(p)
		rs := slices.Clone(racks(p))
		slices.SortFunc(rs, compareUTF16) // Java's String order
		for _, r := range rs {
			h = h.putInt(int32(len(utf16.Encode([]rune(r))))).putString(r)
		}
	}
	return int64(xxh3.Hash(h))
}

// groupHash is Kafka's computeGroupHash: the topic hashes in topic name
// order, 0 for no topic. topics is sorted by name (topic names are ASCII,
// so Go's order is Java's).
func groupHash(topics []topicMeta, racks func(t topicMeta, p int32) []string) int64 {
	if len(topics) == 0 {
		return 0
	}
	var h hashStream
	for _, t := range topics {
		h = h.putLong(topicHash(t, func(p int32) []string { return racks(t, p) }))
	}
	return int64(xxh3.Hash(h))
}

func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}
