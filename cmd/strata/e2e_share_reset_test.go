package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareResetScript places share-partitions with share.auto.offset.reset
// by_duration:PT1H and prints what their first fetches acquire: a topic
// with records two hours old and records of now starts at the first of
// now; a topic with only old records answers as Kafka's
// offsetForTimestamp finding nothing, then starts at the first record
// produced after that.
func shareResetScript(t *testing.T, addr string) []string {
	cl := newClient(t, addr)
	old := time.Now().Add(-2 * time.Hour)
	produce := func(topic string, ts time.Time, n int) {
		for i := range n {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Timestamp: ts, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := dialShare(t, addr)
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	place := func(group, topic string) *shareMember {
		alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("by_duration:PT1H")}}
		alter.Resources = append(alter.Resources, res)
		if ar, err := alter.RequestWith(context.Background(), cl); err != nil || ar.Resources[0].ErrorCode != 0 {
			t.Fatalf("set share.auto.offset.reset: %v %+v", err, ar)
		}
		id := s.topicID(topic)
		s.findShareCoordinator(group + ":" + shareTopicIDString(id) + ":0")
		waitFor(t, "the share-partition initialized", 60*time.Second, func() bool {
			return s.initializeState(group, id, 0, 0, -1).ErrorCode == 0
		})
		return &shareMember{s: s, group: group, member: "member-" + group, topic: id}
	}
	fetched := func(what string, m *shareMember) {
		var got []string
		waitFor(t, what, 30*time.Second, func() bool {
			got = acquired(t, m.fetch(1000))
			return len(got) > 0
		})
		say("%s: acquired %v", what, got)
	}

	createTopic(t, cl, "reset-mixed", 1)
	produce("reset-mixed", old, 3)
	produce("reset-mixed", time.Now(), 2)
	fetched("old and new records", place("rm", "reset-mixed"))

	createTopic(t, cl, "reset-old", 1)
	produce("reset-old", old, 2)
	m := place("ro", "reset-old")
	r := m.fetch(1000)
	var parts []string
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			parts = append(parts, fmt.Sprintf("%v %q, %d acquired", kerr.ErrorForCode(rp.ErrorCode), strOr(rp.ErrorMessage), len(rp.AcquiredRecords)))
		}
	}
	say("only old records: %v %q, partitions %v", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage), parts)
	produce("reset-old", time.Now(), 1)
	fetched("a new record after them", m)
	return out
}

// TestShareResetByDurationAsKafka44 runs shareResetScript against a Kafka
// 4.4.0 control and Strata and compares every line.
func TestShareResetByDurationAsKafka44(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "unstable.api.versions.enable=true")
	got := shareResetScript(t, p.addr)
	kafkaAddr := shareKafka44(t)
	want := shareResetScript(t, kafkaAddr)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("strata:\n%s\nkafka:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("both:\n%s", strings.Join(want, "\n"))
}
