package main

// The controller mutation quota (controller_mutation_rate, KIP-599) end
// to end: set with Kafka's kafka-configs, then franz-go clients create,
// delete and add partitions faster than the rate at the strict and the
// permissive versions, against a single Strata node next to Apache Kafka
// 4.4.0, and through a cluster node that forwards to the active
// controller.

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// mutationStep is one request of the scenario: what each of its topics
// got, and the response's throttle time.
type mutationStep struct {
	name       string
	codes      []string
	throttleMs int32
	at         time.Duration // when its response came, from the first request
}

// mutationFigures are what one broker's scenario saw.
type mutationFigures struct {
	describe string
	steps    []mutationStep
	muted    time.Duration // how long the burst's (throttled) connection then waited to be answered
}

// outcome is the steps' names and codes, which must be the same on
// every broker.
func (f mutationFigures) outcome() string {
	var out []string
	for _, s := range f.steps {
		out = append(out, s.name+": "+strings.Join(s.codes, " "))
	}
	return strings.Join(out, "\n")
}

func (f mutationFigures) throttles() string {
	var out []string
	for _, s := range f.steps {
		out = append(out, fmt.Sprintf("%s (at %v) %d ms", s.name, s.at.Round(time.Millisecond), s.throttleMs))
	}
	return strings.Join(out, ", ")
}

// wantMutationOutcome is the scenario's outcome at 1 partition/s with
// Kafka's 11 windows of 1 s, a burst of 11 partitions: of ten topics of
// 2 in one request the first six are created (the sixth from the 1
// left), the rest refused; once its throttle has passed the bucket is
// back at about zero, a permissive create of 6 takes it to -6, and each
// strict request is refused and each permissive one done while it
// refills (within the 6 s it needs).
const wantMutationOutcome = `strict create v7, 10 topics: NONE NONE NONE NONE NONE NONE THROTTLING_QUOTA_EXCEEDED THROTTLING_QUOTA_EXCEEDED THROTTLING_QUOTA_EXCEEDED THROTTLING_QUOTA_EXCEEDED
create v7 as another client: NONE
permissive create v5: NONE
strict delete v6: THROTTLING_QUOTA_EXCEEDED THROTTLING_QUOTA_EXCEEDED
strict create partitions v3: THROTTLING_QUOTA_EXCEEDED
permissive delete v4: NONE
permissive create partitions v2: NONE`

