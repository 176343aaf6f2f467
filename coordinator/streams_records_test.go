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

// TestStreamsGroupRecordsRejectMalformed: truncated or inflated values
// are errors, never a panic or a large allocation.
func TestStreamsGroupRecordsRejectMalformed(t *testing.T) {
	tasks := []stTaskIDs{{subtopology: "0", partitions: []int32{0, 1}, epochs: []int32{2, 3}}}
	cur := stCurrentValue{memberEpoch: 3, previousMemberEpoch: 2, state: 1, active: tasks, standby: []stTaskIDs{}, warmup: []stTaskIDs{},
		activeRevoking: tasks, standbyRevoking: []stTaskIDs{}, warmupRevoking: []stTaskIDs{}}
	member := stMemberValue{clientID: "c", clientHost: "/h", rebalanceTimeoutMs: 30000, processID: "p",
		userEndpoint: &stEndpoint{host: "h", port: 8080}, clientTags: []stKeyValue{{key: "zone", value: "z1"}}}
	topology := stTopologyValue{subtopologies: []stSubtopology{{id: "0", sourceTopics: []string{"t"}, sourceTopicRegex: []string{},
		stateChangelogTopics:  []stTopicInfo{{name: "c", configs: []stKeyValue{{key: "cleanup.policy", value: "compact"}}}},
		repartitionSinkTopics: []string{}, repartitionSourceTopics: []stTopicInfo{},
		copartitionGroups: []stCopartitionGroup{{sourceTopics: []int16{0}, sourceTopicRegex: []int16{}, repartitionSourceTopics: []int16{}}}}}}
	meta := stMetadataValue{epoch: 1, metadataHash: 7, validatedTopologyEpoch: 0, lastAssignmentConfigs: []stKeyValue{{key: "k", value: "v"}},
		storedDescriptionEpoch: -1, failedDescriptionEpoch: 2}
	for name, tt := range map[string]struct {
		value  []byte
		decode func([]byte) error
	}{
		"current":  {cur.encode(), func(b []byte) error { _, err := decodeSTCurrent(b); return err }},
		"member":   {member.encode(), func(b []byte) error { _, err := decodeSTMember(b); return err }},
		"topology": {topology.encode(), func(b []byte) error { _, err := decodeSTTopology(b); return err }},
		"metadata": {meta.encode(), func(b []byte) error { _, err := decodeSTMetadata(b); return err }},
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
	if v, err := decodeSTMetadata(meta.encode()); err != nil || v.failedDescriptionEpoch != 2 || v.storedDescriptionEpoch != -1 || configsString(v.lastAssignmentConfigs) != "k=v" {
		t.Errorf("metadata decoded again as %+v, %v", v, err)
	}
}
