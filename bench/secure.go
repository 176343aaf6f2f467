package bench

// The SASL_SSL pass: both brokers get a second client listener, SASL_SSL
// with SASL/PLAIN, a certificate of a CA made for the run (ECDSA P-256, in
// one PEM key store, ssl.keystore.type=PEM), and the clients of the
// workloads (the wire generator and kgo alike) connect there: TLS 1.3,
// then SaslHandshake and SaslAuthenticate, then the workload. The
// harness's own checks (readiness) keep the PLAINTEXT listener. Both
// brokers are configured with the same Kafka keys.

import (
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strata-io/strata/chaos"
)

// benchUser and benchPassword are the PLAIN user of the SASL_SSL pass.
const (
	benchUser     = "bench"
	benchPassword = "bench-secret"
)

// clientSecurity is how a client of the SASL_SSL pass connects; nil is
// PLAINTEXT.
type clientSecurity struct {
	tls *tls.Config
}

// kgoOpts are the options a kgo.Client needs to connect.
func (s *clientSecurity) kgoOpts() []kgo.Opt {
	if s == nil {
		return nil
	}
	return []kgo.Opt{kgo.DialTLSConfig(s.tls.Clone()), kgo.SASL(plain.Auth{User: benchUser, Pass: benchPassword}.AsMechanism())}
}

// dial connects to addr and, in the SASL_SSL pass, completes TLS and
// SASL/PLAIN on it.
func (s *clientSecurity) dial(addr string) (*wireConn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if s != nil {
		tc := tls.Client(c, s.tls.Clone())
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		c = tc
	}
	w := newWireConn(c)
	if s != nil {
		if err := w.authenticatePlain(benchUser, benchPassword); err != nil {
			c.Close()
			return nil, fmt.Errorf("SASL/PLAIN with %s: %w", addr, err)
		}
	}
	return w, nil
}

// authenticatePlain runs SaslHandshake v1 and SaslAuthenticate v2 with
// PLAIN's one token.
func (w *wireConn) authenticatePlain(user, password string) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	resp, err := w.roundTrip(hs)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("SaslHandshake: %w", err)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00"+user+"\x00"+password)
	resp, err = w.roundTrip(auth)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLAuthenticateResponse).ErrorCode); err != nil {
		return fmt.Errorf("SaslAuthenticate: %w", err)
	}
	return nil
}

// addSecureListener gives b the SASL_SSL listener l, before it starts.
func addSecureListener(b Broker, l *secureListener) error {
	switch b := b.(type) {
	case *chaos.StrataTarget:
		b.AddListener("SASL_SSL", l.addr, l.props...)
		return nil
	case *chaos.KafkaTarget:
		return b.AddListener("SASL_SSL", l.addr, l.props...)
	}
	return fmt.Errorf("no SASL_SSL listener for a %T", b)
}

// secureListener is the SASL_SSL listener of one broker of the pass.
type secureListener struct {
	addr   string   // host:port
	props  []string // key=value: the listener's keys, the same for both brokers
	client *clientSecurity
}

// newSecureListener makes the run's CA and the broker's certificate under
// dir and picks the listener's port.
func newSecureListener(dir string) (*secureListener, error) {
	port, err := chaos.FreePort()
	if err != nil {
		return nil, err
	}
	pki, err := chaos.NewPKI("strata-bench CA")
	if err != nil {
		return nil, err
	}
	store := filepath.Join(dir, "keystore.pem")
	if err := pki.WriteKeyStore(store, "localhost"); err != nil {
		return nil, err
	}
	jaas := fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="%[1]s" password="%[2]s" user_%[1]s="%[2]s";`,
		benchUser, benchPassword)
	return &secureListener{
		addr: fmt.Sprintf("127.0.0.1:%d", port),
		props: []string{
			"sasl.enabled.mechanisms=PLAIN",
			"listener.name.sasl_ssl.plain.sasl.jaas.config=" + jaas,
			"ssl.keystore.type=PEM",
			"ssl.keystore.location=" + store,
		},
		client: &clientSecurity{tls: &tls.Config{RootCAs: pki.Roots(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}},
	}, nil
}

// securityCost is what SASL_SSL costs each broker: its records/s and CPU
// seconds in the default pass (PLAINTEXT) and in the SASL_SSL pass, side by
// side.
func (run *Run) securityCost() string {
	var b strings.Builder
	b.WriteString("The same workloads over PLAINTEXT (the default pass) and over SASL_SSL, per broker: SASL_SSL ÷ PLAINTEXT. " +
		"Over TLS, Strata copies fetched records through the process instead of sendfile(2), as Kafka does.\n\n")
	b.WriteString("| workload | broker | PLAINTEXT records/s | SASL_SSL records/s | SASL_SSL ÷ PLAINTEXT | PLAINTEXT CPU s | SASL_SSL CPU s |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, w := range []string{"W1", "W1/kgo", "W4", "W4/kgo"} {
		for _, k := range []Kind{Strata, Kafka} {
			p, s := run.find(w, k, Default), run.find(w, k, SASLSSL)
			if p == nil || s == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %s | %.2f | %.2f |\n", w, k, p.RecordsPerSec(), s.RecordsPerSec(),
				ratio(s.RecordsPerSec(), p.RecordsPerSec()), p.CPUSeconds, s.CPUSeconds)
		}
	}
	return b.String() + "\n"
}
