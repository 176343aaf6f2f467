package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClientMetricsJavaPush: after Kafka 4.4.0's kafka-client-metrics
// subscribes the producers to org.apache.kafka.producer. every second, a
// Java 4.4 producer (enable.metrics.push on by default) asks for its
// subscription and pushes, and its metrics appear on Strata's /metrics as
// strata_client_metric_ series labelled with its client id, instance id
// and software.
func TestClientMetricsJavaPush(t *testing.T) {
	e2e(t)
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached: no Java client")
	}
	b := startBroker(t, "", "--override", "metrics.listener=http://127.0.0.1:0")
	url := metricsURLOf(t, b)
	createTopic(t, newClient(t, b.addr), "tel", 1)
	if out, errOut, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.ClientMetricsCommand", "--bootstrap-server", b.addr,
		"--alter", "--name", "producers", "--metrics", "org.apache.kafka.producer.", "--interval", "1000"); err != nil {
		t.Fatalf("kafka-client-metrics --alter: %v\n%s%s", err, out, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Xmx256m", "-Dlog4j2.configurationFile="+filepath.Join(home, "tools-log4j2.properties"),
		"-cp", filepath.Join(home, "libs")+"/*", "org.apache.kafka.tools.ProducerPerformance",
		"--topic", "tel", "--num-records", "1000000", "--throughput", "20", "--record-size", "10",
		"--producer-props", "bootstrap.servers="+b.addr, "client.id=tel-producer")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	series := regexp.MustCompile(`(?m)^strata_client_metric_org_apache_kafka_producer_record_send_total\{([^}]*)\} [1-9]`)
	var labels string
	waitFor(t, "the Java producer's pushed record-send-total on /metrics", 90*time.Second, func() bool {
		_, body := httpGet(t, url)
		if m := series.FindStringSubmatch(body); m != nil {
			labels = m[1]
			return true
		}
		return false
	})
	for _, want := range []string{`client_id="tel-producer"`, `client_software_name="apache-kafka-java"`, `client_software_version="4.4.0"`, `client_instance_id="`} {
		if !strings.Contains(labels, want) {
			t.Errorf("series labels %s lack %s", labels, want)
		}
	}
	_, body := httpGet(t, url)
	if !regexp.MustCompile(`(?m)^strata_client_telemetry_instances 1$`).MatchString(body) {
		t.Errorf("/metrics does not count the one client instance:\n%s", grepLines(body, "strata_client_telemetry"))
	}
	if strings.Contains(body, "strata_client_metric_org_apache_kafka_consumer") {
		t.Errorf("consumer metrics served though the subscription asks only for the producer's")
	}
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestClientMetricsCLIAsKafka44: Kafka 4.4.0's kafka-client-metrics
// creates, describes, lists, changes, refuses and deletes client metrics
// subscriptions on Strata as on Kafka 4.4.0, printing the same; Strata's
// survive a restart.
func TestClientMetricsCLIAsKafka44(t *testing.T) {
	e2e(t)
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached: no comparison with Kafka")
	}
	tool := func(addr string, args ...string) string {
		t.Helper()
		stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.ClientMetricsCommand", append([]string{"--bootstrap-server", addr}, args...)...)
		if err != nil {
			// The tool logs the error with its time.
			return "error: " + regexp.MustCompile(`\[\d{4}-\d\d-\d\d [\d:,]+\] `).ReplaceAllString(stderr, "")
		}
		return stdout
	}
	script := func(addr string) []string {
		return []string{
			tool(addr, "--alter", "--name", "s1", "--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.coordinator.", "--interval", "1000", "--match", "client_id=tel.*,client_software_name=apache-kafka-java"),
			tool(addr, "--alter", "--name", "s2", "--metrics", "*"),
			tool(addr, "--describe", "--name", "s1"),
			tool(addr, "--describe"),
			tool(addr, "--list"),
			tool(addr, "--alter", "--name", "s1", "--interval", "50"),
			tool(addr, "--alter", "--name", "s1", "--match", "rack=a"),
			tool(addr, "--alter", "--name", "s1", "--interval", ""),
			tool(addr, "--describe", "--name", "s1"),
			tool(addr, "--delete", "--name", "s2"),
			tool(addr, "--list"),
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
	t.Logf("kafka 4.4.0 and strata printed:\n%s", strings.Join(want, "\n"))
	before := tool(p.addr, "--describe")
	p.kill()
	q := p.restart()
	if after := tool(q.addr, "--describe"); after != before || !strings.Contains(after, "s1") {
		t.Errorf("after a restart strata printed\n%s\nbefore\n%s", after, before)
	}
}

// TestClusterClientMetrics: on a cluster a client metrics subscription,
// sent to one node and forwarded to the active controller, is a record of
// the metadata quorum, so a client asking any node for its subscription
// gets it.
func TestClusterClientMetrics(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	waitUntil(t, 15*time.Second, "the first node sets subscription s1", func() (bool, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(1)
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "s1"
		for _, kv := range [][2]string{{"metrics", "org.apache.kafka.consumer."}, {"interval.ms", "2000"}} {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := request(nodes[0].addr, req)
		if err != nil {
			return false, err.Error()
		}
		r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		return r.ErrorCode == 0, fmt.Sprint(kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	})
	for _, n := range nodes {
		waitUntil(t, 15*time.Second, fmt.Sprintf("node %d gives a client subscription s1", n.id), func() (bool, string) {
			req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
			req.SetVersion(0)
			resp, err := request(n.addr, req)
			if err != nil {
				return false, err.Error()
			}
			r := resp.(*kmsg.GetTelemetrySubscriptionsResponse)
			if r.ErrorCode != 0 || r.PushIntervalMillis != 2000 || len(r.RequestedMetrics) != 1 || r.RequestedMetrics[0] != "org.apache.kafka.consumer." {
				return false, fmt.Sprintf("%v %d %q", kerr.ErrorForCode(r.ErrorCode), r.PushIntervalMillis, r.RequestedMetrics)
			}
			return true, ""
		})
	}
}
