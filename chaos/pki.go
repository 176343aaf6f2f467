package chaos

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a certificate authority made for one run: ECDSA P-256, valid for
// a day. Its certificates name localhost and 127.0.0.1, so that both a
// broker and a client can use them.
type PKI struct {
	CA    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// NewPKI makes a CA named cn.
func NewPKI(cn string) (*PKI, error) {
	key, ca, err := issue(nil, nil, cn, true)
	if err != nil {
		return nil, err
	}
	return &PKI{CA: ca, caKey: key}, nil
}

// Roots is a pool holding the CA, to verify the certificates it issued.
func (p *PKI) Roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.CA)
	return pool
}

// Issue is a certificate of subject CN=cn and its key, signed by the CA.
func (p *PKI) Issue(cn string) (tls.Certificate, error) {
	key, cert, err := issue(p.CA, p.caKey, cn, false)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}, nil
}

// WriteKeyStore writes a PEM key store of a new certificate for cn to
// path, as Kafka's ssl.keystore.type=PEM takes it: the PKCS#8 key, the
// certificate, the CA.
func (p *PKI) WriteKeyStore(path, cn string) error {
	c, err := p.Issue(cn)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Leaf.Raw})...)
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw})...)
	return writeSecret(path, data)
}

// WriteCA writes the CA's certificate to path, PEM.
func (p *PKI) WriteCA(path string) error {
	return writeSecret(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.CA.Raw}))
}

func writeSecret(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// issue makes a key and a certificate for cn signed by parent (itself when
// nil).
func issue(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, ca bool) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	} else {
		tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate for %s: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, err
}
