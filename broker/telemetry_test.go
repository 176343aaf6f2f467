package broker

import (
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/metadata"
)

// clientMetricsIAC sets (a string value) or deletes (nil) configs of a
// CLIENT_METRICS resource.
func clientMetricsIAC(t *testing.T, b *Broker, name string, kv ...any) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = kv[i].(string)
		if v, ok := kv[i+1].(string); ok {
			c.Value = &v
		} else {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return adminRoundTrip[*kmsg.IncrementalAlterConfigsResponse](t, b, req, 1).Resources[0]
}

// telemetryConn is a connection of a client that said who it is in
// ApiVersions v3.
func telemetryConn(t *testing.T, b *Broker, software string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = software, "4.4.0"
	roundTripOn[*kmsg.ApiVersionsResponse](t, nc, "tel-1", av, 3)
	return nc
}

func getSubs(t *testing.T, nc net.Conn, clientID string, id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
	t.Helper()
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	req.ClientInstanceID = id
	return roundTripOn[*kmsg.GetTelemetrySubscriptionsResponse](t, nc, clientID, req, 0)
}

func push(t *testing.T, nc net.Conn, id [16]byte, sub int32, codec int8, metrics []byte, terminating bool) int16 {
	t.Helper()
	req := kmsg.NewPtrPushTelemetryRequest()
	req.ClientInstanceID, req.SubscriptionID, req.CompressionType, req.Metrics, req.Terminating = id, sub, codec, metrics, terminating
	return roundTripOn[*kmsg.PushTelemetryResponse](t, nc, "tel-1", req, 0).ErrorCode
}

// wantSubscriptionID is Kafka's computeSubscriptionId over the metrics
// in the order given.
func wantSubscriptionID(metrics string, interval int32, id [16]byte) int32 {
	crc := crc32.Checksum([]byte("["+metrics+"]"+strconv.Itoa(int(interval))), crc32.MakeTable(crc32.Castagnoli))
	return int32(crc) ^ uuidHash(id)
}

