package broker

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

// KIP-932 share group membership tests: franz-go's kmsg ShareGroupHeartbeat
// and ShareGroupDescribe through a kgo client (which finds the group
// coordinator and negotiates versions from ApiVersions) against an
// in-process broker, with a short share session.

const (
	testShareSession   = 3 * time.Second
	testShareHeartbeat = 200 * time.Millisecond
)

func shareBrokerConfig(t *testing.T, dir string) Config {
	return Config{
		Listeners:             "PLAINTEXT://127.0.0.1:0",
		LogDirs:               dir,
		NodeID:                testNodeID,
		NumPartitions:         1,
		AutoCreateTopics:      true,
		UnstableAPIVersions:   true,
		SocketRequestMaxBytes: 100 << 20,
		Log:                   storage.DefaultConfig(),
		Groups:                testGroupConfig(),
		StaticConfigs: map[string]string{
			"group.share.session.timeout.ms":    fmt.Sprint(testShareSession.Milliseconds()),
			"group.share.heartbeat.interval.ms": fmt.Sprint(testShareHeartbeat.Milliseconds()),
		},
	}
}

// shareHB sends one ShareGroupHeartbeat v1.
func shareHB(t *testing.T, cl *kgo.Client, group, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	var resp *kmsg.ShareGroupHeartbeatResponse
	waitUntil(t, 20*time.Second, func() (bool, string) {
		var err error
		resp, err = req.RequestWith(testCtx(t), cl)
		if err != nil && !kerr.IsRetriable(err) {
			t.Fatalf("ShareGroupHeartbeat %s epoch %d: %v", member, epoch, err)
		}
		return err == nil, fmt.Sprintf("ShareGroupHeartbeat %s epoch %d: %v", member, epoch, err)
	})
	return resp
}

// sharePartitions is a heartbeat's assignment as partitions of one topic.
func sharePartitions(resp *kmsg.ShareGroupHeartbeatResponse) []int32 {
	var ps []int32
	if resp.Assignment != nil {
		for _, tp := range resp.Assignment.TopicPartitions {
			ps = append(ps, tp.Partitions...)
		}
	}
	slices.Sort(ps)
	return ps
}

// shareMember is a member heartbeating by hand: its id, epoch and
// partitions as its last heartbeat left them.
type shareMember struct {
	id    string
	epoch int32
	parts []int32
}

func (m *shareMember) beat(t *testing.T, cl *kgo.Client, group string, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	resp := shareHB(t, cl, group, m.id, m.epoch, topics)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("heartbeat of %s at epoch %d: %v (%s)", m.id, m.epoch, err, deref(resp.ErrorMessage))
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.parts = sharePartitions(resp)
	}
	return resp
}

// settle heartbeats every member until all are at the group's epoch and
// hold want partitions each (in any order), disjoint, covering n.
func settleShare(t *testing.T, cl *kgo.Client, group string, n int, ms []*shareMember, sizes []int) {
	t.Helper()
	waitUntil(t, 20*time.Second, func() (bool, string) {
		for _, m := range ms {
			m.beat(t, cl, group, nil)
		}
		var all []int32
		var got []int
		for _, m := range ms {
			all = append(all, m.parts...)
			got = append(got, len(m.parts))
		}
		slices.Sort(all)
		sort.Ints(got)
		want := slices.Clone(sizes)
		sort.Ints(want)
		covered := len(all) == n && len(slices.Compact(slices.Clone(all))) == n
		same := true
		for _, m := range ms[1:] {
			same = same && m.epoch == ms[0].epoch
		}
		desc := ""
		for _, m := range ms {
			desc += fmt.Sprintf(" %s@%d%v", m.id, m.epoch, m.parts)
		}
		return covered && same && slices.Equal(got, want), "members" + desc
	})
}

