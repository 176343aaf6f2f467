package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMaxSize: with group.max.size=1 a classic group refuses a second
// member with GROUP_MAX_SIZE_REACHED while keeping its member (who may
// rejoin), and takes a new one after that member leaves; with
// group.consumer.max.size=1 a KIP-848 group refuses a second member's first
// heartbeat with Kafka's message.
func TestGroupMaxSize(t *testing.T) {
	b := startBroker(t, func(c *Config) {
		c.Groups.MaxSize, c.Groups.ConsumerMaxSize = 1, 1
		c.Groups.ConsumerSessionTimeout, c.Groups.ConsumerHeartbeatInterval = test848Session, test848Heartbeat
	})
	waitUntil(t, 10*time.Second, func() (bool, string) { return b.groups.Loaded(), "groups not loaded" })

	first := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq("", 6000), 3)
	if first.ErrorCode != 0 || first.MemberID == "" || first.Generation != 1 {
		t.Fatalf("first member: %v, %+v", kerr.ErrorForCode(first.ErrorCode), first)
	}
	second := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq("", 6000), 3)
	if second.ErrorCode != kerr.GroupMaxSizeReached.Code || second.MemberID != "" {
		t.Fatalf("second member of a group of at most 1: %v, member id %q", kerr.ErrorForCode(second.ErrorCode), second.MemberID)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", first.MemberID, 1
	if r := adminRoundTrip[*kmsg.SyncGroupResponse](t, b, sync, 3); r.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq(first.MemberID, 6000), 3); r.ErrorCode != 0 || r.Generation != 2 {
		t.Fatalf("the member of a full group rejoining: %v, generation %d", kerr.ErrorForCode(r.ErrorCode), r.Generation)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g", first.MemberID
	if r := adminRoundTrip[*kmsg.LeaveGroupResponse](t, b, leave, 2); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, joinReq("", 6000), 3); r.ErrorCode != 0 || r.MemberID == "" {
		t.Fatalf("a new member after the first left: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	if _, err := newAdmin(t, b).CreateTopic(testCtx(t), 2, 1, nil, "sized"); err != nil {
		t.Fatal(err)
	}
	hb := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "g848", member, epoch
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{"sized"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return adminRoundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, b, req, 1)
	}
	m1 := hb("m1", 0)
	if m1.ErrorCode != 0 || m1.MemberEpoch != 1 {
		t.Fatalf("first consumer: %v", kerr.ErrorForCode(m1.ErrorCode))
	}
	m2 := hb("m2", 0)
	const msg = "The consumer group has reached its maximum capacity of 1 members."
	if m2.ErrorCode != kerr.GroupMaxSizeReached.Code || m2.ErrorMessage == nil || *m2.ErrorMessage != msg {
		t.Fatalf("second consumer of a group of at most 1: %v (%v)", kerr.ErrorForCode(m2.ErrorCode), m2.ErrorMessage)
	}
	if r := hb("m1", m1.MemberEpoch); r.ErrorCode != 0 {
		t.Fatalf("the member of a full group heartbeating: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
