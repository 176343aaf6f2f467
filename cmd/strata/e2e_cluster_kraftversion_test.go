package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kraftVersionOf is what addr's ApiVersions v3 says of kraft.version:
// "supported MIN-MAX finalized MIN-MAX", a part missing when not listed.
func kraftVersionOf(t *testing.T, addr string) string {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "strata-test", "1"
	resp, err := request(addr, req)
	if err != nil {
		t.Fatalf("ApiVersions to %s: %v", addr, err)
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	var parts []string
	for _, f := range r.SupportedFeatures {
		if f.Name == "kraft.version" {
			parts = append(parts, fmt.Sprintf("supported %d-%d", f.MinVersion, f.MaxVersion))
		}
	}
	for _, f := range r.FinalizedFeatures {
		if f.Name == "kraft.version" {
			parts = append(parts, fmt.Sprintf("finalized %d-%d", f.MinVersionLevel, f.MaxVersionLevel))
		}
	}
	return strings.Join(parts, " ")
}

// TestClusterKRaftVersion: a cluster's brokers and controllers advertise
// kraft.version supported 0-1 and finalized at 1 in ApiVersions, and
// kafka-features describes, upgrades and downgrades it as against a Kafka
// 4.4.0 quorum formatted with --standalone (a dynamic quorum, the lines
// below are its output), since Strata's quorum changes its voters whatever
// it started from (TestClusterChangesItsVoters); a single node, which has
// no quorum, does not list it.
func TestClusterKRaftVersion(t *testing.T) {
	e2e(t)
	controllers, brokers := startSplitCluster(t, false)
	waitBrokersListed(t, brokers)
	for _, n := range slices.Concat(controllers, brokers) {
		if got := kraftVersionOf(t, n.addr); got != "supported 0-1 finalized 1-1" {
			t.Errorf("node %d: kraft.version %q, want supported 0-1 finalized 1-1", n.id, got)
		}
	}
	if got := kraftVersionOf(t, startBroker(t, "").addr); got != "" {
		t.Errorf("single node: kraft.version %q, want none", got)
	}

	home := installedKafkaTools(t)
	via := brokers[0].addr
	describe := runFeatureCommand(t, home, via, "describe")
	line := regexp.MustCompile(`(?m)^Feature: kraft\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: \d+$`)
	if !line.MatchString(describe) {
		t.Errorf("kafka-features describe:\n%s\nhas no line for kraft.version 0-1 finalized at 1", describe)
	}
	for _, c := range []struct{ args, want string }{
		{"upgrade --feature kraft.version=1", "kraft.version was upgraded to 1."},
		{"downgrade --feature kraft.version=0", "Could not downgrade kraft.version to 0. The update failed for all features since the following feature had an error: " +
			"Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature.\n1 out of 1 operation(s) failed."},
	} {
		if got := runFeatureCommand(t, home, via, strings.Fields(c.args)...); got != c.want {
			t.Errorf("kafka-features %s:\n%s\nwant (Kafka 4.4.0's):\n%s", c.args, got, c.want)
		}
	}
	if got := kraftVersionOf(t, via); got != "supported 0-1 finalized 1-1" {
		t.Errorf("after the upgrade and downgrade: kraft.version %q", got)
	}
}
