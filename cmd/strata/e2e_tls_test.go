package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sslBroker is a strata process with a PLAINTEXT listener (p.addr) and an
// SSL one (the returned address) keyed by keys.
func sslBroker(t *testing.T, keys map[string]string) (*proc, string) {
	t.Helper()
	l := newSSLLaunch(t, keys)
	return l.start(), l.ssl
}

// sslLaunch is how sslBroker starts a strata process, kept so that a test
// can start it again on the same directory.
type sslLaunch struct {
	t          *testing.T
	dir        string
	plain, ssl string // the listeners' addresses
	args       []string
}

func newSSLLaunch(t *testing.T, keys map[string]string) *sslLaunch {
	l := &sslLaunch{t: t, dir: t.TempDir(), plain: "127.0.0.1:" + strconv.Itoa(freePort(t)), ssl: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	l.args = []string{
		"--override", "listeners=PLAINTEXT://" + l.plain + ",SSL://" + l.ssl,
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL",
		"--override", "log.dirs=" + l.dir,
	}
	for k, v := range keys {
		l.args = append(l.args, "--override", k+"="+v)
	}
	return l
}

// start launches the process and waits until it accepts connections.
func (l *sslLaunch) start() *proc {
	l.t.Helper()
	p := launchArgs(l.t, l.dir, l.plain, l.args...)
	p.waitReady(30 * time.Second)
	return p
}

func (p *testPKI) rootCAs() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return pool
}

// TestTLSFranzGo: franz-go over TLS with a client certificate
// (ssl.client.auth=required, PKCS12 key store, JKS trust store) produces
// batches of large records and reads them back, byte for byte: the Fetch
// responses are copied through the TLS record layer, not sendfile'd.
func TestTLSFranzGo(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	_, addr := sslBroker(t, map[string]string{
		"ssl.keystore.type": "PKCS12", "ssl.keystore.location": pki.serverP12, "ssl.keystore.password": storePass,
		"ssl.truststore.location": pki.trustJKS, "ssl.truststore.password": storePass,
		"ssl.client.auth":   "required",
		"log.segment.bytes": strconv.Itoa(4 << 20),
	})
	tlsCfg := &tls.Config{RootCAs: pki.rootCAs(), Certificates: []tls.Certificate{pki.clientTLS}}
	cl := newClient(t, addr, kgo.DialTLSConfig(tlsCfg), kgo.ProducerBatchMaxBytes(1<<20))
	createTopic(t, cl, "tls-big", 1)
	const n = 96
	var want [n][32]byte
	for i := range n {
		v := make([]byte, 200<<10)
		for j := range v {
			v[j] = byte(i*31 + j*7)
		}
		binary.BigEndian.PutUint32(v, uint32(i))
		want[i] = sha256.Sum256(v)
		cl.Produce(context.Background(), &kgo.Record{Topic: "tls-big", Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
			}
		})
	}
	if err := cl.Flush(timeoutCtx(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	consumer := newClient(t, addr, kgo.DialTLSConfig(tlsCfg), kgo.ConsumeTopics("tls-big"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(8<<20))
	got := 0
	ctx := timeoutCtx(t, time.Minute)
	for got < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) || sha256.Sum256(r.Value) != want[got] {
				t.Fatalf("record at offset %d (%d bytes) is not record %d as produced", r.Offset, len(r.Value), got)
			}
			got++
		})
	}
}

