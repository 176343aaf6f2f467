package broker

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metrics"
	"github.com/strata-io/strata/protocol"
)

// dialQuota opens a raw connection to b, closed at the test's end.
func dialQuota(t *testing.T, b *Broker) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// mutedFor is how long an ApiVersions request sent on nc right away
// waits for its answer: the connection's mute.
func mutedFor(t *testing.T, nc net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	roundTripOn[*kmsg.ApiVersionsResponse](t, nc, "probe", kmsg.NewPtrApiVersionsRequest(), 3)
	return time.Since(start)
}

// TestProduceQuotaThrottlesAndMutes checks a producer over its
// producer_byte_rate gets its response at once carrying Kafka's throttle
// time, with the records written, and its connection is then muted for
// that long; a producer of another client id is not throttled.
func TestProduceQuotaThrottlesAndMutes(t *testing.T) {
	b := startMeteredBroker(t)
	createTopic(t, newAdmin(t, b), "q", 1)
	s := kmsg.StringPtr
	// 1000 B/s over 10 windows of 1 s: 10000 bytes is the bound.
	if e := alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(s("client-id"), s("slow"))},
		quotaOp{key: "producer_byte_rate", value: 1000}); e[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(e[0].ErrorCode))
	}
	produce := func(nc net.Conn, client string) (*kmsg.ProduceResponse, time.Duration) {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "q", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(t, 300)}}}}
		start := time.Now()
		resp := roundTripOn[*kmsg.ProduceResponse](t, nc, client, req, 9)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("%s: produce: %v", client, kerr.ErrorForCode(code))
		}
		return resp, time.Since(start)
	}
	fast := dialQuota(t, b)
	for range 3 {
		if resp, _ := produce(fast, "fast"); resp.ThrottleMillis != 0 {
			t.Fatalf("a client without a quota throttled %d ms", resp.ThrottleMillis)
		}
	}
	slow := dialQuota(t, b)
	first, _ := produce(slow, "slow")
	if first.ThrottleMillis != 0 {
		t.Fatalf("first produce (under 10000 bytes) throttled %d ms", first.ThrottleMillis)
	}
	second, took := produce(slow, "slow")
	if second.ThrottleMillis < 500 || second.ThrottleMillis > 5000 {
		t.Fatalf("second produce throttled %d ms, want the time back to 1000 B/s", second.ThrottleMillis)
	}
	if took > time.Duration(second.ThrottleMillis)*time.Millisecond/2 {
		t.Errorf("the throttled response took %v: it should go out at once", took)
	}
	throttle := time.Duration(second.ThrottleMillis) * time.Millisecond
	if muted := mutedFor(t, slow); muted < throttle-200*time.Millisecond {
		t.Errorf("the next request was answered after %v, want the connection muted for %v", muted, throttle)
	}
	if muted := mutedFor(t, fast); muted > throttle/2 {
		t.Errorf("the unthrottled client's connection waited %v", muted)
	}
	if hw := b.logs.Topic("q").Partitions()[0].Log.HighWatermark(); hw != 5*300 {
		t.Errorf("high watermark %d, want every produced record written", hw)
	}
	// The metrics: Kafka's Produce sensor of client-id slow (no user tag:
	// only client-id quotas are set).
	m := scrapeMetrics(t, b)
	slowTags := []string{"quota", "Produce", "user", "", "client_id", "slow"}
	if n := m.get(metrics.ClientQuotaThrottles, slowTags...); n != 1 {
		t.Errorf("%s for slow = %v, want 1", metrics.ClientQuotaThrottles, n)
	}
	if ms := m.get(metrics.ClientQuotaThrottleTimeMs, slowTags...); ms != float64(second.ThrottleMillis) {
		t.Errorf("%s for slow = %v, want %d", metrics.ClientQuotaThrottleTimeMs, ms, second.ThrottleMillis)
	}
	if n := m.get(metrics.ClientBytes, slowTags...); n < 2*float64(len(testBatch(t, 300))) {
		t.Errorf("%s for slow = %v, want both requests' bytes", metrics.ClientBytes, n)
	}
	if n := m.get(metrics.ClientQuotaThrottles, "quota", "Produce", "client_id", "fast"); n != 0 {
		t.Errorf("%s for fast = %v", metrics.ClientQuotaThrottles, n)
	}
}

