package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStaticClassicReplacementDowngradesAsKafka44: a KIP-848 static member
// (ConsumerGroupHeartbeats by hand) takes the whole topic and leaves for a
// while (epoch -2); a franz-go classic consumer with the same
// group.instance.id replaces it, the last member on the consumer protocol,
// and the group turns classic at once, Stable, the consumer holding the
// replaced member's partitions (Kafka 4.4's
// validateOnlineDowngradeWithReplacedMember), and it consumes every record.
// Strata shows what Kafka 4.4.0 shows.
func TestStaticClassicReplacementDowngradesAsKafka44(t *testing.T) {
	e2e(t)
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached: no comparison with Kafka")
	}
	p := startBroker(t, "", "--override", "group.initial.rebalance.delay.ms=0")
	got := runStaticReplacement(t, p.addr)
	k := kafkaTargetFrom(t, home, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	want := runStaticReplacement(t, k.Addr())
	t.Logf("strata:\n%s\nkafka 4.4.0:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	if !slices.Equal(got, want) {
		t.Errorf("strata differs from kafka 4.4.0:\nstrata\n%s\nkafka\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// runStaticReplacement runs the replacement on addr and says what the
// group looked like at each step.
func runStaticReplacement(t *testing.T, addr string) []string {
	t.Helper()
	const topic, group, instance, member = "smig", "gsmig", "inst-1", "static-consumer-000001"
	admin := newClient(t, addr)
	adm := kadm.NewClient(admin)
	createTopic(t, admin, topic, 2)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := admin.ProduceSync(timeoutCtx(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	heartbeat := func(epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = group, member, epoch, kmsg.StringPtr(instance)
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = 30000, []string{topic}, owned
		if epoch < 0 {
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = -1, nil, nil
		}
		return rawRequest(t, c, req, 1, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	var r *kmsg.ConsumerGroupHeartbeatResponse
	waitFor(t, "the consumer-protocol member joins", time.Minute, func() bool {
		if _, err := fc.RequestWith(timeoutCtx(t, 10*time.Second), admin); err != nil {
			return false
		}
		if r = heartbeat(0, []kmsg.ConsumerGroupHeartbeatRequestTopic{}); r.ErrorCode != 0 {
			time.Sleep(200 * time.Millisecond)
		}
		return r.ErrorCode == 0
	})
	owned := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r.Assignment == nil {
		t.Fatalf("the consumer-protocol member joined at epoch %d without an assignment", r.MemberEpoch)
	}
	for _, tp := range r.Assignment.Topics {
		owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
	}
	if r = heartbeat(r.MemberEpoch, owned); r.ErrorCode != 0 || len(owned) != 1 || len(owned[0].Partitions) != 2 {
		t.Fatalf("the consumer-protocol member: %v with %v, want both partitions", kerr.ErrorForCode(r.ErrorCode), owned)
	}
	if r = heartbeat(-2, nil); r.ErrorCode != 0 {
		t.Fatalf("static leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	steps := []string{"after the static leave: " + describeStaticGroup(t, adm, group)}

	cl := newClient(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.InstanceID(instance),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]bool{}
	ctx := timeoutCtx(t, time.Minute)
	for len(seen) < len(recs) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	steps = append(steps, fmt.Sprintf("the classic static consumer read %d of %d records", len(seen), len(recs)),
		"after the replacement: "+describeStaticGroup(t, adm, group))
	return steps
}

// describeStaticGroup is the group's type as ListGroups gives it and, for a
// classic group, its state and members as DescribeGroups does.
func describeStaticGroup(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	ctx := timeoutCtx(t, 10*time.Second)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lg := listed[group]
	out := fmt.Sprintf("type %s, state %s", lg.GroupType, lg.State)
	if lg.GroupType != "classic" {
		return out
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range described[group].Members {
		a, _ := m.Assigned.AsConsumer()
		n := 0
		if a != nil {
			for _, tp := range a.Topics {
				n += len(tp.Partitions)
			}
		}
		out += fmt.Sprintf("; member instance %s with %d partitions", derefStr(m.InstanceID), n)
	}
	return out
}
