package broker

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metrics"
)

// TestMutationQuotaTokenBucket checks the controller mutation quota's
// arithmetic against Kafka's TokenBucket and Strict- and
// PermissiveControllerMutationQuota: a new bucket holds
// quota × windows × window size, strict accepts while the bucket is not
// below zero before the mutation (so one request may take it below) and
// then refuses with the time to refill to zero, permissive accepts and
// throttles, the bucket refills at the quota a second, and the user
// entity's quota takes the client's.
func TestMutationQuotaTokenBucket(t *testing.T) {
	m := newClientQuotaManager(QuotaConfig{}, quotaControllerMutationRate)
	m.update(quotaImage(t, quotaControllerMutationRate, map[metadata.QuotaEntity]float64{{User: metadata.Named("alice")}: 2}))
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	record := func(principal string, permits float64, strict bool, ms int64) (int64, bool) {
		return m.recordMutations(principal, "any", permits, strict, at(ms))
	}
	// 2/s over 11 windows of 1 s: a burst of 22.
	if ms, ok := record("User:alice", 22, true, 0); ms != 0 || !ok {
		t.Fatalf("the burst: throttle %d, accepted %v; want 0, true", ms, ok)
	}
	// Empty, not below zero: accepted, and the bucket is at -5.
	if ms, ok := record("User:alice", 5, true, 0); ms != 0 || !ok {
		t.Fatalf("from an empty bucket: throttle %d, accepted %v; want 0, true", ms, ok)
	}
	// 1 s later -3: refused, 1.5 s to refill.
	if ms, ok := record("User:alice", 1, true, 1000); ms != 1500 || ok {
		t.Fatalf("below zero: throttle %d, accepted %v; want 1500, false", ms, ok)
	}
	// Permissive takes it: -4, 2 s.
	if ms, ok := record("User:alice", 1, false, 1000); ms != 2000 || !ok {
		t.Fatalf("permissive: throttle %d, accepted %v; want 2000, true", ms, ok)
	}
	// 2 s later the bucket is at zero and takes another.
	if ms, ok := record("User:alice", 1, true, 3000); ms != 0 || !ok {
		t.Fatalf("refilled to zero: throttle %d, accepted %v; want 0, true", ms, ok)
	}
	// A minute later it is full again, no fuller than the burst.
	if ms, ok := record("User:alice", 23, false, 63000); ms != 500 || !ok {
		t.Fatalf("23 from a full bucket: throttle %d, accepted %v; want 500, true", ms, ok)
	}
	// Another user has no quota.
	if ms, ok := record("User:bob", 1e6, true, 63000); ms != 0 || !ok {
		t.Fatalf("a user without a quota: throttle %d, accepted %v", ms, ok)
	}
}

