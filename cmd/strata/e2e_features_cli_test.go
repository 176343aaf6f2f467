package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// featureCommandCases are kafka-features runs whose output is the same
// against Strata and Kafka 4.4.0 (group.version is 0-1 on both).
var featureCommandCases = [][]string{
	{"upgrade", "--feature", "group.version=1"},
	{"downgrade", "--feature", "group.version=0", "--dry-run"},
	{"upgrade", "--feature", "group.version=2"},
	{"downgrade", "--feature", "group.version=0"},
	{"upgrade", "--feature", "group.version=1"},
	{"downgrade", "--feature", "foo.version=0"},
}

// runFeatureCommand runs Kafka's FeatureCommand from home against addr
// and returns what it printed, without log lines.
func runFeatureCommand(t *testing.T, home, addr string, args ...string) string {
	t.Helper()
	stdout, stderr, _ := runKafkaTool(t, home, "", "org.apache.kafka.tools.FeatureCommand", append([]string{"--bootstrap-server", addr}, args...)...)
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(stdout+stderr), "\n") {
		if !strings.Contains(l, "log4j") && !strings.Contains(l, "SLF4J") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// TestKafkaFeaturesCLI: Kafka's kafka-features (4.1.1, and 4.4.0 when
// installed) describes Strata's features and upgrades and downgrades
// group.version through UpdateFeatures; against Kafka 4.4.0 each upgrade
// and downgrade prints the same.
func TestKafkaFeaturesCLI(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	p := startBroker(t, "")
	describe := runFeatureCommand(t, home, p.addr, "describe")
	for _, want := range []string{"Feature: group.version", "SupportedMaxVersion: 1", "Feature: metadata.version",
		"SupportedMinVersion: 3.3-IV3", "FinalizedVersionLevel: 3.6-IV2", "Feature: transaction.version"} {
		if !strings.Contains(describe, want) {
			t.Fatalf("describe against strata lacks %q:\n%s", want, describe)
		}
	}
	strata := map[string]string{}
	for _, args := range featureCommandCases {
		strata[strings.Join(args, " ")] = runFeatureCommand(t, home, p.addr, args...)
	}
	for _, want := range []struct{ args, out string }{
		{"upgrade --feature group.version=2", "Could not upgrade group.version to 2. The update failed for all features since the following feature had an error: Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"},
		{"downgrade --feature group.version=0", "group.version was downgraded to 0."},
	} {
		if !strings.Contains(strata[want.args], want.out) {
			t.Fatalf("%s against strata:\n%s\nwant %q", want.args, strata[want.args], want.out)
		}
	}
	if out := runFeatureCommand(t, home, p.addr, "feature-dependencies", "--feature", "eligible.leader.replicas.version=1"); !strings.Contains(out, "metadata.version=23") {
		t.Fatalf("feature-dependencies: %s", out)
	}

	if _, err := os.Stat(filepath.Join(kafkaHome, "libs")); err != nil {
		t.Logf("Kafka 4.4.0 is not installed in %s: not compared", kafkaHome)
		return
	}
	home44, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	k := kafkaTargetFrom(t, home44, t.TempDir())
	if err := k.Start(timeoutCtx(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	q := startBroker(t, "")
	for _, args := range featureCommandCases {
		s, kafka := runFeatureCommand(t, home44, q.addr, args...), runFeatureCommand(t, home44, k.Addr(), args...)
		if s != kafka {
			t.Errorf("kafka-features %v:\nstrata:\n%s\nkafka 4.4.0:\n%s", args, s, kafka)
		}
	}
}
