package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The security script of issue 15: one broker with a SASL_SSL listener
// (PEM key store, PLAIN users in the JAAS config, SCRAM-SHA-512 users
// added with kafka-configs) and an SSL listener with
// ssl.client.auth=required, StandardAuthorizer, super.users and no
// allow-everyone, driven by Kafka's own tools and franz-go, step by step.
// Each step's outcome is the same on Strata (TestSecurityScript, run by
// make test) and on Apache Kafka 4.4.0 (TestKafkaSecurityScript, with
// STRATA_CHAOS_KAFKA=1): both are held to the one table below.

// securityStep is one step of the script and the outcome both brokers give.
type securityStep struct {
	what, want string
	run        func(s *securityRun) string
}

// securityRun is the script's state on one broker.
type securityRun struct {
	t                 *testing.T
	home              string // Kafka's tools
	dir               string
	saslAddr, sslAddr string
	ca                *x509.CertPool
	carol             tls.Certificate
	adminProps        string // the admin's client properties, for Kafka's tools
	restart           func()
}

var securitySteps = []securityStep{
	{"admin creates topic t with kafka-topics (PLAIN over SASL_SSL)", "ok", func(s *securityRun) string {
		return s.tool("TopicCommand", "--create", "--topic", "t", "--partitions", "1", "--replication-factor", "1")
	}},
	{"admin adds bob's SCRAM-SHA-512 credential with kafka-configs", "ok", func(s *securityRun) string {
		return s.tool("ConfigCommand", "--alter", "--entity-type", "users", "--entity-name", "bob",
			"--add-config", "SCRAM-SHA-512=[iterations=8192,password=bob-secret]")
	}},
	{"a plaintext client on the SASL_SSL listener", "refused", func(s *securityRun) string {
		return s.listTopics(kgo.SeedBrokers(s.saslAddr))
	}},
	{"alice with a wrong PLAIN password", "SASL_AUTHENTICATION_FAILED", func(s *securityRun) string {
		return s.listTopics(s.sasl(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())...)
	}},
	{"bob with a wrong SCRAM-SHA-512 password", "SASL_AUTHENTICATION_FAILED", func(s *securityRun) string {
		return s.listTopics(s.sasl(scram.Auth{User: "bob", Pass: "wrong"}.AsSha512Mechanism())...)
	}},
	{"bob lists the topics", "t absent", func(s *securityRun) string { return s.listTopics(s.bob()...) }},
	{"bob produces to t", "TOPIC_AUTHORIZATION_FAILED", func(s *securityRun) string { return s.produce(s.bob()...) }},
	{"admin grants bob Write on t with kafka-acls", "ok", func(s *securityRun) string {
		return s.tool("AclCommand", "--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "t")
	}},
	{"bob produces to t", "ok", func(s *securityRun) string { return s.produce(s.bob()...) }},
	{"bob lists the topics", "t listed", func(s *securityRun) string { return s.listTopics(s.bob()...) }},
	{"bob consumes t in group g", "GROUP_AUTHORIZATION_FAILED", func(s *securityRun) string { return s.consume("g", s.bob()...) }},
	{"admin grants bob Read on t and on group g with kafka-acls", "ok", func(s *securityRun) string {
		return s.tool("AclCommand", "--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "t", "--group", "g")
	}},
	{"bob consumes t in group g", "read 1 record", func(s *securityRun) string { return s.consume("g", s.bob()...) }},
	{"carol (a client certificate) produces to t on the SSL listener", "TOPIC_AUTHORIZATION_FAILED", func(s *securityRun) string {
		return s.produce(kgo.SeedBrokers(s.sslAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: s.ca, Certificates: []tls.Certificate{s.carol}}))
	}},
	{"a client without a certificate on the SSL listener", "refused", func(s *securityRun) string {
		return s.listTopics(kgo.SeedBrokers(s.sslAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: s.ca}))
	}},
	{"the broker restarts", "ok", func(s *securityRun) string { s.restart(); return "ok" }},
	{"bob produces to t", "ok", func(s *securityRun) string { return s.produce(s.bob()...) }},
	{"admin lists the ACLs with kafka-acls", "3 ACLs of User:bob", func(s *securityRun) string {
		out := s.tool("AclCommand", "--list")
		return fmt.Sprintf("%d ACLs of User:bob", strings.Count(out, "principal=User:bob"))
	}},
}

// tool runs one of Kafka's tools (TopicCommand, ConfigCommand, AclCommand)
// as admin over SASL_SSL: "ok", or its output when it fails; on success the
// output is returned when asked.
func (s *securityRun) tool(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"-Xmx256m", "-Dlog4j2.configurationFile=" + filepath.Join(s.home, "tools-log4j2.properties"),
		"-cp", filepath.Join(s.home, "libs", "*"), kafkaTools + name, "--bootstrap-server", s.saslAddr, "--command-config", s.adminProps}, args...)
	out, err := exec.CommandContext(ctx, "java", argv...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("failed: %v: %s", err, out)
	}
	if slices.Contains(args, "--list") {
		return string(out)
	}
	return "ok"
}

func (s *securityRun) sasl(m sasl.Mechanism) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(s.saslAddr), kgo.DialTLSConfig(&tls.Config{RootCAs: s.ca}), kgo.SASL(m)}
}

func (s *securityRun) bob() []kgo.Opt {
	return s.sasl(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())
}

