package rt

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"
)

// Security is how a runner connects, from the --arg keys of the secure
// columns (librdkafka's names, see clients/RUNNERS.md): security.protocol
// (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; default PLAINTEXT),
// sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), sasl.username,
// sasl.password, and the PEM files ssl.ca.location (the CA the broker's
// certificate is checked against), ssl.certificate.location and
// ssl.key.location (the client's certificate and PKCS#8 key, for
// ssl.client.auth=required).
type Security struct {
	Protocol, Mechanism, Username, Password string
	CAFile, CertFile, KeyFile               string
}

// Security reads the security arguments.
func (a Args) Security() Security {
	return Security{
		Protocol:  strings.ToUpper(a.Arg("security.protocol", "PLAINTEXT")),
		Mechanism: strings.ToUpper(a.Arg("sasl.mechanism", "")),
		Username:  a.Arg("sasl.username", ""),
		Password:  a.Arg("sasl.password", ""),
		CAFile:    a.Arg("ssl.ca.location", ""),
		CertFile:  a.Arg("ssl.certificate.location", ""),
		KeyFile:   a.Arg("ssl.key.location", ""),
	}
}

// TLS says whether the protocol runs over TLS.
func (s Security) TLS() bool { return s.Protocol == "SSL" || s.Protocol == "SASL_SSL" }

// SASL says whether the protocol authenticates with SASL.
func (s Security) SASL() bool { return s.Protocol == "SASL_PLAINTEXT" || s.Protocol == "SASL_SSL" }

// TLSConfig is the client TLS configuration (nil without TLS): the CA file
// as the only root, the client certificate if one is given.
func (s Security) TLSConfig() (*tls.Config, error) {
	if !s.TLS() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.ca.location: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ssl.ca.location %s: no PEM certificate", s.CAFile)
		}
	}
	if s.CertFile != "" || s.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("ssl.certificate.location/ssl.key.location: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// String names how the runner connected, for the details.
func (s Security) String() string {
	switch {
	case s.SASL():
		return fmt.Sprintf("%s over %s as %s", s.Mechanism, s.Protocol, s.Username)
	case s.CertFile != "":
		return s.Protocol + " with a client certificate"
	}
	return s.Protocol
}

// AuthRecords are what auth_plain, auth_scram_sha_256/512 and auth_mtls
// produce and consume back: ("a<i>", "auth-<i>").
func AuthRecords() []Rec {
	var out []Rec
	for i := range data.Auth.Records {
		out = append(out, Rec{Key: fmt.Appendf(nil, "%s%d", data.Auth.KeyPrefix, i), Value: fmt.Appendf(nil, "%s%d", data.Auth.ValuePrefix, i)})
	}
	return out
}

// RefusalBound is how long auth_bad_password and auth_no_tls give the
// client to fail before the runner reports that it hung.
var RefusalBound = time.Duration(data.Auth.RefusalBoundS) * time.Second

// AuthResult judges an authenticated produce and consume: err from either,
// or the consumed records against AuthRecords (one partition, in order).
func AuthResult(s Security, err error, got []Rec) Result {
	if err != nil {
		return Failf("%s: %v", s, err)
	}
	want := AuthRecords()
	if len(got) != len(want) {
		return Failf("%s: consumed %d records, want %d", s, len(got), len(want))
	}
	for i := range want {
		if string(got[i].Key) != string(want[i].Key) || string(got[i].Value) != string(want[i].Value) {
			return Failf("%s: record %d is %s=%s, want %s=%s", s, i, got[i].Key, got[i].Value, want[i].Key, want[i].Value)
		}
	}
	return Pass(fmt.Sprintf("%s: produced and consumed %d records", s, len(got)), nil)
}

// RefusedResult judges auth_bad_password, auth_no_tls, acl_denied and
// acl_deny_wins from the error the client reported (nil: it was served),
// hung saying the runner gave up after RefusalBound. auth_bad_password wants
// an authentication error (IsAuthError), acl_denied and acl_deny_wins an
// authorization one (IsAuthzError). The error goes to data.error, which the
// orchestrator compares across the brokers.
func RefusedResult(scenario string, err error, hung bool) Result {
	if err == nil && !hung {
		return Failf("the client was served")
	}
	msg := "hung: no error within " + RefusalBound.String()
	if err != nil {
		msg = err.Error()
	}
	data := map[string]any{"error": msg}
	if hung {
		return Fail(msg, data)
	}
	if scenario == "auth_bad_password" && !IsAuthError(msg) {
		return Fail("failed, but not with an authentication error: "+msg, data)
	}
	if (scenario == "acl_denied" || scenario == "acl_deny_wins") && !IsAuthzError(msg) {
		return Fail("failed, but not with an authorization error: "+msg, data)
	}
	return Pass("refused: "+msg, data)
}

// GroupRefusedResult judges acl_group_denied from the error of the
// client's group consume of topic (nil: it was served), hung saying the
// runner gave up after RefusalBound: it wants a group authorization error
// (IsGroupAuthzError), which goes to data.error as RefusedResult's does.
func GroupRefusedResult(topic string, err error, hung bool) Result {
	r := RefusedResult("acl_group_denied", err, hung)
	if r.Result == "pass" && !IsGroupAuthzError(topic, err.Error()) {
		return Fail("failed, but not with a group authorization error: "+err.Error(), r.Data)
	}
	return r
}

// IsAuthError says whether a client's error text reports a failed
// authentication (Kafka's SASL_AUTHENTICATION_FAILED as each client names it).
func IsAuthError(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "authentication")
}

