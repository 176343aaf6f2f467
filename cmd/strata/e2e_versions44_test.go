package main

import (
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka 4.4's newest versions of the describe and offset keys, sent by
// hand over TCP and checked against what Apache Kafka 4.4.0 answers the
// same requests (measured side by side; TestKafka44ToolsSideBySide runs
// Kafka's own tools against both).

// Kafka's KIP-430 bit fields without an authorizer: every operation the
// resource type has (AclEntry.supportedOperations).
const (
	allTopicOps   = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11 // 3576
	allClusterOps = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12       // 8096
	allGroupOps   = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11                      // 3400
)

// versions44Setup is a broker with topic t (2 partitions), a group g that
// committed t-0 at 1, and transactional id tx1 with one committed and one
// open transaction on t-1; it returns the broker's address, t's id and
// tx1's producer id.
func versions44Setup(t *testing.T) (string, [16]byte, int64) {
	t.Helper()
	p := startBroker(t, "")
	id, pid := versions44State(t, p.addr)
	return p.addr, id, pid
}

// versions44State is versions44Setup's state made on the broker at addr.
func versions44State(t *testing.T, addr string) ([16]byte, int64) {
	t.Helper()
	cl := newClient(t, addr)
	createTopic(t, cl, "t", 2)
	ctx := timeoutCtx(t, time.Minute)
	tx := newClient(t, addr, kgo.TransactionalID("tx1"), kgo.TransactionTimeout(5*time.Minute), kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i, end := range []bool{true, false} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tx.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}, Partition: 1}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		if end {
			if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	g, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	err = g.CommitRecords(ctx, &kgo.Record{Topic: "t", Partition: 0, Offset: 0, LeaderEpoch: 0})
	g.Close() // leaves g Empty
	if err != nil {
		t.Fatal(err)
	}
	meta := kmsg.NewPtrMetadataRequest()
	resp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var id [16]byte
	for _, mt := range resp.Topics {
		if *mt.Topic == "t" {
			id = mt.TopicID
		}
	}
	pid, _, err := tx.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id, pid
}

// TestKafka44DescribeAnswers: Metadata 13, DescribeCluster 2,
// DescribeGroups 6, DeleteGroups 3, DescribeLogDirs 5 and ListOffsets 11
// answer as Kafka 4.4.0 does: authorized operations without an authorizer
// are every operation of the resource type (the cluster's only up to
// Metadata v10, after which DescribeCluster has them), a group that does
// not exist is GROUP_ID_NOT_FOUND with Kafka's message from DescribeGroups
// v6 and Dead without an error before, a KIP-848 group "is not a classic
// group", DeleteGroups answers a group named twice once, the log dir is
// not cordoned, and the earliest pending upload offset is -1 (no tiered
// storage).
func TestKafka44DescribeAnswers(t *testing.T) {
	e2e(t)
	addr, _, _ := versions44Setup(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	m := kmsg.NewPtrMetadataRequest()
	m.IncludeClusterAuthorizedOperations, m.IncludeTopicAuthorizedOperations = true, true
	m.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("nope")}}
	mr := rawRequest(t, c, m, 13, 1).(*kmsg.MetadataResponse)
	if mr.ErrorCode != 0 || mr.AuthorizedOperations != math.MinInt32 || len(mr.Topics) != 2 ||
		mr.Topics[0].AuthorizedOperations != allTopicOps || len(mr.Topics[0].Partitions) != 2 ||
		mr.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || mr.Topics[1].AuthorizedOperations != allTopicOps {
		t.Errorf("Metadata v13: error %d, cluster ops %d, topics %+v", mr.ErrorCode, mr.AuthorizedOperations, mr.Topics)
	}
	if mr := rawRequest(t, c, m, 10, 2).(*kmsg.MetadataResponse); mr.AuthorizedOperations != allClusterOps {
		t.Errorf("Metadata v10 cluster operations %d, want %d", mr.AuthorizedOperations, allClusterOps)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations, dc.IncludeFencedBrokers, dc.EndpointType = true, true, 1
	dcr := rawRequest(t, c, dc, 2, 3).(*kmsg.DescribeClusterResponse)
	if dcr.ErrorCode != 0 || dcr.ClusterAuthorizedOperations != allClusterOps || len(dcr.Brokers) != 1 || dcr.Brokers[0].IsFenced {
		t.Errorf("DescribeCluster v2: %+v", dcr)
	}

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "cg", "AAAAAAAAAAAAAAAAAAAAAA", 0, 30000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := rawRequest(t, c, hb, 1, 4).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g", "nosuch", "cg"}, true
	type described struct {
		code  int16
		msg   string
		state string
		ops   int32
	}
	groups := func(v int16, corr int32) map[string]described {
		out := map[string]described{}
		for _, g := range rawRequest(t, c, dg, v, corr).(*kmsg.DescribeGroupsResponse).Groups {
			out[g.Group] = described{g.ErrorCode, orEmpty(g.ErrorMessage), g.State, g.AuthorizedOperations}
		}
		return out
	}
	notFound := kerr.GroupIDNotFound.Code
	want6 := map[string]described{
		"g":      {0, "", "Empty", allGroupOps},
		"nosuch": {notFound, "Group nosuch not found.", "Dead", math.MinInt32},
		"cg":     {notFound, "Group cg is not a classic group.", "Dead", math.MinInt32},
	}
	for id, w := range want6 {
		if got := groups(6, 5)[id]; got != w {
			t.Errorf("DescribeGroups v6 %s: %+v, want %+v", id, got, w)
		}
	}
	if got := groups(5, 6)["nosuch"]; got != (described{0, "", "Dead", allGroupOps}) {
		t.Errorf("DescribeGroups v5 nosuch: %+v, want Dead without an error", got)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g", "nosuch", "g"}
	dr := rawRequest(t, c, del, 3, 7).(*kmsg.DeleteGroupsResponse)
	got := map[string]int16{}
	for _, g := range dr.Groups {
		got[g.Group] = g.ErrorCode
		if g.ErrorMessage != nil {
			t.Errorf("DeleteGroups v3 %s: message %q, Kafka sends none", g.Group, *g.ErrorMessage)
		}
	}
	if len(dr.Groups) != 2 || got["g"] != 0 || got["nosuch"] != notFound {
		t.Errorf("DeleteGroups v3: %+v, want g deleted once and nosuch GROUP_ID_NOT_FOUND", dr.Groups)
	}

	dl := kmsg.NewPtrDescribeLogDirsRequest()
	dl.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "t", Partitions: []int32{1}}}
	dlr := rawRequest(t, c, dl, 5, 8).(*kmsg.DescribeLogDirsResponse)
	if len(dlr.Dirs) != 1 || dlr.Dirs[0].IsCordoned || len(dlr.Dirs[0].Topics) != 1 || dlr.Dirs[0].Topics[0].Partitions[0].Size == 0 {
		t.Errorf("DescribeLogDirs v5: %+v", dlr.Dirs)
	}

	for ts, want := range map[int64]int64{-6: -1, -5: -1, -2: 0} {
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 1, Timestamp: ts, CurrentLeaderEpoch: -1}}}}
		p := rawRequest(t, c, lo, 11, 9).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != want {
			t.Errorf("ListOffsets v11 timestamp %d: %v offset %d, want %d", ts, kerr.ErrorForCode(p.ErrorCode), p.Offset, want)
		}
	}
}

