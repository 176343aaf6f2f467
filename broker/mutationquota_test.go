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

// tokenBounds bounds client mutator's token bucket as the test can know it
// from its side of the wire: at time at it holds lo to hi tokens. Kafka's
// TokenBucket refills 1 token a second up to the burst of 1, so between
// two instants the bucket gains exactly their distance (capped); what the
// test cannot know is when, between sending a request and reading its
// answer, the broker charged and answered it. The throttle times the
// broker reports are checked against what the bucket allows for any such
// instant, and narrow the bounds: tight when requests are answered at
// once, wider by exactly the time a loaded machine takes.
type tokenBounds struct {
	lo, hi float64
	at     time.Time
}

// to advances the bounds to t, no charge between.
func (b *tokenBounds) to(t time.Time) {
	d := t.Sub(b.at).Seconds()
	b.lo, b.hi, b.at = min(1, b.lo+d), min(1, b.hi+d), t
}

// answered accounts for a request sent at sent and answered now, charged
// charge tokens (0 when refused), that reported throttleMs: 0 is right
// only for a strict request charged from a bucket not below zero; any
// other is the time to refill to zero from the bucket less the charge, as
// AbstractControllerMutationQuota.throttleTime, which must be within what
// the bounds allow.
func (b *tokenBounds) answered(t *testing.T, what string, sent time.Time, charge float64, throttleMs int32) {
	t.Helper()
	b.to(sent)
	rt := time.Since(sent).Seconds()
	lo, hi := b.lo-charge, min(1, b.hi+rt-charge)
	if throttleMs == 0 {
		if b.lo < 0 {
			t.Errorf("%s: not throttled, but the bucket was below zero (%.3f to %.3f tokens)", what, b.lo, b.hi)
		}
	} else {
		// 1 ms of rounding either way.
		least, most := int32(1000*(-hi))-1, int32(1000*(-lo))+1
		if throttleMs < least || throttleMs > most {
			t.Errorf("%s: throttled %d ms, want %d-%d ms: the refill to zero of %.3f to %.3f tokens (answered in %.0f ms)",
				what, throttleMs, max(least, 0), most, lo, hi, rt*1000)
		}
		lo, hi = max(lo, -float64(throttleMs)/1000), min(hi, -float64(throttleMs)/1000+rt)
	}
	b.lo, b.hi, b.at = lo, hi, time.Now()
}

// TestMutationQuotaStrictAndPermissive checks CreateTopics, DeleteTopics
// and CreatePartitions over TCP against a client's
// controller_mutation_rate: at the strict versions (6, 5, 3) a topic
// whose mutations find the quota exceeded is refused with
// THROTTLING_QUOTA_EXCEEDED and the response carries the throttle time,
// the connection then muted for it; at the versions below every topic is
// done and the response throttled; a validate-only request is charged;
// another client id is not limited. Each throttle time is the one Kafka's
// token bucket gives (tokenBounds), to the millisecond when the broker
// answers at once.
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
	sent := time.Now()
	bucket := tokenBounds{lo: 1, hi: 1, at: sent} // made full when first charged
	if r := create(dialQuota(t, b), "mutator", 7, true, map[string]int32{"checked": 1}); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("validate-only: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	bucket.answered(t, "validate-only", sent, 1, 0)
	// From about 0 (not below): 3 partitions are accepted, unthrottled;
	// the bucket is at about -3.
	nc := dialQuota(t, b)
	sent = time.Now()
	if r := create(nc, "mutator", 7, false, map[string]int32{"a": 3}); r.Topics[0].ErrorCode != 0 || r.ThrottleMillis != 0 {
		t.Fatalf("first create: %v, throttle %d", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	bucket.answered(t, "first create", sent, 3, 0)
	sent = time.Now()
	r := create(nc, "mutator", 7, false, map[string]int32{"b": 1, "c": 1})
	if got := codes(r); got["b"] != throttled || got["c"] != throttled {
		t.Fatalf("over the quota at v7: %v, want both THROTTLING_QUOTA_EXCEEDED", got)
	}
	if m := r.Topics[0].ErrorMessage; m == nil || *m != throttlingQuotaExceeded {
		t.Errorf("refused topic's message %v, want Kafka's", m)
	}
	bucket.answered(t, "over the quota at v7 (the ~3 s to refill)", sent, 0, r.ThrottleMillis)
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
	sent = time.Now()
	r = create(dialQuota(t, b), "mutator", 5, false, map[string]int32{"p": 4})
	if r.Topics[0].ErrorCode != 0 || r.ThrottleMillis == 0 {
		t.Fatalf("permissive create: %v, throttle %d ms; want created, throttled ~4 s", kerr.ErrorForCode(r.Topics[0].ErrorCode), r.ThrottleMillis)
	}
	bucket.answered(t, "permissive create (~4 s)", sent, 4, r.ThrottleMillis)

	deleteTopic := func(version int16, name string) kmsg.DeleteTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis, req.TopicNames = 5000, []string{name}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = s(name)
		req.Topics = []kmsg.DeleteTopicsRequestTopic{rt}
		return *roundTripOn[*kmsg.DeleteTopicsResponse](t, dialQuota(t, b), "mutator", req, version)
	}
	sent = time.Now()
	if d := deleteTopic(5, "a"); d.Topics[0].ErrorCode != throttled || d.ThrottleMillis == 0 {
		t.Fatalf("strict delete: %v, throttle %d ms", kerr.ErrorForCode(d.Topics[0].ErrorCode), d.ThrottleMillis)
	} else {
		bucket.answered(t, "strict delete", sent, 0, d.ThrottleMillis)
	}
	sent = time.Now()
	if d := deleteTopic(4, "a"); d.Topics[0].ErrorCode != 0 || d.ThrottleMillis == 0 {
		t.Fatalf("permissive delete: %v, throttle %d ms; want deleted, throttled ~7 s", kerr.ErrorForCode(d.Topics[0].ErrorCode), d.ThrottleMillis)
	} else {
		bucket.answered(t, "permissive delete (~7 s)", sent, 3, d.ThrottleMillis)
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
	sent = time.Now()
	if c := addPartitions(3); c.Topics[0].ErrorCode != throttled || c.ThrottleMillis == 0 {
		t.Fatalf("strict CreatePartitions: %v, throttle %d ms", kerr.ErrorForCode(c.Topics[0].ErrorCode), c.ThrottleMillis)
	} else {
		bucket.answered(t, "strict CreatePartitions", sent, 0, c.ThrottleMillis)
	}
	sent = time.Now()
	if c := addPartitions(2); c.Topics[0].ErrorCode != 0 || c.ThrottleMillis == 0 {
		t.Fatalf("permissive CreatePartitions: %v, throttle %d ms; want added, throttled ~9 s", kerr.ErrorForCode(c.Topics[0].ErrorCode), c.ThrottleMillis)
	} else {
		bucket.answered(t, "permissive CreatePartitions (~9 s)", sent, 2, c.ThrottleMillis)
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
