package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TLS between the nodes of a cluster: every listener of every node is SSL
// with ssl.client.auth=required, so a follower's fetches, a broker's
// registration and heartbeats, forwarded requests and raft all run in
// TLS with each node's key store certificate. startCluster and
// startSplitCluster name the client listener PLAINTEXT; the lines here map
// that name, and CONTROLLER, to SSL.

// sslNodeLines are the properties of a node whose listeners are all SSL,
// its key store keyStore (a PEM file) and its trust store trustStore.
func sslNodeLines(keyStore, trustStore string) []string {
	return []string{
		"listener.security.protocol.map=CONTROLLER:SSL,PLAINTEXT:SSL",
		"ssl.keystore.type=PEM", "ssl.keystore.location=" + keyStore,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + trustStore,
		"ssl.client.auth=required",
	}
}

// clientConfig is a client's TLS trusting the test CA, with alice's
// certificate.
func (p *testPKI) clientConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{p.clientTLS}}
}

// tlsMetadata is node addr's Metadata for topics (nil: none), over TLS.
func tlsMetadata(addr string, cfg *tls.Config, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := tlsRequest(addr, cfg, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// tlsRequest sends req to addr on a TLS connection of its own.
func tlsRequest(addr string, cfg *tls.Config, req kmsg.Request) (kmsg.Response, error) {
	nc, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return roundTrip(nc, req)
}

// waitListedTLS waits until every node's Metadata, over TLS, lists ids.
func waitListedTLS(t *testing.T, nodes []*clusterNode, cfg *tls.Config, ids []int32) {
	t.Helper()
	for _, n := range nodes {
		waitUntil(t, 30*time.Second, fmt.Sprintf("node %d lists brokers %v", n.id, ids), func() (bool, string) {
			m, err := tlsMetadata(n.addr, cfg)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(brokerIDs(m), ids), fmt.Sprint(brokerIDs(m))
		})
	}
}

// createReplicatedTLS creates topic (3 partitions, 3 replicas) through
// via and waits until every partition's ISR is full there: the followers
// fetch from their leaders.
func createReplicatedTLS(t *testing.T, via *clusterNode, cfg *tls.Config, topic string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 3, 3
	req.Topics = append(req.Topics, rt)
	waitUntil(t, 20*time.Second, "CreateTopics "+topic, func() (bool, string) {
		resp, err := tlsRequest(via.addr, cfg, req)
		if err != nil {
			return false, err.Error()
		}
		code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		return code == 0 || code == kerr.TopicAlreadyExists.Code, fmt.Sprint(kerr.ErrorForCode(code))
	})
	waitUntil(t, 30*time.Second, topic+": every ISR full", func() (bool, string) {
		m, err := tlsMetadata(via.addr, cfg, topic)
		if err != nil {
			return false, err.Error()
		}
		if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 3 {
			return false, fmt.Sprintf("%+v", m.Topics)
		}
		for _, p := range m.Topics[0].Partitions {
			if len(p.ISR) != 3 || p.Leader < 0 {
				return false, fmt.Sprintf("partition %d: leader %d isr %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return true, ""
	})
}

// leaderOf is partition 0's leader of topic in node addr's Metadata.
func leaderOf(addr string, cfg *tls.Config, topic string) (int32, error) {
	m, err := tlsMetadata(addr, cfg, topic)
	if err != nil {
		return -1, err
	}
	if len(m.Topics) != 1 || len(m.Topics[0].Partitions) == 0 {
		return -1, fmt.Errorf("%+v", m.Topics)
	}
	return m.Topics[0].Partitions[0].Leader, nil
}

// TestClusterOverTLS starts three combined nodes whose only listeners are
// SSL, with ssl.client.auth=required on each, and checks that the cluster
// forms (registrations and raft in TLS), that an RF=3 topic's high
// watermarks reach the log end (follower fetches in TLS), that it takes
// acks=all writes from a TLS client, and that after a kill -9 of partition 0's leader another
// replica leads it, the writes go on, and every acknowledged record reads
// back once, in order.
func TestClusterOverTLS(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	nodes := startCluster(t, append(sslNodeLines(pki.serverPEM, pki.caPEM),
		"min.insync.replicas=2", "broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=500")...)
	cfg := pki.clientConfig()
	waitListedTLS(t, nodes, cfg, []int32{1, 2, 3})
	createReplicatedTLS(t, nodes[0], cfg, "tls-a")

	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.addr)
	}
	// acks=1 first: the high watermark reaches the log end only once the
	// followers fetched every record, in TLS.
	lc := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(cfg), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	acked := produceAll(t, lc, "tls-a", 0, 300)
	waitUntil(t, 20*time.Second, "tls-a's high watermarks reach 300 records", func() (bool, string) {
		var sum int64
		offs := endOffsets(t, lc, "tls-a", 3)
		for _, o := range offs {
			sum += o
		}
		return sum == 300, fmt.Sprint(offs)
	})
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(cfg), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked = append(acked, produceAll(t, cl, "tls-a", 300, 600)...)

	victimID, err := leaderOf(nodes[0].addr, cfg, "tls-a")
	if err != nil {
		t.Fatal(err)
	}
	victim := nodes[victimID-1]
	survivor := nodes[victimID%3]
	victim.p.kill()
	waitUntil(t, 15*time.Second, "another replica leads tls-a[0]", func() (bool, string) {
		id, err := leaderOf(survivor.addr, cfg, "tls-a")
		return err == nil && id >= 1 && id != victimID, fmt.Sprint(id, err)
	})
	acked = append(acked, produceAll(t, cl, "tls-a", 600, 900)...)
	recs := consumeAll(t, survivor.addr, "tls-a", 900, kgo.DialTLSConfig(cfg))
	checkLog(t, recs)
	checkAcked(t, acked, recs)
}

var (
	handshakeRefusedLine = regexp.MustCompile(`TLS handshake failed: connection closed`)
	noControllerLine     = regexp.MustCompile(`no active controller has answered.*(certificate|tls)`)
)

// TestSplitClusterOverTLS starts three controller-only and three
// broker-only nodes with only SSL listeners and ssl.client.auth=required,
// named only by controller.quorum.bootstrap.servers: every node learns
// the voters by asking the controllers in TLS, the brokers register (raft's connections from the active controller
// arrive on their inter-broker listener inside TLS), an RF=3 topic gets
// full ISRs and takes acks=all writes that read back. A fourth broker
// whose certificate is of another CA, though it trusts the cluster's,
// cannot join: a controller logs the refused handshake, the broker logs
// that no controller answers, naming the TLS error, it keeps running, and
// no node lists it.
func TestSplitClusterOverTLS(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	controllers, brokers := startSplitCluster(t, true, sslNodeLines(pki.serverPEM, pki.caPEM)...)
	cfg := pki.clientConfig()
	waitListedTLS(t, brokers, cfg, []int32{4, 5, 6})
	createReplicatedTLS(t, brokers[1], cfg, "split-tls")
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.addr)
	}
	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(cfg), kgo.RequiredAcks(kgo.AllISRAcks()))
	acked := produceAll(t, cl, "split-tls", 0, 300)
	recs := consumeAll(t, brokers[2].addr, "split-tls", 300, kgo.DialTLSConfig(cfg))
	checkLog(t, recs)
	checkAcked(t, acked, recs)

	var voters []string
	for _, c := range controllers {
		voters = append(voters, fmt.Sprintf("%d@%s", c.id, c.addr))
	}
	base := t.TempDir()
	intruder := &clusterNode{id: 7, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, "data7"),
		props: filepath.Join(base, "server7.properties")}
	lines := append([]string{
		"node.id=7", "process.roles=broker", "controller.quorum.voters=" + strings.Join(voters, ","),
		"controller.listener.names=CONTROLLER", "listeners=PLAINTEXT://" + intruder.addr, "log.dirs=" + intruder.dir,
		"broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=500",
	}, sslNodeLines(pki.otherPEM, pki.bothCAsPEM)...)
	if err := os.WriteFile(intruder.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	intruder.start(t)
	line := intruder.p.waitLog(noControllerLine, 30*time.Second)
	t.Logf("the intruder logs: %s", line)
	waitUntil(t, 10*time.Second, "a controller logs the refused handshake", func() (bool, string) {
		for _, c := range controllers {
			if handshakeRefusedLine.MatchString(c.p.out.String()) {
				return true, ""
			}
		}
		return false, "none did"
	})
	select {
	case <-intruder.p.done:
		t.Fatalf("the intruder exited: %v", intruder.p.err)
	default:
	}
	for _, n := range append(slices.Clone(controllers), append(brokers, intruder)...) {
		if strings.Contains(n.p.out.String(), "panic") {
			t.Fatalf("node %d panicked:\n%s", n.id, tail(n.p.out.String(), 4<<10))
		}
	}
	for _, b := range brokers {
		m, err := tlsMetadata(b.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if ids := brokerIDs(m); !slices.Equal(ids, []int32{4, 5, 6}) {
			t.Fatalf("broker %d lists brokers %v: the intruder joined", b.id, ids)
		}
	}
}

// TestClusterTransactionsOverTLS runs checkTransactionsSpan on three
// combined nodes whose listeners are all SSL: the transaction
// coordinator's WriteTxnMarkers reach the other leaders in TLS.
func TestClusterTransactionsOverTLS(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	nodes := startCluster(t, sslNodeLines(pki.serverPEM, pki.caPEM)...)
	cfg := pki.clientConfig()
	waitListedTLS(t, nodes, cfg, []int32{1, 2, 3})
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "tx", -1, -1
	for p, r := range [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := tlsRequest(nodes[0].addr, cfg, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("CreateTopics: %v", kerr.ErrorForCode(code))
	}
	checkTransactionsSpan(t, []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}, kgo.DialTLSConfig(cfg))
}
