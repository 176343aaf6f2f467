package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKafka44ToolsSideBySide: Kafka 4.4.0's own tools, which send the keys
// at Kafka 4.4's newest versions, print the same against Strata as against
// Apache Kafka 4.4.0 holding the same state (versions44State):
// kafka-transactions describe-producers and list, kafka-consumer-groups
// --describe (of a group and of one that does not exist) and --delete,
// kafka-log-dirs, kafka-cluster cluster-id and kafka-topics --describe.
// What is compared leaves out what differs by nature: ids, timestamps,
// sizes, and the producer epoch and sequence, which Kafka's transactions
// v2 (finalized on Kafka, not on Strata) bump per transaction. Skipped
// without Kafka 4.4.0 (make test installs only 4.1.1).
func TestKafka44ToolsSideBySide(t *testing.T) {
	e2e(t)
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skip("Kafka 4.4.0 is not cached (make compat installs it)")
	}
	k := kafkaTargetFrom(t, home, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	p := startBroker(t, "")
	outputs := map[string]map[string]string{}
	for name, addr := range map[string]string{"kafka": k.Addr(), "strata": p.addr} {
		versions44State(t, addr)
		tool := func(class string, args ...string) string {
			args = append([]string{"--bootstrap-server", addr}, args...)
			if class == "ClusterTool" { // its options follow the subcommand
				args = append(args[2:], args[:2]...)
			}
			stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools."+class, args...)
			if err != nil && !strings.Contains(stderr, "not found") {
				t.Errorf("%s: %s %v: %v\n%s%s", name, class, args, err, stdout, stderr)
			}
			return stdout + firstLine(stderr)
		}
		outputs[name] = map[string]string{
			"describe-producers": producerColumns(tool("TransactionsCommand", "describe-producers", "--topic", "t", "--partition", "1")),
			"transactions list":  dropColumn(tool("TransactionsCommand", "list"), "ProducerId"),
			"describe group":     collapse(tool("consumer.group.ConsumerGroupCommand", "--describe", "--group", "g")),
			"describe no group":  collapse(tool("consumer.group.ConsumerGroupCommand", "--describe", "--group", "nosuch")),
			"delete group":       collapse(tool("consumer.group.ConsumerGroupCommand", "--delete", "--group", "g")),
			"log dirs":           logDirPartitions(t, tool("LogDirsCommand", "--describe", "--topic-list", "t")),
			"cluster id":         regexp.MustCompile(`Cluster ID: \S+`).ReplaceAllString(tool("ClusterTool", "cluster-id"), "Cluster ID: <id>"),
			"describe topic":     topicFields(tool("TopicCommand", "--describe", "--topic", "t")),
		}
	}
	for step, want := range outputs["kafka"] {
		got := outputs["strata"][step]
		t.Logf("%s:\n%s", step, got)
		if got != want || strings.TrimSpace(got) == "" {
			t.Errorf("%s: strata\n%s\nkafka\n%s", step, got, want)
		}
	}
}

// firstLine is s's first line: a failing tool's error, without its stack.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// collapse is s with each run of blanks one space.
func collapse(s string) string {
	return strings.TrimSpace(regexp.MustCompile(`[ \t]+`).ReplaceAllString(s, " "))
}

// table reads a tool's tab-separated table.
func table(s string) (header []string, rows [][]string) {
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		fields := strings.Split(strings.TrimRight(line, "\t "), "\t")
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		if header == nil {
			header = fields
			continue
		}
		rows = append(rows, fields)
	}
	return header, rows
}

// dropColumn is the table s without column name.
func dropColumn(s, name string) string {
	header, rows := table(s)
	i := slices.Index(header, name)
	var out []string
	for _, r := range append([][]string{header}, rows...) {
		if i >= 0 && i < len(r) {
			r = slices.Delete(slices.Clone(r), i, i+1)
		}
		out = append(out, strings.Join(r, " "))
	}
	return strings.Join(out, "\n")
}

// producerColumns is describe-producers' header and, per row, the columns
// both brokers agree on by design: the coordinator epoch and the open
// transaction's first offset.
func producerColumns(s string) string {
	header, rows := table(s)
	out := []string{strings.Join(header, " ")}
	for _, r := range rows {
		var keep []string
		for i, h := range header {
			if (h == "LatestCoordinatorEpoch" || h == "CurrentTransactionStartOffset") && i < len(r) {
				keep = append(keep, h+"="+r[i])
			}
		}
		out = append(out, strings.Join(keep, " "))
	}
	return strings.Join(out, "\n")
}

// logDirPartitions is kafka-log-dirs' JSON reduced to its shape: each
// broker's partitions with their lag, future flag and error.
func logDirPartitions(t *testing.T, s string) string {
	t.Helper()
	i := strings.Index(s, "{")
	if i < 0 {
		return s
	}
	var out struct {
		Brokers []struct {
			Broker  int
			LogDirs []struct {
				Error      *string
				Partitions []struct {
					Partition string
					Size      int64
					OffsetLag int64
					IsFuture  bool
				}
			}
		}
		Version int
	}
	if err := json.Unmarshal([]byte(s[i:]), &out); err != nil {
		t.Errorf("kafka-log-dirs output: %v\n%s", err, s)
		return s
	}
	var parts []string
	for _, b := range out.Brokers {
		for _, d := range b.LogDirs {
			for _, p := range d.Partitions {
				parts = append(parts, strings.Join([]string{p.Partition, strings.Repeat("+", min(1, int(p.Size))), jsonString(p.OffsetLag), jsonString(p.IsFuture), jsonString(d.Error)}, " "))
			}
		}
	}
	slices.Sort(parts)
	return jsonString(out.Version) + "\n" + strings.Join(parts, "\n")
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// topicFields is kafka-topics --describe with each field's name and, but
// for the id and configs, its value.
func topicFields(s string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var fields []string
		for _, m := range regexp.MustCompile(`([A-Za-z]+): ?([^\t]*)`).FindAllStringSubmatch(line, -1) {
			if m[1] == "TopicId" || m[1] == "Configs" {
				fields = append(fields, m[1])
				continue
			}
			fields = append(fields, m[1]+"="+strings.TrimSpace(m[2]))
		}
		out = append(out, strings.Join(fields, " "))
	}
	return strings.Join(out, "\n")
}
