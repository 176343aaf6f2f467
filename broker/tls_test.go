package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tlsPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate of subject.
func tlsPKI(t *testing.T, subject pkix.Name) (server, client tls.Certificate, pool *x509.CertPool) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	leaf := func(serial int64, name pkix.Name, ips []net.IP) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: name, IPAddresses: ips,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			KeyUsage:    x509.KeyUsageDigitalSignature, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	return leaf(2, pkix.Name{CommonName: "broker"}, []net.IP{net.IPv4(127, 0, 0, 1)}), leaf(3, subject, nil), pool
}

// TestSSLPrincipalReachesAuthorizer: over an SSL listener, franz-go's
// requests are authorized as the principal of its certificate, mapped by
// the listener's rules, and a client without a certificate as
// User:ANONYMOUS.
func TestSSLPrincipalReachesAuthorizer(t *testing.T) {
	server, client, pool := tlsPKI(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Acme"}})
	rules, err := ParseSSLPrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	authz := &switchAuthorizer{principals: map[string]bool{}}
	b := startBroker(t, func(c *Config) {
		c.Listeners = "SSL://127.0.0.1:0"
		c.Authorizer = authz
		c.ListenerTLS = map[string]*ListenerTLS{"SSL": {Principals: rules, Config: &tls.Config{
			Certificates: []tls.Certificate{server}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}}}
	})
	for _, tc := range []struct {
		certs []tls.Certificate
		want  string
	}{
		{[]tls.Certificate{client}, "User:alice"},
		{nil, "User:ANONYMOUS"},
	} {
		authz.mu.Lock()
		clear(authz.principals)
		authz.mu.Unlock()
		cl := newClient(t, b, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: tc.certs}), kgo.DefaultProduceTopic("principals"))
		if tc.certs != nil {
			if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 1, 1, nil, "principals"); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce as %s: %v", tc.want, err)
		}
		cl.Close()
		authz.mu.Lock()
		got := authz.principals
		if len(got) != 1 || !got[tc.want] {
			t.Errorf("authorizer asked about %v, want only %s", got, tc.want)
		}
		authz.mu.Unlock()
	}
}

// TestSSLPrincipalNoRuleRefused: a certificate whose subject no rule maps
// closes the connection, as Kafka's principal builder fails the
// authentication.
func TestSSLPrincipalNoRuleRefused(t *testing.T) {
	server, client, pool := tlsPKI(t, pkix.Name{CommonName: "eve"})
	rules, err := ParseSSLPrincipalMappingRules("RULE:^CN=(alice|bob)$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, func(c *Config) {
		c.Listeners = "SSL://127.0.0.1:0"
		c.ListenerTLS = map[string]*ListenerTLS{"SSL": {Principals: rules, Config: &tls.Config{
			Certificates: []tls.Certificate{server}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}}}
	})
	cl := newClient(t, b, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}}), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("Ping as CN=eve succeeded, want the connection closed")
	}
}
