package broker

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// Raw requests at pinned versions check the error codes of the group APIs.

// startGroupBroker starts a broker and waits until __consumer_offsets is
// loaded, so raw requests never see COORDINATOR_LOAD_IN_PROGRESS.
func startGroupBroker(t *testing.T) *Broker {
	b := startBroker(t, nil)
	waitUntil(t, 10*time.Second, func() (bool, string) { return b.groups.Loaded(), "groups not loaded" })
	return b
}

func TestFindCoordinator(t *testing.T) {
	b := startGroupBroker(t)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = "g"
	// As Kafka's getCoordinator: the request that creates the internal
	// topic is answered COORDINATOR_NOT_AVAILABLE, the next one finds it.
	r3 := adminRoundTrip[*kmsg.FindCoordinatorResponse](t, b, req, 3)
	if r3.ErrorCode != kerr.CoordinatorNotAvailable.Code || r3.NodeID != -1 || r3.ErrorMessage == nil || *r3.ErrorMessage != "The coordinator is not available." {
		t.Fatalf("v3 creating %s: %+v", coordinator.OffsetsTopic, r3)
	}
	r3 = adminRoundTrip[*kmsg.FindCoordinatorResponse](t, b, req, 3)
	if r3.ErrorCode != 0 || r3.NodeID != testNodeID || r3.Port != int32(b.Addr().(*net.TCPAddr).Port) || r3.ErrorMessage == nil || *r3.ErrorMessage != "NONE" {
		t.Fatalf("v3: %+v", r3)
	}
	req = kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"a", "b"}
	r6 := adminRoundTrip[*kmsg.FindCoordinatorResponse](t, b, req, 6)
	if len(r6.Coordinators) != 2 || r6.Coordinators[1].Key != "b" || r6.Coordinators[1].NodeID != testNodeID {
		t.Fatalf("v6 batch: %+v", r6.Coordinators)
	}
	req.CoordinatorType = 1
	r6 = adminRoundTrip[*kmsg.FindCoordinatorResponse](t, b, req, 6)
	if c := r6.Coordinators[0]; c.ErrorCode != kerr.CoordinatorNotAvailable.Code || c.NodeID != -1 || c.ErrorMessage == nil || *c.ErrorMessage != "" {
		t.Fatalf("transaction key creating %s: %+v", coordinator.TxnStateTopic, c)
	}
	r6 = adminRoundTrip[*kmsg.FindCoordinatorResponse](t, b, req, 6)
	if c := r6.Coordinators[0]; c.ErrorCode != 0 || c.NodeID != testNodeID || c.Port != int32(b.Addr().(*net.TCPAddr).Port) {
		t.Fatalf("transaction key: %+v", c)
	}
}

func joinReq(member string, sessionMs int32) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMs, 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return req
}

