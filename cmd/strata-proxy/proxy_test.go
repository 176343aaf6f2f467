package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/broker"
	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/storage"
)

// startStrata runs an in-process Strata broker on a loopback port.
func startStrata(t *testing.T) *broker.Broker {
	t.Helper()
	groups := coordinator.DefaultGroupConfig()
	groups.OffsetsTopicPartitions = 1
	groups.InitialRebalanceDelay = 0
	b, err := broker.New(broker.Config{
		Listeners:             "PLAINTEXT://127.0.0.1:0",
		LogDirs:               t.TempDir(),
		NodeID:                1,
		NumPartitions:         1,
		AutoCreateTopics:      true,
		SocketRequestMaxBytes: 100 << 20,
		Log:                   storage.DefaultConfig(),
		Groups:                groups,
	}, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return b
}

// startProxy runs a proxy to upstream whose log lines are observed.
func startProxy(t *testing.T, upstream string) (*proxy, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	p, err := newProxy("127.0.0.1:0", upstream, "", 100<<20, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.serve() }()
	t.Cleanup(func() {
		p.close()
		if err := <-served; err != nil {
			t.Errorf("proxy serve: %v", err)
		}
	})
	return p, logs
}

func logged(logs *observer.ObservedLogs, msg, api string) int {
	return logs.FilterMessage(msg).FilterField(zap.String("api", api)).Len()
}

func TestProxyProducesAndConsumesThroughStrata(t *testing.T) {
	b := startStrata(t)
	p, logs := startProxy(t, b.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr().String()), kgo.DefaultProduceTopic("proxied"),
		kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("proxied"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	const n = 20
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("value-%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce through the proxy: %v", err)
	}
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch through the proxy: %v", errs)
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		if want := fmt.Sprintf("value-%d", i); string(r.Value) != want || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d value %q, want offset %d value %q", i, r.Offset, r.Value, i, want)
		}
	}

	// The client only ever learnt the proxy's address.
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	proxyPort := int32(p.Addr().(*net.TCPAddr).Port)
	if len(meta.Brokers) != 1 || meta.Brokers[0].Host != "127.0.0.1" || meta.Brokers[0].Port != proxyPort {
		t.Fatalf("metadata brokers %+v, want only the proxy 127.0.0.1:%d", meta.Brokers, proxyPort)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "g", []string{"g"}
	// The first lookup creates __consumer_offsets and, as in Kafka, is
	// answered COORDINATOR_NOT_AVAILABLE: retry as a client does.
	var coord *kmsg.FindCoordinatorResponse
	var host string
	var port int32
	for {
		if coord, err = fc.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
		code := coord.ErrorCode
		host, port = coord.Host, coord.Port
		if len(coord.Coordinators) > 0 {
			code, host, port = coord.Coordinators[0].ErrorCode, coord.Coordinators[0].Host, coord.Coordinators[0].Port
		}
		if code != kerr.CoordinatorNotAvailable.Code {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("FindCoordinator: still COORDINATOR_NOT_AVAILABLE: %v", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if host != "127.0.0.1" || port != proxyPort {
		t.Fatalf("FindCoordinator v%d answered %s:%d, want the proxy 127.0.0.1:%d", coord.Version, host, port, proxyPort)
	}

	for _, api := range []string{"ApiVersions", "Metadata", "Produce", "Fetch", "FindCoordinator"} {
		if logged(logs, "request", api) == 0 || logged(logs, "response", api) == 0 {
			t.Errorf("%s: %d request and %d response lines logged, want both", api, logged(logs, "request", api), logged(logs, "response", api))
		}
	}
	// A produce request line carries the decoded body.
	for _, e := range logs.FilterMessage("request").FilterField(zap.String("api", "Produce")).All() {
		body, ok := e.ContextMap()["body"].(*kmsg.ProduceRequest)
		// From v13 a produce names its topic by id.
		if !ok || len(body.Topics) != 1 || body.Topics[0].Topic != "proxied" && body.Topics[0].TopicID == ([16]byte{}) {
			t.Errorf("produce request logged with body %#v", e.ContextMap()["body"])
		}
	}
	if w := logs.FilterLevelExact(zapcore.WarnLevel); w.Len() > 0 {
		t.Errorf("warnings logged: %v", w.All())
	}
}

func TestProxyDecodesWhatStrataDoesNotServe(t *testing.T) {
	// DescribeConfigs is not served by Strata this round: the request is
	// decoded with kmsg anyway and forwarded; the broker closes the
	// connection on an unknown key, which the proxy passes on.
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	req.Resources = append(req.Resources, rr)
	req.SetVersion(4)
	frame := []byte{0, byte(req.Key()), 0, 4, 0, 0, 0, 9, 0, 3, 'c', 'l', 'i', 0}
	frame = req.AppendTo(frame)
	got, err := decodeRequest(frame)
	if err != nil {
		t.Fatalf("decodeRequest: %v", err)
	}
	body, ok := got.Body.(*kmsg.DescribeConfigsRequest)
	if !ok || got.CorrelationID != 9 || *got.ClientID != "cli" || len(body.Resources) != 1 || body.Resources[0].ResourceName != "t" {
		t.Fatalf("decoded %+v body %#v", got, got.Body)
	}

	// And a response after a v1 header.
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.SetVersion(4)
	res := kmsg.NewDescribeConfigsResponseResource()
	res.ResourceName = "t"
	resp.Resources = append(resp.Resources, res)
	rframe := resp.AppendTo([]byte{0, 0, 0, 9, 0})
	dr, hdr, err := decodeResponse(req.Key(), 4, rframe)
	if err != nil || hdr != 5 {
		t.Fatalf("decodeResponse: header %d, %v", hdr, err)
	}
	if r := dr.(*kmsg.DescribeConfigsResponse); len(r.Resources) != 1 || r.Resources[0].ResourceName != "t" {
		t.Fatalf("decoded response %#v", r)
	}
	if !bytes.Equal(dr.AppendTo(rframe[:hdr:hdr]), rframe) {
		t.Error("re-encoding the decoded response changed it")
	}
}

func TestProxyDecodesApiVersionsFallbackToV0(t *testing.T) {
	// KIP-511: a broker asked for an ApiVersions version it does not know
	// answers UNSUPPORTED_VERSION in the v0 layout.
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.ErrorCode = 35
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MaxVersion = 18, 3
	v0.ApiKeys = append(v0.ApiKeys, k)
	frame := v0.AppendTo([]byte{0, 0, 0, 1})
	resp, hdr, err := decodeResponse(int16(kmsg.ApiVersions), 9, frame)
	if err != nil || hdr != 4 {
		t.Fatalf("decodeResponse: header %d, %v", hdr, err)
	}
	if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != 35 || len(r.ApiKeys) != 1 || r.ApiKeys[0].MaxVersion != 3 {
		t.Fatalf("decoded %+v", r)
	}
}

func TestNewProxyChecksFlags(t *testing.T) {
	log := zap.NewNop()
	for _, c := range []struct{ listen, upstream, advertise string }{
		{"127.0.0.1:0", "no-port", ""},
		{"127.0.0.1:0", "127.0.0.1:9092", "host-without-port"},
		{"127.0.0.1:0", "127.0.0.1:9092", "h:0"},
		{"256.0.0.1:bad", "127.0.0.1:9092", ""},
	} {
		if p, err := newProxy(c.listen, c.upstream, c.advertise, 1<<20, log); err == nil {
			p.close()
			t.Errorf("newProxy(%q, %q, %q) succeeded", c.listen, c.upstream, c.advertise)
		}
	}
	if code := run([]string{"--listen", "127.0.0.1:0"}, &bytes.Buffer{}); code != 2 {
		t.Errorf("run without --upstream exited %d, want 2", code)
	}
}