// IsAuthzError says whether a client's error text reports a denied
// request (Kafka's TOPIC_AUTHORIZATION_FAILED as each client names it:
// TopicAuthorizationException, "Topic authorization failed", ...).
func IsAuthzError(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "authoriz")
}

// IsGroupAuthzError says whether a client's error text reports a denied
// group (Kafka's GROUP_AUTHORIZATION_FAILED as each client names it:
// GroupAuthorizationException, "Group authorization failed", "not
// authorized to access group", ...). The topic's name is taken out first:
// the scenario's topic and group names hold "group" themselves.
func IsGroupAuthzError(topic, msg string) bool {
	msg = strings.ToLower(strings.ReplaceAll(msg, topic, "TOPIC"))
	return strings.Contains(msg, "authoriz") && strings.Contains(msg, "group")
}

// Bounded runs fn and waits for it up to RefusalBound; hung says it had not
// returned by then (fn is left running: the runner exits after its result).
func Bounded(fn func() error) (err error, hung bool) {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err, false
	case <-time.After(RefusalBound):
		return nil, true
	}
}

// Librdkafka is the security arguments as librdkafka's configuration
// (confluent-kafka-go, kcat; the Python runner has its own copy).
func (s Security) Librdkafka() map[string]string {
	c := map[string]string{}
	if s.Protocol != "PLAINTEXT" {
		c["security.protocol"] = strings.ToLower(s.Protocol)
	}
	if s.SASL() {
		c["sasl.mechanisms"], c["sasl.username"], c["sasl.password"] = s.Mechanism, s.Username, s.Password
	}
	for k, v := range map[string]string{"ssl.ca.location": s.CAFile, "ssl.certificate.location": s.CertFile, "ssl.key.location": s.KeyFile} {
		if v != "" && s.TLS() {
			c[k] = v
		}
	}
	return c
}

// JavaProperties is the security arguments as the Java client's
// properties (kafka-cli's --command-config file):
// sasl.jaas.config with PlainLoginModule or ScramLoginModule, the CA as a
// PEM trust store, the client certificate and key inline as a PEM key store.
func (s Security) JavaProperties() (map[string]string, error) {
	p := map[string]string{"security.protocol": s.Protocol}
	if s.SASL() {
		module := "org.apache.kafka.common.security.plain.PlainLoginModule"
		if strings.HasPrefix(s.Mechanism, "SCRAM-") {
			module = "org.apache.kafka.common.security.scram.ScramLoginModule"
		}
		p["sasl.mechanism"] = s.Mechanism
		p["sasl.jaas.config"] = fmt.Sprintf("%s required username=%q password=%q;", module, s.Username, s.Password)
	}
	if s.TLS() && s.CAFile != "" {
		p["ssl.truststore.type"], p["ssl.truststore.location"] = "PEM", s.CAFile
	}
	if s.TLS() && s.CertFile != "" {
		cert, err := os.ReadFile(s.CertFile)
		if err != nil {
			return nil, err
		}
		key, err := os.ReadFile(s.KeyFile)
		if err != nil {
			return nil, err
		}
		p["ssl.keystore.type"], p["ssl.keystore.certificate.chain"], p["ssl.keystore.key"] = "PEM", string(cert), string(key)
	}
	return p, nil
}
