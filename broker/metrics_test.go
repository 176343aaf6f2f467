package broker

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metrics"
)

func startMeteredBroker(t *testing.T) *Broker {
	t.Helper()
	return startMeteredBrokerWith(t, nil)
}

// startMeteredBrokerWith is startMeteredBroker with mutate applied to
// the config first.
func startMeteredBrokerWith(t *testing.T, mutate func(*Config)) *Broker {
	t.Helper()
	b := startBroker(t, func(c *Config) {
		if mutate != nil {
			mutate(c)
		}
		c.MetricsListener = "http://127.0.0.1:0"
	})
	if b.MetricsAddr() == nil || b.Metrics() == nil {
		t.Fatal("metrics.listener set but the broker has no metrics listener")
	}
	return b
}

// httpGet fetches path from the broker's metrics listener.
func httpGet(t *testing.T, b *Broker, path string) (int, http.Header, []byte) {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + b.MetricsAddr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return resp.StatusCode, resp.Header, body
}

// scrape is one parsed /metrics response.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics GETs /metrics and parses it strictly as Prometheus text
// format 0.0.4.
func scrapeMetrics(t *testing.T, b *Broker) scrape {
	t.Helper()
	code, hdr, body := httpGet(t, b, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d: %s", code, body)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("/metrics Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse as Prometheus text format: %v\n%s", err, body)
	}
	return fams
}

// value sums the samples of family name whose labels include the given
// name/value pairs: counter and gauge values, histogram sample counts.
// found is false when no sample matched.
func (s scrape) value(name string, labels ...string) (v float64, found bool) {
	fam := s[name]
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			ok := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		}
	}
	return v, found
}

func (s scrape) get(name string, labels ...string) float64 {
	v, _ := s.value(name, labels...)
	return v
}

// waitMetrics scrapes until check passes. A request is counted just after
// its response is written, so a client can see the response first.
func waitMetrics(t *testing.T, b *Broker, check func(s scrape) error) scrape {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := scrapeMetrics(t, b)
		err := check(s)
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics did not reach the expected values: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// delta checks that a sample moved by exactly want since before.
func delta(before, after scrape, want float64, name string, labels ...string) error {
	if d := after.get(name, labels...) - before.get(name, labels...); d != want {
		return fmt.Errorf("%s%v moved by %v, want %v", name, labels, d, want)
	}
	return nil
}

// writeCounter counts the requests a franz-go client wrote, by key.
type writeCounter struct{ n [kmsg.MaxKey + 1]atomic.Int64 }

func (w *writeCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		w.n[key].Add(1)
	}
}

type fakeGroupOffsets []struct {
	group, topic string
	partition    int32
	offset       int64
}

func (f fakeGroupOffsets) CommittedOffsets(fn func(group, topic string, partition int32, offset int64)) {
	for _, o := range f {
		fn(o.group, o.topic, o.partition, o.offset)
	}
}

