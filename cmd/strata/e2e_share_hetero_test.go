package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareHeteroScript drives a share group whose members subscribe to
// different topics (Kafka's SimpleHeterogeneousAssignmentBuilder) through
// kmsg ShareGroupHeartbeats at addr: three members over two topics, a
// fourth joining, one changing its subscription, one leaving. After each
// step it prints which partitions of which topic each member holds; the
// builder balances each topic by member index and partition number, so
// the lines depend on the member ids alone.
func shareHeteroScript(t *testing.T, addr string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	partitions := map[string]int32{"ha": 4, "hb": 3}
	for name, n := range partitions {
		if _, err := adm.CreateTopic(ctx, n, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	names := map[[16]byte]string{}
	waitFor(t, "both topics' ids", 30*time.Second, func() bool {
		td, err := adm.ListTopics(ctx, "ha", "hb")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range td {
			if d.Err == nil && d.ID != ([16]byte{}) {
				names[d.ID] = d.Topic
			}
		}
		return len(names) == 2
	})
	const group = "hg"
	type member struct {
		id     string
		epoch  int32
		topics []string
		held   map[string][]int32
	}
	beat := func(m *member) {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, m.id, m.epoch, m.topics
		var resp *kmsg.ShareGroupHeartbeatResponse
		waitFor(t, "a ShareGroupHeartbeat answer", 60*time.Second, func() bool {
			resp, err = req.RequestWith(ctx, cl)
			if err != nil && !kerr.IsRetriable(err) {
				t.Fatalf("ShareGroupHeartbeat: %v", err)
			}
			return err == nil && resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.CoordinatorNotAvailable.Code &&
				resp.ErrorCode != kerr.NotCoordinator.Code
		})
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
		}
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.held = map[string][]int32{}
			for _, tp := range resp.Assignment.TopicPartitions {
				ps := slices.Sorted(slices.Values(tp.Partitions))
				m.held[names[tp.TopicID]] = ps
			}
		}
	}
	groupEpochs := func() (int32, int32) {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ShareGroupDescribe: %v", err)
		}
		return resp.Groups[0].GroupEpoch, resp.Groups[0].AssignmentEpoch
	}
	var out []string
	// settle heartbeats until the assignment epoch is the group's, every
	// member is at it and every partition of a subscribed topic is held.
	settle := func(what string, ms ...*member) {
		waitFor(t, what, 90*time.Second, func() bool {
			for _, m := range ms {
				beat(m)
			}
			epoch, assignment := groupEpochs()
			held := map[string]bool{}
			subscribed := map[string]bool{}
			for _, m := range ms {
				if m.epoch != epoch {
					return false
				}
				for _, s := range m.topics {
					subscribed[s] = true
				}
				for name, ps := range m.held {
					for _, p := range ps {
						held[fmt.Sprint(name, p)] = true
					}
				}
			}
			want := 0
			for s := range subscribed {
				want += int(partitions[s])
			}
			return epoch == assignment && len(held) >= want
		})
		line := what + ":"
		for _, m := range ms {
			var parts []string
			for _, name := range slices.Sorted(maps.Keys(m.held)) {
				parts = append(parts, fmt.Sprintf("%s%v", name, m.held[name]))
			}
			line += fmt.Sprintf(" %s %v %s;", m.id, m.topics, strings.Join(parts, " "))
		}
		out = append(out, line)
	}
	a := &member{id: "member-a", topics: []string{"ha"}}
	b := &member{id: "member-b", topics: []string{"ha", "hb"}}
	c := &member{id: "member-c", topics: []string{"hb"}}
	settle("three members", a, b, c)
	d := &member{id: "member-d", topics: []string{"ha", "hb"}}
	settle("a fourth", a, b, c, d)
	a.topics = []string{"hb"}
	settle("member-a moves to hb", a, b, c, d)
	b.epoch = -1
	beat(b)
	settle("member-b leaves", a, c, d)
	return out
}

// TestShareGroupHeterogeneousAsKafka44 runs shareHeteroScript against a
// Kafka 4.4.0 control and Strata and compares every line.
func TestShareGroupHeterogeneousAsKafka44(t *testing.T) {
	e2e(t)
	kafkaAddr := shareKafka44(t)
	p := startBroker(t, "", "--override", "unstable.api.versions.enable=true")
	want, got := shareHeteroScript(t, kafkaAddr), shareHeteroScript(t, p.addr)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("strata:\n%s\nkafka:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("both:\n%s", strings.Join(want, "\n"))
}