func TestGroupProtocolErrors(t *testing.T) {
	b := startGroupBroker(t)
	if r := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq("", 10), 9); r.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session timeout below the minimum: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	first := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq("", 6000), 9)
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		t.Fatalf("v9 join without member id: %v %q", kerr.ErrorForCode(first.ErrorCode), first.MemberID)
	}
	joined := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq(first.MemberID, 6000), 9)
	if joined.ErrorCode != 0 || joined.Generation != 1 || joined.LeaderID != first.MemberID || len(joined.Members) != 1 ||
		joined.Protocol == nil || *joined.Protocol != "range" {
		t.Fatalf("join: %+v", joined)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", first.MemberID, 1
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = first.MemberID, []byte("mine")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	if r := adminRoundTrip[*kmsg.SyncGroupResponse](t, b, sync, 5); r.ErrorCode != 0 || string(r.MemberAssignment) != "mine" {
		t.Fatalf("sync: %v %q", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "nobody", 1
	if r := adminRoundTrip[*kmsg.HeartbeatResponse](t, b, hb, 4); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of an unknown member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	hb.MemberID, hb.Generation = first.MemberID, 7
	if r := adminRoundTrip[*kmsg.HeartbeatResponse](t, b, hb, 4); r.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat at a wrong generation: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g", "missing"}
	r := adminRoundTrip[*kmsg.DeleteGroupsResponse](t, b, del, 2)
	if r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || r.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: %+v", r.Groups)
	}

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = first.MemberID
	leave.Members = append(leave.Members, m)
	if r := adminRoundTrip[*kmsg.LeaveGroupResponse](t, b, leave, 5); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g"}
	if r := adminRoundTrip[*kmsg.DescribeGroupsResponse](t, b, d, 5); r.Groups[0].State != "Empty" || len(r.Groups[0].Members) != 0 {
		t.Fatalf("after leaving: %+v", r.Groups[0])
	}
	if r := adminRoundTrip[*kmsg.DeleteGroupsResponse](t, b, del, 2); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete of the empty group: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
}

func TestSimpleCommitAndFetch(t *testing.T) {
	b := startGroupBroker(t)
	if _, err := newAdmin(t, b).CreateTopic(testCtx(t), 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "simple", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	for _, p := range []int32{0, 9} {
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch = p, 5, 0
		ct.Partitions = append(ct.Partitions, cp)
	}
	commit.Topics = append(commit.Topics, ct)
	cr := adminRoundTrip[*kmsg.OffsetCommitResponse](t, b, commit, 9)
	if ps := cr.Topics[0].Partitions; ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit: %+v", ps)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "simple"
	ft := kmsg.NewOffsetFetchRequestGroupTopic()
	ft.Topic, ft.Partitions = "t", []int32{0, 1}
	g.Topics = append(g.Topics, ft)
	fetch.Groups = append(fetch.Groups, g)
	fr := adminRoundTrip[*kmsg.OffsetFetchResponse](t, b, fetch, 9)
	ps := fr.Groups[0].Topics[0].Partitions
	if ps[0].Offset != 5 || ps[0].LeaderEpoch != 0 || ps[1].Offset != -1 || ps[1].LeaderEpoch != -1 {
		t.Fatalf("fetch v9: %+v", ps)
	}
	old := kmsg.NewPtrOffsetFetchRequest()
	old.Group = "simple"
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = "t", []int32{0}
	old.Topics = append(old.Topics, ot)
	if r := adminRoundTrip[*kmsg.OffsetFetchResponse](t, b, old, 1); r.Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("fetch v1: %+v", r.Topics)
	}

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "simple"
	dt := kmsg.NewOffsetDeleteRequestTopic()
	dt.Topic = "t"
	dp := kmsg.NewOffsetDeleteRequestTopicPartition()
	dp.Partition = 0
	dt.Partitions = append(dt.Partitions, dp)
	od.Topics = append(od.Topics, dt)
	if r := adminRoundTrip[*kmsg.OffsetDeleteResponse](t, b, od, 0); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", r)
	}
	if r := adminRoundTrip[*kmsg.OffsetFetchResponse](t, b, old, 1); r.Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("fetch after delete: %+v", r.Topics)
	}
}

func TestOffsetsTopicIsInternal(t *testing.T) {
	b := startGroupBroker(t)
	findCoordinator(t, b, 0, "g") // creates __consumer_offsets
	md := kmsg.NewPtrMetadataRequest()
	topic := "__consumer_offsets"
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &topic
	md.Topics = append(md.Topics, mt)
	r := adminRoundTrip[*kmsg.MetadataResponse](t, b, md, 12)
	if !r.Topics[0].IsInternal || len(r.Topics[0].Partitions) != 50 {
		t.Fatalf("metadata: internal %v, %d partitions", r.Topics[0].IsInternal, len(r.Topics[0].Partitions))
	}
	p := kmsg.NewPtrProduceRequest()
	p.Acks = -1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch(t, 1)
	pt.Partitions = append(pt.Partitions, pp)
	p.Topics = append(p.Topics, pt)
	if r := adminRoundTrip[*kmsg.ProduceResponse](t, b, p, 11); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to __consumer_offsets: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
}
