package main

// End-to-end tests of KIP-848 consumer groups kept in __consumer_offsets:
// members keep their epochs and partitions across a broker restart.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kip848Args start the broker with consumer group members heartbeating
// every 300ms.
var kip848Args = []string{"--override", "group.consumer.min.heartbeat.interval.ms=100",
	"--override", "group.consumer.heartbeat.interval.ms=300"}

// metricsURLOf is the /metrics address the broker logged.
func metricsURLOf(t *testing.T, b *proc) string {
	t.Helper()
	line := b.waitLog(regexp.MustCompile(`\tserving metrics\t`), 10*time.Second)
	m := regexp.MustCompile(`"healthz": "(http://[^"]+)/healthz"`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("metrics line %q lacks the /healthz URL", line)
	}
	return m[1] + "/metrics"
}

var heartbeatsServed = regexp.MustCompile(`(?m)^strata_requests_total\{api="ConsumerGroupHeartbeat",error="NONE",version="\d+"\} (\d+)$`)

// heartbeatsAnswered is the ConsumerGroupHeartbeats the broker answered
// without an error.
func heartbeatsAnswered(t *testing.T, url string) int {
	_, body := httpGet(t, url)
	n := 0
	for _, m := range heartbeatsServed.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// describedMember is a member as ConsumerGroupDescribe shows it.
type describedMember struct {
	epoch      int32
	assignment string // "topic:[0 1] ..." sorted
	partitions int
}

// describe848 is a KIP-848 group's epoch and members; ok false while the
// coordinator cannot answer for it (loading, moving) or it does not exist.
func describe848(t *testing.T, cl *kgo.Client, group string) (epoch int32, members map[string]describedMember, ok bool) {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(timeoutCtx(t, 10*time.Second), cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return 0, nil, false
	}
	g := resp.Groups[0]
	members = map[string]describedMember{}
	for _, m := range g.Members {
		var parts []string
		n := 0
		for _, tp := range m.Assignment.TopicPartitions {
			n += len(tp.Partitions)
			ps := append([]int32(nil), tp.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			parts = append(parts, fmt.Sprintf("%s:%v", tp.Topic, ps))
		}
		sort.Strings(parts)
		members[m.MemberID] = describedMember{epoch: m.MemberEpoch, assignment: strings.Join(parts, " "), partitions: n}
	}
	return g.Epoch, members, true
}

// member848 is a franz-go KIP-848 group member polling in the background,
// counting, once armed is set, the partitions it was given that it did not
// own, and those it had revoked or lost. (franz-go may hand a partition it
// already owns to OnPartitionsAssigned again, after a full heartbeat to a
// new coordinator answered the same assignment; that is not a change.)
type member848 struct {
	cl              *kgo.Client
	armed           atomic.Bool
	changes         atomic.Int32
	consumed        atomic.Int64
	stop            context.CancelFunc
	done            chan struct{}
	mu              sync.Mutex
	owned           map[string]bool // "topic/partition"
	lastChangeCause string
}

// startMember848 starts a member with addr as its seed brokers (comma
// separated).
func startMember848(t *testing.T, addr, group, topic string) *member848 {
	t.Helper()
	m := &member848{done: make(chan struct{}), owned: map[string]bool{}}
	note := func(what string, gained bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			changed := false
			for topic, parts := range ps {
				for _, p := range parts {
					k := fmt.Sprintf("%s/%d", topic, p)
					changed = changed || m.owned[k] != gained
					m.owned[k] = gained
				}
			}
			if changed && m.armed.Load() {
				m.changes.Add(1)
				m.lastChangeCause = fmt.Sprintf("%s %v", what, ps)
			}
		}
	}
	m.cl = newClient(t, addr, kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.OnPartitionsAssigned(note("assigned", true)), kgo.OnPartitionsRevoked(note("revoked", false)), kgo.OnPartitionsLost(note("lost", false)))
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			m.consumed.Add(int64(len(fs.Records())))
		}
	}()
	t.Cleanup(m.close)
	return m
}

func (m *member848) close() {
	m.stop()
	<-m.done
	m.cl.Close()
}

