package coordinator

import (
	"bytes"
	"encoding/base64"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"go.uber.org/zap"
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

// TestReplayKafkaConsumerGroups loads the segment Kafka 4.4.0 wrote: the
// consumer group keeps its epoch, its member's epoch, instance, rack and
// partitions; the deleted group is gone; the group Kafka upgraded to the
// consumer protocol and downgraded again is classic, with its offsets.
func TestReplayKafkaConsumerGroups(t *testing.T) {
	data, err := os.ReadFile(kafkaConsumerGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	uuid := func(s string) (id [16]byte) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 16 {
			t.Fatalf("topic id %s: %v", s, err)
		}
		copy(id[:], b)
		return id
	}
	topicT, topicU := uuid("agcKHt__RSaDiLAZNG0oAA"), uuid("ns7cGKFvQHizVPTcI8nqoQ")
	topics := &scriptTopics{byName: map[string]topicMeta{
		"t": {name: "t", id: topicT, partitions: 3},
		"u": {name: "u", id: topicU, partitions: 2},
	}}
	s := newGroupShard(0, DefaultGroupConfig(), topics, zap.NewNop())
	s.begin(time.UnixMilli(1796187610000))
	for len(data) > 0 {
		raw, rest, ok := batch.Next(data)
		if !ok {
			t.Fatalf("torn segment: %d bytes left", len(data))
		}
		if err := s.replayBatch(raw); err != nil {
			t.Fatal(err)
		}
		data = rest
	}
	s.activate()
	g := s.groups["g848"]
	if g == nil || g.consumer == nil {
		t.Fatalf("g848 = %+v, want a consumer group", g)
	}
	cg := g.consumer
	if cg.epoch != 5 || cg.assignmentEpoch != 5 || len(cg.members) != 1 {
		t.Fatalf("g848 epoch %d assignment epoch %d members %d, want 5 5 1", cg.epoch, cg.assignmentEpoch, len(cg.members))
	}
	m := cg.members["OHH7SgAjbLc3SytOndOedA=="]
	if m == nil || m.epoch != 5 || m.prevEpoch != 4 || m.state != cmemberStable || m.instanceID != "inst-a" || m.rackID != "r1" ||
		cg.static["inst-a"] != m.id || m.assignor != "uniform" || m.rebalanceTimeout != time.Minute {
		t.Fatalf("g848 member %+v", m)
	}
	want := partitionSet{topicT: {0, 1, 2}, topicU: {0, 1}}
	if !m.assigned.equal(want) || !cg.target[m.id].equal(want) || m.revoking.count() != 0 {
		t.Fatalf("g848 member assigned %v target %v revoking %v, want %v", m.assigned, cg.target[m.id], m.revoking, want)
	}
	if !slices.Contains(s.timers.keys(), timerKey{kind: timerConsumerSession, group: "g848", member: m.id}) {
		t.Error("g848 member has no session timer after load")
	}
	if g := s.groups["gdel"]; g != nil {
		t.Errorf("deleted group gdel loaded: %+v", g)
	}
	mig := s.groups["gmig"]
	if mig == nil || mig.consumer != nil || mig.generation != 3 || mig.protocol != "range" || len(mig.members) != 1 {
		t.Fatalf("gmig = %+v, want the classic group at generation 3 with its Java member", mig)
	}
	if n := s.offsets.count("gmig"); n != 2 {
		t.Errorf("gmig has %d offsets after load, want u-0 and u-1", n)
	}
	// Written again as Strata holds it, the group keeps Kafka's records
	// but for the current assignment, whose per-partition assignment
	// epochs (KIP-1251) Strata does not keep.
	s.persistConsumer(g, func(error) {})
	for _, w := range s.end().writes {
		for _, r := range w.batch.recs {
			if typ, _ := keyVersion(r.key); typ != cgCurrentType || r.value == nil {
				t.Errorf("persisting the loaded group rewrites %s", formatConsumerRecord(r, func(id [16]byte) string { return string(id[:]) }))
			}
		}
	}
}
