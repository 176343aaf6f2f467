package coordinator

import (
	"bytes"
	"encoding/base64"
	"os"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// TestUpgradeRefusedAsKafka: a consumer heartbeat to a non-empty classic
// group the policy or the group keeps from upgrading is GROUP_ID_NOT_FOUND
// with Kafka 4.4's message (GroupMetadataManager.validateOnlineUpgrade),
// and the group stays classic.
func TestUpgradeRefusedAsKafka(t *testing.T) {
	for _, tt := range []struct {
		policy, protocolType string
		maxSize              int
		assignment           []byte
		want                 string
	}{
		{MigrationDowngrade, "consumer", 0, nil, "Cannot upgrade classic group g to consumer group because online upgrade is disabled."},
		{MigrationDisabled, "consumer", 0, nil, "Cannot upgrade classic group g to consumer group because online upgrade is disabled."},
		{MigrationBidirectional, "connect", 0, nil, "Cannot upgrade classic group g to consumer group because the group does not use the consumer embedded protocol."},
		{MigrationUpgrade, "consumer", 1, nil, "Cannot upgrade classic group g to consumer group because the group size exceeds the consumer group maximum size."},
		{MigrationUpgrade, "consumer", 0, []byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 7},
			"Cannot upgrade classic group g to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade."},
		{MigrationUpgrade, "consumer", 0, []byte{0, 3, 0}, "Cannot upgrade classic group g to consumer group because the embedded consumer protocol is malformed."},
	} {
		cfg := DefaultGroupConfig()
		cfg.ConsumerMigrationPolicy = tt.policy
		if tt.maxSize > 0 {
			cfg.ConsumerMaxSize = tt.maxSize
		}
		s := newGroupShard(0, cfg, &scriptTopics{byName: map[string]topicMeta{"t": {name: "t", id: [16]byte{1}, partitions: 2}}}, zap.NewNop())
		s.begin(time.Unix(0, 0))
		g := s.group("g", true)
		sub := (&kmsg.ConsumerMemberMetadata{Version: 3, Topics: []string{"t"}}).AppendTo(nil)
		for _, id := range []string{"a", "b"} {
			g.members[id] = &member{id: id, protocolType: tt.protocolType, protocols: []protocolMeta{{name: "range", metadata: sub}},
				sessionTimeout: 45 * time.Second, assignment: tt.assignment}
		}
		g.protocolType, g.protocol, g.generation, g.state = tt.protocolType, "range", 1, stateStable
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = "g", "C", 30000, []string{"t"}
		resp := s.consumerGroupHeartbeat(req, 1, Client{ID: "c", Host: "/h"})
		if resp.ErrorCode != kerr.GroupIDNotFound.Code || deref(resp.ErrorMessage) != tt.want {
			t.Errorf("policy %s type %s max %d: error %d %q, want GROUP_ID_NOT_FOUND %q", tt.policy, tt.protocolType, tt.maxSize,
				resp.ErrorCode, deref(resp.ErrorMessage), tt.want)
		}
		if g.consumer != nil || len(g.members) != 2 || len(s.end().writes) != 0 {
			t.Errorf("policy %s: the refused upgrade changed the group: %+v", tt.policy, g)
		}
	}
}

