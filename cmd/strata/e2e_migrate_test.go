package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOnlineMigrationAsKafka44: a classic group of two franz-go members
// is upgraded online when a Java 4.4 console consumer joins it with
// group.protocol=consumer (the group turns consumer, its classic members
// stay, on the classic protocol), and downgraded when that consumer
// leaves (the group is classic again and rebalances). Strata does it as
// Kafka 4.4.0 does: the same sequence of group type, state and member
// types, every record consumed, the committed offsets kept across both
// conversions, and on Strata across a kill -9 and restart while the group
// is a consumer group of mixed members.
func TestOnlineMigrationAsKafka44(t *testing.T) {
	e2e(t)
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached: no Java consumer and no comparison with Kafka")
	}
	p := startBroker(t, "", "--override", "group.initial.rebalance.delay.ms=0")
	got := runMigration(t, home, p.addr, func() {
		p.kill()
		p = p.restart("--override", "group.initial.rebalance.delay.ms=0")
	})
	k := kafkaTargetFrom(t, home, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	want := runMigration(t, home, k.Addr(), nil)
	t.Logf("strata:\n%s\nkafka 4.4.0:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	// Only Strata is restarted.
	if got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, "after a restart") }); !slices.Equal(got, want) {
		t.Errorf("strata's migration differs from kafka 4.4.0's:\nstrata\n%s\nkafka\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// migrationMember is a franz-go classic member: it commits what each poll
// returned before letting a rebalance happen.
type migrationMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   map[string]int // value -> times consumed
}

func startMigrationMember(t *testing.T, addr, name string) *migrationMember {
	t.Helper()
	cl := newClient(t, addr, kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.ConsumerGroup("gmig"), kgo.ConsumeTopics("mig"), kgo.ClientID(name),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.HeartbeatInterval(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	m := &migrationMember{cl: cl, cancel: cancel, done: make(chan struct{}), seen: map[string]int{}}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			recs := fs.Records()
			m.mu.Lock()
			for _, r := range recs {
				m.seen[string(r.Value)]++
			}
			m.mu.Unlock()
			if len(recs) > 0 {
				// A commit refused by a rebalance leaves the records to
				// whoever gets the partition next: at least once.
				_ = cl.CommitRecords(ctx, recs...)
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

func (m *migrationMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// runMigration runs the scenario against the broker at addr and returns
// what it saw at each step; restart, when set, kills and restarts the
// broker while the group is a consumer group of mixed members.
func runMigration(t *testing.T, home, addr string, restart func()) []string {
	t.Helper()
	admCl := newClient(t, addr)
	adm := kadm.NewClient(admCl)
	createTopic(t, admCl, "mig", 4)
	produceAll(t, admCl, "mig", 0, 200)
	var steps []string
	committed := func() int64 {
		fo, err := adm.FetchOffsets(timeoutCtx(t, 15*time.Second), "gmig")
		if err != nil || fo.Error() != nil {
			return -1
		}
		var n int64
		fo.Each(func(o kadm.OffsetResponse) { n += o.At })
		return n
	}
	// group is the group's type, state and members as ListGroups and the
	// describe of its type say: "classic Stable members=2".
	group := func() string {
		lg, err := adm.ListGroups(timeoutCtx(t, 15*time.Second))
		if err != nil {
			return err.Error()
		}
		l, ok := lg["gmig"]
		if !ok {
			return "none"
		}
		if l.GroupType == "consumer" {
			d, err := adm.DescribeConsumerGroups(timeoutCtx(t, 15*time.Second), "gmig")
			if err != nil || d["gmig"].Err != nil {
				return fmt.Sprintf("describe: %v %v", err, d["gmig"].Err)
			}
			var types []string
			for _, m := range d["gmig"].Members {
				types = append(types, map[int8]string{0: "classic", 1: "consumer"}[m.MemberType])
			}
			slices.Sort(types)
			return fmt.Sprintf("consumer %s members=(%s)", d["gmig"].State, strings.Join(types, ","))
		}
		d, err := adm.DescribeGroups(timeoutCtx(t, 15*time.Second), "gmig")
		if err != nil || d["gmig"].Err != nil {
			return fmt.Sprintf("describe: %v %v", err, d["gmig"].Err)
		}
		return fmt.Sprintf("%s %s members=%d", l.GroupType, d["gmig"].State, len(d["gmig"].Members))
	}
	// describe is kafka-consumer-groups --describe --state, the broker's
	// address masked.
	describe := func() {
		t.Helper()
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			"--bootstrap-server", addr, "--describe", "--group", "gmig", "--state")
		if err != nil {
			t.Fatalf("kafka-consumer-groups --describe --state: %v\n%s%s", err, stdout, stderr)
		}
		t.Logf("%s: kafka-consumer-groups --describe --state:\n%s", addr, stdout)
		steps = append(steps, "kafka-consumer-groups --describe --state: "+strings.Join(strings.Fields(strings.ReplaceAll(stdout, addr, "<broker>")), " "))
	}
	step := func(what, wantGroup string, wantCommitted int64) {
		t.Helper()
		var last string
		var n int64
		for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if last, n = group(), committed(); last == wantGroup && n == wantCommitted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s: want %s committed=%d within 3m, have %s committed=%d", addr, what, wantGroup, wantCommitted, last, n)
			}
		}
		steps = append(steps, fmt.Sprintf("%s: %s committed=%d", what, last, n))
	}

	a, b := startMigrationMember(t, addr, "classic-a"), startMigrationMember(t, addr, "classic-b")
	step("two classic members", "classic Stable members=2", 200)
	describe()

	java := exec.Command("java", "-Xmx256m", "-Dlog4j2.configurationFile="+filepath.Join(home, "tools-log4j2.properties"),
		"-cp", filepath.Join(home, "libs")+"/*", "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", addr, "--topic", "mig", "--group", "gmig", "--timeout-ms", "30000",
		"--command-property", "group.protocol=consumer", "--command-property", "client.id=java-consumer-protocol")
	var javaOut, javaErr syncBuffer
	java.Stdout, java.Stderr = &javaOut, &javaErr
	if err := java.Start(); err != nil {
		t.Fatalf("start the java console consumer: %v", err)
	}
	javaDone := make(chan error, 1)
	go func() { javaDone <- java.Wait() }()
	t.Cleanup(func() {
		_ = java.Process.Kill()
		if t.Failed() {
			t.Logf("java console consumer stderr:\n%s", tail(javaErr.String(), 8<<10))
		}
	})
	step("a consumer-protocol member joins", "consumer Stable members=(classic,classic,consumer)", 200)
	describe()
	produceAll(t, admCl, "mig", 200, 400)
	step("200 more records", "consumer Stable members=(classic,classic,consumer)", 400)
	if restart != nil {
		restart()
		step("after a restart", "consumer Stable members=(classic,classic,consumer)", 400)
	}
	select {
	case err := <-javaDone:
		if err != nil {
			t.Fatalf("java console consumer: %v\n%s", err, tail(javaErr.String(), 8<<10))
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the java console consumer did not end after 30s without records")
	}
	step("the consumer-protocol member left", "classic Stable members=2", 400)
	describe()
	produceAll(t, admCl, "mig", 400, 500)
	step("100 more records", "classic Stable members=2", 500)
	a.stop()
	b.stop()
	step("the classic members left", "classic Empty members=0", 500)

	seen := map[string]int{}
	for _, m := range []*migrationMember{a, b} {
		for v, n := range m.seen {
			seen[v] += n
		}
	}
	javaRecords := 0
	for _, line := range strings.Split(strings.TrimSpace(javaOut.String()), "\n") {
		if line != "" {
			seen[line]++
			javaRecords++
		}
	}
	twice := 0
	for i := range 500 {
		switch n := seen[strconv.Itoa(i)]; {
		case n == 0:
			t.Errorf("%s: record %d never consumed", addr, i)
		case n > 1:
			twice++
		}
	}
	if javaRecords == 0 {
		t.Errorf("%s: the consumer-protocol member consumed nothing", addr)
	}
	t.Logf("%s: 500 records, %d by the consumer-protocol member, %d consumed more than once", addr, javaRecords, twice)
	return steps
}

// TestClusterMigratedGroupSurvivesCoordinatorFailover: on a three-node
// cluster a classic group upgraded online by a consumer-protocol member
// (franz-go, next-gen) is a consumer group of mixed members; the node
// coordinating it is killed (-9) and the partition's new leader replays
// the group: the same epoch, member ids, member epochs, member types and
// assignments. When the consumer-protocol member leaves, the new
// coordinator turns the group classic again.
func TestClusterMigratedGroupSurvivesCoordinatorFailover(t *testing.T) {
	e2e(t)
	nodes := startCluster(t, "default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.replication.factor=3",
		"offsets.topic.num.partitions=3", "broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=500",
		"group.initial.rebalance.delay.ms=0", "group.consumer.min.heartbeat.interval.ms=100", "group.consumer.heartbeat.interval.ms=300")
	waitFormed(t, nodes, 30*time.Second)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.addr)
	}
	seed := strings.Join(seeds, ",")
	cl := newClient(t, seed, kgo.SeedBrokers(seeds...))
	createTopic(t, cl, "mig", 4)
	a := startMigrationMember(t, seed, "classic-a")
	waitFor(t, "a classic group", 60*time.Second, func() bool {
		lg, err := kadm.NewClient(cl).ListGroups(timeoutCtx(t, 10*time.Second))
		return err == nil && lg["gmig"].GroupType == "classic" && lg["gmig"].State == "Stable"
	})
	c := startMember848(t, seed, "gmig", "mig")
	// types is the members' types and epochs, from ConsumerGroupDescribe.
	types := func(cl *kgo.Client) (string, bool) {
		d, err := kadm.NewClient(cl).DescribeConsumerGroups(timeoutCtx(t, 10*time.Second), "gmig")
		if err != nil || d["gmig"].Err != nil {
			return fmt.Sprint(err, d["gmig"].Err), false
		}
		var out []string
		for _, m := range d["gmig"].Members {
			out = append(out, fmt.Sprintf("%s type=%d epoch=%d", m.MemberID, m.MemberType, m.MemberEpoch))
		}
		slices.Sort(out)
		return fmt.Sprintf("%s epoch=%d (%s)", d["gmig"].State, d["gmig"].Epoch, strings.Join(out, ", ")), d["gmig"].State == "Stable" && len(out) == 2
	}
	var before string
	waitFor(t, "a stable consumer group of a classic and a consumer-protocol member", 90*time.Second, func() bool {
		var ok bool
		before, ok = types(cl)
		return ok && strings.Contains(before, "classic-a-") && strings.Contains(before, "type=0") && strings.Contains(before, "type=1")
	})
	_, members, _ := describe848(t, cl, "gmig")
	t.Logf("before the failover: %s %v", before, members)

	old, err := coordinatorOf(nodes[0].addr, "gmig")
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
		id, err := coordinatorOf(rest[0].addr, "gmig")
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
	ccl := newClient(t, coord.addr)
	var after string
	var afterMembers map[string]describedMember
	waitFor(t, "the group loaded by the new coordinator", 60*time.Second, func() bool {
		var ok bool
		after, ok = types(ccl)
		_, afterMembers, _ = describe848(t, ccl, "gmig")
		return ok
	})
	if after != before || fmt.Sprint(afterMembers) != fmt.Sprint(members) {
		t.Fatalf("after the failover (node %d to %d): %s %v; want %s %v", old, coord.id, after, afterMembers, before, members)
	}
	c.close()
	waitFor(t, "the group classic again on the new coordinator", 90*time.Second, func() bool {
		lg, err := kadm.NewClient(ccl).ListGroups(timeoutCtx(t, 10*time.Second))
		return err == nil && lg["gmig"].GroupType == "classic" && lg["gmig"].State == "Stable"
	})
	a.stop()
}
