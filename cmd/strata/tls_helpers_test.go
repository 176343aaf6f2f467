package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and localhost and a
// client certificate (CN=alice,OU=eng,O=Acme), written as PEM, PKCS12 and
// JKS files in a temporary directory. Every store's password is storePass.
type testPKI struct {
	dir          string
	ca           *x509.Certificate
	caKey        *ecdsa.PrivateKey
	caPEM        string // the CA certificate, PEM file
	serverPEM    string // server key (PKCS#8) and certificate chain, one PEM file
	serverKey    string // the server's key alone, PEM (inline ssl.keystore.key)
	serverChain  string // the server's chain alone, PEM (inline ssl.keystore.certificate.chain)
	serverP12    string
	serverJKS    string
	trustP12     string // the CA as a Java trust store
	trustJKS     string
	clientCert   string // client certificate, PEM file
	clientKey    string // client key, PKCS#8 PEM file
	clientP12    string
	clientTLS    tls.Certificate
	otherTLS     tls.Certificate // a client certificate of another CA
	otherPEM     string          // its key and chain, one PEM file (a node's key store of the other CA)
	bothCAsPEM   string          // both CAs, PEM file
	serverKeyDER []byte
}

const storePass = "changeit"

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	p := &testPKI{dir: dir}
	caKey, ca := makeCert(t, nil, nil, pkix.Name{CommonName: "strata test CA"}, true)
	p.ca, p.caKey = ca, caKey
	serverKey, server := makeCert(t, ca, caKey, pkix.Name{CommonName: "localhost"}, false)
	clientKey, client := makeCert(t, ca, caKey, pkix.Name{Organization: []string{"Acme"}, OrganizationalUnit: []string{"eng"}, CommonName: "alice"}, false)
	otherCAKey, otherCA := makeCert(t, nil, nil, pkix.Name{CommonName: "other CA"}, true)
	otherKey, other := makeCert(t, otherCA, otherCAKey, pkix.Name{CommonName: "mallory"}, false)

	certPEM := func(c *x509.Certificate) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p.serverKeyDER, _ = x509.MarshalPKCS8PrivateKey(serverKey)
	p.caPEM = write("ca.pem", certPEM(ca))
	chain := append(certPEM(server), certPEM(ca)...)
	p.serverKey = string(keyPEM(serverKey))
	p.serverChain = string(chain)
	p.serverPEM = write("server.pem", append(keyPEM(serverKey), chain...))
	p.clientCert = write("client.pem", certPEM(client))
	p.clientKey = write("client.key", keyPEM(clientKey))
	p.otherPEM = write("other.pem", slices.Concat(keyPEM(otherKey), certPEM(other), certPEM(otherCA)))
	p.bothCAsPEM = write("both-cas.pem", append(certPEM(ca), certPEM(otherCA)...))

	p12 := func(k *ecdsa.PrivateKey, c *x509.Certificate) []byte {
		data, err := pkcs12.Modern.Encode(k, c, []*x509.Certificate{ca}, storePass)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	p.serverP12 = write("server.p12", p12(serverKey, server))
	p.clientP12 = write("client.p12", p12(clientKey, client))
	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca}, storePass)
	if err != nil {
		t.Fatal(err)
	}
	p.trustP12 = write("trust.p12", trust)

	ks := keystore.New()
	now := time.Now()
	if err := ks.SetPrivateKeyEntry("server", keystore.PrivateKeyEntry{CreationTime: now, PrivateKey: p.serverKeyDER,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: server.Raw}, {Type: "X509", Content: ca.Raw}}}, []byte(storePass)); err != nil {
		t.Fatal(err)
	}
	p.serverJKS = write("server.jks", storeJKS(t, ks))
	ts := keystore.New()
	if err := ts.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: now,
		Certificate: keystore.Certificate{Type: "X509", Content: ca.Raw}}); err != nil {
		t.Fatal(err)
	}
	p.trustJKS = write("trust.jks", storeJKS(t, ts))

	p.clientTLS = tls.Certificate{Certificate: [][]byte{client.Raw}, PrivateKey: clientKey}
	p.otherTLS = tls.Certificate{Certificate: [][]byte{other.Raw}, PrivateKey: otherKey}
	return p
}

func storeJKS(t *testing.T, ks keystore.KeyStore) []byte {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.jks")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ks.Store(f, []byte(storePass)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func makeCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, subject pkix.Name, isCA bool) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// writeServerPEM writes to path a PEM key store (PKCS#8 key and chain) of
// a new server certificate for subject, signed by the CA, and returns the
// certificate.
func (p *testPKI) writeServerPEM(t *testing.T, path string, subject pkix.Name) *x509.Certificate {
	t.Helper()
	key, cert := makeCert(t, p.ca, p.caKey, subject, false)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	data := slices.Concat(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.ca.Raw}))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return cert
}

// encryptedKeyPEM is key encrypted by openssl pkcs8 (PBES2, AES-256-CBC,
// PBKDF2 with HMAC-SHA256), as Kafka's PEM key stores take it.
func (p *testPKI) encryptedKeyPEM(t *testing.T, password string) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	cmd := exec.Command("openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA256", "-passout", "pass:"+password)
	cmd.Stdin = strings.NewReader(p.serverKey)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openssl pkcs8: %v", err)
	}
	return string(out)
}
