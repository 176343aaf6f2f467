package main

// End-to-end tests of KIP-848 regex subscriptions, on Strata and on the
// Kafka 4.4.0 control side by side: the broker resolves the regex, picks
// up a topic created later and drops a deleted one.

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// regexRun is what one run of the regex scenario saw.
type regexRun struct {
	first, pickup, drop time.Duration // to the first assignment, to rx-b's record, to rx-b leaving the assignment
	assigned            []string      // the assignment at each step
	consumed            map[string]int
	invalid             []string // error and message for each invalid regex
	internal            int      // partitions of __consumer_offsets a regex gets
	internalWant        int      // partitions __consumer_offsets has
}

// regexScenario: a franz-go KIP-848 member consumes rx-.* (franz-go sends
// the regex, the broker resolves it): it gets rx-a, then rx-b once created
// and its record, and loses rx-b once deleted; zz never matches.
func regexScenario(t *testing.T, addr string) regexRun {
	t.Helper()
	ctx := timeoutCtx(t, 3*time.Minute)
	admin := newClient(t, addr)
	adm := kadm.NewClient(admin)
	createTopic(t, admin, "rx-a", 2)
	createTopic(t, admin, "zz", 1)
	producer := newClient(t, addr, kgo.AllowAutoTopicCreation())
	produce := func(topic string) {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	produce("rx-a")
	produce("zz")

	run := regexRun{consumed: map[string]int{}}
	var mu sync.Mutex
	start := time.Now()
	member := newClient(t, addr, kgo.ConsumerGroup("rx-group"), kgo.ConsumeRegex(), kgo.ConsumeTopics("rx-.*"), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond), kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(2*time.Second))
	pollCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pollCtx.Err() == nil {
			fs := member.PollFetches(pollCtx)
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { run.consumed[r.Topic]++ })
			mu.Unlock()
		}
	}()
	defer func() { stop(); <-done }()
	assignment := func() string {
		_, ms, ok := describe848(t, admin, "rx-group")
		if !ok || len(ms) != 1 {
			return ""
		}
		for _, m := range ms {
			return m.assignment
		}
		return ""
	}
	consumed := func(topic string) int {
		mu.Lock()
		defer mu.Unlock()
		return run.consumed[topic]
	}
	waitFor(t, "rx-a assigned and consumed", time.Minute, func() bool { return assignment() == "rx-a:[0 1]" && consumed("rx-a") == 1 })
	run.first = time.Since(start)
	run.assigned = append(run.assigned, assignment())

	created := time.Now()
	createTopic(t, admin, "rx-b", 1)
	produce("rx-b")
	waitFor(t, "rx-b's record consumed", time.Minute, func() bool { return consumed("rx-b") == 1 })
	run.pickup = time.Since(created)
	waitFor(t, "rx-b in the assignment", 10*time.Second, func() bool { return assignment() == "rx-a:[0 1] rx-b:[0]" })
	run.assigned = append(run.assigned, assignment())

	deleted := time.Now()
	if resp, err := adm.DeleteTopics(ctx, "rx-b"); err != nil || resp.Error() != nil {
		t.Fatalf("delete rx-b: %v %v", err, resp.Error())
	}
	waitFor(t, "rx-b out of the assignment", time.Minute, func() bool { return assignment() == "rx-a:[0 1]" })
	run.drop = time.Since(deleted)
	run.assigned = append(run.assigned, assignment())

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	corr := int32(0)
	heartbeat := func(group, member string, epoch int32, regex string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		req.RebalanceTimeoutMillis = -1
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.SubscribedTopicRegex = 30000, &regex
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		} else if epoch > 0 {
			req.Topics = owned
		}
		corr++
		return rawRequest(t, c, req, 1, corr).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	for _, regex := range []string{"*t", "[t", "a)b", "(?P<n>a)(?P<n>b)"} {
		r := heartbeat("rx-invalid", "invalid-member-0000001", 0, regex, nil)
		run.invalid = append(run.invalid, fmt.Sprintf("%v: %s", kerr.ErrorForCode(r.ErrorCode), orEmpty(r.ErrorMessage)))
	}

	// A regex matching an internal topic gets its partitions, as Kafka's
	// resolver scans every topic.
	td, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil || td.Error() != nil {
		t.Fatalf("describe __consumer_offsets: %v %v", err, td.Error())
	}
	run.internalWant = len(td["__consumer_offsets"].Partitions)
	const internalMember = "internal-member-000001"
	r := heartbeat("rx-internal", internalMember, 0, "__consumer_offsets", nil)
	epoch := r.MemberEpoch
	var owned []kmsg.ConsumerGroupHeartbeatRequestTopic
	waitFor(t, "__consumer_offsets assigned to a regex", time.Minute, func() bool {
		r := heartbeat("rx-internal", internalMember, epoch, "", owned)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat of the internal-topic member: %v %s", kerr.ErrorForCode(r.ErrorCode), orEmpty(r.ErrorMessage))
		}
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			owned, run.internal = nil, 0
			for _, tp := range r.Assignment.Topics {
				owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
				run.internal += len(tp.Partitions)
			}
		}
		if run.internal > 0 {
			return true
		}
		time.Sleep(200 * time.Millisecond)
		return false
	})
	heartbeat("rx-internal", internalMember, -1, "", nil)
	stop()
	<-done
	return run
}

