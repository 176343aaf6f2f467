package coordinator

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// kafkaStreamsGroupsLog is a segment of __consumer_offsets-0 that Kafka
// 4.4.0 wrote (offsets.topic.num.partitions=1, streams.num.standby.replicas=1
// on both groups) while two instances of Kafka Streams 4.4's word count
// (group.protocol=streams, cmd/strata's startWordCount) joined group wc-cap,
// shared its tasks with standbys and one left; kmsg-driven members of
// group sg-raw joined (one static, with a rack, client tags and a user
// endpoint), took tasks, rebalanced, left (the static one with epoch -2,
// then -1); the word count closed and both groups were deleted. cmd/strata's
// TestCaptureKafkaStreamsSegment writes it again
// (STRATA_CAPTURE_STREAMS_SEGMENT=<file> go test -run TestCaptureKafkaStreamsSegment ./cmd/strata/).
const kafkaStreamsGroupsLog = "testdata/kafka-4.4.0-streams-groups.log"

// decodeEncodeST decodes a streams group record and encodes it again,
// with a description for the log.
func decodeEncodeST(typ int16, value []byte) ([]byte, string, error) {
	switch typ {
	case stMetadataType:
		v, err := decodeSTMetadata(value)
		return v.encode(), fmt.Sprintf("%+v", v), err
	case stMemberType:
		v, err := decodeSTMember(value)
		return v.encode(), fmt.Sprintf("%+v", v), err
	case stTargetMetadataType:
		v, err := decodeCGTargetMetadata(value)
		return v.encode(), fmt.Sprintf("%+v", v), err
	case stTargetMemberType:
		v, err := decodeSTTargetMember(value)
		return v.encode(), fmt.Sprintf("%+v", v), err
	case stCurrentType:
		v, err := decodeSTCurrent(value)
		return v.encode(), fmt.Sprintf("%+v", v), err
	case stTopologyType:
		v, err := decodeSTTopology(value)
		return v.encode(), fmt.Sprintf("%+v", v), err
	}
	return nil, "", nil
}

// TestStreamsGroupRecordsMatchKafka decodes every streams group record
// Kafka 4.4.0 wrote and encodes it again: the same bytes, key and value.
func TestStreamsGroupRecordsMatchKafka(t *testing.T) {
	data, err := os.ReadFile(kafkaStreamsGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int16]int{}
	tombstones := map[int16]int{}
	if _, err := forEachRecord(data, func(b *batchInfo, key, value []byte) error {
		if b.control {
			return nil
		}
		typ, err := keyVersion(key)
		if err != nil {
			return err
		}
		if !isStreamsType(typ) {
			t.Logf("offset %d: type %d", b.offset, typ)
			return nil
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
			t.Logf("offset %d: type %d %s/%s tombstone", b.offset, typ, k.group, k.sub)
			return nil
		}
		seen[typ]++
		got, desc, err := decodeEncodeST(typ, value)
		if err != nil {
			t.Fatalf("offset %d type %d: %v", b.offset, typ, err)
		}
		t.Logf("offset %d: type %d %s/%s %s", b.offset, typ, k.group, k.sub, desc)
		if !bytes.Equal(got, value) {
			t.Fatalf("offset %d type %d: value\n%x\nencodes again as\n%x", b.offset, typ, value, got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []int16{stMetadataType, stMemberType, stTargetMetadataType, stTargetMemberType, stCurrentType, stTopologyType} {
		if seen[typ] == 0 || tombstones[typ] == 0 {
			t.Errorf("record type %d: %d values, %d tombstones in the segment, want some of both", typ, seen[typ], tombstones[typ])
		}
	}
	t.Logf("values by type %v, tombstones by type %v", seen, tombstones)
}
