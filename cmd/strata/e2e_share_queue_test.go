package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareQueueRun is what three franz-go share consumers (kgo.ShareGroup) of
// one share group saw of a 3-partition topic of n records, every tenth
// released on its first delivery: how often each record was delivered and
// accepted.
type shareQueueRun struct {
	deliveries, accepted map[int]int
	maxDeliveryCount     int32
}

// runShareQueue produces n records to a new topic, sets the group's
// share.auto.offset.reset to earliest, and has three share members
// consume until every record was accepted once (or the deadline).
func runShareQueue(t *testing.T, addr, topic, group string, n int) shareQueueRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, addr)
	createTopic(t, cl, topic, 3)
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	ar, err := alter.RequestWith(ctx, cl)
	if err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("set share.auto.offset.reset: %v %v", err, ar)
	}
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	run := shareQueueRun{deliveries: map[int]int{}, accepted: map[int]int{}}
	var mu sync.Mutex
	pollCtx, allAccepted := context.WithCancel(ctx)
	defer allAccepted()
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(run.accepted) == n
	}
	var wg sync.WaitGroup
	for m := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(fmt.Sprintf("share-%d", m)))
			defer c.Close()
			for !done() && pollCtx.Err() == nil {
				fs := c.PollFetches(pollCtx)
				fs.EachRecord(func(r *kgo.Record) {
					v, _ := strconv.Atoi(string(r.Value))
					mu.Lock()
					defer mu.Unlock()
					run.deliveries[v]++
					run.maxDeliveryCount = max(run.maxDeliveryCount, r.DeliveryCount())
					if v%10 == 0 && r.DeliveryCount() == 1 {
						r.Ack(kgo.AckRelease)
						return
					}
					r.Ack(kgo.AckAccept)
					if run.accepted[v]++; len(run.accepted) == n {
						allAccepted()
					}
				})
				c.MarkAcks(kgo.AckAccept)
			}
		}()
	}
	wg.Wait()
	if !done() {
		t.Fatalf("%d of %d records accepted before the deadline", len(run.accepted), n)
	}
	return run
}

// TestShareGroupQueueAsKafka44 is the scenario on Strata and on
// Kafka 4.4.0: three franz-go share members read 3,000 records of a
// 3-partition topic; every tenth is released once and delivered again
// (delivery count 2), and each is accepted exactly once: 3,300
// deliveries on both.
func TestShareGroupQueueAsKafka44(t *testing.T) {
	e2e(t)
	const n = 3000
	check := func(who string, run shareQueueRun) {
		t.Helper()
		total := 0
		for v := range n {
			total += run.deliveries[v]
			if run.accepted[v] != 1 {
				t.Errorf("%s: record %d accepted %d times", who, v, run.accepted[v])
			}
			if want := 1 + btoi(v%10 == 0); run.deliveries[v] != want {
				t.Errorf("%s: record %d delivered %d times, want %d", who, v, run.deliveries[v], want)
			}
		}
		t.Logf("%s: %d deliveries of %d records, highest delivery count %d", who, total, n, run.maxDeliveryCount)
	}
	p := startBroker(t, "")
	check("strata", runShareQueue(t, p.addr, "queue", "sq", n))
	kafkaAddr := shareKafka44(t)
	check("kafka", runShareQueue(t, kafkaAddr, "queue", "sq", n))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestShareGroupBrokerConfigs: the group.share.* session, heartbeat and
// lock settings of server.properties are the share groups' defaults (they
// were dropped as keys Strata does not implement, so every group got
// Kafka's defaults): a member is told the heartbeat interval set, and a
// fetch the lock duration set.
func TestShareGroupBrokerConfigs(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "unstable.api.versions.enable=true",
		"--override", "group.share.min.heartbeat.interval.ms=500", "--override", "group.share.heartbeat.interval.ms=1500",
		"--override", "group.share.min.record.lock.duration.ms=1000", "--override", "group.share.record.lock.duration.ms=4000")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClient(t, p.addr)
	createTopic(t, cl, "cfg", 1)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "cfg", "member-of-cfg-0001", []string{"cfg"}
	var resp *kmsg.ShareGroupHeartbeatResponse
	for {
		var err error
		resp, err = hb.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("heartbeat: %v %+v", err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp.HeartbeatIntervalMillis != 1500 {
		t.Errorf("heartbeat interval %d ms, want the 1500 of group.share.heartbeat.interval.ms", resp.HeartbeatIntervalMillis)
	}
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.GroupID, fetch.MemberID = kmsg.StringPtr("cfg"), kmsg.StringPtr("member-of-cfg-0001")
	fetch.MaxWaitMillis, fetch.MaxBytes, fetch.MaxRecords, fetch.BatchSize = 10, 1<<20, 10, 10
	fr, err := fetch.RequestWith(ctx, cl)
	if err != nil || fr.ErrorCode != 0 {
		t.Fatalf("share fetch: %v %+v", err, fr)
	}
	if fr.AcquisitionLockTimeoutMillis != 4000 {
		t.Errorf("acquisition lock %d ms, want the 4000 of group.share.record.lock.duration.ms", fr.AcquisitionLockTimeoutMillis)
	}
}
