package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupConfigsCLIAsKafka44: Kafka 4.4.0's kafka-configs sets, refuses,
// describes (one group, every group with configs through
// ListConfigResources, --all) and deletes GROUP configs on Strata as on
// Kafka 4.4.0, printing the same; Strata's survive a restart.
func TestGroupConfigsCLIAsKafka44(t *testing.T) {
	e2e(t)
	if _, err := os.Stat(filepath.Join(kafkaHome, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached: no comparison with Kafka")
	}
	home, err := filepath.Abs(kafkaHome)
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

// TestClusterGroupConfigs: on a cluster a group's config, sent to one
// node and forwarded to the active controller, is a record of the
// metadata quorum every node describes; an invalid one is refused with
// Kafka's message by the controller's check.
func TestClusterGroupConfigs(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	set := func(addr, value string) (int16, string, error) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(1)
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "cg"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "consumer.session.timeout.ms", kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		resp, err := request(addr, req)
		if err != nil {
			return 0, "", err
		}
		r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return r.ErrorCode, msg, nil
	}
	waitUntil(t, 15*time.Second, "the first node sets cg's session timeout", func() (bool, string) {
		code, msg, err := set(nodes[0].addr, "50000")
		return err == nil && code == 0, fmt.Sprint(code, msg, err)
	})
	if code, msg, err := set(nodes[0].addr, "1000"); err != nil || code != kerr.InvalidConfig.Code || msg != "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive." {
		t.Errorf("an out-of-bounds value: %v %q %v, want Kafka's INVALID_CONFIG", kerr.ErrorForCode(code), msg, err)
	}
	for _, n := range nodes {
		waitUntil(t, 15*time.Second, fmt.Sprintf("node %d describes cg's session timeout", n.id), func() (bool, string) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.SetVersion(4)
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "cg", []string{"consumer.session.timeout.ms"}
			req.Resources = append(req.Resources, rr)
			resp, err := request(n.addr, req)
			if err != nil {
				return false, err.Error()
			}
			cs := resp.(*kmsg.DescribeConfigsResponse).Resources[0].Configs
			if len(cs) != 1 || cs[0].Value == nil || *cs[0].Value != "50000" || cs[0].Source != kmsg.ConfigSourceGroupConfig {
				return false, fmt.Sprintf("%+v", cs)
			}
			return true, ""
		})
	}
}