// TestClassicAssignmentAsKafka: the SyncGroup answer of a classic member
// in a consumer group is Kafka's ConsumerProtocolAssignment at the
// version of the member's subscription, byte for byte as Kafka 4.4 wrote
// it into the downgraded group of the golden segment (gmig: u-0 at v3).
func TestClassicAssignmentAsKafka(t *testing.T) {
	u := [16]byte{9}
	s := newGroupShard(0, DefaultGroupConfig(), &scriptTopics{byName: map[string]topicMeta{"u": {name: "u", id: u, partitions: 2}}}, zap.NewNop())
	sub := []byte{0, 3, 0, 0, 0, 1, 0, 1, 'u', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff}
	got := s.classicAssignment(partitionSet{u: {0}}, sub)
	want := []byte{0, 3, 0, 0, 0, 1, 0, 1, 'u', 0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if string(got) != string(want) {
		t.Fatalf("assignment %x, want %x", got, want)
	}
	if got := s.classicAssignment(partitionSet{}, []byte{0, 0}); string(got) != string([]byte{0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("empty v0 assignment %x", got)
	}
}

// goldenShard is a shard that replayed the batches of Kafka 4.4.0's
// segment before offset end.
func goldenShard(t *testing.T, end int64) (*groupShard, [16]byte) {
	t.Helper()
	data, err := os.ReadFile(kafkaConsumerGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	idU, err := base64.RawURLEncoding.DecodeString("ns7cGKFvQHizVPTcI8nqoQ")
	if err != nil {
		t.Fatal(err)
	}
	var u [16]byte
	copy(u[:], idU)
	topics := &scriptTopics{byName: map[string]topicMeta{"u": {name: "u", id: u, partitions: 2}}}
	s := newGroupShard(0, DefaultGroupConfig(), topics, zap.NewNop())
	s.begin(time.UnixMilli(1796187600000))
	for len(data) > 0 {
		raw, rest, ok := batch.Next(data)
		if !ok || batch.DecodeHeader(raw).BaseOffset >= end {
			break
		}
		if err := s.replayBatch(raw); err != nil {
			t.Fatal(err)
		}
		data = rest
	}
	s.activate()
	s.end()
	return s, u
}

// goldenRecords is the records of the segment's batch at offset base.
func goldenRecords(t *testing.T, base int64) []kv {
	t.Helper()
	data, err := os.ReadFile(kafkaConsumerGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	var out []kv
	if _, err := forEachRecord(data, func(b *batchInfo, key, value []byte) error {
		if b.offset >= base && b.offset < base+10 && !b.control {
			out = append(out, kv{key: bytes.Clone(key), value: bytes.Clone(value)})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrationAsKafkaWroteIt replays the online migration Kafka 4.4.0 did
// (group gmig in the golden segment: a Java classic consumer, then a
// franz-go consumer-protocol member, which left again). Mid-migration the
// group loads as a consumer group whose Java member is on the classic
// protocol: its heartbeat at its member epoch is fine and its SyncGroup
// gets its partitions as Kafka encodes them. When the consumer-protocol
// member leaves, Strata downgrades the group with the records Kafka wrote:
// the same tombstones in the same order, then a GroupMetadata record
// equal to Kafka's but for its timestamp.
func TestMigrationAsKafkaWroteIt(t *testing.T) {
	const java, gold = "java-classic-1015cbd3-6e08-42a8-ae5d-b05e3613436c", "r7XECpzfqhQWkoB1LKU7-Q=="
	s, u := goldenShard(t, 79)
	g := s.groups["gmig"]
	if g == nil || g.consumer == nil {
		t.Fatalf("gmig mid-migration = %+v, want a consumer group", g)
	}
	cg := g.consumer
	jm, gm := cg.members[java], cg.members[gold]
	if jm == nil || jm.classic == nil || jm.classic.sessionTimeoutMs != 45000 || len(jm.classic.protocols) != 2 || jm.epoch != 2 ||
		!jm.assigned.equal(partitionSet{u: {0}}) || gm == nil || gm.classic != nil || !gm.assigned.equal(partitionSet{u: {1}}) {
		t.Fatalf("gmig members %+v %+v", jm, gm)
	}
	if n := s.offsets.count("gmig"); n != 2 {
		t.Errorf("gmig has %d offsets, want 2", n)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "gmig", java, 2
	if err := s.heartbeat(hb); err != nil {
		t.Fatalf("classic heartbeat at epoch 2: %v", err)
	}
	if hb.Generation = 1; s.heartbeat(hb) != kerr.IllegalGeneration {
		t.Fatal("classic heartbeat at generation 1 not ILLEGAL_GENERATION")
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "gmig", java, 2
	r, waiting := s.sync(sync, 1)
	golden := goldenRecords(t, 79)
	var kafkaGroup kmsg.GroupMetadataValue
	if err := kafkaGroup.ReadFrom(golden[len(golden)-1].value); err != nil || len(kafkaGroup.Members) != 1 {
		t.Fatalf("golden GroupMetadata at 88: %v %+v", err, kafkaGroup)
	}
	if waiting || r.err != nil || !bytes.Equal(r.assignment, kafkaGroup.Members[0].Assignment) {
		t.Fatalf("classic SyncGroup: %+v waiting %v, want %x", r, waiting, kafkaGroup.Members[0].Assignment)
	}

	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = "gmig", gold, leaveEpoch
	if resp := s.consumerHeartbeat(leave, 1, Client{ID: "gold", Host: "/127.0.0.1"}); resp.resp.ErrorCode != 0 {
		t.Fatalf("leave: %d", resp.resp.ErrorCode)
	}
	writes := s.end().writes
	if len(writes) != 1 {
		t.Fatalf("the leave wrote %d batches, want 1", len(writes))
	}
	ours := writes[0].batch.recs
	if len(ours) != len(golden) {
		t.Fatalf("downgrade wrote %d records, Kafka %d", len(ours), len(golden))
	}
	for i := range golden[:len(golden)-1] {
		if !bytes.Equal(ours[i].key, golden[i].key) || ours[i].value != nil {
			t.Errorf("record %d: key %x value %x, Kafka's tombstone %x", i, ours[i].key, ours[i].value, golden[i].key)
		}
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(ours[len(ours)-1].value); err != nil {
		t.Fatal(err)
	}
	v.CurrentStateTimestamp = kafkaGroup.CurrentStateTimestamp
	if got, want := v.AppendTo(nil), golden[len(golden)-1].value; !bytes.Equal(got, want) || !bytes.Equal(ours[len(ours)-1].key, golden[len(golden)-1].key) {
		t.Fatalf("downgraded GroupMetadata\n%x\nKafka's\n%x", got, want)
	}
	if g.consumer != nil || g.state != statePreparingRebalance || g.generation != 2 || len(g.members) != 1 {
		t.Fatalf("gmig after the leave: %+v", g)
	}
}