// nodeAt is the id of the broker whose client address is addr.
func nodeAt(t *testing.T, addr string) int32 {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(timeoutCtx(t, 20*time.Second), newClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range resp.Brokers {
		if fmt.Sprintf("%s:%d", b.Host, b.Port) == addr {
			return b.NodeID
		}
	}
	t.Fatalf("no broker at %s in %+v", addr, resp.Brokers)
	return -1
}

// mutationScenario sets controller_mutation_rate=1 for client id mutator
// with kafka-configs against addr, then sends the scenario's requests to
// that node, each step but the first, which waits out its mute, on a new
// connection (a throttled connection is muted, and franz-go waits out a
// throttle before its next request).
func mutationScenario(t *testing.T, addr string) mutationFigures {
	t.Helper()
	var f mutationFigures
	configs := func(args ...string) string {
		return kafkaTool(t, "org.apache.kafka.tools.ConfigCommand", append([]string{"--bootstrap-server", addr}, args...)...)
	}
	if out := configs("--alter", "--entity-type", "clients", "--entity-name", "mutator", "--add-config", "controller_mutation_rate=1"); !strings.Contains(out, "Completed updating") {
		t.Fatalf("kafka-configs --alter: %s", out)
	}
	f.describe = strings.TrimSpace(configs("--describe", "--entity-type", "clients", "--entity-name", "mutator"))
	node := nodeAt(t, addr)
	var start time.Time
	step := func(s mutationStep) {
		s.at = time.Since(start)
		f.steps = append(f.steps, s)
	}
	// A request goes through send: a franz-go client's (via) or a raw
	// connection's.
	type send func(kmsg.Request) kmsg.Response
	via := func(clientID string, maxVersions ...[2]int16) send {
		v := kversion.Stable()
		for _, kv := range maxVersions {
			v.SetMaxKeyVersion(kv[0], kv[1])
		}
		b := newClient(t, addr, kgo.ClientID(clientID), kgo.MaxVersions(v)).Broker(int(node))
		return func(req kmsg.Request) kmsg.Response {
			t.Helper()
			resp, err := b.Request(timeoutCtx(t, 30*time.Second), req)
			if err != nil {
				t.Fatalf("%s: %v", kmsg.Key(req.Key()).Name(), err)
			}
			return resp
		}
	}
	// Each topic's code in the order the request names them.
	codes := func(names []string, code map[string]int16) []string {
		var out []string
		for _, n := range names {
			out = append(out, codeName(code[n]))
		}
		return out
	}
	create := func(ask send, name string, partitions int32, topics ...string) mutationStep {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		for _, topic := range topics {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, -1
			req.Topics = append(req.Topics, rt)
		}
		resp := ask(req).(*kmsg.CreateTopicsResponse)
		code := map[string]int16{}
		for _, st := range resp.Topics {
			code[st.Topic] = st.ErrorCode
		}
		return mutationStep{name: name, codes: codes(topics, code), throttleMs: resp.ThrottleMillis}
	}
	deleteTopics := func(ask send, name string, topics ...string) mutationStep {
		t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis, req.TopicNames = 10000, topics
		for _, topic := range topics {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		resp := ask(req).(*kmsg.DeleteTopicsResponse)
		code := map[string]int16{}
		for _, st := range resp.Topics {
			if st.Topic != nil {
				code[*st.Topic] = st.ErrorCode
			}
		}
		return mutationStep{name: name, codes: codes(topics, code), throttleMs: resp.ThrottleMillis}
	}
	addPartitions := func(ask send, name, topic string, count int32) mutationStep {
		t.Helper()
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, count
		req.Topics = append(req.Topics, rt)
		resp := ask(req).(*kmsg.CreatePartitionsResponse)
		return mutationStep{name: name, codes: []string{codeName(resp.Topics[0].ErrorCode)}, throttleMs: resp.ThrottleMillis}
	}

	// Faster than the rate: ten topics of 2 partitions in one request, on
	// a connection of its own; then an ApiVersions at once on that
	// connection, which the broker answers once the connection's mute
	// ends (franz-go would wait the throttle out itself before sending).
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	raw := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		req.SetVersion(7)
		resp, err := roundTrip(nc, req, kmsg.FormatterClientID("mutator"))
		if err != nil {
			t.Fatalf("%s: %v", kmsg.Key(req.Key()).Name(), err)
		}
		return resp
	}
	var burst []string
	for i := range 10 {
		burst = append(burst, fmt.Sprintf("burst-%d", i))
	}
	start = time.Now()
	step(create(raw, "strict create v7, 10 topics", 2, burst...))
	probe := kmsg.NewPtrApiVersionsRequest()
	probe.SetVersion(3)
	probe.ClientSoftwareName, probe.ClientSoftwareVersion = "probe", "1"
	sent := time.Now()
	if _, err := roundTrip(nc, probe, kmsg.FormatterClientID("mutator")); err != nil {
		t.Fatalf("ApiVersions after the throttled CreateTopics: %v", err)
	}
	f.muted = time.Since(sent)

	step(create(via("free"), "create v7 as another client", 2, "free"))
	step(create(via("mutator", [2]int16{kmsg.CreateTopics.Int16(), 5}), "permissive create v5", 6, "permissive"))
	step(deleteTopics(via("mutator"), "strict delete v6", "burst-0", "burst-1"))
	step(addPartitions(via("mutator"), "strict create partitions v3", "burst-2", 4))
	step(deleteTopics(via("mutator", [2]int16{kmsg.DeleteTopics.Int16(), 4}), "permissive delete v4", "burst-0"))
	step(addPartitions(via("mutator", [2]int16{kmsg.CreatePartitions.Int16(), 2}), "permissive create partitions v2", "burst-1", 3))
	return f
}

// codeName is an error code's Kafka name, NONE for 0.
func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// checkMutationFigures holds one broker's scenario to Kafka's outcome and
// its throttle times to the token bucket: the burst's at most the 1 s the
// bucket needs to refill to zero, the other client's none, every later
// one's above zero and the connection muted for it.
func checkMutationFigures(t *testing.T, name string, f mutationFigures) {
	t.Helper()
	t.Logf("%s: throttle times: %s; the burst's connection muted %v", name, f.throttles(), f.muted.Round(time.Millisecond))
	if got := f.outcome(); got != wantMutationOutcome {
		t.Errorf("%s: the scenario went\n%s\nwant\n%s", name, got, wantMutationOutcome)
		return
	}
	if ms := f.steps[0].throttleMs; ms <= 0 || ms > 1000 {
		t.Errorf("%s: the refused burst topic was throttled %d ms, want up to the 1 s to refill", name, ms)
	}
	if ms := f.steps[1].throttleMs; ms != 0 {
		t.Errorf("%s: the client without a quota was throttled %d ms", name, ms)
	}
	for _, s := range f.steps[2:] {
		if s.throttleMs <= 0 {
			t.Errorf("%s: %s was not throttled", name, s.name)
		}
	}
	if throttle := time.Duration(f.steps[0].throttleMs) * time.Millisecond; f.muted < throttle-250*time.Millisecond {
		t.Errorf("%s: after the burst's response throttled %v the connection answered in %v, want it muted", name, throttle, f.muted)
	}
}

// TestControllerMutationQuotaAsKafka runs the scenario against a single
// Strata node and against Apache Kafka 4.4.0: the same kafka-configs
// output, the same outcome, Kafka's throttle times logged next to
// Strata's.
func TestControllerMutationQuotaAsKafka(t *testing.T) {
	e2e(t)
	installedKafkaTools(t)
	b := startBroker(t, "")
	strata := mutationScenario(t, b.addr)
	checkMutationFigures(t, "strata", strata)
	b.kill()

	k := newKafkaWith(t, t.TempDir())
	if err := k.Start(timeoutCtx(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	kafka := mutationScenario(t, k.Addr())
	checkMutationFigures(t, "kafka 4.4.0", kafka)
	if kafka.describe != strata.describe {
		t.Errorf("kafka-configs --describe against strata says\n%s\nagainst kafka\n%s", strata.describe, kafka.describe)
	}
}

// TestClusterControllerMutationQuotaForwarded runs the scenario through
// a cluster node that is not the active controller: the quota is set,
// and the requests decided, on the active controller for the client
// whose requests the node forwards, and the throttle times come back.
func TestClusterControllerMutationQuotaForwarded(t *testing.T) {
	e2e(t)
	installedKafkaTools(t)
	n := followers(t)[0]
	checkMutationFigures(t, fmt.Sprintf("strata cluster, through node %d", n.id), mutationScenario(t, n.addr))
}
