package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdoptedConsumerGroupKeepsEpoch: a KIP-848 group Kafka 4.4.0 wrote
// (its static member gone for a while with epoch -2) is taken over by
// Strata on Kafka's log dir; the member comes back under a new member id
// at the group epoch Kafka left and with its partitions, as it does on
// Kafka: the MetadataHash Kafka stored is the one Strata computes
// (KIP-1101), so there is no rebalance.
func TestAdoptedConsumerGroupKeepsEpoch(t *testing.T) {
	e2e(t)
	kafkaDir := t.TempDir()
	k := newKafka(t, kafkaDir)
	startCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	const topic, group, instance = "adopt-hash", "adopt-hash-group", "inst-1"
	createTopic(t, newClient(t, k.Addr()), topic, 3)

	heartbeat := func(addr, group, member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
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
	owned := func(r *kmsg.ConsumerGroupHeartbeatResponse) []kmsg.ConsumerGroupHeartbeatRequestTopic {
		out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if r.Assignment != nil {
			for _, tp := range r.Assignment.Topics {
				out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
			}
		}
		return out
	}
	partitions := func(r *kmsg.ConsumerGroupHeartbeatResponse) int {
		n := 0
		for _, tp := range owned(r) {
			n += len(tp.Partitions)
		}
		return n
	}
	// FindCoordinator creates __consumer_offsets, as a client's first one does.
	kcl := newClient(t, k.Addr())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	// On kafka, in two groups: the static member joins, gets all of the
	// topic, and leaves for a while (epoch -2).
	kafkaEpoch := map[string]int32{}
	for _, g := range []string{group, group + "-on-kafka"} {
		var r *kmsg.ConsumerGroupHeartbeatResponse
		waitFor(t, "the member joins on kafka", 2*time.Minute, func() bool {
			if _, err := fc.RequestWith(timeoutCtx(t, 10*time.Second), kcl); err != nil {
				return false
			}
			r = heartbeat(k.Addr(), g, "member-on-kafka-000001", 0, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
			if r.ErrorCode != 0 {
				time.Sleep(200 * time.Millisecond)
			}
			return r.ErrorCode == 0
		})
		if r = heartbeat(k.Addr(), g, "member-on-kafka-000001", r.MemberEpoch, owned(r)); r.ErrorCode != 0 || partitions(r) != 3 {
			t.Fatalf("on kafka: %v at epoch %d with %d partitions, want all 3", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, partitions(r))
		}
		kafkaEpoch[g] = r.MemberEpoch
		if r = heartbeat(k.Addr(), g, "member-on-kafka-000001", -2, nil); r.ErrorCode != 0 {
			t.Fatalf("static leave on kafka: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	// Kafka's answer to the member coming back under a new member id.
	back := heartbeat(k.Addr(), group+"-on-kafka", "member-back-0000000001", 0, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if back.ErrorCode != 0 {
		t.Fatalf("the static member back on kafka: %v", kerr.ErrorForCode(back.ErrorCode))
	}
	kafkaBack := fmt.Sprintf("epoch %d (group's was %d), %d partitions", back.MemberEpoch, kafkaEpoch[group+"-on-kafka"], partitions(back))
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}

	_, kafkaPort, _ := net.SplitHostPort(k.Addr())
	port, err := strconv.Atoi(kafkaPort)
	if err != nil {
		t.Fatal(err)
	}
	s := launch(t, filepath.Join(kafkaDir, "data"), port)
	s.waitReady(60 * time.Second)
	var r *kmsg.ConsumerGroupHeartbeatResponse
	waitFor(t, "the static member back on strata", time.Minute, func() bool {
		r = heartbeat(s.addr, group, "member-back-0000000001", 0, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
		return r.ErrorCode == 0
	})
	strataBack := fmt.Sprintf("epoch %d (group's was %d), %d partitions", r.MemberEpoch, kafkaEpoch[group], partitions(r))
	if strataBack != kafkaBack {
		t.Errorf("the static member back: on strata %s, on kafka %s", strataBack, kafkaBack)
	}
	cl := newClient(t, s.addr)
	if epoch, _, ok := describe848(t, cl, group); !ok || epoch != kafkaEpoch[group] {
		t.Fatalf("group epoch on strata %d (%v), kafka's %d", epoch, ok, kafkaEpoch[group])
	}
	t.Logf("the static member back: on strata %s, on kafka %s", strataBack, kafkaBack)
}