// clientOutcome is what a client's error says: "ok", the Kafka error's
// name, or "refused" when no Kafka answer came (the connection failed).
func clientOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return "refused"
}

func (s *securityRun) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(1), kgo.RecordRetries(1), kgo.RetryTimeout(5*time.Second),
		kgo.RecordDeliveryTimeout(15*time.Second), kgo.DialTimeout(5*time.Second))...)
	if err != nil {
		s.t.Fatal(err)
	}
	return cl
}

func (s *securityRun) listTopics(opts ...kgo.Opt) string {
	cl := s.client(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return clientOutcome(err)
	}
	if topics.Has("t") {
		return "t listed"
	}
	return "t absent"
}

func (s *securityRun) produce(opts ...kgo.Opt) string {
	cl := s.client(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return clientOutcome(cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr())
}

// consume reads t in group from the start until a record, a Kafka error
// or 15 s.
func (s *securityRun) consume(group string, opts ...kgo.Opt) string {
	cl := s.client(append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return "nothing read"
		}
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				return clientOutcome(e.Err)
			}
		}
		if n := fs.NumRecords(); n > 0 {
			return fmt.Sprintf("read %d record", n)
		}
	}
}

// securityPKI writes a CA, the broker's PEM key store and carol's client
// certificate under dir.
func securityPKI(t *testing.T, dir string) (caFile, storeFile string, pool *x509.CertPool, carol tls.Certificate) {
	t.Helper()
	pki, err := NewPKI("security script CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, storeFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem")
	if err := pki.WriteCA(caFile); err != nil {
		t.Fatal(err)
	}
	if err := pki.WriteKeyStore(storeFile, "localhost"); err != nil {
		t.Fatal(err)
	}
	if carol, err = pki.Issue("carol"); err != nil {
		t.Fatal(err)
	}
	return caFile, storeFile, pki.Roots(), carol
}

// securityListeners gives target its SASL_SSL and SSL listeners, keyed as
// the script has them, and returns their addresses.
func securityListeners(t *testing.T, target Target, caFile, storeFile string) (saslAddr, sslAddr string) {
	t.Helper()
	port := func() string {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("127.0.0.1:%d", p)
	}
	saslAddr, sslAddr = port(), port()
	props := []string{
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"ssl.keystore.type=PEM", "ssl.keystore.location=" + storeFile,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile,
		"listener.name.ssl.ssl.client.auth=required",
		"ssl.principal.mapping.rules=RULE:^CN=([^,]*).*$/$1/,DEFAULT",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin;User:ANONYMOUS",
	}
	switch tt := target.(type) {
	case *StrataTarget:
		tt.AddListener("SASL_SSL", saslAddr, props...)
		tt.AddListener("SSL", sslAddr)
	case *KafkaTarget:
		if err := tt.AddListener("SASL_SSL", saslAddr, props...); err != nil {
			t.Fatal(err)
		}
		if err := tt.AddListener("SSL", sslAddr); err != nil {
			t.Fatal(err)
		}
	}
	return saslAddr, sslAddr
}

// runSecurityScript runs every step on target and returns what each gave.
func runSecurityScript(t *testing.T, target Target, home string) []string {
	t.Helper()
	dir := t.TempDir()
	caFile, storeFile, pool, carol := securityPKI(t, dir)
	saslAddr, sslAddr := securityListeners(t, target, caFile, storeFile)
	start := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := target.Start(ctx); err != nil {
			t.Fatalf("start %s: %v\n%s", target.Name(), err, target.LogTail(8000))
		}
	}
	start()
	t.Cleanup(func() { _ = target.Kill() })
	s := &securityRun{t: t, home: home, dir: dir, saslAddr: saslAddr, sslAddr: sslAddr, ca: pool, carol: carol,
		adminProps: filepath.Join(dir, "admin.properties"), restart: func() {
			if err := target.(interface{ Stop() error }).Stop(); err != nil {
				t.Fatal(err)
			}
			start()
		}}
	writeFile(t, s.adminProps, strings.Join([]string{
		"security.protocol=SASL_SSL", "sasl.mechanism=PLAIN",
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";`,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile,
	}, "\n")+"\n")
	var got []string
	for i, step := range securitySteps {
		out := step.run(s)
		t.Logf("%s step %d, %s: %s", target.Name(), i+1, step.what, out)
		got = append(got, out)
	}
	return got
}

// checkSecurityScript compares each step's outcome with the script's.
func checkSecurityScript(t *testing.T, name string, got []string) {
	t.Helper()
	for i, step := range securitySteps {
		if got[i] != step.want {
			t.Errorf("%s, step %d (%s): %s, want %s", name, i+1, step.what, got[i], step.want)
		}
	}
}

// TestSecurityScript runs the script on Strata.
func TestSecurityScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts strata and a JVM per Kafka tool")
	}
	home := toolLibs(t)
	target, err := NewStrata(buildStrata(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checkSecurityScript(t, "strata", runSecurityScript(t, target, home))
}

// TestKafkaSecurityScript runs the script on Apache Kafka 4.4.0, the
// control, when STRATA_CHAOS_KAFKA=1.
func TestKafkaSecurityScript(t *testing.T) {
	if os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("Apache Kafka control: set STRATA_CHAOS_KAFKA=1 to run it")
	}
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skipf("Kafka 4.4.0 is not installed in %s", home)
	}
	target, err := NewKafka(home, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checkSecurityScript(t, "kafka", runSecurityScript(t, target, home))
}