func TestShareGroupHeartbeatJoinAssignLeaveExpire(t *testing.T) {
	b, _ := runBroker(t, shareBrokerConfig(t, t.TempDir()))
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	const topic, group = "queue", "sg"
	if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	topics := []string{topic}

	a := &shareMember{id: "member-a"}
	first := a.beat(t, cl, group, topics)
	if a.epoch != 2 || first.Assignment == nil || len(a.parts) != 0 || first.HeartbeatIntervalMillis != int32(testShareHeartbeat.Milliseconds()) {
		t.Fatalf("first heartbeat: epoch %d, assignment %v, interval %d; want epoch 2 (a new group is at 1), an empty assignment (no share state yet)",
			a.epoch, first.Assignment, first.HeartbeatIntervalMillis)
	}
	settleShare(t, cl, group, 3, []*shareMember{a}, []int{3})
	if a.epoch != 3 {
		t.Fatalf("after the share state was initialized: epoch %d, want 3", a.epoch)
	}

	bm := &shareMember{id: "member-b"}
	bm.beat(t, cl, group, topics)
	settleShare(t, cl, group, 3, []*shareMember{a, bm}, []int{2, 1})
	c := &shareMember{id: "member-c"}
	c.beat(t, cl, group, topics)
	settleShare(t, cl, group, 3, []*shareMember{a, bm, c}, []int{1, 1, 1})
	if a.epoch != 5 {
		t.Fatalf("three members: epoch %d, want 5", a.epoch)
	}

	ds, err := adm.DescribeShareGroups(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	d := ds[group]
	if d.Err != nil || d.GroupState != "Stable" || d.GroupEpoch != 5 || d.AssignmentEpoch != 5 || d.Assignor != "simple" || len(d.Members) != 3 {
		t.Fatalf("DescribeShareGroups: %+v", d)
	}
	for _, m := range d.Members {
		if m.MemberEpoch != 5 || len(m.Assignment[topic]) != 1 || !slices.Equal(m.SubscribedTopicNames, topics) {
			t.Fatalf("described member %+v", m)
		}
	}
	lg, err := adm.ListGroupsByType(testCtx(t), []string{"share"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := lg[group]; !ok || l.ProtocolType != "share" || l.State != "Stable" || l.GroupType != "share" {
		t.Fatalf("ListGroups by type share: %+v", lg)
	}

	if r := shareHB(t, cl, group, "stranger", 5, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := shareHB(t, cl, group, a.id, 99, nil); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("epoch ahead: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := shareHB(t, cl, group, "", 0, topics); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("no member id: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	left := shareHB(t, cl, group, c.id, -1, nil)
	if left.ErrorCode != 0 || left.MemberEpoch != -1 {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(left.ErrorCode), left.MemberEpoch)
	}
	settleShare(t, cl, group, 3, []*shareMember{a, bm}, []int{2, 1})
	if a.epoch != 6 {
		t.Fatalf("after the leave: epoch %d, want 6", a.epoch)
	}

	// b stops heartbeating: its session expires and a gets everything.
	settleShare(t, cl, group, 3, []*shareMember{a}, []int{3})
	ds, err = adm.DescribeShareGroups(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[group]; len(d.Members) != 1 || d.Members[0].MemberID != a.id || d.GroupEpoch != 7 {
		t.Fatalf("after b's session expired: %+v", d)
	}
}

// TestShareGroupRestartKeepsMembership restarts the broker on its log
// dir: the members, epochs and assignments come back from the ShareGroup*
// records, a member goes on at its epoch, and one that does not heartbeat
// expires.
func TestShareGroupRestartKeepsMembership(t *testing.T) {
	cfg := shareBrokerConfig(t, t.TempDir())
	b, stop := runBroker(t, cfg)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	const topic, group = "queue", "sg"
	if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	a, bm := &shareMember{id: "member-a"}, &shareMember{id: "member-b"}
	a.beat(t, cl, group, []string{topic})
	bm.beat(t, cl, group, []string{topic})
	settleShare(t, cl, group, 3, []*shareMember{a, bm}, []int{2, 1})
	before := describeShare(t, adm, group)
	cl.Close()
	stop()

	b2, _ := runBroker(t, cfg)
	cl2 := newClient(t, b2)
	adm2 := kadm.NewClient(cl2)
	waitUntil(t, 20*time.Second, func() (bool, string) {
		ds, err := adm2.DescribeShareGroups(testCtx(t), group)
		return err == nil && ds[group].Err == nil, fmt.Sprintf("describe: %v %v", err, ds[group].Err)
	})
	after := describeShare(t, adm2, group)
	if after != before {
		t.Fatalf("after the restart:\n%s\nbefore:\n%s", after, before)
	}
	epoch, parts := a.epoch, a.parts
	a.beat(t, cl2, group, nil)
	if a.epoch != epoch || !slices.Equal(a.parts, parts) {
		t.Fatalf("a after the restart: epoch %d partitions %v, want %d %v", a.epoch, a.parts, epoch, parts)
	}
	settleShare(t, cl2, group, 3, []*shareMember{a}, []int{3})
}

// describeShare is the group as DescribeShareGroups shows it, one line.
func describeShare(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	ds, err := adm.DescribeShareGroups(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	d := ds[group]
	s := fmt.Sprintf("%s epoch %d/%d %v:", d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Err)
	for _, m := range d.Members {
		s += fmt.Sprintf(" %s@%d%v", m.MemberID, m.MemberEpoch, m.Assignment.Sorted())
	}
	return s
}

// TestShareGroupKeysServed checks that the share group keys are served
// and advertised with or without unstable.api.versions.enable, and listed
// by ServedVersions.
func TestShareGroupKeysServed(t *testing.T) {
	for _, unstable := range []bool{false, true} {
		t.Run(fmt.Sprint(unstable), func(t *testing.T) {
			cfg := shareBrokerConfig(t, t.TempDir())
			cfg.UnstableAPIVersions = unstable
			b, _ := runBroker(t, cfg)
			resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), newClient(t, b))
			if err != nil {
				t.Fatal(err)
			}
			var keys []int16
			for _, k := range resp.ApiKeys {
				if k.ApiKey == int16(kmsg.ShareGroupHeartbeat) || k.ApiKey == int16(kmsg.ShareGroupDescribe) {
					if k.MinVersion != 1 || k.MaxVersion != 1 {
						t.Errorf("key %d: versions %d-%d, want 1-1", k.ApiKey, k.MinVersion, k.MaxVersion)
					}
					keys = append(keys, k.ApiKey)
				}
			}
			if len(keys) != 2 {
				t.Fatalf("share group keys advertised: %v, want both", keys)
			}
		})
	}
	var served []int16
	for _, r := range ServedVersions() {
		switch kmsg.Key(r.Key) {
		case kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe, kmsg.ShareFetch, kmsg.ShareAcknowledge:
			served = append(served, r.Key)
		}
	}
	if len(served) != 4 {
		t.Fatalf("ServedVersions lists share keys %v, want 76-79", served)
	}
}

// TestShareGroupDeleteDeletesState deletes an empty share group: its
// share state goes with it (ReadShareGroupState no longer finds it), and a
// group with members is NON_EMPTY_GROUP.
func TestShareGroupDeleteDeletesState(t *testing.T) {
	b, _ := runBroker(t, shareBrokerConfig(t, t.TempDir()))
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	const topic, group = "queue", "sg"
	td, err := adm.CreateTopic(testCtx(t), 1, 1, nil, topic)
	if err != nil {
		t.Fatal(err)
	}
	a := &shareMember{id: "member-a"}
	a.beat(t, cl, group, []string{topic})
	settleShare(t, cl, group, 1, []*shareMember{a}, []int{1})
	read := func() *kmsg.ReadShareGroupStateResponseTopicPartition {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = group
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = td.ID
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := adminRoundTrip[*kmsg.ReadShareGroupStateResponse](t, b, req, 0)
		return &resp.Topics[0].Partitions[0]
	}
	if p := read(); p.ErrorCode != 0 || p.StateEpoch != 2 || p.StartOffset != -1 {
		t.Fatalf("share state after the heartbeat: %v state epoch %d start offset %d; want state epoch 2 (the group epoch), start -1",
			kerr.ErrorForCode(p.ErrorCode), p.StateEpoch, p.StartOffset)
	}
	if dr, err := adm.DeleteGroups(testCtx(t), group); err != nil || !errorIs(dr[group].Err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a group with a member: %v %v", err, dr[group].Err)
	}
	if r := shareHB(t, cl, group, a.id, -1, nil); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if dr, err := adm.DeleteGroups(testCtx(t), group); err != nil || dr[group].Err != nil {
		t.Fatalf("deleting the empty group: %v %v", err, dr[group].Err)
	}
	if p := read(); p.ErrorCode == 0 && p.StateEpoch == 2 {
		t.Fatalf("share state after the group's deletion: state epoch %d start offset %d", p.StateEpoch, p.StartOffset)
	}
	ds, err := adm.DescribeShareGroups(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	if !errorIs(ds[group].Err, kerr.GroupIDNotFound) {
		t.Fatalf("describing the deleted group: %v", ds[group].Err)
	}
}

func errorIs(err error, want *kerr.Error) bool { return err == want }
