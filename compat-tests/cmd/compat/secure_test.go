package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

// TestComparableError: what differs between two runs of the same client
// is taken out of the secure scenarios' errors, and nothing else.
func TestComparableError(t *testing.T) {
	a := comparableError("auth_bad_password", "sasl_ssl://127.0.0.1:41945/bootstrap: SASL authentication error: Authentication failed (after 101ms in state AUTH_REQ)")
	b := comparableError("auth_bad_password", "sasl_ssl://127.0.0.1:38579/bootstrap: SASL authentication error: Authentication failed (after 309ms in state AUTH_REQ)")
	if a != b {
		t.Fatalf("%q != %q", a, b)
	}
	if comparableError("auth_no_tls", "0/2 brokers are down") != comparableError("auth_no_tls", "1/1 brokers are down") {
		t.Fatal("librdkafka's brokers-down counts still differ")
	}
	if comparableError("auth_no_tls", "unexpected EOF") == comparableError("auth_no_tls", "EOF") {
		t.Fatal("different errors compare equal")
	}
	if s := "at 127.0.0.1:1234"; comparableError("max_message_size", s) != s {
		t.Fatal("max_message_size's error changed")
	}
}

// TestSecurity: the generated CA verifies the broker's certificate for
// 127.0.0.1 and signs the client's (CN=alice), and the template has both
// listeners' keys.
func TestSecurity(t *testing.T) {
	s, err := newSecurity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(s.caPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	srv, err := tls.LoadX509KeyPair(s.serverPEM, s.serverPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(srv.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("server certificate: %v", err)
	}
	cli, err := tls.LoadX509KeyPair(s.clientCert, s.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ = x509.ParseCertificate(cli.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || leaf.Subject.CommonName != secureUser {
		t.Fatalf("client certificate %s: %v", leaf.Subject, err)
	}
	props := serverProperties(1, []int{9092}, []int{9093}, "/data", s)
	for _, want := range []string{"SASL_SSL://" + s.saslAddr, ",SSL://" + s.sslAddr, "SASL_SSL:SASL_SSL,SSL:SSL",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "listener.name.ssl.ssl.client.auth=required",
		"ssl.keystore.location=" + s.serverPEM, "listener.name.sasl_ssl.plain.sasl.jaas.config=", `user_bob="bob-secret"`,
		"authorizer.class.name=" + standardAuthorizer + "\n", "super.users=User:admin;User:alice;User:ANONYMOUS\n"} {
		if !strings.Contains(props, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, props)
		}
	}
	s.authorizer = ""
	if p := serverProperties(1, []int{9092}, []int{9093}, "/data", s); strings.Contains(p, "authorizer.class.name") || strings.Contains(p, "super.users") {
		t.Error("authorizer.class.name or super.users without the knob")
	}
	if strings.Contains(serverProperties(1, []int{9092}, []int{9093}, "/data", nil), "SASL_SSL") {
		t.Error("a plain target has the secure listeners")
	}
}

// TestRenderPairs: each pair's table has the rows and columns of its own
// cells only, so the secure table has no single-node scenario and the
// single-node one no auth_ scenario.
func TestRenderPairs(t *testing.T) {
	var cells []cell
	for _, b := range []string{"strata", "kafka"} {
		cells = append(cells, cell{Client: "franz-go", Scenario: "metadata", Broker: b, Result: "pass"},
			cell{Client: dumpLogClient, Scenario: "dump_log", Broker: b, Result: "pass"})
	}
	for _, b := range []string{"strata-secure", "kafka-secure"} {
		cells = append(cells, cell{Client: "franz-go", Scenario: "auth_plain", Broker: b, Result: "pass"})
	}
	md := renderMD(cells, []brokerPair{{"strata", "kafka"}, {"strata-secure", "kafka-secure"}})
	single, secure, ok := strings.Cut(md, "## Matrix, secured listeners")
	if !ok {
		t.Fatalf("no secured table:\n%s", md)
	}
	secure, _, _ = strings.Cut(secure, "### Differences")
	if strings.Contains(secure, "| metadata |") || strings.Contains(secure, dumpLogClient) || !strings.Contains(secure, "| auth_plain |") {
		t.Errorf("secured table:\n%s", secure)
	}
	if strings.Contains(single, "auth_plain") || !strings.Contains(single, "| metadata |") || !strings.Contains(single, dumpLogClient) {
		t.Errorf("single-node table:\n%s", single)
	}
}
