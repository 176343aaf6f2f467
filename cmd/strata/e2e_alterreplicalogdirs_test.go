package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logDirMoves runs, against the broker (node 1) at addr, AlterReplicaLogDirs
// for partitions that exist, do not exist and to a dir that is not the
// broker's, then kafka-reassign-partitions with log_dirs naming the
// broker's log dir, --execute and --verify; it returns what came back with
// the log dir's path masked.
func logDirMoves(t *testing.T, home, addr string) []string {
	t.Helper()
	cl := newClient(t, addr)
	ctx := timeoutCtx(t, 2*time.Minute)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "moves"); err != nil {
		t.Fatal(err)
	}
	produceAll(t, cl, "moves", 0, 20)
	dresp, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, cl.Broker(1))
	if err != nil || len(dresp.Dirs) != 1 {
		t.Fatalf("DescribeLogDirs: %v %+v", err, dresp)
	}
	logDir := dresp.Dirs[0].Dir
	var out []string
	for _, dir := range []string{logDir, logDir + "-other", "relative"} {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: dir, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{
			{Topic: "moves", Partitions: []int32{0, 1, 7}}, {Topic: "absent", Partitions: []int32{0}},
		}}}
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatalf("AlterReplicaLogDirs: %v", err)
		}
		var codes []string
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				name := "NONE"
				if e, ok := kerr.ErrorForCode(p.ErrorCode).(*kerr.Error); ok {
					name = e.Message
				}
				codes = append(codes, fmt.Sprintf("%s-%d %s", rt.Topic, p.Partition, name))
			}
		}
		sort.Strings(codes)
		out = append(out, strings.ReplaceAll(dir, logDir, "<log dir>")+": "+strings.Join(codes, ", "))
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	js := fmt.Sprintf(`{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[1],"log_dirs":[%q]}]}`, logDir)
	if err := os.WriteFile(plan, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"--execute", "--verify"} {
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
			"--bootstrap-server", addr, "--reassignment-json-file", plan, mode)
		if err != nil {
			t.Fatalf("kafka-reassign-partitions %s: %v\n%s%s", mode, err, stdout, stderr)
		}
		out = append(out, mode+":\n"+strings.ReplaceAll(stdout+stderr, logDir, "<log dir>"))
	}
	got := consumeAll(t, addr, "moves", 20)
	if len(got) != 20 {
		t.Fatalf("read %d records after the moves, want 20", len(got))
	}
	return out
}

// TestAlterReplicaLogDirsAsKafka: the same AlterReplicaLogDirs requests and
// kafka-reassign-partitions run with log_dirs answer alike on Strata and
// on Kafka 4.4.0 with one log dir: NONE for replicas already in the named
// dir, LOG_DIR_NOT_FOUND for any other, UNKNOWN_TOPIC_OR_PARTITION for a
// partition that does not exist; the tool's --verify reports the replica's
// move complete.
func TestAlterReplicaLogDirsAsKafka(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	s := startBroker(t, "")
	strata := logDirMoves(t, home, s.addr)
	want := []string{
		"<log dir>: absent-0 UNKNOWN_TOPIC_OR_PARTITION, moves-0 NONE, moves-1 NONE, moves-7 UNKNOWN_TOPIC_OR_PARTITION",
		"<log dir>-other: absent-0 LOG_DIR_NOT_FOUND, moves-0 LOG_DIR_NOT_FOUND, moves-1 LOG_DIR_NOT_FOUND, moves-7 LOG_DIR_NOT_FOUND",
		"relative: absent-0 LOG_DIR_NOT_FOUND, moves-0 LOG_DIR_NOT_FOUND, moves-1 LOG_DIR_NOT_FOUND, moves-7 LOG_DIR_NOT_FOUND",
	}
	for i, w := range want {
		if strata[i] != w {
			t.Errorf("strata answered\n%s\nwant\n%s", strata[i], w)
		}
	}
	if !strings.Contains(strata[4], "Reassignment of replica moves-0-1 completed successfully.") {
		t.Errorf("kafka-reassign-partitions --verify on strata:\n%s", strata[4])
	}

	k := kafkaTargetFrom(t, home, t.TempDir())
	if err := k.Start(timeoutCtx(t, 3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	kafka := logDirMoves(t, home, k.Addr())
	for i := range kafka {
		if strata[i] != kafka[i] {
			t.Errorf("strata:\n%s\nkafka 4.4.0:\n%s", strata[i], kafka[i])
		}
	}
}
