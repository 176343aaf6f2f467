package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
// console consumer (OAUTHBEARER) keeps consuming for 8 s from its first
// record while records keep arriving, re-authenticating its connections
// each session instead of being closed: strata counts
// re-authentications, none failed, and closes no session as expired.
func TestReauthJavaConsole(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	metricsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p, addr := oauthStrata(t, map[string]string{"connections.max.reauth.ms": "2000", "metrics.listener": "http://" + metricsAddr})
	metricsURL := "http://" + metricsAddr + "/metrics"
	cl := newClient(t, p.addr)
	createTopic(t, cl, "reauth-java", 1)
	stop := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				produced <- nil
				return
			case <-time.After(100 * time.Millisecond):
			}
			r := &kgo.Record{Topic: "reauth-java", Value: []byte(strconv.FormatInt(time.Now().UnixMilli(), 10))}
			if err := cl.ProduceSync(timeoutCtx(t, 10*time.Second), r).FirstErr(); err != nil {
				produced <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-produced; err != nil {
			t.Errorf("produce: %v", err)
		}
	}()
	// The consumer runs until this test has seen it consume for 8 s; its
	// records are the times they were produced.
	consumer := exec.Command("java", "-Xmx256m", "-Dlog4j2.configurationFile="+filepath.Join(home, "tools-log4j2.properties"),
		"-cp", filepath.Join(home, "libs")+"/*", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", addr,
		"--topic", "reauth-java", "--command-config", oauthClientProps(t, t.TempDir(), "kafka"))
	var stderr syncBuffer
	consumer.Stderr = &stderr
	out, err := consumer.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := consumer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		consumer.Process.Kill()
		consumer.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var first time.Time
	consumed := 0
	deadline := time.After(2 * time.Minute)
	for first.IsZero() || time.Since(first) < 8*time.Second {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the console consumer ended after %d records:\n%s", consumed, tail(stderr.String(), 20))
			}
			ms, err := strconv.ParseInt(line, 10, 64)
			if err != nil {
				t.Fatalf("console consumer printed %q", line)
			}
			if lag := time.Since(time.UnixMilli(ms)); lag > 5*time.Second {
				t.Fatalf("consumed a record produced %v ago: the consumer stalled", lag)
			}
			if first.IsZero() {
				first = time.Now()
			}
			consumed++
		case <-deadline:
			t.Fatalf("the console consumer consumed %d records in 2 minutes:\n%s", consumed, tail(stderr.String(), 20))
		}
	}
	reauths := saslCounter(t, metricsURL, "strata_successful_reauthentication_total")
	failed := saslCounter(t, metricsURL, "strata_failed_reauthentication_total")
	auths := saslCounter(t, metricsURL, "strata_successful_authentication_total")
	expired := strings.Count(p.out.String(), "SASL session expired")
	t.Logf("consumed %d records over %v: %d authentications, %d re-authentications, %d failed, %d sessions closed as expired",
		consumed, time.Since(first).Round(time.Millisecond), auths, reauths, failed, expired)
	if reauths < 3 || failed != 0 || expired != 0 {
		t.Errorf("%d re-authentications, %d failed, %d expired sessions closed; want 3 or more re-authentications and none failed or expired", reauths, failed, expired)
	}
}

// rawSASL is a client over a bare net.Conn speaking kmsg, to see exactly
// what a broker answers and when it closes.
type rawSASL struct {
	t    *testing.T
	nc   net.Conn
	r    *bufio.Reader
	corr int32
}

func dialRawSASL(t *testing.T, addr string) *rawSASL {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawSASL{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// roundTrip sends req and reads its response; an error is the connection
// failing (io.EOF: closed by the broker).
func (c *rawSASL) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, c.corr)
	if _, err := c.nc.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.r, body); err != nil {
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

func (c *rawSASL) handshake(mechanism string) string {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism, hs.Version = mechanism, 1
	resp, err := c.roundTrip(hs)
	if err != nil {
		return "closed: " + err.Error()
	}
	return fmt.Sprint(kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode))
}

// authenticate sends a SaslAuthenticate v2 and returns its outcome: the
// error, its message and the session lifetime, or the close.
func (c *rawSASL) authenticate(token string) string {
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes, auth.Version = []byte(token), 2
	resp, err := c.roundTrip(auth)
	if err != nil {
		return "closed: " + errClass(err)
	}
	r := resp.(*kmsg.SASLAuthenticateResponse)
	out := fmt.Sprintf("%v %q lifetime %d", kerr.ErrorForCode(r.ErrorCode), derefStr(r.ErrorMessage), r.SessionLifetimeMillis)
	if len(r.SASLAuthBytes) > 0 {
		out += fmt.Sprintf(" token %q", r.SASLAuthBytes)
	}
	return out
}

func (c *rawSASL) metadata() string {
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	if _, err := c.roundTrip(md); err != nil {
		return "closed: " + errClass(err)
	}
	return "served"
}

// errClass is how a connection ended: EOF, or a reset, the same close seen
// by a client that wrote after it (after a failed re-authentication Kafka's
// close arrived as EOF, strata's as a reset), or another error.
func errClass(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return "EOF"
	}
	return err.Error()
}