// TestTLSClientRefused: with ssl.client.auth=required, a client without a
// certificate, or with one of another CA, cannot talk to the broker, and
// each refused connection is one log line. A plaintext Kafka client on the
// SSL port fails the handshake: it gets Kafka's TLS alert, and its
// connection is closed and logged once.
func TestTLSClientRefused(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	p, addr := sslBroker(t, map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.serverPEM,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": pki.caPEM,
		"ssl.client.auth": "required",
	})
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		log   string
	}{
		{"no certificate", nil, "client didn't provide a certificate"},
		{"another CA's certificate", []tls.Certificate{pki.otherTLS}, "certificate signed by unknown authority"},
	} {
		cfg := &tls.Config{RootCAs: pki.rootCAs()}
		if tc.certs != nil {
			// Sent even though the broker asks for its own CA's.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc.certs[0], nil }
		}
		cl := newClient(t, addr, kgo.DialTLSConfig(cfg),
			kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		err := cl.Ping(timeoutCtx(t, 10*time.Second))
		cl.Close()
		if err == nil {
			t.Fatalf("%s: Ping succeeded, want the connection refused", tc.name)
		}
		p.waitLog(regexp.MustCompile(`TLS handshake on SSL listener SSL.*`+regexp.QuoteMeta(tc.log)), 10*time.Second)
	}

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// An ApiVersions v0 request, as a PLAINTEXT client sends first.
	frame := []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("plaintext client on the SSL port: %v, want the connection closed", err)
	}
	// Kafka (Java's TLS) answers 15 03 03 00 02 02 50: a fatal
	// internal_error alert, which clients report as "expecting TLS".
	if want := []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50}; !bytes.Equal(answer, want) {
		t.Fatalf("plaintext client on the SSL port got % x, want Kafka's TLS alert % x", answer, want)
	}
	line := regexp.MustCompile(`TLS handshake on SSL listener SSL: [^"]*first record does not look like a TLS handshake`)
	p.waitLog(line, 10*time.Second)
	if n := len(line.FindAllString(p.out.String(), -1)); n != 1 {
		t.Fatalf("%d log lines for the plaintext client, want 1", n)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// TestTLSKcat: kcat (librdkafka) produces and consumes over TLS with its
// CA, certificate and key files, the broker's key in a JKS store.
func TestTLSKcat(t *testing.T) {
	e2e(t)
	bin := ensureKcat(t)
	pki := newTestPKI(t)
	_, addr := sslBroker(t, map[string]string{
		"ssl.keystore.location": pki.serverJKS, "ssl.keystore.password": storePass,
		"ssl.truststore.type": "PKCS12", "ssl.truststore.location": pki.trustP12, "ssl.truststore.password": storePass,
		"ssl.client.auth": "required",
	})
	tlsArgs := []string{"-b", addr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + pki.caPEM,
		"-X", "ssl.certificate.location=" + pki.clientCert, "-X", "ssl.key.location=" + pki.clientKey}
	lines := []string{"first", "second over TLS", "third"}
	kcat(t, bin, strings.Join(lines, "\n")+"\n", append(tlsArgs, "-P", "-t", "tls-kcat", "-m", "30")...)
	got := kcat(t, bin, "", append(tlsArgs, "-C", "-t", "tls-kcat", "-e", "-o", "beginning", "-m", "30")...)
	if want := strings.Join(lines, "\n") + "\n"; got != want {
		t.Fatalf("kcat -C over TLS returned %q, want %q", got, want)
	}
}

// TestTLSJavaConsole: Kafka's console producer and consumer over TLS with
// a PKCS12 trust store and, as ssl.client.auth=required asks, a PKCS12 key
// store; the broker's key is inline PEM.
func TestTLSJavaConsole(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	pki := newTestPKI(t)
	_, addr := sslBroker(t, map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.key": strings.ReplaceAll(pki.serverKey, "\n", " "),
		"ssl.keystore.certificate.chain": strings.ReplaceAll(pki.serverChain, "\n", " "),
		"ssl.truststore.type":            "PKCS12", "ssl.truststore.location": pki.trustP12, "ssl.truststore.password": storePass,
		"ssl.client.auth": "required",
	})
	clientProps := filepath.Join(pki.dir, "client.properties")
	writeFile(t, clientProps, fmt.Sprintf("security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=%s\nssl.truststore.password=%s\n"+
		"ssl.keystore.type=PKCS12\nssl.keystore.location=%s\nssl.keystore.password=%s\n", pki.trustP12, storePass, pki.clientP12, storePass))
	createTopic(t, newClient(t, addr, kgo.DialTLSConfig(&tls.Config{RootCAs: pki.rootCAs(), Certificates: []tls.Certificate{pki.clientTLS}})), "tls-java", 1)

	java := func(stdin string, class string, args ...string) string {
		stdout, stderr, err := runKafkaTool(t, home, stdin, class, args...)
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", class, err, stdout, stderr)
		}
		return stdout
	}
	lines := []string{"java one", "java two", "java three"}
	java(strings.Join(lines, "\n")+"\n", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", addr, "--topic", "tls-java", "--command-config", clientProps)
	got := java("", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", addr, "--topic", "tls-java",
		"--from-beginning", "--max-messages", "3", "--timeout-ms", "60000", "--command-config", clientProps)
	if want := strings.Join(lines, "\n") + "\n"; got != want {
		t.Fatalf("console consumer over TLS printed %q, want %q", got, want)
	}
}