// TestConsumerGroup848SurvivesRestart: two franz-go KIP-848 members share
// a topic; the broker is killed (-9) and restarted on its data. The group
// comes back from __consumer_offsets with the same group epoch, member ids,
// member epochs and assignments, the members go on heartbeating and
// consuming what is produced after the restart, and neither is given,
// revoked or loses a partition: no rebalance.
func TestConsumerGroup848SurvivesRestart(t *testing.T) {
	e2e(t)
	b := startBroker(t, "", kip848Args...)
	cl := newClient(t, b.addr)
	const topic, group = "kip848-restart", "kip848-survivors"
	createTopic(t, cl, topic, 6)
	a := startMember848(t, b.addr, group, topic)
	c := startMember848(t, b.addr, group, topic)

	var epoch int32
	var before map[string]describedMember
	waitFor(t, "two members sharing the topic at the group epoch", 60*time.Second, func() bool {
		e, ms, ok := describe848(t, cl, group)
		if !ok || len(ms) != 2 {
			return false
		}
		total := 0
		for _, m := range ms {
			if m.epoch != e || m.partitions == 0 {
				return false
			}
			total += m.partitions
		}
		epoch, before = e, ms
		return total == 6
	})
	t.Logf("before the restart: group epoch %d, members %v", epoch, before)
	a.armed.Store(true)
	c.armed.Store(true)
	cl.Close()

	b.kill()
	b = b.restart(append(kip848Args, "--override", "metrics.listener=http://127.0.0.1:0")...)
	metricsURL := metricsURLOf(t, b)
	cl = newClient(t, b.addr)
	var after map[string]describedMember
	var afterEpoch int32
	waitFor(t, "the group loaded after the restart", 60*time.Second, func() bool {
		var ok bool
		afterEpoch, after, ok = describe848(t, cl, group)
		return ok
	})
	if afterEpoch != epoch || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after the restart: group epoch %d, members %v; want epoch %d, members %v", afterEpoch, after, epoch, before)
	}

	// The members consume what is produced now, from the partitions they
	// had, and the group stays where it was.
	consumedBefore := a.consumed.Load() + c.consumed.Load()
	produceAll(t, cl, topic, 0, 600)
	waitFor(t, "the members consuming the records produced after the restart", 60*time.Second, func() bool {
		return a.consumed.Load()+c.consumed.Load()-consumedBefore >= 600
	})
	// Every member heartbeats to the new process (twice each, at the 300ms
	// interval), and each answer leaves the group where it was.
	waitFor(t, "heartbeats answered by the restarted broker", 30*time.Second, func() bool {
		return heartbeatsAnswered(t, metricsURL) >= 4
	})
	afterEpoch, after, _ = describe848(t, cl, group)
	if afterEpoch != epoch || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after consuming: group epoch %d, members %v; want epoch %d, members %v", afterEpoch, after, epoch, before)
	}
	for name, m := range map[string]*member848{"a": a, "c": c} {
		if n := m.changes.Load(); n != 0 {
			m.mu.Lock()
			t.Errorf("member %s saw %d partition changes after the restart, last %s", name, n, m.lastChangeCause)
			m.mu.Unlock()
		}
	}
	if got := a.consumed.Load() + c.consumed.Load() - consumedBefore; got != 600 {
		t.Errorf("the members consumed %d records after the restart, want 600 (none twice)", got)
	}
}

// waitStable848 waits until the group has n members at the group epoch
// sharing all partitions of its topic, and returns the group epoch and
// members.
func waitStable848(t *testing.T, cl *kgo.Client, group string, n, partitions int) (int32, map[string]describedMember) {
	t.Helper()
	var epoch int32
	var members map[string]describedMember
	waitFor(t, fmt.Sprintf("%d members sharing %d partitions at the group epoch", n, partitions), 60*time.Second, func() bool {
		e, ms, ok := describe848(t, cl, group)
		if !ok || len(ms) != n {
			return false
		}
		total := 0
		for _, m := range ms {
			if m.epoch != e || m.partitions == 0 {
				return false
			}
			total += m.partitions
		}
		epoch, members = e, ms
		return total == partitions
	})
	return epoch, members
}

// coordinatorOf is the node FindCoordinator through addr names for group.
func coordinatorOf(addr, group string) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 4
	req.CoordinatorKeys = []string{group}
	resp, err := request(addr, req)
	if err != nil {
		return -1, err
	}
	c := resp.(*kmsg.FindCoordinatorResponse).Coordinators
	if len(c) != 1 || c[0].ErrorCode != 0 {
		return -1, fmt.Errorf("FindCoordinator %s: %+v", group, c)
	}
	return c[0].NodeID, nil
}

