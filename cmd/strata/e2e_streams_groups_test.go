package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsHome is the Kafka Streams 4.4.0 of compat-tests/scripts/install-streams.sh
// with the chaos word count compiled; the test is skipped without it.
func streamsHome(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	home, err := filepath.Abs(filepath.Join("..", "..", "compat-tests", ".cache", "streams-4.4.0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "classes", "WordCount.class")); err != nil {
		t.Skip("Kafka Streams is not installed: run compat-tests/scripts/install-streams.sh")
	}
	return home
}

// streamsApp is a running word count (chaos/testdata/streams/WordCount.java).
type streamsApp struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

func (a *streamsApp) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.Write(p)
}

func (a *streamsApp) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.String()
}

// startWordCount runs the word count as application id app against addr,
// with group.protocol=streams, reading input and writing output.
func startWordCount(t *testing.T, home, addr, input, output, app string) *streamsApp {
	t.Helper()
	a := &streamsApp{}
	a.cmd = exec.Command("java", "-Xmx256m", "-cp", filepath.Join(home, "libs")+"/*:"+filepath.Join(home, "classes"),
		"WordCount", addr, input, output, app, t.TempDir(), "streams", "1")
	a.cmd.Stdout, a.cmd.Stderr = a, a
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		_ = a.cmd.Wait()
		if t.Failed() {
			t.Logf("word count %s output:\n%s", app, tail(a.output(), 6000))
		}
	})
	return a
}

// describeStreamsGroup is StreamsGroupDescribe v1 of one group.
func describeStreamsGroup(t *testing.T, addr, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	return rawRequest(t, c, req, 1, 1).(*kmsg.StreamsGroupDescribeResponse).Groups[0]
}

// streamsCLIMask hides what differs between two runs: process ids
// (UUIDs), member ids (base64 UUIDs) and hosts; epochs, tasks, lags and
// offsets are kept.
var streamsCLIMask = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
	{regexp.MustCompile(`\b[A-Za-z0-9_-]{22}\b`), "<member>"},
	{regexp.MustCompile(`/[0-9.:a-f]+`), "/<host>"},
	{regexp.MustCompile(` +`), " "},
}

