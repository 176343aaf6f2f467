package coordinator

import (
	"encoding/base64"
	"os"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"go.uber.org/zap"
)

func topicID(t *testing.T, s string) (id [16]byte) {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		t.Fatalf("topic id %s: %v", s, err)
	}
	copy(id[:], b)
	return id
}

// TestMetadataHashMatchesKafka: the topic and group hashes are the ones
// Kafka 4.4.0's Utils.computeTopicHash and computeGroupHash return for the
// same topics (figures from kafka-group-coordinator-4.4.0.jar, called on a
// metadata image with these topics), racks and non-ASCII text included.
func TestMetadataHashMatchesKafka(t *testing.T) {
	racks := map[string][][]string{"t": {{"rack-b", "rack-a"}, nil}, "émoji-名": {{"x"}}}
	topics := []topicMeta{
		{name: "orders", id: topicID(t, "AAAAAAAAAAAAAAAAAAAAAQ"), partitions: 3},
		{name: "t", id: topicID(t, "vVSHWKXzQ_mLkrX7hTL8Dg"), partitions: 2},
		{name: "émoji-名", id: topicID(t, "q83vEjRWeJCrze8SNFZ4kA"), partitions: 1},
	}
	rackOf := func(tm topicMeta, p int32) []string {
		if rs := racks[tm.name]; int(p) < len(rs) {
			return rs[p]
		}
		return nil
	}
	want := map[string]int64{"orders": -2084488436095635715, "t": -5378734003370975164, "émoji-名": 7965420891615800678}
	for _, tm := range topics {
		if got := topicHash(tm, func(p int32) []string { return rackOf(tm, p) }); got != want[tm.name] {
			t.Errorf("topic hash of %s = %d, Kafka's %d", tm.name, got, want[tm.name])
		}
	}
	if got := groupHash(topics, rackOf); got != -8049759998604101887 {
		t.Errorf("group hash = %d, Kafka's -8049759998604101887", got)
	}
	if got := groupHash(nil, rackOf); got != 0 {
		t.Errorf("group hash of no topic = %d, want 0", got)
	}
}

// TestMetadataHashOfKafkaGroup: the group Kafka 4.4.0 wrote has the
// MetadataHash Strata computes for its subscription on the same topics,
// so its first heartbeat here does not bump its epoch.
func TestMetadataHashOfKafkaGroup(t *testing.T) {
	data, err := os.ReadFile(kafkaConsumerGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	topics := &scriptTopics{byName: map[string]topicMeta{
		"t": {name: "t", id: topicID(t, "agcKHt__RSaDiLAZNG0oAA"), partitions: 3},
		"u": {name: "u", id: topicID(t, "ns7cGKFvQHizVPTcI8nqoQ"), partitions: 2},
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
	cg := s.groups["g848"].consumer
	if got := s.subscriptionHash(cg); got != cg.metadataHash || got == 0 {
		t.Errorf("g848: Kafka wrote MetadataHash %d, Strata computes %d", cg.metadataHash, got)
	}
}

// TestMetadataHashCoversRacks: with the racks of the partitions' replicas
// known (a cluster's image, GroupConfig.PartitionRacks), a change of rack
// changes the group's MetadataHash, which bumps its epoch, as in Kafka.
func TestMetadataHashCoversRacks(t *testing.T) {
	rack := "r1"
	cfg := DefaultGroupConfig()
	cfg.PartitionRacks = func([16]byte, int32) []string { return []string{rack} }
	topics := &scriptTopics{byName: map[string]topicMeta{"t": {name: "t", id: topicID(t, "vVSHWKXzQ_mLkrX7hTL8Dg"), partitions: 2}}}
	s := newGroupShard(0, cfg, topics, zap.NewNop())
	cg := newConsumerGroup()
	cg.members["m"] = &cmember{id: "m", topics: []string{"t"}}
	before := s.subscriptionHash(cg)
	rack = "r2"
	if after := s.subscriptionHash(cg); after == before {
		t.Errorf("hash %d unchanged when the partitions moved from rack r1 to r2", after)
	}
	s.cfg.PartitionRacks = nil
	if none := s.subscriptionHash(cg); none == before {
		t.Errorf("hash %d with racks equals the one without", none)
	}
}
