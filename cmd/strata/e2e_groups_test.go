package main

// End-to-end tests of consumer groups: committed offsets survive kill -9,
// and Sarama's and librdkafka's (kcat -G) group consumers work.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupArgs start the broker with groups that rebalance at once.
var groupArgs = []string{"--override", "group.initial.rebalance.delay.ms=0"}

// committed fetches a group's committed offsets for topic.
func committed(t *testing.T, cl *kgo.Client, group, topic string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	resp, err := req.RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil {
		t.Fatalf("OffsetFetch %s: %v", group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("OffsetFetch %s: %v", group, err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == topic {
				out[rp.Partition] = rp.Offset
			}
		}
	}
	return out
}

// waitCommitted polls until the group's commits for topic equal want.
func waitCommitted(t *testing.T, cl *kgo.Client, group, topic string, want map[int32]int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := committed(t, cl, group, topic)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s committed %v, want %v", group, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consumeGroup consumes n records as a member of group, checks that each
// partition starts at from[partition] without gaps, then leaves the group
// (committing on the way out).
func consumeGroup(t *testing.T, addr, group, topic string, n int, from map[int32]int64) {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(6*time.Second), kgo.FetchMaxWait(200*time.Millisecond), kgo.AutoCommitInterval(100*time.Millisecond))
	next := map[int32]int64{}
	for p, o := range from {
		next[p] = o
	}
	ctx := timeoutCtx(t, time.Minute)
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, err)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		for _, r := range fs.Records() {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			got++
		}
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close()
}

func TestGroupOffsetsSurviveKill9(t *testing.T) {
	e2e(t)
	b := startBroker(t, "", groupArgs...)
	cl := newClient(t, b.addr)
	const topic, group = "resume", "resumers"
	createTopic(t, cl, topic, 3)
	produceAll(t, cl, topic, 0, 3000)
	zero := map[int32]int64{0: 0, 1: 0, 2: 0}
	consumeGroup(t, b.addr, group, topic, 3000, zero)
	end := endOffsets(t, cl, topic, 3)
	waitCommitted(t, cl, group, topic, end)
	cl.Close()

	b.kill()
	b = b.restart(groupArgs...)
	cl = newClient(t, b.addr)
	// Until the replay finishes the coordinator answers
	// COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
	waitCommitted(t, cl, group, topic, end)

	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != 0 || g.State != "Empty" || g.ProtocolType != "consumer" {
		t.Fatalf("after restart the group is %+v, want Empty consumer group", g)
	}

	produceAll(t, cl, topic, 3000, 3600)
	consumeGroup(t, b.addr, group, topic, 600, end)
	waitCommitted(t, cl, group, topic, endOffsets(t, cl, topic, 3))
}

// saramaHandler consumes until want records arrived, marking each.
type saramaHandler struct {
	mu   sync.Mutex
	seen map[string]bool
	want int
	done chan struct{}
	once sync.Once
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.seen[string(m.Value)] = true
		if len(h.seen) == h.want {
			h.once.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

func TestSaramaConsumerGroup(t *testing.T) {
	e2e(t)
	b := startBroker(t, "", groupArgs...)
	cl := newClient(t, b.addr)
	const topic, group, n = "sarama-group", "sarama", 2000
	createTopic(t, cl, topic, 3)
	produceAll(t, cl, topic, 0, n)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup([]string{b.addr}, group, cfg)
	if err != nil {
		t.Fatalf("consumer group: %v", err)
	}
	h := &saramaHandler{seen: map[string]bool{}, want: n, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	consumed := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				consumed <- err
				return
			}
		}
		consumed <- nil
	}()
	select {
	case <-h.done:
	case err := <-cg.Errors():
		t.Fatalf("sarama group error: %v", err)
	case <-time.After(time.Minute):
		t.Fatalf("sarama consumed %d of %d records", len(h.seen), n)
	}
	cancel()
	if err := <-consumed; err != nil {
		t.Fatalf("consume: %v", err)
	}
	if err := cg.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	waitCommitted(t, cl, group, topic, endOffsets(t, cl, topic, 3))
}

func TestKcatConsumerGroup(t *testing.T) {
	e2e(t)
	bin := ensureKcat(t)
	b := startBroker(t, "", groupArgs...)
	cl := newClient(t, b.addr)
	const topic, group = "kcat-group", "kcats"
	createTopic(t, cl, topic, 3)
	produceAll(t, cl, topic, 0, 300)
	consume := func() []string {
		out := kcat(t, bin, "", "-b", b.addr, "-G", group, "-X", "auto.offset.reset=earliest",
			"-X", "session.timeout.ms=6000", "-e", "-q", "-f", "%s\n", topic)
		lines := strings.Fields(out)
		sort.Strings(lines)
		return lines
	}
	if got := consume(); len(got) != 300 {
		t.Fatalf("first kcat -G member consumed %d records, want 300", len(got))
	}
	waitCommitted(t, cl, group, topic, endOffsets(t, cl, topic, 3))
	if got := consume(); len(got) != 0 {
		t.Fatalf("second kcat -G member saw %d committed records again: %v", len(got), got[:min(len(got), 10)])
	}
	produceAll(t, cl, topic, 300, 310)
	var want []string
	for i := 300; i < 310; i++ {
		want = append(want, fmt.Sprint(i))
	}
	sort.Strings(want)
	if got := consume(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("third kcat -G member consumed %v, want only the new %v", got, want)
	}
}
