package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareGroupScript drives one share group through franz-go's kmsg
// ShareGroupHeartbeat, ShareGroupDescribe, ListGroups and DeleteGroups at
// addr: three members join a 3-partition topic one by one, bad heartbeats,
// a leave, the group emptied and deleted. It prints one line per step.
// Which partitions a member holds depends on the topic's random id (the
// assignor walks Java hash orders), so a member's line shows how many it
// holds and how many of them it kept from before; which member holds more
// depends on the member ids alone.
func shareGroupScript(t *testing.T, addr string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, group = "queue", "sg"
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	hbTo := func(groupID, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = groupID, member, epoch, topics
		var resp *kmsg.ShareGroupHeartbeatResponse
		waitFor(t, "a ShareGroupHeartbeat answer", 60*time.Second, func() bool {
			resp, err = req.RequestWith(ctx, cl)
			if err != nil && !kerr.IsRetriable(err) {
				t.Fatalf("ShareGroupHeartbeat: %v", err)
			}
			if err == nil && resp.ErrorCode != 0 {
				t.Logf("%s: ShareGroupHeartbeat of %s at epoch %d: %v %s", addr, member, epoch, kerr.ErrorForCode(resp.ErrorCode), strOr(resp.ErrorMessage))
			}
			return err == nil && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.CoordinatorNotAvailable.Code &&
				resp.ErrorCode != kerr.NotCoordinator.Code
		})
		return resp
	}
	hb := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		return hbTo(group, member, epoch, topics)
	}
	errLine := func(what string, r *kmsg.ShareGroupHeartbeatResponse) {
		say("%s: %v %q epoch %d member %v", what, kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage), r.MemberEpoch, r.MemberID != nil)
	}
	type member struct {
		id    string
		epoch int32
		parts []int32
	}
	beat := func(m *member, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		r := hb(m.id, m.epoch, topics)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v", m.id, kerr.ErrorForCode(r.ErrorCode))
		}
		m.epoch = r.MemberEpoch
		if r.Assignment != nil {
			m.parts = nil
			for _, tp := range r.Assignment.TopicPartitions {
				m.parts = append(m.parts, tp.Partitions...)
			}
			slices.Sort(m.parts)
		}
		return r
	}
	describe := func(id string) kmsg.ShareGroupDescribeResponseGroup {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{id}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ShareGroupDescribe: %v", err)
		}
		return resp.Groups[0]
	}
	// settle heartbeats until the group's assignment epoch is its epoch,
	// every member is at it, and the members hold every partition; then
	// says each member's share.
	settle := func(what string, ms ...*member) {
		before := map[string][]int32{}
		for _, m := range ms {
			before[m.id] = m.parts
		}
		waitFor(t, what, 60*time.Second, func() bool {
			for _, m := range ms {
				beat(m, nil)
			}
			d := describe(group)
			held := map[int32]bool{}
			for _, m := range ms {
				if m.epoch != d.GroupEpoch {
					return false
				}
				for _, p := range m.parts {
					held[p] = true
				}
			}
			return d.GroupEpoch == d.AssignmentEpoch && len(held) == 3
		})
		for _, m := range ms {
			kept := 0
			for _, p := range m.parts {
				if slices.Contains(before[m.id], p) {
					kept++
				}
			}
			say("%s: %s epoch %d, %d partitions, %d kept", what, m.id, m.epoch, len(m.parts), kept)
		}
	}
	describeLine := func(what, id string) {
		d := describe(id)
		s := fmt.Sprintf("%s: %v %q %s epoch %d/%d assignor %q", what, kerr.ErrorForCode(d.ErrorCode), strOr(d.ErrorMessage), d.GroupState,
			d.GroupEpoch, d.AssignmentEpoch, d.Assignor)
		slices.SortFunc(d.Members, func(a, b kmsg.ShareGroupDescribeResponseGroupMember) int {
			return strings.Compare(a.MemberID, b.MemberID)
		})
		for _, m := range d.Members {
			n := 0
			for _, tp := range m.Assignment.TopicPartitions {
				n += len(tp.Partitions)
				if tp.Topic != topic {
					s += " topic " + tp.Topic
				}
			}
			s += fmt.Sprintf(" [%s@%d %s %s %v %d]", m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost, m.SubscribedTopicNames, n)
		}
		say("%s", s)
	}

	topics := []string{topic}
	// A first group has the share coordinator's topic created and loaded
	// (Kafka fails the first heartbeats of a new cluster while it is, and
	// bumps the group epoch once more for it).
	warm := &member{id: "warm"}
	waitFor(t, "a first share group's assignment", 60*time.Second, func() bool {
		r := hbTo("warm", warm.id, warm.epoch, topics)
		warm.epoch = r.MemberEpoch
		return r.ErrorCode == 0 && r.Assignment != nil && len(r.Assignment.TopicPartitions) > 0
	})
	hbTo("warm", warm.id, -1, nil)
	a, b, c := &member{id: "member-a"}, &member{id: "member-b"}, &member{id: "member-c"}
	r := beat(a, topics)
	say("a joins: epoch %d interval %d assignment %v of %d partitions", r.MemberEpoch, r.HeartbeatIntervalMillis, r.Assignment != nil, len(a.parts))
	settle("a alone", a)
	r = beat(b, topics)
	say("b joins: epoch %d", r.MemberEpoch)
	settle("a and b", a, b)
	r = beat(c, topics)
	say("c joins: epoch %d", r.MemberEpoch)
	settle("a, b and c", a, b, c)
	describeLine("three members", group)

	errLine("unknown member", hb("stranger", 1, nil))
	errLine("epoch ahead", hb(a.id, a.epoch+5, nil))
	errLine("no member id", hb("", 0, topics))
	errLine("first heartbeat without topics", hb("member-d", 0, nil))
	errLine("epoch -2", hb(a.id, -2, nil))
	errLine("leave of an unknown member", hb("stranger", -1, nil))
	r = hb(c.id, -1, nil)
	say("c leaves: %v epoch %d member %s", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, strOr(r.MemberID))
	settle("a and b again", a, b)
	describeLine("after c left", group)
	describeLine("no such group", "nope")

	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	lr, err := lg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range lr.Groups {
		say("listed: %s %s %s %s", g.Group, g.GroupState, g.GroupType, g.ProtocolType)
	}
	del := func(what string) {
		dr, err := adm.DeleteGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		say("%s: %v", what, dr[group].Err)
	}
	del("delete with members")
	for _, m := range []*member{a, b} {
		r := hb(m.id, -1, nil)
		say("%s leaves: %v epoch %d", m.id, kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	describeLine("empty", group)
	del("delete when empty")
	describeLine("deleted", group)
	return out
}

// TestShareGroupsAsKafka44 runs shareGroupScript against a Kafka 4.4.0
// control (one KRaft node) and Strata and compares every line.
func TestShareGroupsAsKafka44(t *testing.T) {
	e2e(t)
	kafkaAddr := shareKafka44(t)
	p := startBroker(t, "")
	want, got := shareGroupScript(t, kafkaAddr), shareGroupScript(t, p.addr)
	if len(got) != len(want) {
		t.Fatalf("strata printed %d lines, kafka %d:\n%s\n---\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\nstrata %s\nkafka  %s", i, got[i], want[i])
		}
	}
	if t.Failed() {
		t.Logf("kafka:\n%s", strings.Join(want, "\n"))
	}
}
