package main

// End-to-end test of the replica layer's high watermark checkpoint.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProduceHighWatermarkCheckpointAtCleanStop produces to three
// partitions with a real client, stops the broker cleanly and checks that
// replication-offset-checkpoint, in Kafka's format, holds each partition's
// high watermark as ListOffsets reported it; a restart serves the same ends.
func TestProduceHighWatermarkCheckpointAtCleanStop(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	cl := newClient(t, b.addr)
	createTopic(t, cl, "hw", 3)
	produceAll(t, cl, "hw", 0, 300)
	ends := endOffsets(t, cl, "hw", 3)
	cl.Close()
	if code := b.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("broker exited %d", code)
	}
	raw, err := os.ReadFile(filepath.Join(b.dir, "replication-offset-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" || lines[1] != fmt.Sprint(len(lines)-2) {
		t.Fatalf("replication-offset-checkpoint is not Kafka's format (version 0, count, entries):\n%s", raw)
	}
	total := int64(0)
	for p := range int32(3) {
		want := fmt.Sprintf("hw %d %d", p, ends[p])
		found := false
		for _, l := range lines[2:] {
			found = found || l == want
		}
		if !found {
			t.Fatalf("replication-offset-checkpoint lacks %q:\n%s", want, raw)
		}
		total += ends[p]
	}
	if total != 300 {
		t.Fatalf("high watermarks sum to %d, want the 300 records produced", total)
	}
	b = b.restart()
	cl = newClient(t, b.addr)
	if got := endOffsets(t, cl, "hw", 3); fmt.Sprint(got) != fmt.Sprint(ends) {
		t.Fatalf("after restart the ends are %v, want %v", got, ends)
	}
}
