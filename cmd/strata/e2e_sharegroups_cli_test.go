package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareCLIScript runs Kafka 4.4.0's kafka-console-share-consumer and
// kafka-share-groups against addr, one share group "cg" of a 3-partition
// topic "cli" (10 records in partition 0, 6 in partition 1, none in 2: a
// share fetch answers it without records; the group's
// share.auto.offset.reset earliest): the console share consumer reads all
// 16; a franz-go share member (kgo.ShareGroup) joins and the group is
// described (offsets, --members, --state, with --verbose) and refused
// --reset-offsets and --delete-offsets; once it left, --list, --describe,
// --reset-offsets (--to-earliest --dry-run, --to-latest and --to-datetime
// --execute, each followed by --describe), the console share consumer
// reading partition 0's 10 records again, --delete-offsets and --delete.
// It returns each step's output, masked (shareCLIMask).
func shareCLIScript(t *testing.T, home, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, group = "cli", "cg"
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, topic, 3)
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("set share.auto.offset.reset: %v %v", err, ar)
	}
	var recs []*kgo.Record
	for i := range 16 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i / 10), Value: []byte("v" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var out []string
	tool := func(class string, args ...string) {
		t.Helper()
		stdout, stderr, err := runKafkaTool(t, home, "", class, append([]string{"--bootstrap-server", addr}, args...)...)
		printed := stdout + toolMessages(stderr)
		if strings.HasSuffix(class, "ConsoleShareConsumer") { // records of two partitions interleave
			lines := strings.Split(strings.TrimSpace(printed), "\n")
			slices.Sort(lines)
			printed = strings.Join(lines, "\n")
		}
		got := shareCLIMask(printed)
		if err != nil {
			got += "\n(exit: " + err.Error() + ")"
		}
		out = append(out, strings.Join(args, " ")+":\n"+got)
	}
	groups := func(args ...string) { tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand", args...) }
	// waitMembers waits until the group has n members, each holding every partition.
	waitMembers := func(n int) {
		t.Helper()
		waitFor(t, "share group "+group+" with "+strconv.Itoa(n)+" members", time.Minute, func() bool {
			req := kmsg.NewPtrShareGroupDescribeRequest()
			req.GroupIDs = []string{group}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil || len(resp.Groups) != 1 || len(resp.Groups[0].Members) != n {
				return false
			}
			for _, m := range resp.Groups[0].Members {
				if len(m.Assignment.TopicPartitions) != 1 || len(m.Assignment.TopicPartitions[0].Partitions) != 3 {
					return false
				}
			}
			return true
		})
	}

	tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--topic", topic, "--group", group, "--max-messages", "16", "--timeout-ms", "60000")
	waitMembers(0)
	member := newClient(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("cli-member"))
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			member.PollFetches(pollCtx)
		}
	}()
	waitMembers(1)
	groups("--list")
	groups("--describe", "--group", group)
	groups("--describe", "--group", group, "--members")
	groups("--describe", "--group", group, "--members", "--verbose")
	groups("--describe", "--group", group, "--state")
	groups("--describe", "--group", group, "--state", "--verbose")
	groups("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	groups("--delete-offsets", "--group", group, "--topic", topic)
	stopPolling()
	<-polled
	member.Close()
	waitMembers(0)
	groups("--describe", "--group", group, "--state", "--verbose")
	groups("--describe", "--group", group)
	groups("--describe", "--group", "nosuch")
	groups("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--dry-run")
	groups("--reset-offsets", "--group", group, "--topic", topic, "--to-latest", "--execute")
	groups("--describe", "--group", group)
	groups("--reset-offsets", "--group", group, "--topic", topic+":0", "--to-datetime", "2020-01-01T00:00:00.000", "--execute")
	groups("--describe", "--group", group)
	tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--topic", topic, "--group", group, "--max-messages", "10", "--timeout-ms", "60000")
	waitMembers(0)
	groups("--describe", "--group", group)
	groups("--delete-offsets", "--group", group, "--topic", topic)
	groups("--describe", "--group", group)
	groups("--delete-offsets", "--group", group, "--topic", "nosuch")
	groups("--delete", "--group", group)
	groups("--list")
	return out
}

var (
	// shareCLIMasks are what differs between two brokers by nature: member
	// ids (22 characters of base64), the coordinator's address and id, the
	// client hosts.
	shareCLIMasks = []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`\b[A-Za-z0-9_-]{22}\b`), "<member>"},
		{regexp.MustCompile(`\S+:\d+ +\(\d+\)`), "<coordinator>"},
		{regexp.MustCompile(`/\S+`), "/<host>"},
	}
	tableHeader = regexp.MustCompile(`^(GROUP|TOPIC)\s`)
)

// toolMessages is what a tool wrote to stderr for its user: not its log
// lines and their stacks.
func toolMessages(stderr string) string {
	var out []string
	inLog := false
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case strings.HasPrefix(line, "[20"):
			inLog = true
		case strings.HasPrefix(line, "\tat ") || strings.HasPrefix(line, "Caused by: ") || strings.HasPrefix(line, "\t... "):
		case inLog && strings.Contains(line, "Exception"):
		default:
			inLog = false
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// shareCLIMask is a tool's output with shareCLIMasks applied, each run of
// blanks one space, and a table's rows sorted (the tool prints them in
// hash order).
func shareCLIMask(s string) string {
	for _, m := range shareCLIMasks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = collapse(lines[i])
	}
	for i := 0; i < len(lines); i++ {
		if !tableHeader.MatchString(lines[i]) {
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] != "" {
			j++
		}
		slices.Sort(lines[i+1 : j])
		i = j
	}
	return strings.Join(lines, "\n")
}

// TestShareGroupsCLIAsKafka44: Kafka 4.4.0's kafka-share-groups and
// kafka-console-share-consumer print the same against Strata (with
// unstable.api.versions.enable) as against Apache Kafka 4.4.0, step by
// step (shareCLIScript). Skipped without Kafka 4.4.0's jars.
func TestShareGroupsCLIAsKafka44(t *testing.T) {
	e2e(t)
	home := installedKafka44(t)
	k := kafkaTargetFrom(t, home, t.TempDir(), "share.coordinator.state.topic.replication.factor=1", "share.coordinator.state.topic.min.isr=1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	p := startBroker(t, "", "--override", "unstable.api.versions.enable=true")
	got := shareCLIScript(t, home, p.addr)
	want := shareCLIScript(t, home, k.Addr())
	if len(got) != len(want) {
		t.Fatalf("strata ran %d steps, kafka %d", len(got), len(want))
	}
	for i := range want {
		t.Logf("%s", got[i])
		if got[i] != want[i] {
			t.Errorf("strata:\n%s\nkafka:\n%s", got[i], want[i])
		}
	}
}

// installedKafka44 is Kafka 4.4.0's home, the test skipped when java or
// its jars are not installed.
func installedKafka44(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	if _, err := os.Stat(filepath.Join(kafkaHome, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached (make compat installs them)")
	}
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	return home
}
