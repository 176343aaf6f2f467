package broker

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterShareOffsets(t *testing.T, cl *kgo.Client, group string, topics map[string]int64, partition int32) *kmsg.AlterShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = name
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = partition, topics[name]
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func describeShareOffsets(t *testing.T, cl *kgo.Client, group string, topics ...string) kmsg.DescribeShareGroupOffsetsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	for _, name := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		g.Topics = append(g.Topics, rt)
	}
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("DescribeShareGroupOffsets: %v %+v", err, resp)
	}
	return resp.Groups[0]
}

func deleteShareOffsets(t *testing.T, cl *kgo.Client, group string, topics ...string) *kmsg.DeleteShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, name := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// byTopic is each topic's first partition's error code, start offset and lag.
func describedByTopic(g kmsg.DescribeShareGroupOffsetsResponseGroup) map[string][3]int64 {
	out := map[string][3]int64{}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = [3]int64{int64(p.ErrorCode), p.StartOffset, p.Lag}
		}
	}
	return out
}

// TestShareGroupOffsetsAuthorizationAsKafka44: Kafka 4.4's KafkaApis
// checks for the share group offset keys (DESCRIBE on the group and the
// topics for Describe, READ for Alter, DELETE on the group and READ on
// the topics for Delete) and GroupCoordinatorService's answers: the lag
// of an altered start offset, UNKNOWN_TOPIC_OR_PARTITION for an unknown
// topic or partition and a topic without share state, NON_EMPTY_GROUP
// while a member is active, GROUP_ID_NOT_FOUND for Delete of an unknown
// group or of a consumer group.
func TestShareGroupOffsetsAuthorizationAsKafka44(t *testing.T) {
	authz := &ruleAuthorizer{}
	b := startBroker(t, func(c *Config) { c.Authorizer, c.UnstableAPIVersions = authz, true })
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(cl).CreateTopics(testCtx(t), 1, 1, nil, "a-ok", "a-no"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "a-ok", Value: []byte("1")}, &kgo.Record{Topic: "a-ok", Value: []byte("2")},
		&kgo.Record{Topic: "a-ok", Value: []byte("3")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const group = "sg"

	// Alter makes the group and initializes the share state.
	authz.set(authzRule{OpRead, ResourceTopic, "a-no"})
	r := alterShareOffsets(t, cl, group, map[string]int64{"a-ok": 1, "a-no": 0, "nosuch": 0}, 0)
	got := map[string]int16{}
	for _, rt := range r.Topics {
		got[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if r.ErrorCode != 0 || got["a-ok"] != 0 || got["a-no"] != kerr.TopicAuthorizationFailed.Code || got["nosuch"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("alter: %v %v", kerr.ErrorForCode(r.ErrorCode), got)
	}
	if r := alterShareOffsets(t, cl, group, map[string]int64{"a-ok": 0}, 5); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("alter of partition 5 of a 1-partition topic: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	authz.set(authzRule{OpRead, ResourceGroup, group})
	if r := alterShareOffsets(t, cl, group, map[string]int64{"a-ok": 0}, 0); r.ErrorCode != kerr.GroupAuthorizationFailed.Code || len(r.Topics) != 0 {
		t.Fatalf("alter without READ on the group: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	authz.set()
	if r := alterShareOffsets(t, cl, group, map[string]int64{"a-no": 0}, 0); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter of a-no: %+v", r)
	}

	// Describe: lag = latest offset 3 - start offset 1 - 0 delivered.
	if d := describedByTopic(describeShareOffsets(t, cl, group)); len(d) != 2 || d["a-ok"] != [3]int64{0, 1, 2} || d["a-no"] != [3]int64{0, 0, 0} {
		t.Fatalf("describe of all topics: %v, want a-ok start 1 lag 2 and a-no start 0 lag 0", d)
	}
	authz.set(authzRule{OpDescribe, ResourceTopic, "a-no"})
	if d := describedByTopic(describeShareOffsets(t, cl, group)); len(d) != 1 || d["a-ok"] != [3]int64{0, 1, 2} {
		t.Fatalf("describe of all topics without DESCRIBE on a-no: %v, want a-ok alone", d)
	}
	d := describedByTopic(describeShareOffsets(t, cl, group, "a-ok", "a-no", "nosuch"))
	if d["a-no"] != [3]int64{int64(kerr.TopicAuthorizationFailed.Code), -1, -1} || d["nosuch"] != [3]int64{0, -1, -1} || d["a-ok"] != [3]int64{0, 1, 2} {
		t.Fatalf("describe of named topics: %v", d)
	}
	authz.set(authzRule{OpDescribe, ResourceGroup, group})
	if g := describeShareOffsets(t, cl, group); g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe without DESCRIBE on the group: %v", kerr.ErrorForCode(g.ErrorCode))
	}

	// An active member: Alter and Delete refused.
	authz.set()
	m := &shareMember{id: "member-a"}
	m.beat(t, cl, group, []string{"a-ok"})
	if r := alterShareOffsets(t, cl, group, map[string]int64{"a-ok": 0}, 0); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := deleteShareOffsets(t, cl, group, "a-ok"); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := shareHB(t, cl, group, m.id, -1, nil); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// Delete.
	authz.set(authzRule{OpDelete, ResourceGroup, group})
	if r := deleteShareOffsets(t, cl, group, "a-ok"); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without DELETE on the group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	authz.set(authzRule{OpRead, ResourceTopic, "a-no"}, authzRule{OpRead, ResourceGroup, group})
	dr := deleteShareOffsets(t, cl, group, "a-ok", "a-no", "nosuch")
	deleted := map[string]int16{}
	for _, rt := range dr.Topics {
		deleted[rt.Topic] = rt.ErrorCode
	}
	if dr.ErrorCode != 0 || len(deleted) != 3 || deleted["a-ok"] != 0 || deleted["a-no"] != kerr.TopicAuthorizationFailed.Code ||
		deleted["nosuch"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %v %v", kerr.ErrorForCode(dr.ErrorCode), deleted)
	}
	authz.set()
	if dr := deleteShareOffsets(t, cl, group, "a-ok"); dr.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		deref(dr.Topics[0].ErrorMessage) != "There is no offset information to delete." {
		t.Fatalf("delete of a topic without share state: %+v", dr.Topics)
	}
	if d := describedByTopic(describeShareOffsets(t, cl, group)); len(d) != 1 || d["a-no"] != [3]int64{0, 0, 0} {
		t.Fatalf("describe after a-ok's deletion: %v, want a-no alone", d)
	}
	if d := describedByTopic(describeShareOffsets(t, cl, group, "a-ok")); d["a-ok"] != [3]int64{0, -1, -1} {
		t.Fatalf("a-ok after its deletion: %v, want start offset -1", d)
	}
	if dr := deleteShareOffsets(t, cl, "nosuch", "a-ok"); dr.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete of an unknown group: %v", kerr.ErrorForCode(dr.ErrorCode))
	}
	if _, err := kadm.NewClient(cl).CommitOffsets(testCtx(t), "classic", kadm.OffsetsFromRecords(kgo.Record{Topic: "a-ok", Offset: 1})); err != nil {
		t.Fatal(err)
	}
	if dr := deleteShareOffsets(t, cl, "classic", "a-ok"); dr.ErrorCode != kerr.GroupIDNotFound.Code || deref(dr.ErrorMessage) != "Group classic is not a share group." {
		t.Fatalf("delete of a consumer group: %v %q", kerr.ErrorForCode(dr.ErrorCode), deref(dr.ErrorMessage))
	}
}
