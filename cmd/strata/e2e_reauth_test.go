package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslCounter reads one of strata's SASL counters of the SASL_PLAINTEXT
// listener from its /metrics.
func saslCounter(t *testing.T, metricsURL, name string) int {
	t.Helper()
	code, body := httpGet(t, metricsURL)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	m := regexp.MustCompile(`(?m)^` + name + `\{listener="SASL_PLAINTEXT"\} (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestReauthJavaConsole: with connections.max.reauth.ms=2000, Kafka's
// console consumer (OAUTHBEARER) keeps consuming for about 9 s while
// records arrive, re-authenticating its connections every session instead
// of being closed: strata counts re-authentications, none failed, and
// closes no session as expired.
func TestReauthJavaConsole(t *testing.T) {
	e2e(t)
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	home := kafkaToolsHome(t)
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skip("Kafka's jars are not cached; run compat-tests/scripts/install-kafka.sh")
	}
	metricsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p, addr := oauthStrata(t, map[string]string{"connections.max.reauth.ms": "2000", "metrics.listener": "http://" + metricsAddr})
	metricsURL := "http://" + metricsAddr + "/metrics"
	const records = 90
	cl := newClient(t, p.addr, kgo.AllowAutoTopicCreation())
	createTopic(t, cl, "reauth-java", 1)
	produced := make(chan error, 1)
	go func() {
		for i := 0; i < records; i++ {
			r := &kgo.Record{Topic: "reauth-java", Value: []byte("record " + strconv.Itoa(i))}
			if err := cl.ProduceSync(timeoutCtx(t, 10*time.Second), r).FirstErr(); err != nil {
				produced <- err
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		produced <- nil
	}()
	start := time.Now()
	stdout, stderr, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", addr,
		"--topic", "reauth-java", "--from-beginning", "--max-messages", strconv.Itoa(records), "--timeout-ms", "30000",
		"--consumer.config", oauthClientProps(t, t.TempDir(), "kafka"))
	took := time.Since(start)
	if perr := <-produced; perr != nil {
		t.Fatalf("produce: %v", perr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err != nil || len(lines) != records || lines[records-1] != "record "+strconv.Itoa(records-1) {
		t.Fatalf("console consumer: %v after %v, %d lines, want %d:\n%s\n%s", err, took, len(lines), records, tail(stdout, 5), tail(stderr, 20))
	}
	reauths := saslCounter(t, metricsURL, "strata_successful_reauthentication_total")
	failed := saslCounter(t, metricsURL, "strata_failed_reauthentication_total")
	auths := saslCounter(t, metricsURL, "strata_successful_authentication_total")
	expired := strings.Count(p.out.String(), "SASL session expired")
	t.Logf("consumed %d records in %v: %d authentications, %d re-authentications, %d failed, %d sessions closed as expired", len(lines), took, auths, reauths, failed, expired)
	if reauths < 3 || failed != 0 || expired != 0 {
		t.Errorf("%d re-authentications, %d failed, %d expired sessions closed over %v; want 3 or more re-authentications and none failed or expired", reauths, failed, expired, took)
	}
}

// TestReauthExpiredClosed: a raw client that authenticates with
// connections.max.reauth.ms=1000 is told SessionLifetimeMs 1000, is served
// until then, and is closed at its first request after the session ended,
// with one log line.
func TestReauthExpiredClosed(t *testing.T) {
	e2e(t)
	p, addr := saslBroker(t, "SASL_PLAINTEXT", map[string]string{"connections.max.reauth.ms": "1000"})
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(nc)
	corr := int32(0)
	roundTrip := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)
		if _, err := nc.Write(frame); err != nil {
			return nil, err
		}
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return nil, err
		}
		body := make([]byte, int(size[0])<<24|int(size[1])<<16|int(size[2])<<8|int(size[3]))
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, err
		}
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		skip := 4
		if resp.IsFlexible() {
			skip = 5
		}
		return resp, resp.ReadFrom(body[skip:])
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism, hs.Version = "PLAIN", 1
	if _, err := roundTrip(hs); err != nil {
		t.Fatal(err)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes, auth.Version = []byte("\x00alice\x00alice-secret"), 2
	resp, err := roundTrip(auth)
	authenticated := time.Now()
	if err != nil || resp.(*kmsg.SASLAuthenticateResponse).ErrorCode != 0 || resp.(*kmsg.SASLAuthenticateResponse).SessionLifetimeMillis != 1000 {
		t.Fatalf("SaslAuthenticate: %+v %v, want success and SessionLifetimeMs 1000", resp, err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if _, err := roundTrip(md); err != nil {
		t.Fatalf("Metadata within the session: %v", err)
	}
	time.Sleep(time.Until(authenticated.Add(1100 * time.Millisecond)))
	if resp, err := roundTrip(md); !errors.Is(err, io.EOF) {
		t.Fatalf("Metadata after the session ended: %+v, %v; want the connection closed", resp, err)
	}
	line := p.waitLog(regexp.MustCompile(`closing connection.*SASL session expired.*the PLAIN session of User:alice ended .* ago, and the client sent Metadata instead of re-authenticating`), 10*time.Second)
	t.Logf("broker: %s", line)
}
