package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 tests: franz-go in its next-gen mode (kgo.ServerSideBalancer with
// the sticky balancer, which asks for the "uniform" server assignor, or
// the range balancer, "range") against an in-process broker with a short
// consumer session timeout.

const (
	test848Session   = 3 * time.Second
	test848Heartbeat = 200 * time.Millisecond
)

func start848Broker(t *testing.T) *Broker {
	t.Helper()
	return startBroker(t, func(c *Config) {
		c.Groups.ConsumerSessionTimeout = test848Session
		c.Groups.ConsumerHeartbeatInterval = test848Heartbeat
	})
}

// describe848 is the group as ConsumerGroupDescribe v1 shows it.
func describe848(t *testing.T, b *Broker, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	r := adminRoundTrip[*kmsg.ConsumerGroupDescribeResponse](t, b, req, 1)
	if len(r.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %d groups", len(r.Groups))
	}
	return r.Groups[0]
}

func TestConsumerGroup848SplitCommitAndResume(t *testing.T) {
	for _, bal := range []struct {
		name, assignor string
		b              kgo.GroupBalancer
	}{
		{"uniform", "uniform", kgo.CooperativeStickyBalancer()},
		{"range", "range", kgo.RangeBalancer()},
	} {
		t.Run(bal.name, func(t *testing.T) {
			t.Parallel()
			b := start848Broker(t)
			adm := newAdmin(t, b)
			const topic, group = "orders", "g848"
			if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			own := newOwnership(t)
			recs := make(chan *kgo.Record, 1000)
			a := startMember(t, b, group, topic, recs, append(own.opts("a"), kgo.Balancers(bal.b), kgo.ServerSideBalancer())...)
			c := startMember(t, b, group, topic, recs, append(own.opts("c"), kgo.Balancers(bal.b), kgo.ServerSideBalancer())...)
			waitUntil(t, 20*time.Second, func() (bool, string) {
				h := own.held()
				return len(h["a"]) > 0 && len(h["c"]) > 0 && len(h["a"])+len(h["c"]) == 3, fmt.Sprintf("held %v", h)
			})
			waitUntil(t, 10*time.Second, func() (bool, string) {
				d := describe848(t, b, group)
				return d.State == "Stable" && len(d.Members) == 2 && d.AssignorName == bal.assignor,
					fmt.Sprintf("state %s, %d members, assignor %s", d.State, len(d.Members), d.AssignorName)
			})
			lg, err := adm.ListGroups(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := lg[group]; !ok || l.ProtocolType != "consumer" || l.State != "Stable" {
				t.Fatalf("ListGroups: %+v", lg)
			}

			produceN(t, newClient(t, b), topic, 0, 300)
			end := endOffsetsOf(t, adm, topic)
			collect(t, recs, end)
			waitUntil(t, 10*time.Second, func() (bool, string) {
				got := committedOf(t, adm, group, topic)
				return fmt.Sprint(got) == fmt.Sprint(end), fmt.Sprintf("committed %v, end offsets %v", got, end)
			})
			a.stop()
			c.stop()
			waitUntil(t, 10*time.Second, func() (bool, string) {
				d := describe848(t, b, group)
				return d.State == "Empty", fmt.Sprintf("state %s after both left", d.State)
			})

			// A new member resumes exactly after the committed offsets.
			produceN(t, newClient(t, b), topic, 300, 400)
			fresh := make(chan *kgo.Record, 1000)
			startMember(t, b, group, topic, fresh, kgo.Balancers(bal.b), kgo.ServerSideBalancer())
			next := map[int32]int64{}
			for p, o := range end {
				next[p] = o
			}
			for i := 0; i < 100; i++ {
				select {
				case r := <-fresh:
					if r.Offset != next[r.Partition] {
						t.Fatalf("partition %d: resumed at offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
					}
					next[r.Partition]++
				case <-time.After(30 * time.Second):
					t.Fatalf("only %d of 100 new records consumed", i)
				}
			}
		})
	}
}

func TestConsumerGroup848MemberKilledLosesPartitions(t *testing.T) {
	t.Parallel()
	b := start848Broker(t)
	adm := newAdmin(t, b)
	const topic, group = "jobs", "g848"
	if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	own := newOwnership(t)
	recs := make(chan *kgo.Record, 1000)
	go func() {
		for range recs {
		}
	}()
	d := &killableDialer{}
	next := []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer()}
	startMember(t, b, group, topic, recs, append(append(own.opts("doomed"), kgo.Dialer(d.dial)), next...)...)
	startMember(t, b, group, topic, recs, append(own.opts("survivor"), next...)...)
	waitUntil(t, 20*time.Second, func() (bool, string) {
		h := own.held()
		return len(h["doomed"]) > 0 && len(h["survivor"]) > 0, fmt.Sprintf("held %v", h)
	})
	start := time.Now()
	d.kill()
	waitUntil(t, test848Session+10*time.Second, func() (bool, string) {
		g := describe848(t, b, group)
		if g.State != "Stable" || len(g.Members) != 1 {
			return false, fmt.Sprintf("state %s with %d members", g.State, len(g.Members))
		}
		h := own.held()
		return len(h["survivor"]) == 3, fmt.Sprintf("survivor holds %v", h["survivor"])
	})
	if took := time.Since(start); took < test848Session-time.Second {
		t.Fatalf("partitions moved after %v, before the session timeout", took)
	}
}

// TestConsumerGroup848Raw drives the protocol with raw requests: join,
// revocation before reassignment, epochs checked on commit and fetch,
// leave, and the errors of bad heartbeats.
func TestConsumerGroup848Raw(t *testing.T) {
	t.Parallel()
	b := start848Broker(t)
	adm := newAdmin(t, b)
	const topic, group = "raw", "graw"
	if _, err := adm.CreateTopic(testCtx(t), 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	id := b.logs.Topic(topic).ID
	hb := func(member string, epoch int32, owned []int32, mutate func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{topic}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(owned) > 0 {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: id, Partitions: owned}}
		}
		if mutate != nil {
			mutate(req)
		}
		return adminRoundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, b, req, 1)
	}
	assigned := func(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
		if r.Assignment == nil {
			return nil
		}
		var out []int32
		for _, at := range r.Assignment.Topics {
			out = append(out, at.Partitions...)
		}
		return out
	}
	wantErr := func(what string, r *kmsg.ConsumerGroupHeartbeatResponse, want *kerr.Error) {
		t.Helper()
		if r.ErrorCode != want.Code {
			t.Fatalf("%s: error %v (%v), want %v", what, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, want)
		}
	}

	r := hb("m1", 0, nil, nil)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || fmt.Sprint(assigned(r)) != "[0 1 2 3]" || r.HeartbeatIntervalMillis != 200 {
		t.Fatalf("join m1: epoch %d, assignment %v, interval %d", r.MemberEpoch, assigned(r), r.HeartbeatIntervalMillis)
	}
	// m2 joins: the target gives it two partitions, but m1 still owns
	// them, so m2 gets nothing until m1 revoked.
	r2 := hb("m2", 0, nil, nil)
	if r2.ErrorCode != 0 || r2.MemberEpoch != 2 || len(assigned(r2)) != 0 {
		t.Fatalf("join m2: %v epoch %d assignment %v", kerr.ErrorForCode(r2.ErrorCode), r2.MemberEpoch, assigned(r2))
	}
	r = hb("m1", 1, []int32{0, 1, 2, 3}, nil)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || len(assigned(r)) != 2 {
		t.Fatalf("m1 asked to revoke: %v epoch %d assignment %v", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, assigned(r))
	}
	kept := assigned(r)
	if r2 = hb("m2", 2, nil, nil); len(assigned(r2)) != 0 {
		t.Fatalf("m2 got %v while m1 still owns them", assigned(r2))
	}
	// A commit at m1's epoch is accepted; at an old epoch it is stale.
	commit := func(member string, epoch int32, version int16) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = kept[0], 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return adminRoundTrip[*kmsg.OffsetCommitResponse](t, b, req, version).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit("m1", 1, 9); code != 0 {
		t.Fatalf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("m1", 0, 9); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a stale epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("m1", 1, 8); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("commit v8 from a consumer-protocol member: %v", kerr.ErrorForCode(code))
	}
	if code := commit("nobody", 1, 9); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit from an unknown member: %v", kerr.ErrorForCode(code))
	}
	fetch := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = group, kmsg.StringPtr(member), epoch
		req.Groups = append(req.Groups, g)
		return adminRoundTrip[*kmsg.OffsetFetchResponse](t, b, req, 9).Groups[0].ErrorCode
	}
	if code := fetch("m1", 1); code != 0 {
		t.Fatalf("fetch at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := fetch("m1", 7); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch at a wrong epoch: %v", kerr.ErrorForCode(code))
	}

	// m1 acknowledges: it moves to epoch 2 and m2 gets the released two.
	r = hb("m1", 1, kept, nil)
	if r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("m1 after revoking: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	r2 = hb("m2", 2, nil, nil)
	if len(assigned(r2)) != 2 {
		t.Fatalf("m2 after m1 revoked: assignment %v", assigned(r2))
	}
	if d := describe848(t, b, group); d.State != "Stable" || d.Epoch != 2 || d.AssignmentEpoch != 2 || len(d.Members) != 2 ||
		d.Members[0].MemberType != 1 || len(d.Members[0].Assignment.TopicPartitions) != 1 ||
		d.Members[0].Assignment.TopicPartitions[0].Topic != topic {
		t.Fatalf("describe: %+v", d)
	}

	wantErr("epoch from the future", hb("m1", 9, kept, nil), kerr.FencedMemberEpoch)
	wantErr("unknown member", hb("m9", 3, nil, nil), kerr.UnknownMemberID)
	wantErr("empty member id", hb("", 0, nil, nil), kerr.InvalidRequest)
	wantErr("unknown assignor", hb("m3", 0, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }),
		kerr.UnsupportedAssignor)
	wantErr("bad regex", hb("m3", 0, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("(") }),
		kerr.InvalidRegularExpression)
	wantErr("join owning partitions", hb("m3", 0, []int32{1}, nil), kerr.InvalidRequest)

	// A classic JoinGroup of another protocol type cannot join a consumer
	// group with members (one of type consumer joins it as a classic
	// member: coordinator/testdata/groups/migrate.txt).
	jr := adminRoundTrip[*kmsg.JoinGroupResponse](t, b, func() kmsg.Request {
		r := joinReq("", 10000)
		r.Group, r.ProtocolType = group, "connect"
		return r
	}(), 5)
	if jr.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join to a consumer group: %v", kerr.ErrorForCode(jr.ErrorCode))
	}

	// m1 leaves: m2 takes everything on its next heartbeat.
	if r = hb("m1", -1, nil, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	r2 = hb("m2", 2, assigned(r2), nil)
	if r2.MemberEpoch != 3 || len(assigned(r2)) != 4 {
		t.Fatalf("m2 after m1 left: epoch %d assignment %v", r2.MemberEpoch, assigned(r2))
	}
	if r = hb("m2", -1, nil, nil); r.ErrorCode != 0 {
		t.Fatalf("m2 leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := describe848(t, b, group); d.State != "Empty" {
		t.Fatalf("after both left: %s", d.State)
	}
	// The committed offset stays; an empty group takes commits at epoch -1.
	if code := commit("", -1, 9); code != 0 {
		t.Fatalf("simple commit to the empty consumer group: %v", kerr.ErrorForCode(code))
	}
}

// TestConsumerGroup848StaticMember: a static member leaving with epoch -2
// keeps its partitions, and the same group.instance.id under a new member
// id takes them back without a new group epoch; a second live member with
// that instance id is UNRELEASED_INSTANCE_ID.
func TestConsumerGroup848StaticMember(t *testing.T) {
	t.Parallel()
	b := start848Broker(t)
	adm := newAdmin(t, b)
	const topic, group = "static848", "gstatic"
	if _, err := adm.CreateTopic(testCtx(t), 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	hb := func(member, instance string, epoch int32, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = group, member, epoch, kmsg.StringPtr(instance)
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{topic}
		req.ServerAssignor = kmsg.StringPtr("range")
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(owned) > 0 {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: b.logs.Topic(topic).ID, Partitions: owned}}
		}
		r := adminRoundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, b, req, 1)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat %s/%s epoch %d: %v %v", member, instance, epoch, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
		return r
	}
	parts := func(r *kmsg.ConsumerGroupHeartbeatResponse) string {
		if r.Assignment == nil {
			return "none"
		}
		var out []int32
		for _, at := range r.Assignment.Topics {
			out = append(out, at.Partitions...)
		}
		return fmt.Sprint(out)
	}
	a := hb("a1", "ia", 0, nil) // epoch 1: [0 1]
	bb := hb("b1", "ib", 0, nil)
	a = hb("a1", "ia", a.MemberEpoch, []int32{0, 1}) // revoke 1
	a = hb("a1", "ia", a.MemberEpoch, []int32{0})    // epoch 2: [0]
	bb = hb("b1", "ib", bb.MemberEpoch, nil)         // [1]
	if parts(a) != "[0]" && a.Assignment != nil || parts(bb) != "[1]" || a.MemberEpoch != 2 || bb.MemberEpoch != 2 {
		t.Fatalf("split: a %s epoch %d, b %s epoch %d", parts(a), a.MemberEpoch, parts(bb), bb.MemberEpoch)
	}
	if r := hb("b1", "ib", -2, nil); r.MemberEpoch != -2 {
		t.Fatalf("static leave echoed epoch %d", r.MemberEpoch)
	}
	if d := describe848(t, b, group); d.Epoch != 2 || len(d.Members) != 2 {
		t.Fatalf("after the static leave: epoch %d, %d members", d.Epoch, len(d.Members))
	}
	if r := hb("a1", "ia", 2, []int32{0}); r.MemberEpoch != 2 || r.Assignment != nil && parts(r) != "[0]" {
		t.Fatalf("a after b's static leave: epoch %d %s", r.MemberEpoch, parts(r))
	}
	back := hb("b2", "ib", 0, nil)
	if back.MemberEpoch != 2 || parts(back) != "[1]" {
		t.Fatalf("static member back: epoch %d %s", back.MemberEpoch, parts(back))
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.InstanceID, req.RebalanceTimeoutMillis = group, "b3", kmsg.StringPtr("ib"), 30000
	req.SubscribedTopicNames, req.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := adminRoundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, b, req, 1); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("second live member with instance ib: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := describe848(t, b, group); d.Epoch != 2 || len(d.Members) != 2 || d.State != "Stable" {
		t.Fatalf("after the static member returned: epoch %d, %d members, %s", d.Epoch, len(d.Members), d.State)
	}
}
