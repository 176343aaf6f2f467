package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitReq is an OffsetCommit of offset 1 for partition 0 of topic.
func commitReq(group, topic string, generation int32, member string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, generation, member
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// txnCommitReq is a TxnOffsetCommit v3 of offset 1 for partition 0 of
// topic, in the producer's transaction.
func txnCommitReq(ip *kmsg.InitProducerIDResponse, txnID, group, topic string, generation int32, member string) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, group, ip.ProducerID, ip.ProducerEpoch
	req.Generation, req.MemberID = generation, member
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// beginOffsetsTxn starts a transaction of txnID that holds group's
// offsets: InitProducerId (retried while __transaction_state loads), then
// AddOffsetsToTxn.
func beginOffsetsTxn(t *testing.T, b *Broker, txnID, group string) *kmsg.InitProducerIDResponse {
	t.Helper()
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = &txnID, 60000
	var r *kmsg.InitProducerIDResponse
	waitUntil(t, 10*time.Second, func() (bool, string) {
		r = adminRoundTrip[*kmsg.InitProducerIDResponse](t, b, ip, 4)
		return r.ErrorCode == 0, fmt.Sprintf("InitProducerId: %v", kerr.ErrorForCode(r.ErrorCode))
	})
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = txnID, r.ProducerID, r.ProducerEpoch, group
	if a := adminRoundTrip[*kmsg.AddOffsetsToTxnResponse](t, b, ao, 3); a.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(a.ErrorCode))
	}
	return r
}

// TestCommitToActiveGroupAnswersAsKafka checks, over the wire, the answers
// Kafka 4.1 gives commits that do not come from a member of a group with
// members (ClassicGroup and ConsumerGroup.validateOffsetCommit): the admin
// commit (generation -1, no member id) of kadm and kafka-consumer-groups is
// UNKNOWN_MEMBER_ID for both group types, while a transactional one needs
// no member fields; a transactional commit of a KIP-848 member is checked
// against its member epoch.
func TestCommitToActiveGroupAnswersAsKafka(t *testing.T) {
	b := startGroupBroker(t)
	adm := newAdmin(t, b)
	const topic = "t"
	if _, err := adm.CreateTopic(testCtx(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	commit := func(what string, req *kmsg.OffsetCommitRequest, version int16, want *kerr.Error) {
		t.Helper()
		r := adminRoundTrip[*kmsg.OffsetCommitResponse](t, b, req, version)
		if got := r.Topics[0].Partitions[0].ErrorCode; got != errCode(want) {
			t.Errorf("%s: OffsetCommit v%d answered %v, want %v", what, version, kerr.ErrorForCode(got), want)
		}
	}
	txnCommit := func(what string, req *kmsg.TxnOffsetCommitRequest, want *kerr.Error) {
		t.Helper()
		r := adminRoundTrip[*kmsg.TxnOffsetCommitResponse](t, b, req, 3)
		if got := r.Topics[0].Partitions[0].ErrorCode; got != errCode(want) {
			t.Errorf("%s: TxnOffsetCommit answered %v, want %v", what, kerr.ErrorForCode(got), want)
		}
	}

	commit("commit to a group that does not exist", commitReq("none", topic, 3, "someone"), 8, kerr.IllegalGeneration)
	commit("commit to a group that does not exist", commitReq("none", topic, 3, "someone"), 9, kerr.GroupIDNotFound)

	// Classic group "g": one member, first completing the rebalance, then stable.
	first := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq("", 30000), 9)
	joined := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq(first.MemberID, 30000), 9)
	if joined.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(joined.ErrorCode))
	}
	commit("admin commit while completing the rebalance", commitReq("g", topic, -1, ""), 8, kerr.UnknownMemberID)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", first.MemberID, joined.Generation
	if r := adminRoundTrip[*kmsg.SyncGroupResponse](t, b, sync, 5); r.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, v := range []int16{2, 8, 9} {
		commit("admin commit", commitReq("g", topic, -1, ""), v, kerr.UnknownMemberID)
	}
	commit("generation without a member id", commitReq("g", topic, joined.Generation, ""), 8, kerr.UnknownMemberID)
	commit("member at generation -1", commitReq("g", topic, -1, first.MemberID), 8, kerr.IllegalGeneration)
	commit("member at its generation", commitReq("g", topic, joined.Generation, first.MemberID), 8, nil)
	var os kadm.Offsets
	os.AddOffset(topic, 0, 0, -1)
	resps, err := adm.CommitOffsets(testCtx(t), "g", os)
	if err != nil {
		t.Fatal(err)
	}
	if err := resps.Error(); !errors.Is(err, kerr.UnknownMemberID) {
		t.Errorf("kadm CommitOffsets to a group with a member: %v, want UNKNOWN_MEMBER_ID", err)
	}
	ip := beginOffsetsTxn(t, b, "txn-classic", "g")
	txnCommit("transactional commit without member fields", txnCommitReq(ip, "txn-classic", "g", topic, -1, ""), nil)
	txnCommit("transactional commit at a wrong generation", txnCommitReq(ip, "txn-classic", "g", topic, joined.Generation+1, first.MemberID), kerr.IllegalGeneration)

	// KIP-848 consumer group "cg" with one member.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "cg", "m1", 0, 30000
	hb.SubscribedTopicNames, hb.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	m := adminRoundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, b, hb, 1)
	if m.ErrorCode != 0 || m.MemberEpoch <= 0 {
		t.Fatalf("consumer group join: %v, epoch %d", kerr.ErrorForCode(m.ErrorCode), m.MemberEpoch)
	}
	commit("admin commit to a consumer group", commitReq("cg", topic, -1, ""), 9, kerr.UnknownMemberID)
	ip = beginOffsetsTxn(t, b, "txn-consumer", "cg")
	txnCommit("transactional commit without member fields", txnCommitReq(ip, "txn-consumer", "cg", topic, -1, ""), nil)
	txnCommit("transactional commit of a stranger", txnCommitReq(ip, "txn-consumer", "cg", topic, -1, "nobody"), kerr.UnknownMemberID)
	txnCommit("transactional commit of a member at a stale epoch", txnCommitReq(ip, "txn-consumer", "cg", topic, -1, "m1"), kerr.IllegalGeneration)
	txnCommit("transactional commit of a member at its epoch", txnCommitReq(ip, "txn-consumer", "cg", topic, m.MemberEpoch, "m1"), nil)
}