// TestKafka44OffsetsByTopicID: OffsetCommit and OffsetFetch v10 name
// topics by id, as Kafka 4.4.0: a commit by id is fetched back by name
// (v9) and by id; an id the broker does not know is UNKNOWN_TOPIC_ID on
// each of its partitions, in both; a fetch of all topics answers with ids.
func TestKafka44OffsetsByTopicID(t *testing.T) {
	e2e(t)
	addr, id, _ := versions44Setup(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	unknown := [16]byte{1, 2, 3}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g2", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: id, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 7, LeaderEpoch: -1}, {Partition: 9, Offset: 1}}},
		{TopicID: unknown, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}},
	}
	ocr := rawRequest(t, c, oc, 10, 1).(*kmsg.OffsetCommitResponse)
	codes := map[[16]byte]map[int32]int16{}
	for _, rt := range ocr.Topics {
		codes[rt.TopicID] = map[int32]int16{}
		for _, p := range rt.Partitions {
			codes[rt.TopicID][p.Partition] = p.ErrorCode
		}
	}
	if codes[id][1] != 0 || codes[id][9] != kerr.UnknownTopicOrPartition.Code || codes[unknown][0] != kerr.UnknownTopicID.Code {
		t.Errorf("OffsetCommit v10: %v", codes)
	}

	byName := kmsg.NewPtrOffsetFetchRequest()
	byName.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g2", MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{1}}}}}
	if g := rawRequest(t, c, byName, 9, 2).(*kmsg.OffsetFetchResponse).Groups[0]; len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Errorf("OffsetFetch v9 of the commit by id: %+v", g.Topics)
	}

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g2", MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{0, 1}}, {TopicID: unknown, Partitions: []int32{0}}}},
		{Group: "g2", MemberEpoch: -1},
	}
	ofr := rawRequest(t, c, of, 10, 3).(*kmsg.OffsetFetchResponse)
	type fetched struct {
		offset int64
		code   int16
	}
	gotOffsets := func(g kmsg.OffsetFetchResponseGroup) map[[16]byte]map[int32]fetched {
		out := map[[16]byte]map[int32]fetched{}
		for _, rt := range g.Topics {
			out[rt.TopicID] = map[int32]fetched{}
			for _, p := range rt.Partitions {
				out[rt.TopicID][p.Partition] = fetched{p.Offset, p.ErrorCode}
			}
		}
		return out
	}
	named := gotOffsets(ofr.Groups[0])
	if named[id][0] != (fetched{-1, 0}) || named[id][1] != (fetched{7, 0}) || named[unknown][0] != (fetched{-1, kerr.UnknownTopicID.Code}) {
		t.Errorf("OffsetFetch v10 by id: %v", named)
	}
	if all := gotOffsets(ofr.Groups[1]); len(all) != 1 || all[id][1] != (fetched{7, 0}) {
		t.Errorf("OffsetFetch v10 of all topics: %v, want t-1 at 7 under t's id", all)
	}
}

