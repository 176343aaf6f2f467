package quorum

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
)

// testCert is a certificate for 127.0.0.1 signed by ca (self-signed, a
// CA, when ca is nil).
func testCert(t *testing.T, ca *tls.Certificate, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: ca == nil, BasicConstraintsValid: true}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.Leaf, ca.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestControllerListenerOverTLS runs three voters whose controller
// listeners are SSL with client certificates required: they elect a
// leader and commit a change through raft's TLS connections; a Kafka
// connection inside TLS reaches the Kafka side with its first bytes
// intact; AskIdentity is answered in TLS; a client whose certificate is of
// another CA is refused; ListenerGone still tells a live listener from a
// closed one.
func TestControllerListenerOverTLS(t *testing.T) {
	ca := testCert(t, nil, "test CA")
	node := testCert(t, &ca, "node")
	otherCA := testCert(t, nil, "other CA")
	intruder := testCert(t, &otherCA, "intruder")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	server := &tls.Config{Certificates: []tls.Certificate{node}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	client := &tls.Config{Certificates: []tls.Certificate{node}, RootCAs: pool}

	var lns []net.Listener
	var voters []Voter
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		voters = append(voters, Voter{ID: int32(i + 1), Addr: ln.Addr().String()})
	}
	base := t.TempDir()
	var stores []*Store
	var cls []*ControllerListener
	for i, v := range voters {
		logger := zaptest.NewLogger(t)
		cl, err := NewControllerListener(lns[i], v.Addr, Security{TLS: TLS{Listeners: []*tls.Config{server}, Dial: client}}, logger)
		if err != nil {
			t.Fatal(err)
		}
		cl.ServeIdentity(v.ID, func() string { return "" })
		cls = append(cls, cl)
		s, err := Open(Config{NodeID: v.ID, Dir: filepath.Join(base, strconv.Itoa(int(v.ID))), Voters: voters,
			Transport: cl.Transport(10*time.Second, logger), Logger: logger, HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	t.Cleanup(func() {
		for i, s := range stores {
			s.Close()
			cls[i].Close()
		}
	})

	deadline := time.Now().Add(15 * time.Second)
	committed := false
	for !committed {
		for _, s := range stores {
			if s.IsLeader() {
				if _, err := s.Propose(metadata.RegisterBrokerRecord{BrokerID: 7}); err == nil {
					committed = true
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no change committed within 15s over TLS")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range stores {
		for {
			if _, ok := s.Image().Cluster.Broker(7); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d never applied the change", s.id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	c, err := tls.Dial("tcp", voters[1].Addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frame := []byte{0, 0, 0, 3, 'a', 'b', 'c'}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		kc, err := cls[1].Kafka().Accept()
		if err == nil {
			accepted <- kc
		}
	}()
	select {
	case kc := <-accepted:
		defer kc.Close()
		if _, ok := kc.(interface{ TLSConn() *tls.Conn }); !ok {
			t.Fatalf("the Kafka side got a %T, want a connection that names its TLS", kc)
		}
		kc.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := make([]byte, len(frame))
		if _, err := io.ReadFull(kc, got); err != nil || !bytes.Equal(got, frame) {
			t.Fatalf("the Kafka side read %q, %v; want %q", got, err, frame)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Kafka side accepted no connection")
	}

	if id, err := AskIdentity(voters[2].Addr, Security{TLS: TLS{Dial: client}}, time.Second); err != nil || id.NodeID != 3 {
		t.Fatalf("AskIdentity over TLS: %+v, %v; want node 3", id, err)
	}
	if _, err := AskIdentity(voters[2].Addr, Security{}, time.Second); err == nil {
		t.Fatal("AskIdentity without TLS answered by an SSL listener")
	}
	other := &tls.Config{Certificates: []tls.Certificate{intruder}, RootCAs: pool}
	if id, err := AskIdentity(voters[2].Addr, Security{TLS: TLS{Dial: other}}, time.Second); err == nil {
		t.Fatalf("AskIdentity with another CA's certificate answered: %+v", id)
	}

	if ListenerGone(voters[0].Addr, 300*time.Millisecond) {
		t.Fatal("ListenerGone: a live SSL listener reported gone")
	}
	cls[0].Close()
	if !ListenerGone(voters[0].Addr, 300*time.Millisecond) {
		t.Fatal("ListenerGone: a closed SSL listener reported live")
	}
}
