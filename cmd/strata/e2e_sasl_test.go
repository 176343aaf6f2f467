package main

import (
	"context"
	"crypto/tls"
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
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// saslJAAS is the PLAIN JAAS configuration of the tests' SASL listeners:
// the broker's own credentials and two users, as in Kafka's documentation.
const saslJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" ` +
	`user_admin="admin-secret" user_alice="alice-secret";`

// saslBroker is a strata process with a PLAINTEXT listener (p.addr) and a
// SASL one (the returned address) of protocol SASL_PLAINTEXT or SASL_SSL,
// keyed by keys.
func saslBroker(t *testing.T, protocol string, keys map[string]string) (*proc, string) {
	t.Helper()
	dir := t.TempDir()
	plainAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	saslAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	args := []string{
		"--override", "listeners=PLAINTEXT://" + plainAddr + "," + protocol + "://" + saslAddr,
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT," + protocol + ":" + protocol,
		"--override", "sasl.enabled.mechanisms=PLAIN",
		"--override", "listener.name." + strings.ToLower(protocol) + ".plain.sasl.jaas.config=" + saslJAAS,
		"--override", "log.dirs=" + dir,
	}
	for k, v := range keys {
		args = append(args, "--override", k+"="+v)
	}
	p := launchArgs(t, dir, plainAddr, args...)
	p.waitReady(30 * time.Second)
	return p, saslAddr
}

// TestSASLFranzGo: franz-go authenticates with PLAIN and produces and
// consumes over SASL_PLAINTEXT and SASL_SSL; a wrong password gets
// SASL_AUTHENTICATION_FAILED with Kafka's message.
func TestSASLFranzGo(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	for _, protocol := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		t.Run(protocol, func(t *testing.T) {
			var keys map[string]string
			var opts []kgo.Opt
			if protocol == "SASL_SSL" {
				keys = map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.serverPEM}
				opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pki.rootCAs()}))
			}
			_, addr := saslBroker(t, protocol, keys)
			alice := append([]kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}, opts...)
			topic := "sasl-" + strings.ToLower(protocol)
			createTopic(t, newClient(t, addr, alice...), topic, 2)
			acked := produceAll(t, newClient(t, addr, alice...), topic, 0, 200)
			consumer := newClient(t, addr, append(alice, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
			var got []*kgo.Record
			ctx := timeoutCtx(t, time.Minute)
			for len(got) < len(acked) {
				fs := consumer.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of %d: %v", len(got), len(acked), err)
				}
				fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
				got = append(got, fs.Records()...)
			}
			checkAcked(t, acked, got)

			wrong := newClient(t, addr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()), kgo.RequestRetries(0)}, opts...)...)
			err := wrong.Ping(timeoutCtx(t, 20*time.Second))
			t.Logf("franz-go with a wrong password: %v", err)
			if err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") || !strings.Contains(err.Error(), "Authentication failed: Invalid username or password") {
				t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username or password", err)
			}
		})
	}
}

// TestSASLSkippedClosed: a client that sends Metadata first on a SASL
// listener gets no answer, its connection is closed and the broker logs
// one line for it; a PLAINTEXT client on the same broker is served.
func TestSASLSkippedClosed(t *testing.T) {
	e2e(t)
	p, addr := saslBroker(t, "SASL_PLAINTEXT", nil)
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	frame := binary.BigEndian.AppendUint32(nil, 0)
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, 12)
	frame = binary.BigEndian.AppendUint32(frame, 1)
	frame = append(binary.BigEndian.AppendUint16(frame, 1), 'c', 0)
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(nc, make([]byte, 4)); !errors.Is(err, io.EOF) {
		t.Fatalf("Metadata before SASL: read %d bytes, %v; want the connection closed", n, err)
	}
	line := p.waitLog(regexp.MustCompile(`closing connection.*Unexpected Kafka request of type Metadata during SASL handshake`), 10*time.Second)
	t.Logf("broker: %s", line)
	if n := strings.Count(p.out.String(), "during SASL handshake"); n != 1 {
		t.Errorf("%d log lines for the connection, want 1", n)
	}
	createTopic(t, newClient(t, p.addr), "still-served", 1)
}

// kcatOutput runs kcat, which may fail, and returns what it printed.
func kcatOutput(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// TestSASLKcat: kcat (librdkafka) produces and consumes with PLAIN over
// SASL_PLAINTEXT; with a wrong password it fails with the broker's message.
func TestSASLKcat(t *testing.T) {
	e2e(t)
	bin := ensureKcat(t)
	_, addr := saslBroker(t, "SASL_PLAINTEXT", nil)
	auth := func(pass string) []string {
		return []string{"-b", addr, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN",
			"-X", "sasl.username=alice", "-X", "sasl.password=" + pass}
	}
	lines := []string{"first", "second over SASL", "third"}
	kcat(t, bin, strings.Join(lines, "\n")+"\n", append(auth("alice-secret"), "-P", "-t", "sasl-kcat")...)
	got := kcat(t, bin, "", append(auth("alice-secret"), "-C", "-t", "sasl-kcat", "-e", "-o", "beginning", "-m", "30")...)
	if want := strings.Join(lines, "\n") + "\n"; got != want {
		t.Fatalf("kcat -C over SASL returned %q, want %q", got, want)
	}
	out, err := kcatOutput(t, bin, append(auth("wrong"), "-L", "-m", "10")...)
	t.Logf("kcat with a wrong password: %v\n%s", err, out)
	if err == nil || !strings.Contains(out, "Authentication failed: Invalid username or password") {
		t.Fatalf("kcat -L with a wrong password: %v, want it to fail with the broker's message:\n%s", err, out)
	}
}

// TestSASLJavaConsole: Kafka's console producer and consumer with PLAIN
// over SASL_PLAINTEXT (sasl.jaas.config in the client properties); with a
// wrong password the producer reports SaslAuthenticationException and the
// broker's message.
func TestSASLJavaConsole(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	_, addr := saslBroker(t, "SASL_PLAINTEXT", nil)
	dir := t.TempDir()
	props := func(pass string) string {
		name := filepath.Join(dir, pass+".properties")
		writeFile(t, name, fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"%s\";\n", pass))
		return name
	}
	java := func(stdin string, class string, args ...string) (string, error) {
		stdout, stderr, err := runKafkaTool(t, home, stdin, class, args...)
		return stdout + stderr, err
	}
	lines := []string{"java one", "java two", "java three"}
	if out, err := java(strings.Join(lines, "\n")+"\n", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", addr, "--topic", "sasl-java", "--command-config", props("alice-secret")); err != nil {
		t.Fatalf("console producer: %v\n%s", err, out)
	}
	got, err := java("", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", addr, "--topic", "sasl-java",
		"--from-beginning", "--max-messages", "3", "--timeout-ms", "60000", "--command-config", props("alice-secret"))
	if err != nil || !strings.HasPrefix(got, strings.Join(lines, "\n")+"\n") {
		t.Fatalf("console consumer over SASL: %v, printed %q, want %q first", err, got, lines)
	}
	out, err := java("refused\n", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", addr, "--topic", "sasl-java", "--command-config", props("wrong"))
	t.Logf("console producer with a wrong password: %v\n%s", err, tail(out, 5))
	if !strings.Contains(out, "SaslAuthenticationException: Authentication failed: Invalid username or password") {
		t.Fatalf("console producer with a wrong password printed:\n%s\nwant SaslAuthenticationException and the broker's message", out)
	}
}
