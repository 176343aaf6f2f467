package coordinator

import (
	"bytes"
	"os"
	"testing"
)

// kafkaConsumerGroupsLog is a segment of __consumer_offsets-0 that Kafka
// 4.4.0 wrote (offsets.topic.num.partitions=1) while franz-go KIP-848
// members joined, subscribed by names and by regex (rack, static member),
// a topic was created under a regex, members left, a consumer group was
// deleted, and a classic Java 4.4 consumer's group was upgraded online by a
// consumer-protocol member and downgraded again when it left.
const kafkaConsumerGroupsLog = "testdata/kafka-4.4.0-consumer-groups.log"

// decodeEncodeCG decodes a consumer group record and encodes it again.
func decodeEncodeCG(typ int16, value []byte) ([]byte, error) {
	switch typ {
	case cgMetadataType:
		v, err := decodeCGMetadata(value)
		return v.encode(), err
	case cgMemberType:
		v, err := decodeCGMember(value)
		return v.encode(), err
	case cgTargetMetadataType:
		v, err := decodeCGTargetMetadata(value)
		return v.encode(), err
	case cgTargetMemberType:
		v, err := decodeCGTargetMember(value)
		return v.encode(), err
	case cgCurrentType:
		v, err := decodeCGCurrent(value)
		return v.encode(), err
	case cgRegexType:
		v, err := decodeCGRegex(value)
		return v.encode(), err
	}
	return nil, nil
}

// TestConsumerGroupRecordsMatchKafka decodes every consumer group record
// Kafka 4.4.0 wrote and encodes it again: the same bytes, key and value.
func TestConsumerGroupRecordsMatchKafka(t *testing.T) {
	data, err := os.ReadFile(kafkaConsumerGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int16]int{}
	tombstones := map[int16]int{}
	classic, epochs, hashes, timestamps := 0, 0, 0, 0
	if _, err := forEachRecord(data, func(b *batchInfo, key, value []byte) error {
		if b.control {
			return nil
		}
		typ, err := keyVersion(key)
		if err != nil || typ < cgMetadataType || typ == 2 {
			return err
		}
		k, err := decodeCGKey(key)
		if err != nil {
			t.Fatalf("offset %d: %v", b.offset, err)
		}
		if got := k.encode(); !bytes.Equal(got, key) {
			t.Fatalf("offset %d: key %x encodes again as %x", b.offset, key, got)
		}
		if value == nil {
			tombstones[typ]++
			return nil
		}
		seen[typ]++
		got, err := decodeEncodeCG(typ, value)
		if err != nil {
			t.Fatalf("offset %d type %d: %v", b.offset, typ, err)
		}
		if !bytes.Equal(got, value) {
			t.Fatalf("offset %d type %d: value\n%x\nencodes again as\n%x", b.offset, typ, value, got)
		}
		switch typ {
		case cgMemberType:
			if v, _ := decodeCGMember(value); v.classic != nil {
				classic++
				if len(v.classic.protocols) == 0 || v.classic.sessionTimeoutMs != 45000 {
					t.Errorf("offset %d: classic member metadata %+v", b.offset, v.classic)
				}
			}
		case cgCurrentType:
			if v, _ := decodeCGCurrent(value); len(v.assigned) > 0 && v.assigned[0].epochs != nil {
				epochs++
			}
		case cgMetadataType:
			if v, _ := decodeCGMetadata(value); v.metadataHash != 0 {
				hashes++
			}
		case cgTargetMetadataType:
			if v, _ := decodeCGTargetMetadata(value); v.assignmentTimestamp != 0 {
				timestamps++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []int16{cgMetadataType, cgMemberType, cgTargetMetadataType, cgTargetMemberType, cgCurrentType, cgRegexType} {
		if seen[typ] == 0 || tombstones[typ] == 0 {
			t.Errorf("record type %d: %d values, %d tombstones in the segment, want some of both", typ, seen[typ], tombstones[typ])
		}
	}
	if tombstones[cgPartitionMetadataType] == 0 || classic == 0 || epochs == 0 || hashes == 0 || timestamps == 0 {
		t.Errorf("partition metadata tombstones %d, classic members %d, assignment epochs %d, metadata hashes %d, assignment timestamps %d: want each",
			tombstones[cgPartitionMetadataType], classic, epochs, hashes, timestamps)
	}
	t.Logf("values by type %v, tombstones by type %v", seen, tombstones)
}

// TestConsumerGroupRecordsRejectMalformed: truncated or inflated values
// are errors, never a panic or a large allocation.
func TestConsumerGroupRecordsRejectMalformed(t *testing.T) {
	cur := cgCurrentValue{memberEpoch: 3, previousMemberEpoch: 2, state: 1,
		assigned: []cgTopicPartitions{{topicID: [16]byte{1}, partitions: []int32{0, 1}, epochs: []int32{2, 3}}}}
	member := cgMemberValue{clientID: "c", clientHost: "/h", topics: []string{"t"}, rebalanceTimeoutMs: -1,
		classic: &cgClassicMember{sessionTimeoutMs: 45000, protocols: []cgClassicProtocol{{name: "range", metadata: []byte{1, 2}}}}}
	for name, tt := range map[string]struct {
		value  []byte
		decode func([]byte) error
	}{
		"current":  {cur.encode(), func(b []byte) error { _, err := decodeCGCurrent(b); return err }},
		"member":   {member.encode(), func(b []byte) error { _, err := decodeCGMember(b); return err }},
		"metadata": {(&cgMetadataValue{epoch: 1, metadataHash: 7}).encode(), func(b []byte) error { _, err := decodeCGMetadata(b); return err }},
	} {
		if err := tt.decode(tt.value); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for n := 0; n < len(tt.value); n++ {
			if err := tt.decode(tt.value[:n]); err == nil {
				t.Errorf("%s cut to %d of %d bytes decoded", name, n, len(tt.value))
			}
		}
		huge := append(append([]byte{}, tt.value[:2]...), 0xff, 0xff, 0xff, 0xff, 0x07)
		if err := tt.decode(huge); err == nil {
			t.Errorf("%s with a 2^31 length decoded", name)
		}
		if err := tt.decode(append(append([]byte{}, tt.value...), 0)); err == nil {
			t.Errorf("%s with a byte after the end decoded", name)
		}
	}
}
