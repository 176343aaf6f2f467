package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/protocol"
)

// startObservedBroker is startBroker whose warnings are also kept in logs.
func startObservedBroker(t *testing.T, mutate func(*Config)) (*Broker, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	test := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Core()
	return startBrokerLogging(t, mutate, zap.New(zapcore.NewTee(core, test))), logs
}

// awaitClose waits up to 10s for the broker's close line for the client at
// local, and returns its error text.
func awaitClose(t *testing.T, logs *observer.ObservedLogs, local string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var lines []string
		for _, e := range logs.FilterField(zap.String("remote", local)).All() {
			lines = append(lines, e.Message+": "+e.ContextMap()["error"].(string))
		}
		switch len(lines) {
		case 0:
			time.Sleep(10 * time.Millisecond)
			continue
		case 1:
			if !strings.HasPrefix(lines[0], "closing connection: ") {
				t.Fatalf("logged %q, want a closing connection line", lines[0])
			}
			return strings.TrimPrefix(lines[0], "closing connection: ")
		default:
			t.Fatalf("%d lines logged for %s, want one: %q", len(lines), local, lines)
		}
	}
	t.Fatalf("no line logged for %s within 10s", local)
	return ""
}

// TestTLSClientOnPlaintextListenerIsNamed allows frames of any size, so a
// ClientHello read as a size would leave the broker waiting for 369 MB and
// the client for a ServerHello.
func TestTLSClientOnPlaintextListenerIsNamed(t *testing.T) {
	b, logs := startObservedBroker(t, func(c *Config) { c.SocketRequestMaxBytes = math.MaxInt32 })
	nc, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err = tls.Client(nc, &tls.Config{ServerName: "localhost"}).HandshakeContext(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("TLS handshake against a PLAINTEXT listener: err %v after %v, want the connection closed at once", err, time.Since(start))
	}
	msg := awaitClose(t, logs, nc.LocalAddr().String())
	if !strings.Contains(msg, "look like TLS: this listener is PLAINTEXT") {
		t.Fatalf("logged %q, want it named as TLS", msg)
	}
}

func TestHTTPClientOnKafkaListenerIsNamed(t *testing.T) {
	b, logs := startObservedBroker(t, nil)
	var local string
	client := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				local = nc.LocalAddr().String()
			}
			return nc, err
		}},
	}
	resp, err := client.Get("http://" + b.Addr().String() + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET answered %s, want the connection closed", resp.Status)
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("GET: %v, want the connection closed at once", err)
	}
	msg := awaitClose(t, logs, local)
	if !strings.Contains(msg, `"GET " look like HTTP: this is a Kafka listener`) {
		t.Fatalf("logged %q, want it named as HTTP", msg)
	}
}

func TestHTTP2PrefaceOnKafkaListenerIsNamed(t *testing.T) {
	b, logs := startObservedBroker(t, nil)
	c := dialRaw(t, b)
	if _, err := c.nc.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.recv(false); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("want the connection closed, got %v", err)
	}
	if msg := awaitClose(t, logs, c.nc.LocalAddr().String()); !strings.Contains(msg, "look like HTTP") {
		t.Fatalf("logged %q, want it named as HTTP", msg)
	}
}

// TestOnlyFirstFrameIsSniffed sends an HTTP request after a Kafka one on
// the same connection: its first bytes are then a bad size, as any other.
func TestOnlyFirstFrameIsSniffed(t *testing.T) {
	b, logs := startObservedBroker(t, nil)
	c := dialRaw(t, b)
	c.sendRequest(kmsg.NewPtrApiVersionsRequest(), 3, 1)
	if corr, _, err := c.recv(false); err != nil || corr != 1 {
		t.Fatalf("ApiVersions: corr %d, err %v", corr, err)
	}
	if _, err := c.nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.recv(false); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("want the connection closed, got %v", err)
	}
	msg := awaitClose(t, logs, c.nc.LocalAddr().String())
	if strings.Contains(msg, "HTTP") || !strings.Contains(msg, protocol.ErrFrameSize.Error()) {
		t.Fatalf("logged %q, want an invalid frame size", msg)
	}
}

func TestKafkaClientNotTakenForAnotherProtocol(t *testing.T) {
	b, logs := startObservedBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("sniff"), kgo.ConsumeTopics("sniff"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("GET / HTTP/1.1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "GET / HTTP/1.1" {
		t.Fatalf("consumed %d records, want the one produced", len(recs))
	}
	if n := logs.FilterMessage("closing connection").Len(); n != 0 {
		t.Fatalf("%d connections closed with a warning: %v", n, logs.All())
	}
}