// TestFetchQuotaThrottlesWithAnEmptyAnswer checks a consumer over its
// consumer_byte_rate is answered without records, its bytes not counted,
// carrying the throttle time, and muted; under it fetches return
// records.
func TestFetchQuotaThrottlesWithAnEmptyAnswer(t *testing.T) {
	b := startBroker(t, nil)
	createTopic(t, newAdmin(t, b), "q", 1)
	s := kmsg.StringPtr
	nc := dialQuota(t, b)
	for range 5 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "q", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(t, 200)}}}}
		roundTripOn[*kmsg.ProduceResponse](t, nc, "producer", req, 9)
	}
	batch := len(testBatch(t, 200))
	// Four batches over 10 windows of 1 s is the bound.
	if e := alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(s("user"), s("ANONYMOUS"))},
		quotaOp{key: "consumer_byte_rate", value: float64(batch * 4 / 10)}); e[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(e[0].ErrorCode))
	}
	fetch := func(offset int64, partitionMax int32) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = -1, 1<<20, 100, -1
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "q", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: offset, PartitionMaxBytes: partitionMax, CurrentLeaderEpoch: -1}}}}
		return roundTripOn[*kmsg.FetchResponse](t, nc, "consumer", req, 11)
	}
	records := func(r *kmsg.FetchResponse) int {
		if len(r.Topics) == 0 {
			return 0
		}
		return len(r.Topics[0].Partitions[0].RecordBatches)
	}
	// One batch each (partition_max_bytes 1: the first batch only).
	for i := range 2 {
		r := fetch(int64(i*200), 1)
		if records(r) == 0 || r.ThrottleMillis != 0 {
			t.Fatalf("fetch %d: %d record bytes, throttled %d ms; want records, no throttle", i, records(r), r.ThrottleMillis)
		}
	}
	// The other three batches (max_bytes is lowered to the four batches
	// one window allows) take the consumer to five batches over 10 s:
	// (5/4 - 1) * 10 s.
	throttled := fetch(400, 1<<20)
	if throttled.ThrottleMillis < 2000 || throttled.ThrottleMillis > 3000 {
		t.Fatalf("the fetch over consumer_byte_rate was throttled %d ms, want about 2500", throttled.ThrottleMillis)
	}
	if records(throttled) != 0 {
		t.Errorf("the throttled fetch carried records")
	}
	if muted := mutedFor(t, nc); muted < time.Duration(throttled.ThrottleMillis)*time.Millisecond-200*time.Millisecond {
		t.Errorf("the next request was answered after %v, want the connection muted for %d ms", muted, throttled.ThrottleMillis)
	}
	// Its bytes were taken back: two batches are counted, so two more fit.
	if r := fetch(400, 1); records(r) == 0 || r.ThrottleMillis != 0 {
		t.Errorf("after the throttle: %d record bytes, throttled %d ms; want records, no throttle", records(r), r.ThrottleMillis)
	}
}

// TestQuotaCheckWithoutQuotasAllocatesNothing checks the quota checks of
// a produce and a fetch cost no allocation when no quota is set, or when
// one is set but not for this client.
func TestQuotaCheckWithoutQuotasAllocatesNothing(t *testing.T) {
	b := startBroker(t, nil)
	pipe, other := net.Pipe()
	defer pipe.Close()
	defer other.Close()
	c := newConn(b, pipe)
	c.start = time.Now()
	produce := &protocol.Request{Key: int16(kmsg.Produce), Version: 9, ClientID: kmsg.StringPtr("c"), Body: kmsg.NewPtrProduceRequest(), BodySize: 1000}
	fetch := &protocol.Request{Key: int16(kmsg.Fetch), Version: 11, ClientID: kmsg.StringPtr("c"), Body: &kmsg.FetchRequest{ReplicaID: -1}}
	resp := kmsg.NewPtrProduceResponse()
	check := func(what string) {
		if n := testing.AllocsPerRun(100, func() {
			c.throttleResponse(produce, c.start, resp)
			c.fetchThrottle(fetch, 1000)
		}); n != 0 {
			t.Errorf("%s: %v allocations per request", what, n)
		}
	}
	check("no quota")
	s := kmsg.StringPtr
	alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(s("client-id"), s("other"))},
		quotaOp{key: "producer_byte_rate", value: 1e9}, quotaOp{key: "consumer_byte_rate", value: 1e9})
	if !b.quotas.produce.enabled() {
		t.Fatal("the quota is not in force")
	}
	check("another client's quota")
}

// TestRequestQuotaThrottles checks a client over its request_percentage
// is throttled, at most one quota window, as Kafka's
// ClientRequestQuotaManager, in the throttle_time_ms of any response.
func TestRequestQuotaThrottles(t *testing.T) {
	b := startBroker(t, nil)
	s := kmsg.StringPtr
	if e := alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(s("client-id"), s("busy"))},
		quotaOp{key: "request_percentage", value: 0.01}); e[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(e[0].ErrorCode))
	}
	nc := dialQuota(t, b)
	for i := range 5000 {
		resp := roundTripOn[*kmsg.MetadataResponse](t, nc, "busy", kmsg.NewPtrMetadataRequest(), 12)
		if resp.ThrottleMillis == 0 {
			continue
		}
		if resp.ThrottleMillis > 1000 {
			t.Fatalf("throttled %d ms, want at most one window (1000 ms)", resp.ThrottleMillis)
		}
		t.Logf("throttled %d ms after %d requests", resp.ThrottleMillis, i+1)
		return
	}
	t.Fatal("5000 requests at 0.01% of a thread were never throttled")
}

// throttleHook records the throttle times a franz-go client is told.
type throttleHook struct {
	mu  sync.Mutex
	got []time.Duration
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, d)
}

func (h *throttleHook) throttled() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

// TestUserQuotaFollowsTheSASLPrincipal checks a user entity's quota
// applies to the clients that authenticate as that user over SASL, and
// not to another user's.
func TestUserQuotaFollowsTheSASLPrincipal(t *testing.T) {
	b := saslBroker(t, nil)
	createTopic(t, newAdmin(t, b), "q", 1)
	s := kmsg.StringPtr
	if e := alterQuotas(t, b, false, [][]kmsg.AlterClientQuotasRequestEntryEntity{quotaEntity(s("user"), s("alice"))},
		quotaOp{key: "producer_byte_rate", value: 1000}); e[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(e[0].ErrorCode))
	}
	value := make([]byte, 6000) // two of them are over 10 windows of 1000 B/s
	for _, tc := range []struct {
		user, pass string
		throttled  bool
	}{{"admin", "admin-secret", false}, {"alice", "alice-secret", true}} {
		hook := &throttleHook{}
		cl := saslClient(t, b, tc.user, tc.pass, kgo.WithHooks(hook), kgo.ProducerBatchCompression(kgo.NoCompression()))
		for range 2 {
			if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "q", Value: value}).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", tc.user, err)
			}
		}
		if got := hook.throttled(); (len(got) > 0) != tc.throttled {
			t.Errorf("%s was told throttle times %v, want throttled %v", tc.user, got, tc.throttled)
		}
	}
}