// TestTelemetrySubscriptionsAsKafka: GetTelemetrySubscriptions gives a
// new client an instance id and what the CLIENT_METRICS subscriptions
// matching its client id, software name and address ask (the union of
// their metrics, the shortest interval, the subscription id as Kafka
// computes it, Kafka's compression types and telemetry.max.bytes), a
// client no subscription matches nothing at Kafka's 5 minutes, asking
// again too soon is THROTTLING_QUOTA_EXCEEDED, and a changed subscription
// is given at once with a new id.
func TestTelemetrySubscriptionsAsKafka(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.TelemetryMaxBytes = 4096 })
	for _, s := range []struct{ name, metrics, interval, match string }{
		{"s1", "org.apache.kafka.producer.,org.apache.kafka.consumer.", "1000", "client_id=tel-.*,client_software_name=apache-kafka-java,client_source_address=127\\.0\\.0\\.1"},
		{"s2", "org.apache.kafka.producer.node", "2000", "client_software_version=4\\.4.*"},
		{"s3", "*", "100", "client_software_name=librdkafka"},
	} {
		if r := clientMetricsIAC(t, b, s.name, "metrics", s.metrics, "interval.ms", s.interval, "match", s.match); r.ErrorCode != 0 {
			t.Fatalf("set %s: %v %v", s.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
	nc := telemetryConn(t, b, "apache-kafka-java")
	r := getSubs(t, nc, "tel-1", [16]byte{})
	if r.ErrorCode != 0 || r.ClientInstanceID == ([16]byte{}) {
		t.Fatalf("get: %v, instance %x", kerr.ErrorForCode(r.ErrorCode), r.ClientInstanceID)
	}
	id := r.ClientInstanceID
	want := []string{"org.apache.kafka.consumer.", "org.apache.kafka.producer.", "org.apache.kafka.producer.node"}
	if !slices.Equal(r.RequestedMetrics, want) || r.PushIntervalMillis != 1000 || r.TelemetryMaxBytes != 4096 || r.DeltaTemporality ||
		!slices.Equal(r.AcceptedCompressionTypes, []int8{4, 3, 1, 2}) {
		t.Fatalf("get: metrics %q interval %d max bytes %d delta %v compression %v", r.RequestedMetrics, r.PushIntervalMillis, r.TelemetryMaxBytes, r.DeltaTemporality, r.AcceptedCompressionTypes)
	}
	if w := wantSubscriptionID("org.apache.kafka.consumer., org.apache.kafka.producer., org.apache.kafka.producer.node", 1000, id); r.SubscriptionID != w {
		t.Errorf("subscription id %d, want %d", r.SubscriptionID, w)
	}
	if again := getSubs(t, nc, "tel-1", id); again.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Errorf("get again at once: %v, want THROTTLING_QUOTA_EXCEEDED", kerr.ErrorForCode(again.ErrorCode))
	}
	if r := clientMetricsIAC(t, b, "s1", "interval.ms", "500"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	changed := getSubs(t, nc, "tel-1", id)
	if changed.ErrorCode != 0 || changed.PushIntervalMillis != 500 || changed.SubscriptionID == r.SubscriptionID || changed.ClientInstanceID != id {
		t.Errorf("after the change: %v interval %d id %d (was %d)", kerr.ErrorForCode(changed.ErrorCode), changed.PushIntervalMillis, changed.SubscriptionID, r.SubscriptionID)
	}
	other := getSubs(t, telemetryConn(t, b, "other"), "x", [16]byte{})
	if other.ErrorCode != 0 || !slices.Equal(other.RequestedMetrics, []string{"org.apache.kafka.producer.node"}) || other.PushIntervalMillis != 2000 {
		t.Errorf("other client: %v %q %d", kerr.ErrorForCode(other.ErrorCode), other.RequestedMetrics, other.PushIntervalMillis)
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		clientMetricsIAC(t, b, s, "metrics", nil, "interval.ms", nil, "match", nil)
	}
	none := getSubs(t, telemetryConn(t, b, "apache-kafka-java"), "tel-2", [16]byte{})
	if none.ErrorCode != 0 || len(none.RequestedMetrics) != 0 || none.PushIntervalMillis != 300000 {
		t.Errorf("no subscriptions: %v %q %d, want no metrics every 5 minutes", kerr.ErrorForCode(none.ErrorCode), none.RequestedMetrics, none.PushIntervalMillis)
	}
}

// otlpPayload is a MetricsData with a gauge and a monotonic cumulative
// sum, each of one point with a topic attribute.
func otlpPayload(gauge, sum float64) []byte {
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	msg := func(num protowire.Number, parts ...[]byte) []byte {
		body := slices.Concat(parts...)
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), body)
	}
	attr := msg(7, str(1, "topic"), msg(2, str(1, "t1")))
	double := protowire.AppendFixed64(protowire.AppendTag(nil, 4, protowire.Fixed64Type), math.Float64bits(gauge))
	integer := protowire.AppendFixed64(protowire.AppendTag(nil, 6, protowire.Fixed64Type), uint64(int64(sum)))
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	g := msg(2, str(1, "org.apache.kafka.producer.record.queue.time.avg"), msg(5, msg(1, attr, double)))
	s := msg(2, str(1, "org.apache.kafka.producer.record.send.total"), msg(7, msg(1, attr, integer), varint(2, 2), varint(3, 1)))
	resource := msg(1, msg(1, msg(1, str(1, "client_rack"), msg(2, str(1, "r1")))))
	return msg(1, resource, msg(2, msg(1, str(1, "scope")), g, s))
}

