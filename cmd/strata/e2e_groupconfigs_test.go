package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGroupConfigsCLIAsKafka44: Kafka 4.4.0's kafka-configs sets, refuses,
// describes (one group, every group with configs through
// ListConfigResources, --all) and deletes GROUP configs on Strata as on
// Kafka 4.4.0, printing the same; Strata's survive a restart.
func TestGroupConfigsCLIAsKafka44(t *testing.T) {
	e2e(t)
	if _, err := os.Stat(filepath.Join(kafka44Home, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached: no comparison with Kafka")
	}
	home, err := filepath.Abs(kafka44Home)
	if err != nil {
		t.Fatal(err)
	}
	configs := func(addr string, args ...string) string {
		t.Helper()
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.ConfigCommand", append([]string{"--bootstrap-server", addr}, args...)...)
		if err != nil {
			// The exception's message; the command line it echoes names the address.
			if m := regexp.MustCompile(`(?m)^Caused by: (.*)$`).FindStringSubmatch(stderr); m != nil {
				return "error: " + m[1]
			}
			return "error: " + stderr
		}
		return stdout
	}
	script := func(addr string) []string {
		g := []string{"--entity-type", "groups", "--entity-name", "g1"}
		return []string{
			configs(addr, append([]string{"--alter", "--add-config", "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000"}, g...)...),
			configs(addr, append([]string{"--alter", "--add-config", "consumer.session.timeout.ms=1000"}, g...)...),
			configs(addr, append([]string{"--alter", "--add-config", "share.auto.offset.reset=earliest,streams.num.standby.replicas=1"}, g...)...),
			configs(addr, append([]string{"--describe"}, g...)...),
			configs(addr, "--describe", "--entity-type", "groups"),
			configs(addr, append([]string{"--describe", "--all"}, g...)...),
			configs(addr, append([]string{"--alter", "--delete-config", "consumer.heartbeat.interval.ms"}, g...)...),
			configs(addr, append([]string{"--describe"}, g...)...),
		}
	}
	k := kafkaTargetFrom(t, home, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	p := startBroker(t, "")
	want, got := script(k.Addr()), script(p.addr)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: strata printed\n%s\nkafka 4.4.0 printed\n%s", i, got[i], want[i])
		}
	}
	before := configs(p.addr, "--describe", "--entity-type", "groups")
	p.kill()
	q := p.restart()
	if after := configs(q.addr, "--describe", "--entity-type", "groups"); after != before || !strings.Contains(after, "consumer.session.timeout.ms=50000") {
		t.Errorf("after a restart strata printed\n%s\nbefore\n%s", after, before)
	}
}