func maskStreamsCLI(s string) string {
	for _, m := range streamsCLIMask {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// TestStreamsGroupsAsKafka44 runs Kafka Streams 4.4's word count with
// group.protocol=streams on Strata and on Kafka 4.4.0: on both it creates
// the repartition and changelog topics through its heartbeats, gets its
// six tasks and counts every word; then kafka-streams-groups.sh --list,
// --describe, --describe --members and --describe --offsets print the same
// (ids and hosts masked), and after the application stops the group is
// Empty and can be deleted, as on Kafka.
func TestStreamsGroupsAsKafka44(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	streams := streamsHome(t)
	k := kafkaTargetFrom(t, home, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	p := startBroker(t, "")
	cli := func(addr string, args ...string) string {
		t.Helper()
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.streams.StreamsGroupCommand",
			append([]string{"--bootstrap-server", addr}, args...)...)
		out := stdout
		if err != nil {
			out += "error: " + lastLine(stderr)
		}
		return maskStreamsCLI(out)
	}
	const group = "wc-cli"
	run := func(addr string) []string {
		cl := newClient(t, addr)
		createTopic(t, cl, "wc-in", 3)
		createTopic(t, cl, "wc-out", 1)
		words := []string{"alpha beta", "beta gamma", "gamma alpha beta"}
		for i := range 30 {
			r := &kgo.Record{Topic: "wc-in", Partition: int32(i % 3), Value: []byte(words[i%3])}
			if err := cl.ProduceSync(timeoutCtx(t, 30*time.Second), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		app := startWordCount(t, streams, addr, "wc-in", "wc-out", group)
		waitFor(t, "the word count's group Stable with its 6 tasks on "+addr, 2*time.Minute, func() bool {
			d := describeStreamsGroup(t, addr, group)
			return d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == 1 &&
				len(d.Members[0].Assignment.ActiveTasks) == 2 && countTasks(d.Members[0].Assignment.ActiveTasks) == 6
		})
		outs := consumeAll(t, addr, "wc-out", 70, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		if len(outs) != 70 {
			t.Errorf("%s: %d counts out, want 70", addr, len(outs))
		}
		md, err := kadm.NewClient(cl).ListTopics(timeoutCtx(t, 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var internal []string
		for _, d := range md.Sorted() {
			if strings.HasPrefix(d.Topic, group+"-") {
				internal = append(internal, d.Topic+":"+strconv.Itoa(len(d.Partitions)))
			}
		}
		waitFor(t, "the committed offsets on "+addr, time.Minute, func() bool {
			return !strings.Contains(cli(addr, "--describe", "--offsets", "--group", group), " - ")
		})
		steps := []string{
			strings.Join(internal, " "),
			cli(addr, "--list"),
			cli(addr, "--describe", "--group", group),
			cli(addr, "--describe", "--members", "--group", group),
			cli(addr, "--describe", "--offsets", "--group", group),
			cli(addr, "--describe", "--group", "no-such-group"),
		}
		_ = app.cmd.Process.Signal(os.Interrupt)
		_ = app.cmd.Wait()
		waitFor(t, "the group Empty after the application closed on "+addr, 2*time.Minute, func() bool {
			return describeStreamsGroup(t, addr, group).State == "Empty"
		})
		return append(steps,
			cli(addr, "--list", "--state"),
			cli(addr, "--delete", "--group", group),
			cli(addr, "--list"))
	}
	want, got := run(k.Addr()), run(p.addr)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: strata printed\n%s\nkafka 4.4.0 printed\n%s", i, got[i], want[i])
		}
	}
}

func countTasks(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// streamsStep is one raw request of TestStreamsGroupProtocolAsKafka44 and
// what came back, printed for the comparison.
type streamsStep struct {
	name string
	req  kmsg.Request
	ver  int16
	wait func(resp kmsg.Response) bool // repeat (up to a minute) until true
}

func printStreamsResponse(resp kmsg.Response) string {
	var b strings.Builder
	errText := func(code int16, msg *string) {
		if err := kerr.ErrorForCode(code); err != nil {
			b.WriteString(err.Error())
		} else {
			b.WriteString("OK")
		}
		if msg != nil {
			b.WriteString(" " + *msg)
		}
	}
	switch r := resp.(type) {
	case *kmsg.StreamsGroupHeartbeatResponse:
		errText(r.ErrorCode, r.ErrorMessage)
		fmt.Fprintf(&b, " epoch=%d interval=%d lag=%d status=[", r.MemberEpoch, r.HeartbeatIntervalMillis, r.AcceptableRecoveryLag)
		for _, s := range r.Status {
			if s.StatusCode != 5 { // ASSIGNMENT_DELAYED: Kafka's timing
				fmt.Fprintf(&b, "%d:%s;", s.StatusCode, s.StatusDetail)
			}
		}
		fmt.Fprintf(&b, "] active=%v standby=%v warmup=%v", printTasks(r.ActiveTasks), printTasks(r.StandbyTasks), printTasks(r.WarmupTasks))
	case *kmsg.StreamsGroupDescribeResponse:
		for _, g := range r.Groups {
			errText(g.ErrorCode, g.ErrorMessage)
			fmt.Fprintf(&b, " %s state=%s epoch=%d/%d members=%d", g.Group, g.State, g.Epoch, g.AssignmentEpoch, len(g.Members))
			ms := slices.Clone(g.Members) // Kafka's order is its hash map's
			sort.Slice(ms, func(i, j int) bool { return ms[i].MemberID < ms[j].MemberID })
			for _, m := range ms {
				fmt.Fprintf(&b, " [%s epoch=%d process=%s active=%v target=%v]", m.MemberID, m.MemberEpoch, m.ProcessID,
					printTasks(m.Assignment.ActiveTasks), printTasks(m.TargetAssignment.ActiveTasks))
			}
		}
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fmt.Fprintf(&b, "%s-%d:", t.Topic, p.Partition)
				errText(p.ErrorCode, nil)
			}
		}
	case *kmsg.StreamsGroupTopologyDescriptionUpdateResponse:
		errText(r.ErrorCode, r.ErrorMessage)
	case *kmsg.ConsumerGroupHeartbeatResponse:
		errText(r.ErrorCode, r.ErrorMessage)
	case *kmsg.MetadataResponse:
		for _, t := range r.Topics {
			fmt.Fprintf(&b, "%s:%d:%d ", *t.Topic, t.ErrorCode, len(t.Partitions))
		}
	case *kmsg.FindCoordinatorResponse:
		for _, c := range r.Coordinators {
			errText(c.ErrorCode, nil)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, rr := range r.Resources {
			errText(rr.ErrorCode, rr.ErrorMessage)
		}
	}
	return b.String()
}

// taskSetFrom lists tasks named subtopology_partition.
func taskSetFrom(tasks []string) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, task := range tasks {
		sub, p, _ := strings.Cut(task, "_")
		n, _ := strconv.Atoi(p)
		if len(out) == 0 || out[len(out)-1].SubtopologyID != sub {
			out = append(out, kmsg.TaskIDs{SubtopologyID: sub})
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, int32(n))
	}
	return out
}

func printTasks(ts []kmsg.TaskIDs) string {
	if ts == nil {
		return "null"
	}
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s:%v", t.SubtopologyID, t.Partitions))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// TestStreamsGroupProtocolAsKafka44 sends the same raw StreamsGroup*
// requests to Strata and Kafka 4.4.0 and compares the answers: Kafka's
// INVALID_REQUEST messages, a topology naming an internal topic, a group
// that is not there or of another type, the join that reports and creates
// the missing changelog topic (with as many partitions as the source
// topic), the tasks given once it exists, a second member and the
// rebalance between them (revocation before reassignment), fencing by
// epoch, leaving, StreamsGroupDescribe and the topology description
// update Kafka refuses without a plugin.
func TestStreamsGroupProtocolAsKafka44(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	k := kafkaTargetFrom(t, home, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	p := startBroker(t, "")

	// The word count's shape: subtopology 0 reads the source topic and
	// writes the repartition topic subtopology 1 reads, whose store has a
	// changelog; both are internal topics for the broker to create.
	topology := func(source string) *kmsg.StreamsGroupHeartbeatRequestTopology {
		return &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{source}, RepartitionSinkTopics: []string{"sg-rep"}},
			{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "sg-rep"}},
				StateChangelogTopics: []kmsg.TopicInfo{{Topic: "sg-store-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}},
		}}
	}
	hb := func(member string, epoch int32, mutate func(*kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatRequest {
		r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = "sg", member, epoch
		if epoch == 0 {
			r.RebalanceTimeoutMillis, r.ProcessID = 30000, kmsg.StringPtr("process-"+member)
			r.Topology = topology("sg-src")
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
		if mutate != nil {
			mutate(r)
		}
		return r
	}
	owned := func(tasks ...string) func(*kmsg.StreamsGroupHeartbeatRequest) {
		return func(r *kmsg.StreamsGroupHeartbeatRequest) {
			set := taskSetFrom(tasks)
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = set, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
	}
	loaded := func(resp kmsg.Response) bool {
		var code int16
		switch r := resp.(type) {
		case *kmsg.StreamsGroupHeartbeatResponse:
			code = r.ErrorCode
		case *kmsg.ConsumerGroupHeartbeatResponse:
			code = r.ErrorCode
		}
		return code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code
	}
	// Kafka delays a new group's first assignment and batches the later
	// ones (streams.initial.rebalance.delay.ms, streams.assignment.interval.ms;
	// Strata does neither): a step that expects an assignment repeats its
	// heartbeat until it is not ASSIGNMENT_DELAYED, and that status is
	// left out of the comparison.
	assigned := func(resp kmsg.Response) bool {
		r := resp.(*kmsg.StreamsGroupHeartbeatResponse)
		for _, st := range r.Status {
			if st.StatusCode == 5 {
				return false
			}
		}
		return r.ErrorCode != 0 || len(r.Status) == 0
	}
	topics := kmsg.NewPtrMetadataRequest()
	topics.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("sg-rep")}, {Topic: kmsg.StringPtr("sg-store-changelog")}}
	consumer := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	consumer.Group, consumer.MemberID, consumer.RebalanceTimeoutMillis = "cg", "c1", 30000
	consumer.SubscribedTopicNames, consumer.Topics = []string{"sg-src"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	describe := kmsg.NewPtrStreamsGroupDescribeRequest()
	describe.Groups = []string{"sg", "cg", "none"}
	update := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	update.Group, update.MemberID = "sg", "m1"
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKeys = []string{"sg", "cg", "sg-missing"}
	// OffsetCommit v9 from m1 at an older member epoch: Kafka checks each
	// partition's task against the epoch it was given to m1 at.
	commit := func(epoch int32, topic string, partition int32) *kmsg.OffsetCommitRequest {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.MemberID, r.Generation = "sg", "m1", epoch
		ct := kmsg.NewOffsetCommitRequestTopic()
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = partition, 1
		ct.Topic, ct.Partitions = topic, []kmsg.OffsetCommitRequestTopicPartition{cp}
		r.Topics = []kmsg.OffsetCommitRequestTopic{ct}
		return r
	}
	steps := []streamsStep{
		{name: "coordinator", req: find, ver: 4, wait: func(resp kmsg.Response) bool {
			for _, c := range resp.(*kmsg.FindCoordinatorResponse).Coordinators {
				if c.ErrorCode != 0 {
					return false
				}
			}
			return true
		}},
		{name: "sg loaded", req: hb("m1", 3, nil), ver: 1, wait: loaded},
		{name: "sg-missing loaded", req: hb("m1", 3, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "sg-missing" }), ver: 1, wait: loaded},
		{name: "cg loaded", req: hb("m1", 3, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "cg" }), ver: 1, wait: loaded},
		{name: "no member id", req: hb("", 0, nil), ver: 1},
		{name: "no group id", req: hb("m1", 0, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "" }), ver: 1},
		{name: "join without rebalance timeout", req: hb("m1", 0, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), ver: 1},
		{name: "join without topology", req: hb("m1", 0, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }), ver: 1},
		{name: "join owning tasks", req: hb("m1", 0, owned("0_0")), ver: 1},
		{name: "epoch -3", req: hb("m1", -3, nil), ver: 1},
		{name: "only active tasks", req: hb("m1", 3, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.ActiveTasks = []kmsg.TaskIDs{} }), ver: 1},
		{name: "topology after joining", req: hb("m1", 3, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = topology("sg-src") }), ver: 1},
		{name: "internal topic as source", req: hb("m1", 0, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = topology("__consumer_offsets") }), ver: 1},
		{name: "unknown group", req: hb("m1", 3, nil), ver: 1},
		{name: "consumer group", req: consumer, ver: 1, wait: loaded},
		{name: "streams heartbeat to a consumer group", req: hb("m1", 0, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "cg" }), ver: 1},
		{name: "join, source topic missing", req: hb("m1", 0, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group, r.Topology = "sg-missing", topology("sg-nope") }), ver: 1},
		{name: "leave", req: hb("m1", -1, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "sg-missing" }), ver: 1},
		{name: "join, internal topics missing", req: hb("m1", 0, nil), ver: 1},
		{name: "the internal topics are created", req: topics, ver: 12, wait: func(resp kmsg.Response) bool {
			ts := resp.(*kmsg.MetadataResponse).Topics
			return len(ts[0].Partitions) == 2 && len(ts[1].Partitions) == 2
		}},
		{name: "tasks once they exist", req: hb("m1", 1, owned()), ver: 1, wait: assigned},
		{name: "m1 owns its tasks", req: hb("m1", 3, owned("0_0", "0_1", "1_0", "1_1")), ver: 1},
		{name: "m2 joins", req: hb("m2", 0, nil), ver: 1, wait: assigned},
		{name: "m1 must revoke two", req: hb("m1", 3, owned("0_0", "0_1", "1_0", "1_1")), ver: 1, wait: assigned},
		{name: "m2 waits for them", req: hb("m2", 4, owned()), ver: 1},
		{name: "describe while m1 revokes", req: describe, ver: 1},
		{name: "m1 revoked", req: hb("m1", 3, owned("0_0", "1_0")), ver: 1},
		{name: "m2 gets them", req: hb("m2", 4, owned()), ver: 1},
		{name: "describe", req: describe, ver: 1},
		{name: "m1 epoch ahead", req: hb("m1", 9, owned("0_0", "1_0")), ver: 1},
		{name: "topology description update", req: update, ver: 0},
		{name: "m2 leaves", req: hb("m2", -1, nil), ver: 1},
		{name: "m1 gets all", req: hb("m1", 4, owned("0_0", "1_0")), ver: 1, wait: assigned},
		{name: "m1 commits at epoch 3 a source task it has had since 3", req: commit(3, "sg-src", 0), ver: 9},
		{name: "m1 commits at epoch 3 a repartition task it has had since 3", req: commit(3, "sg-rep", 0), ver: 9},
		{name: "m1 commits at epoch 4 a task given to it at 5", req: commit(4, "sg-src", 1), ver: 9},
		{name: "m1 commits at epoch 5 a task given to it at 5", req: commit(5, "sg-src", 1), ver: 9},
		{name: "m1 commits at epoch 3 a topic outside the topology", req: commit(3, "sg-store-changelog", 0), ver: 9},
		{name: "unknown member", req: hb("m3", 3, nil), ver: 1},
	}
	run := func(addr string) []string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cl := newClient(t, addr)
		createTopic(t, cl, "sg-src", 2)
		var out []string
		for i, s := range steps {
			resp := rawRequest(t, c, s.req, s.ver, int32(i))
			if s.wait != nil && !s.wait(resp) {
				waitFor(t, s.name+" on "+addr, time.Minute, func() bool {
					resp = rawRequest(t, c, s.req, s.ver, int32(i))
					return s.wait(resp)
				})
			}
			out = append(out, s.name+": "+printStreamsResponse(resp))
			t.Logf("%s: %s", addr, out[len(out)-1])
		}
		return out
	}
	want, got := run(k.Addr()), run(p.addr)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: strata answered\n%s\nkafka 4.4.0 answered\n%s", i, got[i], want[i])
		}
	}
}