// TestMutationQuotaStrictAndPermissive checks CreateTopics, DeleteTopics
// and CreatePartitions over TCP against a client's
// controller_mutation_rate: at the strict versions (6, 5, 3) a topic
// whose mutations find the quota exceeded is refused with
// THROTTLING_QUOTA_EXCEEDED and the response carries the throttle time,
// the connection then muted for it; at the versions below every topic is
// done and the response throttled; a validate-only request is charged;
// another client id is not limited.
func TestMutationQuotaStrictAndPermissive(t *testing.T) {
	b := startMeteredBrokerWith(t, func(c *Config) { c.Quotas.ControllerWindowNum = 1 })
	s := kmsg.StringPtr
	// 1 partition/s with one window of 1 s: a burst of 1.
	if e := alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(s("client-id"), s("mutator"))},
		quotaOp{key: quotaControllerMutationRate, value: 1}); e[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(e[0].ErrorCode))
	}
	create := func(nc net.Conn, client string, version int16, validateOnly bool, topics map[string]int32) *kmsg.CreateTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 5000, validateOnly
		for name, n := range topics {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, 1
			req.Topics = append(req.Topics, rt)
		}
		return roundTripOn[*kmsg.CreateTopicsResponse](t, nc, client, req, version)
	}
	codes := func(resp *kmsg.CreateTopicsResponse) map[string]int16 {
		out := map[string]int16{}
		for _, st := range resp.Topics {
			out[st.Topic] = st.ErrorCode
		}
		return out
	}
	throttled := kerr.ThrottlingQuotaExceeded.Code

	// A validate-only request is charged: 1 from the full bucket leaves 0.
	if r := create(dialQuota(t, b), "mutator", 7, true, map[string]int32{"checked": 1}); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("validate-only: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	// From 0 (not below): 3 partitions are accepted, unthrottled; the
	// bucket is at -3.
	nc := dialQuota(t, b)
	if r := create(nc, "mutator", 7, false, map[string]int32{"a": 3}); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("first create: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	r := create(nc, "mutator", 7, false, map[string]int32{"b": 1, "c": 1})
	if got := codes(r); got["b"] != throttled || got["c"] != throttled {
		t.Fatalf("over the quota at v7: %v, want both THROTTLING_QUOTA_EXCEEDED", got)
	}
	if m := r.Topics[0].ErrorMessage; m == nil || *m != throttlingQuotaExceeded {
		t.Errorf("refused topic's message %v, want Kafka's", m)
	}
	if r.ThrottleMillis < 2500 || r.ThrottleMillis > 3000 {
		t.Fatalf("over the quota at v7: throttle %d ms, want the ~3 s to refill", r.ThrottleMillis)
	}
	if b.meta.Image().Topics.ByName("b") != nil {
		t.Fatal("a refused topic was created")
	}
	if muted := mutedFor(t, nc); muted < time.Duration(r.ThrottleMillis)*time.Millisecond-200*time.Millisecond {
		t.Errorf("the next request was answered after %v, want the connection muted for %d ms", muted, r.ThrottleMillis)
	}
	// Another client id has no quota.
	if r := create(dialQuota(t, b), "other", 7, false, map[string]int32{"free": 50}); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("another client: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	// Permissive (v5) from about zero: created, throttled ~4 s.
	r = create(dialQuota(t, b), "mutator", 5, false, map[string]int32{"p": 4})
	if r.Topics[0].ErrorCode != 0 || r.ThrottleMillis < 3000 || r.ThrottleMillis > 4100 {
		t.Fatalf("permissive create: %v, throttle %d ms; want created, throttled ~4 s", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}

	deleteTopic := func(version int16, name string) kmsg.DeleteTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis, req.TopicNames = 5000, []string{name}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = s(name)
		req.Topics = []kmsg.DeleteTopicsRequestTopic{rt}
		return *roundTripOn[*kmsg.DeleteTopicsResponse](t, dialQuota(t, b), "mutator", req, version)
	}
	if d := deleteTopic(5, "a"); d.Topics[0].ErrorCode != throttled || d.ThrottleMillis < 3000 {
		t.Fatalf("strict delete: %v, throttle %d ms", kerr.ErrorForCode(d.Topics[0].ErrorCode), d.ThrottleMillis)
	}
	if d := deleteTopic(4, "a"); d.Topics[0].ErrorCode != 0 || d.ThrottleMillis < 6000 {
		t.Fatalf("permissive delete: %v, throttle %d ms; want deleted, throttled ~7 s", kerr.ErrorForCode(d.Topics[0].ErrorCode), d.ThrottleMillis)
	}
	if b.meta.Image().Topics.ByName("a") != nil {
		t.Fatal("the permissive delete left the topic")
	}

	addPartitions := func(version int16) kmsg.CreatePartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "p", 6
		req.Topics = []kmsg.CreatePartitionsRequestTopic{rt}
		return *roundTripOn[*kmsg.CreatePartitionsResponse](t, dialQuota(t, b), "mutator", req, version)
	}
	if c := addPartitions(3); c.Topics[0].ErrorCode != throttled || c.ThrottleMillis < 6000 {
		t.Fatalf("strict CreatePartitions: %v, throttle %d ms", kerr.ErrorForCode(c.Topics[0].ErrorCode), c.ThrottleMillis)
	}
	if c := addPartitions(2); c.Topics[0].ErrorCode != 0 || c.ThrottleMillis < 8000 {
		t.Fatalf("permissive CreatePartitions: %v, throttle %d ms; want added, throttled ~9 s", kerr.ErrorForCode(c.Topics[0].ErrorCode), c.ThrottleMillis)
	}
	if n := len(b.meta.Image().Topics.ByName("p").Partitions); n != 6 {
		t.Fatalf("topic p has %d partitions after the permissive CreatePartitions, want 6", n)
	}

	// The metrics: the ControllerMutation sensor of client-id mutator.
	m := scrapeMetrics(t, b)
	tags := []string{"user", "", "client_id", "mutator"}
	if n := m.get(metrics.ClientPartitionMutations, tags...); n != 1+3+4+3+2 {
		t.Errorf("%s = %v, want every partition charged (13)", metrics.ClientPartitionMutations, n)
	}
	if n := m.get(metrics.ClientQuotaThrottles, append([]string{"quota", "ControllerMutation"}, tags...)...); n != 6 {
		t.Errorf("%s = %v, want the 6 throttled responses", metrics.ClientQuotaThrottles, n)
	}
}