// TestConsumerGroup848RegexAsKafka runs the regex scenario on Strata and on
// Kafka 4.4.0: the same assignments at each step (rx-a, then rx-b too once
// created, then rx-a again once rx-b is deleted), the same records
// consumed (none of zz), the same INVALID_REGULAR_EXPRESSION messages,
// __consumer_offsets given to a regex that matches it, and a pick-up within
// Kafka's bounds (the next heartbeat more than 10 s after the last refresh).
func TestConsumerGroup848RegexAsKafka(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	strata := regexScenario(t, b.addr)
	t.Logf("strata: first assignment %v, rx-b picked up in %v, dropped in %v; %v", strata.first.Round(time.Millisecond),
		strata.pickup.Round(time.Millisecond), strata.drop.Round(time.Millisecond), strata.assigned)

	k := newKafka(t, t.TempDir())
	startCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	kafka := regexScenario(t, k.Addr())
	t.Logf("kafka:  first assignment %v, rx-b picked up in %v, dropped in %v; %v", kafka.first.Round(time.Millisecond),
		kafka.pickup.Round(time.Millisecond), kafka.drop.Round(time.Millisecond), kafka.assigned)

	if got, want := strings.Join(strata.assigned, " | "), strings.Join(kafka.assigned, " | "); got != want {
		t.Errorf("assignments: strata %s, kafka %s", got, want)
	}
	if fmt.Sprint(strata.consumed) != fmt.Sprint(kafka.consumed) || strata.consumed["zz"] != 0 {
		t.Errorf("consumed: strata %v, kafka %v", strata.consumed, kafka.consumed)
	}
	for i := range kafka.invalid {
		if strata.invalid[i] != kafka.invalid[i] {
			t.Errorf("invalid regex: strata %q, kafka %q", strata.invalid[i], kafka.invalid[i])
		}
	}
	if strata.internal != strata.internalWant || kafka.internal != kafka.internalWant {
		t.Errorf("a regex matching __consumer_offsets got %d of its %d partitions on strata, %d of %d on kafka",
			strata.internal, strata.internalWant, kafka.internal, kafka.internalWant)
	}
	// rx-b is resolved on the first heartbeat more than 10 s after the
	// last refresh (5 s heartbeats), then assigned on the next one.
	if limit := 25 * time.Second; strata.pickup > limit || kafka.pickup > limit {
		t.Errorf("rx-b picked up in %v on strata, %v on kafka; want within %v", strata.pickup, kafka.pickup, limit)
	}
	t.Logf("invalid regexes: %v", kafka.invalid)
}

// javaIncludeScenario: Kafka 4.4's console consumer with --include and
// group.protocol=consumer reads jrx-a, then jrx-b once created. It returns
// how long jrx-b took and the member's subscription as the group shows it
// (the Java client resolves a java.util.regex Pattern itself and sends the
// names it matched, so the broker sees names, not the regex).
func javaIncludeScenario(t *testing.T, home, addr string) (time.Duration, string) {
	t.Helper()
	admin := newClient(t, addr)
	createTopic(t, admin, "jrx-a", 1)
	producer := newClient(t, addr)
	ctx := timeoutCtx(t, 3*time.Minute)
	produce := func(topic string) {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("value-" + topic)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
	produce("jrx-a")
	cctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(cctx, "java", "-Xmx256m", "-Dlog4j2.configurationFile="+filepath.Join(home, "tools-log4j2.properties"),
		"-cp", filepath.Join(home, "libs")+"/*", "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", addr, "--include", "jrx-.*", "--group", "jrx-group", "--from-beginning",
		"--command-property", "group.protocol=consumer", "--command-property", "metadata.max.age.ms=1000")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("java console consumer on %s:\n%s", addr, tail(out.String(), 4<<10))
		}
	}()
	waitFor(t, "the java consumer reads jrx-a", 2*time.Minute, func() bool { return strings.Contains(out.String(), "value-jrx-a") })
	created := time.Now()
	createTopic(t, admin, "jrx-b", 1)
	produce("jrx-b")
	waitFor(t, "the java consumer reads jrx-b", time.Minute, func() bool { return strings.Contains(out.String(), "value-jrx-b") })
	took := time.Since(created)
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"jrx-group"}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil || len(resp.Groups) != 1 || len(resp.Groups[0].Members) != 1 {
		t.Fatalf("describe jrx-group: %v %+v", err, resp)
	}
	m := resp.Groups[0].Members[0]
	names := slices.Sorted(slices.Values(m.SubscribedTopics)) // a set: Kafka lists it in hash order
	return took, fmt.Sprintf("names %v regex %q", names, orEmpty(m.SubscribedTopicRegex))
}

// TestJavaConsumerIncludeAsKafka: the Java console consumer's --include
// under the consumer protocol picks up a topic created later, on Strata as
// on Kafka 4.4.0, subscribed by the same names.
func TestJavaConsumerIncludeAsKafka(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	b := startBroker(t, "")
	strataTook, strataSub := javaIncludeScenario(t, home, b.addr)
	k := newKafka(t, t.TempDir())
	startCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	kafkaTook, kafkaSub := javaIncludeScenario(t, home, k.Addr())
	t.Logf("jrx-b read after %v on strata (%s), %v on kafka (%s)", strataTook.Round(time.Millisecond), strataSub,
		kafkaTook.Round(time.Millisecond), kafkaSub)
	if strataSub != kafkaSub {
		t.Errorf("subscription: strata %s, kafka %s", strataSub, kafkaSub)
	}
}
