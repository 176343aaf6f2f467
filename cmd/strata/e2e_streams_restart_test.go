package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsRestartArgs start the broker with streams group members
// heartbeating every 500ms.
var streamsRestartArgs = []string{"--override", "group.streams.min.heartbeat.interval.ms=100",
	"--override", "group.streams.heartbeat.interval.ms=500", "--override", "metrics.listener=http://127.0.0.1:0"}

var streamsHeartbeatsServed = regexp.MustCompile(`(?m)^strata_requests_total\{api="StreamsGroupHeartbeat",error="NONE",version="\d+"\} (\d+)$`)

// describedStreams is a streams group as StreamsGroupDescribe shows it:
// its epochs and, by member id, each member's epoch and tasks.
func describedStreams(d kmsg.StreamsGroupDescribeResponseGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s epoch=%d/%d", d.State, d.Epoch, d.AssignmentEpoch)
	for _, m := range d.Members {
		fmt.Fprintf(&b, " [%s epoch=%d process=%s active=%s standby=%s]", m.MemberID, m.MemberEpoch, m.ProcessID,
			printTasks(m.Assignment.ActiveTasks), printTasks(m.Assignment.StandbyTasks))
	}
	return b.String()
}

// TestStreamsGroupSurvivesRestart: Kafka Streams 4.4's word count
// (group.protocol=streams) holds its six tasks; the broker is killed (-9)
// and restarted on its data. The group comes back from __consumer_offsets
// with the same group and assignment epochs, member id, member epoch and
// tasks; the application goes on heartbeating to the new process (never
// UNKNOWN_MEMBER_ID or a rejoin: the epochs stay) and counts the words
// produced after the restart.
func TestStreamsGroupSurvivesRestart(t *testing.T) {
	e2e(t)
	streams := streamsHome(t)
	b := startBroker(t, "", streamsRestartArgs...)
	cl := newClient(t, b.addr)
	const group = "wc-restart"
	createTopic(t, cl, "wcr-in", 3)
	createTopic(t, cl, "wcr-out", 1)
	produce := func(cl *kgo.Client, n int) {
		for i := range n {
			r := &kgo.Record{Topic: "wcr-in", Partition: int32(i % 3), Value: []byte("alpha beta")}
			if err := cl.ProduceSync(timeoutCtx(t, 30*time.Second), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(cl, 30)
	app := startWordCount(t, streams, b.addr, "wcr-in", "wcr-out", group)
	var before string
	waitFor(t, "the word count's group Stable with its 6 tasks", 2*time.Minute, func() bool {
		d := describeStreamsGroup(t, b.addr, group)
		before = describedStreams(d)
		return d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == 1 && countTasks(d.Members[0].Assignment.ActiveTasks) == 6
	})
	if outs := consumeAll(t, b.addr, "wcr-out", 60, kgo.FetchIsolationLevel(kgo.ReadCommitted())); len(outs) != 60 {
		t.Fatalf("%d counts out before the restart, want 60", len(outs))
	}
	t.Logf("before the restart: %s", before)
	cl.Close()

	b.kill()
	b = b.restart(streamsRestartArgs...)
	metricsURL := metricsURLOf(t, b)
	var after string
	waitFor(t, "the group loaded after the restart", time.Minute, func() bool {
		d := describeStreamsGroup(t, b.addr, group)
		after = describedStreams(d)
		return d.ErrorCode == 0
	})
	if after != before {
		t.Fatalf("after the restart:\n%s\nwant\n%s", after, before)
	}
	cl = newClient(t, b.addr)
	produce(cl, 30)
	if outs := consumeAll(t, b.addr, "wcr-out", 120, kgo.FetchIsolationLevel(kgo.ReadCommitted())); len(outs) != 120 {
		t.Fatalf("%d counts out after the restart, want 120", len(outs))
	}
	answered := func() int {
		_, body := httpGet(t, metricsURL)
		n := 0
		for _, m := range streamsHeartbeatsServed.FindAllStringSubmatch(body, -1) {
			var v int
			fmt.Sscan(m[1], &v)
			n += v
		}
		return n
	}
	waitFor(t, "heartbeats answered by the restarted broker", time.Minute, func() bool { return answered() >= 6 })
	if got := describedStreams(describeStreamsGroup(t, b.addr, group)); got != before {
		t.Fatalf("after heartbeating to the restarted broker:\n%s\nwant\n%s", got, before)
	}
	if out := app.output(); strings.Contains(out, "UNKNOWN_MEMBER_ID") || strings.Contains(out, "UnknownMemberId") {
		t.Errorf("the application was told it is unknown:\n%s", tail(out, 4000))
	}
	_ = app.cmd.Process.Signal(os.Interrupt)
	_ = app.cmd.Wait()
}