// TestTLSClusterClients: three nodes replicate over a PLAINTEXT INTERNAL
// listener and serve clients on an SSL EXTERNAL one; franz-go over TLS is
// told of the EXTERNAL endpoints, produces with acks=all to a topic of
// three replicas and reads every record back. Then each node's EXTERNAL
// key store changes through its own resource and the node serves the new
// certificate; one of another subject is refused.
func TestTLSClusterClients(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	base := t.TempDir()
	var nodes []*clusterNode
	var voters []string
	external := map[int32]string{}
	ctrl := map[int32]string{}
	for i := int32(1); i <= 3; i++ {
		nodes = append(nodes, &clusterNode{id: i, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, fmt.Sprint("data", i)),
			props: filepath.Join(base, fmt.Sprintf("server%d.properties", i))})
		ctrl[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		external[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		voters = append(voters, fmt.Sprintf("%d@%s", i, ctrl[i]))
	}
	for _, n := range nodes {
		writeFile(t, n.props, strings.Join([]string{
			"process.roles=broker,controller",
			"node.id=" + strconv.Itoa(int(n.id)),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"listeners=INTERNAL://" + n.addr + ",EXTERNAL://" + external[n.id] + ",CONTROLLER://" + ctrl[n.id],
			"advertised.listeners=INTERNAL://" + n.addr + ",EXTERNAL://" + external[n.id],
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=INTERNAL",
			"listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT",
			"listener.name.external.ssl.keystore.type=PEM",
			"listener.name.external.ssl.keystore.location=" + pki.serverPEM,
			"log.dirs=" + n.dir,
		}, "\n")+"\n")
		n.start(t)
	}
	for _, n := range nodes {
		waitUntil(t, 30*time.Second, fmt.Sprintf("node %d lists 3 brokers", n.id), func() (bool, string) {
			m, err := metadataOf(n.addr)
			if err != nil {
				return false, err.Error()
			}
			return len(m.Brokers) == 3, fmt.Sprint(brokerIDs(m))
		})
	}
	if resp, err := createAssigned(nodes[0].addr, "tls-cluster", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}
	waitUntil(t, 30*time.Second, "every partition of tls-cluster has three in sync replicas", func() (bool, string) {
		m, err := metadataOf(nodes[0].addr, "tls-cluster")
		if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 3 {
			return false, fmt.Sprintf("%v %+v", err, m)
		}
		for _, p := range m.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != 3 {
				return false, fmt.Sprintf("partition %d leader %d isr %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return true, ""
	})
	var mu sync.Mutex
	dialled := map[string]bool{}
	tlsDial := &tls.Dialer{Config: &tls.Config{RootCAs: pki.rootCAs()}}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled[addr] = true
		mu.Unlock()
		return tlsDial.DialContext(ctx, network, addr)
	}
	opts := []kgo.Opt{kgo.Dialer(dial), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("tls-cluster")}
	cl := newClient(t, external[1], opts...)
	const n = 300
	for i := range n {
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
			}
		})
	}
	if err := cl.Flush(timeoutCtx(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	consumer := newClient(t, external[1], append(opts, kgo.ConsumeTopics("tls-cluster"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	seen := map[string]bool{}
	ctx := timeoutCtx(t, time.Minute)
	for len(seen) < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(seen), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
	}
	mu.Lock()
	for a := range dialled {
		if a != external[1] && a != external[2] && a != external[3] {
			t.Fatalf("the client dialled %s, not an EXTERNAL endpoint (all dialled: %v)", a, dialled)
		}
	}
	mu.Unlock()

	// Each node's key store changes through its own resource, whether
	// that node is the active controller (served there) or not
	// (checked there, then forwarded); another subject is refused.
	adm := kadm.NewClient(newClient(t, nodes[0].addr))
	for _, n := range nodes {
		store := filepath.Join(base, fmt.Sprintf("dynamic%d.pem", n.id))
		cert := pki.writeServerPEM(t, store, pkix.Name{CommonName: "localhost"})
		set := func(location string) kadm.AlterConfigsResponses {
			resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
				{Op: kadm.SetConfig, Name: "listener.name.external.ssl.keystore.location", Value: kadm.StringPtr(location)},
			}, n.id)
			if err != nil {
				t.Fatal(err)
			}
			return resps
		}
		if resps := set(store); resps[0].Err != nil {
			t.Fatalf("node %d: a new key store: %+v", n.id, resps)
		}
		if got := servedSerial(t, external[n.id], pki.rootCAs()); got.Cmp(cert.SerialNumber) != 0 {
			t.Fatalf("node %d serves serial %v after its key store changed, want %v", n.id, got, cert.SerialNumber)
		}
		other := filepath.Join(base, fmt.Sprintf("mallory%d.pem", n.id))
		pki.writeServerPEM(t, other, pkix.Name{CommonName: "mallory"})
		if resps := set(other); !errors.Is(resps[0].Err, kerr.InvalidRequest) || !strings.Contains(resps[0].ErrMessage, "Keystore DistinguishedName does not match") {
			t.Fatalf("node %d: a key store of another subject: %+v, want INVALID_REQUEST", n.id, resps)
		}
		if got := servedSerial(t, external[n.id], pki.rootCAs()); got.Cmp(cert.SerialNumber) != 0 {
			t.Fatalf("node %d serves serial %v after a refused change, want %v", n.id, got, cert.SerialNumber)
		}
	}
}

// TestTLSBrokerOnlyNode: a broker-only node (process.roles=broker), whose
// client listeners also carry the quorum's traffic to it, serves TLS
// clients on its SSL listener.
func TestTLSBrokerOnlyNode(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	base := t.TempDir()
	controller := &clusterNode{id: 1, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, "data1"), props: filepath.Join(base, "server1.properties")}
	broker := &clusterNode{id: 2, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, "data2"), props: filepath.Join(base, "server2.properties")}
	ssl := "127.0.0.1:" + strconv.Itoa(freePort(t))
	common := []string{"controller.quorum.voters=1@" + controller.addr, "controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT"}
	writeFile(t, controller.props, strings.Join(append(common, "node.id=1", "process.roles=controller",
		"listeners=CONTROLLER://"+controller.addr, "log.dirs="+controller.dir), "\n")+"\n")
	writeFile(t, broker.props, strings.Join(append(common, "node.id=2", "process.roles=broker",
		"listeners=PLAINTEXT://"+broker.addr+",SSL://"+ssl, "log.dirs="+broker.dir,
		"ssl.keystore.type=PEM", "ssl.keystore.location="+pki.serverPEM, "ssl.truststore.type=PEM", "ssl.truststore.location="+pki.caPEM,
		"ssl.client.auth=required"), "\n")+"\n")
	controller.start(t)
	broker.start(t)
	waitUntil(t, 30*time.Second, "the broker is registered", func() (bool, string) {
		m, err := metadataOf(broker.addr)
		if err != nil {
			return false, err.Error()
		}
		return len(m.Brokers) == 1, fmt.Sprint(brokerIDs(m))
	})
	cl := newClient(t, ssl, kgo.DialTLSConfig(&tls.Config{RootCAs: pki.rootCAs(), Certificates: []tls.Certificate{pki.clientTLS}}),
		kgo.DefaultProduceTopic("tls-broker-only"), kgo.ConsumeTopics("tls-broker-only"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	createTopic(t, cl, "tls-broker-only", 1)
	if err := cl.ProduceSync(timeoutCtx(t, 30*time.Second), &kgo.Record{Value: []byte("over TLS")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollRecords(timeoutCtx(t, 30*time.Second), 1)
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "over TLS" {
		t.Fatalf("consumed %v (errors %v), want the record produced", recs, fs.Errors())
	}
}