func derefStr(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// reauthOutcomes runs the KIP-368 scenario on the wire against the SASL
// listener at addr, whose connections.max.reauth.ms is 1000.
func reauthOutcomes(t *testing.T, addr string) map[string]string {
	const alice, admin = "\x00alice\x00alice-secret", "\x00admin\x00admin-secret"
	out := map[string]string{}
	c := dialRawSASL(t, addr)
	c.handshake("PLAIN")
	out["authenticate"] = c.authenticate(alice)
	out["metadata in the session"] = c.metadata()
	out["re-authentication handshake"] = c.handshake("PLAIN")
	out["re-authentication"] = c.authenticate(alice)
	reauthenticated := time.Now()
	out["a second handshake within 1 s"] = c.handshake("PLAIN")
	time.Sleep(time.Until(reauthenticated.Add(1300 * time.Millisecond)))
	out["metadata after the session"] = c.metadata()

	c = dialRawSASL(t, addr)
	c.handshake("PLAIN")
	c.authenticate(alice)
	c.handshake("PLAIN")
	out["re-authentication as admin"] = c.authenticate(admin)
	out["after re-authentication as admin"] = c.metadata()

	c = dialRawSASL(t, addr)
	c.handshake("PLAIN")
	c.authenticate(alice)
	out["re-authentication handshake, OAUTHBEARER"] = c.handshake("OAUTHBEARER")
	out["re-authentication token, OAUTHBEARER"] = c.authenticate("n,,\x01auth=Bearer x\x01\x01")
	return out
}

// TestReauthSideBySide: strata and Apache Kafka 4.4.0, both with
// connections.max.reauth.ms=1000, answer a raw client alike: SessionLifetimeMs
// 1000, re-authentication in place, ILLEGAL_SASL_STATE for a second
// handshake within a second, the connection closed at its first request
// after the session, Kafka's message for a changed principal and a close
// for a changed mechanism.
func TestReauthSideBySide(t *testing.T) {
	e2e(t)
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	p, strataAddr := oauthStrata(t, map[string]string{"connections.max.reauth.ms": "1000"})
	kafkaAddr := oauthKafka(t, kafkaHome, nil, "connections.max.reauth.ms=1000")
	results := map[string]map[string]string{}
	for name, addr := range map[string]string{"strata": strataAddr, "kafka": kafkaAddr} {
		results[name] = reauthOutcomes(t, addr)
	}
	want := map[string]string{
		"authenticate":                         `<nil> "" lifetime 1000`,
		"metadata in the session":              "served",
		"re-authentication":                    `<nil> "" lifetime 1000`,
		"a second handshake within 1 s":        kerr.IllegalSaslState.Error(),
		"metadata after the session":           "closed: EOF",
		"re-authentication as admin":           kerr.SaslAuthenticationFailed.Error() + ` "Cannot change principals during re-authentication from User.alice: User.admin" lifetime 0`,
		"re-authentication token, OAUTHBEARER": "closed: EOF",
		"after re-authentication as admin":     "closed: EOF",
	}
	for step, s := range results["strata"] {
		k := results["kafka"][step]
		t.Logf("%s: strata %q, kafka %q", step, s, k)
		if s != k {
			t.Errorf("%s: strata %q, kafka %q; want the same", step, s, k)
		}
		if w, ok := want[step]; ok && s != w {
			t.Errorf("%s: strata %q, want %q", step, s, w)
		}
	}
	line := p.waitLog(regexp.MustCompile(`closing connection.*SASL session expired.*the PLAIN session of User:alice ended .* ago, and the client sent Metadata instead of re-authenticating`), 10*time.Second)
	t.Logf("strata: %s", line)
}

// TestReauthExpiredClosed: a raw client that authenticates with
// connections.max.reauth.ms=1000 is told SessionLifetimeMs 1000, is served
// until then, and is closed at its first request after the session ended,
// with one log line.
func TestReauthExpiredClosed(t *testing.T) {
	e2e(t)
	p, addr := saslBroker(t, "SASL_PLAINTEXT", map[string]string{"connections.max.reauth.ms": "1000"})
	c := dialRawSASL(t, addr)
	c.handshake("PLAIN")
	if got := c.authenticate("\x00alice\x00alice-secret"); got != `<nil> "" lifetime 1000` {
		t.Fatalf("SaslAuthenticate: %s, want success and SessionLifetimeMs 1000", got)
	}
	authenticated := time.Now()
	if got := c.metadata(); got != "served" {
		t.Fatalf("Metadata within the session: %s", got)
	}
	time.Sleep(time.Until(authenticated.Add(1100 * time.Millisecond)))
	if got := c.metadata(); got != "closed: EOF" {
		t.Fatalf("Metadata after the session ended: %s, want the connection closed", got)
	}
	line := p.waitLog(regexp.MustCompile(`closing connection.*SASL session expired.*the PLAIN session of User:alice ended .* ago, and the client sent Metadata instead of re-authenticating`), 10*time.Second)
	t.Logf("broker: %s", line)
	if n := strings.Count(p.out.String(), "SASL session expired"); n != 1 {
		t.Errorf("%d log lines for the expired session, want 1", n)
	}
}