// TestPushTelemetryAsKafka walks PushTelemetry's checks in Kafka's order
// on the broker's own clock: a zero instance id is INVALID_REQUEST, a
// stale subscription id UNKNOWN_SUBSCRIPTION_ID, an unknown codec
// UNSUPPORTED_COMPRESSION_TYPE, more than telemetry.max.bytes
// TELEMETRY_TOO_LARGE, a push before the interval THROTTLING_QUOTA_EXCEEDED
// (the first after a GetTelemetrySubscriptions may come early), a payload
// that is no OTLP INVALID_RECORD; a zstd push's values reach /metrics and
// a gzip push's replace them (the latest gauge, the cumulative sum), a
// terminating push is taken early and ends the pushes
// (INVALID_REQUEST after it), and the client's series go once it expires.
func TestPushTelemetryAsKafka(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	b := startMeteredBrokerWith(t, func(c *Config) { c.Clock, c.TelemetryMaxBytes = clock, 1024 })
	if r := clientMetricsIAC(t, b, "s1", "metrics", "org.apache.kafka.producer.", "interval.ms", "1000"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	nc := telemetryConn(t, b, "apache-kafka-java")
	if code := push(t, nc, [16]byte{}, 0, 0, nil, false); code != kerr.InvalidRequest.Code {
		t.Errorf("zero instance id: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	sub := getSubs(t, nc, "tel-1", [16]byte{})
	id := sub.ClientInstanceID
	payload, err := batch.Compress(batch.CodecZstd, otlpPayload(2.5, 7))
	if err != nil {
		t.Fatal(err)
	}
	interval := time.Duration(sub.PushIntervalMillis) * time.Millisecond
	for _, c := range []struct {
		what    string
		sub     int32
		codec   int8
		metrics []byte
		want    int16
	}{
		{"stale subscription id", sub.SubscriptionID + 1, 4, payload, kerr.UnknownSubscriptionID.Code},
		{"push too soon", sub.SubscriptionID, 4, payload, kerr.ThrottlingQuotaExceeded.Code},
		{"unknown codec", sub.SubscriptionID, 9, payload, kerr.UnsupportedCompressionType.Code},
		{"over telemetry.max.bytes", sub.SubscriptionID, 0, make([]byte, 1025), kerr.TelemetryTooLarge.Code},
		{"not OTLP", sub.SubscriptionID, 0, []byte{0xff, 0xff}, kerr.InvalidRecord.Code},
		{"a zstd push", sub.SubscriptionID, 4, payload, 0},
	} {
		if c.want != kerr.ThrottlingQuotaExceeded.Code {
			clock.Advance(interval)
		}
		if code := push(t, nc, id, c.sub, c.codec, c.metrics, false); code != c.want {
			t.Errorf("%s: %v, want %v", c.what, kerr.ErrorForCode(code), kerr.ErrorForCode(c.want))
		}
	}
	s := scrapeMetrics(t, b)
	client := []string{"client_instance_id", metadata.TopicIDString(id), "client_id", "tel-1", "client_software_name", "apache-kafka-java", "topic", "t1"}
	if v, ok := s.value("strata_client_metric_org_apache_kafka_producer_record_queue_time_avg", client...); !ok || v != 2.5 {
		t.Errorf("gauge: %v %v, want 2.5", v, ok)
	}
	if fam := s["strata_client_metric_org_apache_kafka_producer_record_send_total"]; fam == nil || fam.GetType().String() != "COUNTER" || s.get(fam.GetName(), client...) != 7 {
		t.Errorf("counter: %v", fam)
	}
	again, err := batch.Compress(batch.CodecGzip, otlpPayload(3, 9))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(interval)
	if code := push(t, nc, id, sub.SubscriptionID, batch.CodecGzip, again, false); code != 0 {
		t.Fatalf("a gzip push: %v", kerr.ErrorForCode(code))
	}
	s = scrapeMetrics(t, b)
	if g, c := s.get("strata_client_metric_org_apache_kafka_producer_record_queue_time_avg", client...), s.get("strata_client_metric_org_apache_kafka_producer_record_send_total", client...); g != 3 || c != 9 {
		t.Errorf("after a second push: gauge %v counter %v, want the latest values 3 and 9 (a cumulative sum)", g, c)
	}
	if code := push(t, nc, id, sub.SubscriptionID, 4, payload, true); code != 0 {
		t.Errorf("terminating push before the interval: %v, want it taken", kerr.ErrorForCode(code))
	}
	clock.Advance(interval)
	if code := push(t, nc, id, sub.SubscriptionID, 4, payload, false); code != kerr.InvalidRequest.Code {
		t.Errorf("push after terminating: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	clock.Advance(minClientExpiry + time.Second)
	s = scrapeMetrics(t, b)
	if _, ok := s.value("strata_client_metric_org_apache_kafka_producer_record_queue_time_avg"); ok || s.get("strata_client_telemetry_instances") != 0 {
		t.Errorf("after the client expired: series still served, %v instances", s.get("strata_client_telemetry_instances"))
	}
}

// TestClientMetricsConfigsAsKafka: CLIENT_METRICS resources are validated
// as Kafka's ClientMetricsConfigs.validate (codes and messages), described
// with Kafka's defaults and sources, listed by ListConfigResources, and
// APPEND and SUBTRACT work on their lists.
func TestClientMetricsConfigsAsKafka(t *testing.T) {
	b := startBroker(t, nil)
	for _, c := range []struct {
		name string
		kv   []any
		code int16
		msg  string
	}{
		{"", []any{"metrics", "a"}, kerr.InvalidRequest.Code, "Subscription name can't be empty"},
		{"s", []any{"foo", "1"}, kerr.InvalidRequest.Code, "Unknown client metrics configuration: foo"},
		{"s", []any{"interval.ms", "50"}, kerr.InvalidRequest.Code, "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", []any{"interval.ms", "x"}, kerr.InvalidConfig.Code, "Invalid value x for configuration interval.ms: Not a number of type INT"},
		{"s", []any{"match", "client_id"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id"},
		{"s", []any{"match", "rack=a"}, kerr.InvalidConfig.Code, "Illegal client matching pattern: rack=a"},
		{"s", []any{"match", "client_id=("}, kerr.InvalidConfig.Code, "Illegal client matching pattern: client_id=("},
		{"s", []any{"metrics", "a,b", "interval.ms", "1000", "match", "client_id=c.*"}, 0, ""},
	} {
		r := clientMetricsIAC(t, b, c.name, c.kv...)
		if r.ErrorCode != c.code || c.msg != "" && (r.ErrorMessage == nil || *r.ErrorMessage != c.msg) {
			t.Errorf("%q %v: %v %v, want %v %q", c.name, c.kv, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, kerr.ErrorForCode(c.code), c.msg)
		}
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "s"
	rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "metrics", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("c")},
		{Name: "match", Op: kmsg.IncrementalAlterConfigOpSubtract, Value: kmsg.StringPtr("client_id=c.*")},
	}
	req.Resources = append(req.Resources, rr)
	if r := adminRoundTrip[*kmsg.IncrementalAlterConfigsResponse](t, b, req, 1).Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("append/subtract: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	describe := func(name string) map[string]string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
		req.Resources, req.IncludeSynonyms = append(req.Resources, rr), true
		res := adminRoundTrip[*kmsg.DescribeConfigsResponse](t, b, req, 4).Resources[0]
		out := map[string]string{}
		for _, c := range res.Configs {
			out[c.Name] = *c.Value + " " + strconv.Itoa(int(c.Source)) + " " + strconv.Itoa(len(c.ConfigSynonyms))
		}
		if res.ErrorCode != 0 {
			out["error"] = kerr.ErrorForCode(res.ErrorCode).Error()
		}
		return out
	}
	if got, want := describe("s"), map[string]string{"metrics": "a,b,c 7 1", "interval.ms": "1000 7 1", "match": " 7 1"}; !maps.Equal(got, want) {
		t.Errorf("describe s: %v, want %v", got, want)
	}
	if got, want := describe("none"), map[string]string{"metrics": " 5 0", "interval.ms": "300000 5 0", "match": " 5 0"}; !maps.Equal(got, want) {
		t.Errorf("describe an unset subscription: %v, want Kafka's defaults %v", got, want)
	}
	if got := describe(""); got["error"] != kerr.InvalidRequest.Error() {
		t.Errorf("describe the empty name: %v, want INVALID_REQUEST", got)
	}
	for _, version := range []int16{0, 1} {
		list := kmsg.NewPtrListConfigResourcesRequest()
		list.ResourceTypes = []int8{16}
		r := adminRoundTrip[*kmsg.ListConfigResourcesResponse](t, b, list, version)
		if len(r.ConfigResources) != 1 || r.ConfigResources[0].Name != "s" || r.ConfigResources[0].Type != 16 {
			t.Errorf("ListConfigResources v%d: %+v, want s", version, r.ConfigResources)
		}
	}
}

// TestTelemetryInstanceGoesWithItsConnection: as Kafka's
// ClientMetricsManager, a client instance and its series go when the
// connection it was created on closes, not when another connection it
// pushed on does; the client pushing again on a new connection gets an
// instance afresh.
func TestTelemetryInstanceGoesWithItsConnection(t *testing.T) {
	b := startMeteredBrokerWith(t, nil)
	if r := clientMetricsIAC(t, b, "s1", "metrics", "org.apache.kafka.producer.", "interval.ms", "1000"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	payload := otlpPayload(2.5, 7)
	const gauge = "strata_client_metric_org_apache_kafka_producer_record_queue_time_avg"
	// a is created and pushes on one connection; c is created on c1 and
	// pushes on c2.
	a := telemetryConn(t, b, "apache-kafka-java")
	subA := getSubs(t, a, "tel-1", [16]byte{})
	c1, c2 := telemetryConn(t, b, "apache-kafka-java"), telemetryConn(t, b, "apache-kafka-java")
	subC := getSubs(t, c1, "tel-1", [16]byte{})
	if code := push(t, a, subA.ClientInstanceID, subA.SubscriptionID, 0, payload, false); code != 0 {
		t.Fatalf("push of a: %v", kerr.ErrorForCode(code))
	}
	if code := push(t, c2, subC.ClientInstanceID, subC.SubscriptionID, 0, payload, false); code != 0 {
		t.Fatalf("push of c: %v", kerr.ErrorForCode(code))
	}
	idA, idC := metadata.TopicIDString(subA.ClientInstanceID), metadata.TopicIDString(subC.ClientInstanceID)
	served := func(s scrape, id string) bool { _, ok := s.value(gauge, "client_instance_id", id); return ok }
	s := scrapeMetrics(t, b)
	if !served(s, idA) || !served(s, idC) || s.get("strata_client_telemetry_instances") != 2 {
		t.Fatalf("before any close: a served %v, c served %v, %v instances", served(s, idA), served(s, idC), s.get("strata_client_telemetry_instances"))
	}
	// The close of the admin connection above may be counted after this
	// scrape: a close is known handled once the count passed the count
	// before it, and the instances are then checked (each close that
	// should drop one is waited for by what it dropped).
	closed := s.get("strata_connections_closed_total")
	closeAndWait := func(nc net.Conn, done func(s scrape) bool) scrape {
		t.Helper()
		nc.Close()
		closed++
		s := waitMetrics(t, b, func(s scrape) error {
			if got := s.get("strata_connections_closed_total"); got < closed || !done(s) {
				return fmt.Errorf("%v connections closed, want %v; instances %v", got, closed, s.get("strata_client_telemetry_instances"))
			}
			return nil
		})
		closed = s.get("strata_connections_closed_total")
		return s
	}
	always := func(scrape) bool { return true }
	if s := closeAndWait(c2, always); !served(s, idC) || s.get("strata_client_telemetry_instances") != 2 {
		t.Errorf("after c's push connection closed: c served %v, %v instances, want it kept", served(s, idC), s.get("strata_client_telemetry_instances"))
	}
	if s := closeAndWait(a, func(s scrape) bool { return !served(s, idA) }); served(s, idA) || !served(s, idC) || s.get("strata_client_telemetry_instances") != 1 {
		t.Errorf("after a's connection closed: a served %v, c served %v, %v instances, want only c", served(s, idA), served(s, idC), s.get("strata_client_telemetry_instances"))
	}
	if s := closeAndWait(c1, func(s scrape) bool { return !served(s, idC) }); served(s, idC) || s.get("strata_client_telemetry_instances") != 0 {
		t.Errorf("after c's first connection closed: c served %v, %v instances, want none", served(s, idC), s.get("strata_client_telemetry_instances"))
	}
	again := telemetryConn(t, b, "apache-kafka-java")
	if code := push(t, again, subC.ClientInstanceID, subC.SubscriptionID, 0, payload, false); code != 0 {
		t.Fatalf("c's push on a new connection: %v", kerr.ErrorForCode(code))
	}
	if s := scrapeMetrics(t, b); !served(s, idC) || s.get("strata_client_telemetry_instances") != 1 {
		t.Errorf("after c pushed again: served %v, %v instances, want it afresh", served(s, idC), s.get("strata_client_telemetry_instances"))
	}
}