func TestMetricsMoveWithFranzGoTraffic(t *testing.T) {
	b := startMeteredBroker(t)
	waitMetrics(t, b, func(scrape) error {
		if code, _, body := httpGet(t, b, "/healthz"); code != http.StatusOK {
			return fmt.Errorf("/healthz %d %q", code, body)
		}
		return nil
	})
	adminCl := newClient(t, b)
	createTopic(t, kadm.NewClient(adminCl), "metered", 1)
	adminCl.Close()
	before := scrapeMetrics(t, b)

	const n = 25
	var writes writeCounter
	prod := newClient(t, b, kgo.WithHooks(&writes), kgo.DefaultProduceTopic("metered"))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte(strings.Repeat("v", i))})
	}
	produceSync(t, prod, recs...)
	prod.Close()

	cons := newClient(t, b, kgo.WithHooks(&writes), kgo.ConsumeTopics("metered"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	got := 0
	ctx := testCtx(t)
	for got < n {
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, n)
		}
		fs := cons.PollRecords(ctx, n)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		got += fs.NumRecords()
	}
	cons.Close()

	b.Metrics().SetGroupOffsets(fakeGroupOffsets{
		{"g1", "metered", 0, 20},
		{"g1", "no-such-topic", 0, 3},
	})

	var logBytes int64
	segs, err := filepath.Glob(filepath.Join(b.cfg.LogDirs, "metered-0", "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments of metered-0: %v %v", segs, err)
	}
	for _, seg := range segs {
		fi, err := os.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		logBytes += fi.Size()
	}

	produces, fetches := float64(writes.n[kmsg.Produce].Load()), float64(writes.n[kmsg.Fetch].Load())
	topic := []string{"topic", "metered"}
	part := []string{"topic", "metered", "partition", "0"}
	after := waitMetrics(t, b, func(s scrape) error {
		for _, err := range []error{
			// Every request the clients wrote was answered and counted,
			// the last fetch possibly cut by the client's close.
			delta(before, s, produces, metrics.RequestsTotal, "api", "Produce", "error", "NONE"),
			delta(before, s, produces, metrics.RequestDurationSeconds, "api", "Produce"),
			delta(before, s, fetches, metrics.RequestsTotal, "api", "Fetch"),
			delta(before, s, fetches, metrics.RequestDurationSeconds, "api", "Fetch"),
			delta(before, s, n, metrics.TopicRecordsIn, topic...),
			delta(before, s, float64(logBytes), metrics.TopicBytesIn, topic...),
			delta(before, s, float64(logBytes), metrics.TopicBytesOut, topic...),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if produces == 0 || fetches == 0 {
		t.Fatalf("clients wrote %v produce and %v fetch requests", produces, fetches)
	}
	// Every client hung up: all connections ever accepted are closed.
	after = waitMetrics(t, b, func(s scrape) error {
		open, accepted, closed := s.get(metrics.ConnectionsOpen), s.get(metrics.ConnectionsAccepted), s.get(metrics.ConnectionsClosed)
		if open != 0 || accepted != closed {
			return fmt.Errorf("connections open %v, accepted %v, closed %v", open, accepted, closed)
		}
		return nil
	})
	if d := after.get(metrics.ConnectionsAccepted) - before.get(metrics.ConnectionsAccepted); d < 2 {
		t.Errorf("%v connections accepted for a producer and a consumer", d)
	}
	for _, c := range []struct {
		name string
		want float64
	}{
		{metrics.PartitionLogEndOffset, n},
		{metrics.PartitionHighWatermark, n},
		{metrics.PartitionLogStart, 0},
	} {
		if v, ok := after.value(c.name, part...); !ok || v != c.want {
			t.Errorf("%s{metered,0} = %v (present %v), want %v", c.name, v, ok, c.want)
		}
	}
	if v := after.get(metrics.GroupLag, "group", "g1", "topic", "metered", "partition", "0"); v != n-20 {
		t.Errorf("group lag = %v, want %v", v, n-20)
	}
	if v := after.get(metrics.GroupCommittedOffset, "group", "g1", "topic", "metered"); v != 20 {
		t.Errorf("committed offset = %v, want 20", v)
	}
	if _, ok := after.value(metrics.GroupLag, "topic", "no-such-topic"); ok {
		t.Error("group lag reported for a topic that does not exist")
	}
	if _, ok := after.value("go_goroutines"); !ok {
		t.Error("Go runtime metrics missing")
	}
}

func TestMetricsCountErrorCodes(t *testing.T) {
	b := startMeteredBroker(t)
	produce := func(topic string, partition int32, batch []byte) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		adminRoundTrip[*kmsg.ProduceResponse](t, b, req, 9)
	}
	fetch := func(topic string, offset int64, session, epoch int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = -1, 1<<20, session, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return adminRoundTrip[*kmsg.FetchResponse](t, b, req, 11)
	}
	createTopics := func(name string) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 5000
		adminRoundTrip[*kmsg.CreateTopicsResponse](t, b, req, 5)
	}
	createTopics("errs")
	before := waitMetrics(t, b, func(s scrape) error {
		return delta(scrape{}, s, 1, metrics.RequestsTotal, "api", "CreateTopics", "version", "5", "error", "NONE")
	})

	batch := testBatch(t, 4)
	produce("errs", 0, batch)    // ok
	produce("errs", 3, batch)    // no such partition
	produce("missing", 0, batch) // no such topic
	createTopics("errs")         // TOPIC_ALREADY_EXISTS
	if p := fetch("errs", 100, 0, -1).Topics[0].Partitions[0]; p.ErrorCode == 0 {
		t.Fatal("fetch past the end succeeded")
	}
	if r := fetch("errs", 0, 42, 1); r.ErrorCode == 0 {
		t.Fatal("incremental fetch in an unknown session succeeded")
	}
	adminRoundTrip[*kmsg.ApiVersionsResponse](t, b, kmsg.NewPtrApiVersionsRequest(), 3)

	after := waitMetrics(t, b, func(s scrape) error {
		for _, err := range []error{
			delta(before, s, 3, metrics.RequestsTotal, "api", "Produce", "version", "9", "error", "NONE"),
			delta(before, s, 2, metrics.PartitionErrorsTotal, "api", "Produce", "error", "UNKNOWN_TOPIC_OR_PARTITION"),
			delta(before, s, 1, metrics.PartitionErrorsTotal, "api", "CreateTopics", "error", "TOPIC_ALREADY_EXISTS"),
			delta(before, s, 1, metrics.PartitionErrorsTotal, "api", "Fetch", "error", "OFFSET_OUT_OF_RANGE"),
			delta(before, s, 1, metrics.RequestsTotal, "api", "Fetch", "version", "11", "error", "FETCH_SESSION_ID_NOT_FOUND"),
			delta(before, s, 1, metrics.RequestsTotal, "api", "Fetch", "version", "11", "error", "NONE"),
			delta(before, s, 1, metrics.RequestsTotal, "api", "ApiVersions", "version", "3", "error", "NONE"),
			delta(before, s, 4, metrics.TopicRecordsIn, "topic", "errs"),
			delta(before, s, float64(len(batch)), metrics.TopicBytesIn, "topic", "errs"),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if _, ok := after.value(metrics.TopicBytesIn, "topic", "missing"); ok {
		t.Error("a produce to a topic that does not exist created its series")
	}

	// A deleted topic's series go at the next scrape.
	del := kmsg.NewPtrDeleteTopicsRequest()
	name := "errs"
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = &name
	del.Topics, del.TopicNames, del.TimeoutMillis = append(del.Topics, dt), []string{name}, 5000
	adminRoundTrip[*kmsg.DeleteTopicsResponse](t, b, del, 4)
	waitMetrics(t, b, func(s scrape) error {
		for _, fam := range []string{metrics.TopicBytesIn, metrics.PartitionLogEndOffset} {
			if _, ok := s.value(fam, "topic", "errs"); ok {
				return fmt.Errorf("%s{topic=errs} still reported after DeleteTopics", fam)
			}
		}
		return nil
	})
}

func TestGroupLagFromCommittedOffsets(t *testing.T) {
	b := startMeteredBroker(t)
	cl := newClient(t, b, kgo.DefaultProduceTopic("lagged"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "lagged", 2)
	for i := range 10 {
		produceSync(t, cl, &kgo.Record{Partition: int32(i % 2), Value: []byte("v")})
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 0, At: 1, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "lagged", Partition: 1, At: 5, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(testCtx(t), "lag-group", offsets)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit offsets: %v %v", err, resp.Error())
	}
	waitMetrics(t, b, func(s scrape) error {
		for _, c := range []struct {
			partition string
			lag       float64
		}{{"0", 4}, {"1", 0}} {
			v, ok := s.value(metrics.GroupLag, "group", "lag-group", "topic", "lagged", "partition", c.partition)
			if !ok || v != c.lag {
				return fmt.Errorf("lag of lagged/%s = %v (present %v), want %v", c.partition, v, ok, c.lag)
			}
		}
		return nil
	})
}

func TestHealthzAndTakenMetricsPort(t *testing.T) {
	cfg := Config{}
	b := startBroker(t, func(c *Config) { c.MetricsListener = "http://127.0.0.1:0"; cfg = *c })
	waitMetrics(t, b, func(scrape) error {
		if code, _, _ := httpGet(t, b, "/healthz"); code != http.StatusOK {
			return fmt.Errorf("/healthz %d", code)
		}
		return nil
	})
	// A taken metrics port fails New before anything else is left open.
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	cfg.LogDirs = t.TempDir()
	cfg.MetricsListener = "http://" + b.MetricsAddr().String()
	if _, err := New(cfg, b.logger); err == nil || !strings.Contains(err.Error(), "metrics.listener") {
		t.Fatalf("New with a taken metrics port: %v, want a metrics.listener error", err)
	}
}

func TestBatchRecordCount(t *testing.T) {
	one, two := testBatch(t, 3), testBatch(t, 7)
	for _, c := range []struct {
		in   []byte
		want int64
	}{
		{nil, 0},
		{one, 3},
		{append(append([]byte{}, one...), two...), 10},
		{one[:40], 0},
	} {
		if got := batchRecordCount(c.in); got != c.want {
			t.Errorf("batchRecordCount(%d bytes) = %d, want %d", len(c.in), got, c.want)
		}
	}
}