// TestClusterConsumerGroup848SurvivesCoordinatorFailover: on a three-node
// cluster with __consumer_offsets replicated three ways, the node
// coordinating a KIP-848 group is killed (-9). The partition's new leader
// replays the group's records: the same group epoch, members, member
// epochs and assignments; the members heartbeat to it without being given,
// revoked or losing a partition.
func TestClusterConsumerGroup848SurvivesCoordinatorFailover(t *testing.T) {
	e2e(t)
	nodes := startCluster(t, "default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.replication.factor=3",
		"offsets.topic.num.partitions=3", "broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=500",
		"group.initial.rebalance.delay.ms=0", "group.consumer.min.heartbeat.interval.ms=100", "group.consumer.heartbeat.interval.ms=300",
		"metrics.listener=http://127.0.0.1:0")
	waitFormed(t, nodes, 30*time.Second)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.addr)
	}
	seed := strings.Join(seeds, ",")
	cl := newClient(t, seed, kgo.SeedBrokers(seeds...))
	const topic, group = "kip848-failover", "kip848-failover-group"
	createTopic(t, cl, topic, 6)
	a := startMember848(t, seed, group, topic)
	c := startMember848(t, seed, group, topic)
	epoch, before := waitStable848(t, cl, group, 2, 6)
	t.Logf("before the failover: group epoch %d, members %v", epoch, before)
	a.armed.Store(true)
	c.armed.Store(true)

	old, err := coordinatorOf(nodes[0].addr, group)
	if err != nil {
		t.Fatal(err)
	}
	var rest []*clusterNode
	for _, n := range nodes {
		if n.id == old {
			n.p.kill()
		} else {
			rest = append(rest, n)
		}
	}
	var coord *clusterNode
	waitUntil(t, 60*time.Second, "a new coordinator for the group", func() (bool, string) {
		id, err := coordinatorOf(rest[0].addr, group)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range rest {
			if n.id == id {
				coord = n
			}
		}
		return coord != nil, fmt.Sprint("coordinator ", id)
	})
	metricsURL := metricsURLOf(t, coord.p)
	cl.Close()
	cl = newClient(t, coord.addr)
	var after map[string]describedMember
	var afterEpoch int32
	waitFor(t, "the group loaded by the new coordinator", 60*time.Second, func() bool {
		var ok bool
		afterEpoch, after, ok = describe848(t, cl, group)
		return ok
	})
	if afterEpoch != epoch || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after the failover (node %d to %d): group epoch %d, members %v; want epoch %d, members %v",
			old, coord.id, afterEpoch, after, epoch, before)
	}
	waitFor(t, "heartbeats answered by the new coordinator", 30*time.Second, func() bool {
		return heartbeatsAnswered(t, metricsURL) >= 4
	})
	afterEpoch, after, _ = describe848(t, cl, group)
	if afterEpoch != epoch || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after consuming: group epoch %d, members %v; want epoch %d, members %v", afterEpoch, after, epoch, before)
	}
	for name, m := range map[string]*member848{"a": a, "c": c} {
		if n := m.changes.Load(); n != 0 {
			m.mu.Lock()
			t.Errorf("member %s saw %d partition changes after the failover, last %s", name, n, m.lastChangeCause)
			m.mu.Unlock()
		}
	}
}

// TestJavaConsumerGroup848SurvivesRestart: the same with two Java console
// consumers (group.protocol=consumer, Kafka 4.4.0's client): after kill -9 and a restart, the group, its member ids,
// epochs and assignments are what they were, and stay so while the members
// heartbeat to the new process.
func TestJavaConsumerGroup848SurvivesRestart(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	b := startBroker(t, "", kip848Args...)
	cl := newClient(t, b.addr)
	const topic, group = "kip848-java", "kip848-java-group"
	createTopic(t, cl, topic, 4)
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, "java", "-Xmx256m", "-Dlog4j2.configurationFile="+filepath.Join(home, "tools-log4j2.properties"),
			"-cp", filepath.Join(home, "libs")+"/*", "org.apache.kafka.tools.consumer.ConsoleConsumer",
			"--bootstrap-server", b.addr, "--topic", topic, "--group", group,
			"--command-property", "group.protocol=consumer", "--command-property", fmt.Sprintf("client.id=java-%d", i))
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cancel()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("java consumer %d:\n%s", i, tail(out.String(), 4<<10))
			}
		})
	}
	epoch, before := waitStable848(t, cl, group, 2, 4)
	t.Logf("before the restart: group epoch %d, members %v", epoch, before)
	cl.Close()

	b.kill()
	b = b.restart(append(kip848Args, "--override", "metrics.listener=http://127.0.0.1:0")...)
	metricsURL := metricsURLOf(t, b)
	cl = newClient(t, b.addr)
	var after map[string]describedMember
	var afterEpoch int32
	waitFor(t, "the group loaded after the restart", 60*time.Second, func() bool {
		var ok bool
		afterEpoch, after, ok = describe848(t, cl, group)
		return ok
	})
	if afterEpoch != epoch || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after the restart: group epoch %d, members %v; want epoch %d, members %v", afterEpoch, after, epoch, before)
	}
	waitFor(t, "heartbeats answered by the restarted broker", 60*time.Second, func() bool {
		return heartbeatsAnswered(t, metricsURL) >= 4
	})
	afterEpoch, after, _ = describe848(t, cl, group)
	if afterEpoch != epoch || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("after the members heartbeated: group epoch %d, members %v; want epoch %d, members %v", afterEpoch, after, epoch, before)
	}
}