// TestKafka44TransactionsAnswers: ListTransactions 2 filters by a regular
// expression matched against the whole id (INVALID_REGULAR_EXPRESSION for
// one that does not compile, every id for an empty one), and
// DescribeProducers 0 lists tx1's producer on t-1 with its open
// transaction's first offset and last sequence, as Kafka 4.4.0; a topic
// that does not exist or an invalid name fails each partition asked with
// Kafka's message, a partition that does not exist without one.
func TestKafka44TransactionsAnswers(t *testing.T) {
	e2e(t)
	addr, _, pid := versions44Setup(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	for i, tc := range []struct {
		pattern string
		code    int16
		ids     int
	}{{"tx.*", 0, 1}, {"tx", 0, 0}, {"x1", 0, 0}, {"", 0, 1}, {"(", kerr.InvalidRegularExpression.Code, 0}, {"a)|(b", kerr.InvalidRegularExpression.Code, 0}} {
		lt := kmsg.NewPtrListTransactionsRequest()
		lt.DurationFilterMillis, lt.TransactionalIDPattern = -1, kmsg.StringPtr(tc.pattern)
		r := rawRequest(t, c, lt, 2, int32(i+1)).(*kmsg.ListTransactionsResponse)
		if r.ErrorCode != tc.code || len(r.TransactionStates) != tc.ids {
			t.Errorf("ListTransactions v2 %q: %v, %d ids; want %v, %d", tc.pattern, kerr.ErrorForCode(r.ErrorCode), len(r.TransactionStates),
				kerr.ErrorForCode(tc.code), tc.ids)
		}
	}

	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0, 1, 7}}, {Topic: "nosuch", Partitions: []int32{0}}, {Topic: "bad/name", Partitions: []int32{0}}}
	r := rawRequest(t, c, dp, 0, 10).(*kmsg.DescribeProducersResponse)
	if len(r.Topics) != 3 || len(r.Topics[0].Partitions) != 3 {
		t.Fatalf("DescribeProducers: %+v", r.Topics)
	}
	t0, t1, t7 := r.Topics[0].Partitions[0], r.Topics[0].Partitions[1], r.Topics[0].Partitions[2]
	if t0.ErrorCode != 0 || len(t0.ActiveProducers) != 0 {
		t.Errorf("t-0: %+v, want no producers", t0)
	}
	if t1.ErrorCode != 0 || len(t1.ActiveProducers) != 1 {
		t.Fatalf("t-1: %+v, want tx1's producer", t1)
	}
	// Record 0 at offset 0, its commit marker at 1, record 1 opening the
	// second transaction at 2: with transactions v2 the commit bumped the
	// epoch, so the record is the new epoch's sequence 0, as on Kafka 4.4.0.
	ap := t1.ActiveProducers[0]
	if ap.ProducerID != pid || ap.ProducerEpoch != 1 || ap.LastSequence != 0 || ap.CurrentTxnStartOffset != 2 || ap.CoordinatorEpoch != 0 ||
		time.Since(time.UnixMilli(ap.LastTimestamp)) > time.Minute {
		t.Errorf("t-1 producer %+v, want id %d at epoch 1, last sequence 0, transaction from 2", ap, pid)
	}
	if t7.ErrorCode != kerr.UnknownTopicOrPartition.Code || t7.ErrorMessage != nil {
		t.Errorf("t-7: %v %v, want UNKNOWN_TOPIC_OR_PARTITION without a message", kerr.ErrorForCode(t7.ErrorCode), orEmpty(t7.ErrorMessage))
	}
	for i, want := range []struct {
		code int16
		msg  string
	}{
		{kerr.UnknownTopicOrPartition.Code, "This server does not host this topic-partition."},
		{kerr.InvalidTopicException.Code, "Topic name is invalid: 'bad/name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
	} {
		if p := r.Topics[i+1].Partitions[0]; p.ErrorCode != want.code || orEmpty(p.ErrorMessage) != want.msg {
			t.Errorf("%s: %v %q, want %v %q", r.Topics[i+1].Topic, kerr.ErrorForCode(p.ErrorCode), orEmpty(p.ErrorMessage), kerr.ErrorForCode(want.code), want.msg)
		}
	}
}

// orEmpty is *s, "" for nil.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
