package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialLog is a franz-go dialer that records every address the client
// connects to, and reaches the hosts a test advertises under names that
// do not resolve (alias) at their real addresses.
type dialLog struct {
	mu    sync.Mutex
	alias map[string]string
	seen  []string
}

func (d *dialLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.seen = append(d.seen, addr)
	if real, ok := d.alias[addr]; ok {
		addr = real
	}
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// only fails unless every address dialled is among want.
func (d *dialLog) only(t *testing.T, want []string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.seen {
		if !slices.Contains(want, a) {
			t.Fatalf("the client dialled %s, not one of %v (all dialled: %v)", a, want, d.seen)
		}
	}
}

// checkListenerAnswers asks the listener at addr for Metadata (with topic,
// if any), DescribeCluster and FindCoordinator, and fails unless every
// broker they name is at one of want, the endpoints of that listener.
func checkListenerAnswers(t *testing.T, addr, topic string, want []string) {
	t.Helper()
	endpoint := func(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }
	var topics []string
	if topic != "" {
		topics = append(topics, topic)
	}
	m, err := metadataOf(addr, topics...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range m.Brokers {
		got = append(got, endpoint(b.Host, b.Port))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Metadata on %s lists brokers at %v, want %v", addr, got, want)
	}
	for _, mt := range m.Topics {
		for _, p := range mt.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				t.Fatalf("Metadata on %s: %s[%d] leader %d, %v", addr, topic, p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	resp, err := request(addr, kmsg.NewPtrDescribeClusterRequest())
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, b := range resp.(*kmsg.DescribeClusterResponse).Brokers {
		got = append(got, endpoint(b.Host, b.Port))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("DescribeCluster on %s lists brokers at %v, want %v", addr, got, want)
	}
	waitUntil(t, 30*time.Second, "FindCoordinator on "+addr+" names a coordinator on that listener", func() (bool, string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(4)
		req.CoordinatorKeys = []string{"listeners-group"}
		resp, err := request(addr, req)
		if err != nil {
			return false, err.Error()
		}
		c := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
		if c.ErrorCode != 0 {
			return false, kerr.ErrorForCode(c.ErrorCode).Error()
		}
		if at := endpoint(c.Host, c.Port); !slices.Contains(want, at) {
			t.Fatalf("FindCoordinator on %s: coordinator %d at %s, want one of %v", addr, c.NodeID, at, want)
		}
		return true, ""
	})
}

// produceConsume produces n records to topic through a client bootstrapped
// on seed and reads them back in a consumer group, both dialling through d.
func produceConsume(t *testing.T, seed string, d *dialLog, topic string, n int) {
	t.Helper()
	cl := newClient(t, seed, kgo.Dialer(d.dial))
	acked := produceAll(t, cl, topic, 0, n)
	consumer := newClient(t, seed, kgo.Dialer(d.dial), kgo.ConsumerGroup("listeners-"+topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := timeoutCtx(t, time.Minute)
	var recs []*kgo.Record
	for len(recs) < n {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(recs), n, topic, err)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		recs = append(recs, fs.Records()...)
	}
	checkAcked(t, acked, recs)
	consumer.Close()
}

// TestTwoListenersAnswerWithTheirOwnEndpoints starts one node with two
// advertised client listeners and one it does not advertise, and checks
// that each advertised one answers Metadata, DescribeCluster and
// FindCoordinator with its own endpoint, and that a client bootstrapped on
// either produces and consumes in a group while dialling only that
// listener. The unadvertised listener answers as Kafka 4.4 does: no
// brokers, LISTENER_NOT_FOUND for the partitions, a controller in Metadata
// but none in DescribeCluster, COORDINATOR_NOT_AVAILABLE.
func TestTwoListenersAnswerWithTheirOwnEndpoints(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	internal := "127.0.0.1:" + strconv.Itoa(freePort(t))
	external := "127.0.0.1:" + strconv.Itoa(freePort(t))
	other := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := launchArgs(t, dir, internal,
		"--override", "listeners=INTERNAL://"+internal+",EXTERNAL://"+external+",OTHER://"+other,
		"--override", "advertised.listeners=INTERNAL://"+internal+",EXTERNAL://"+external,
		"--override", "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,OTHER:PLAINTEXT",
		"--override", "inter.broker.listener.name=INTERNAL",
		"--override", "log.dirs="+dir)
	p.waitReady(30 * time.Second)
	for i, addr := range []string{internal, external} {
		topic := fmt.Sprint("listener-", i)
		createTopic(t, newClient(t, addr), topic, 3)
		checkListenerAnswers(t, addr, topic, []string{addr})
		d := &dialLog{}
		produceConsume(t, addr, d, topic, 200)
		d.only(t, []string{addr})
	}

	m, err := metadataOf(other, "listener-0")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Brokers) != 0 || m.ControllerID != 1 || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 3 {
		t.Fatalf("Metadata on the unadvertised listener: brokers %v, controller %d, topics %+v; want none, 1, listener-0's 3 partitions",
			m.Brokers, m.ControllerID, m.Topics)
	}
	for _, mp := range m.Topics[0].Partitions {
		if mp.ErrorCode != kerr.ListenerNotFound.Code || mp.Leader != -1 {
			t.Fatalf("Metadata on the unadvertised listener: partition %d leader %d, %v; want -1, LISTENER_NOT_FOUND",
				mp.Partition, mp.Leader, kerr.ErrorForCode(mp.ErrorCode))
		}
	}
	resp, err := request(other, kmsg.NewPtrDescribeClusterRequest())
	if err != nil {
		t.Fatal(err)
	}
	if dc := resp.(*kmsg.DescribeClusterResponse); len(dc.Brokers) != 0 || dc.ControllerID != -1 {
		t.Fatalf("DescribeCluster on the unadvertised listener: brokers %v, controller %d; want none, -1", dc.Brokers, dc.ControllerID)
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(4)
	req.CoordinatorKeys = []string{"listeners-group"}
	if resp, err = request(other, req); err != nil {
		t.Fatal(err)
	}
	if c := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]; c.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("FindCoordinator on the unadvertised listener: %v, node %d; want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(c.ErrorCode), c.NodeID)
	}
}

// TestClusterClientsOnExternalListener runs three nodes with an INTERNAL
// listener, which replicates, and an EXTERNAL one advertised under host
// names only the test's clients resolve: a client on EXTERNAL is told of
// EXTERNAL endpoints only (Metadata, DescribeCluster, FindCoordinator, a
// Fetch's KIP-951 leader hint) and dials nothing else, acks=all produces with
// RF=3 succeed, and every replica's log has the records, so followers
// fetched over INTERNAL.
func TestClusterClientsOnExternalListener(t *testing.T) {
	e2e(t)
	base := t.TempDir()
	var nodes []*clusterNode
	var voters, bootstrap, advertised []string
	external := map[int32]string{}
	internals := []string{}
	alias := map[string]string{}
	ctrl := map[int32]string{}
	for i := int32(1); i <= 3; i++ {
		n := &clusterNode{id: i, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, fmt.Sprint("data", i)),
			props: filepath.Join(base, fmt.Sprintf("server%d.properties", i))}
		ctrl[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		external[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		adv := fmt.Sprintf("external-%d.invalid:%s", i, strings.TrimPrefix(external[i], "127.0.0.1:"))
		alias[adv] = external[i]
		advertised = append(advertised, adv)
		internals = append(internals, n.addr)
		voters = append(voters, fmt.Sprintf("%d@%s", i, ctrl[i]))
		bootstrap = append(bootstrap, ctrl[i])
		nodes = append(nodes, n)
	}
	slices.Sort(advertised)
	for _, n := range nodes {
		lines := []string{
			"process.roles=broker,controller",
			"node.id=" + strconv.Itoa(int(n.id)),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ","),
			"listeners=INTERNAL://" + n.addr + ",EXTERNAL://" + external[n.id] + ",CONTROLLER://" + ctrl[n.id],
			fmt.Sprintf("advertised.listeners=INTERNAL://%s,EXTERNAL://external-%d.invalid:%s", n.addr, n.id, strings.TrimPrefix(external[n.id], "127.0.0.1:")),
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=INTERNAL",
			"listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"log.dirs=" + n.dir,
		}
		if err := os.WriteFile(n.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		n.start(t)
	}
	slices.Sort(internals)
	for _, n := range nodes {
		waitUntil(t, 30*time.Second, fmt.Sprintf("node %d lists 3 brokers", n.id), func() (bool, string) {
			m, err := metadataOf(external[n.id])
			if err != nil {
				return false, err.Error()
			}
			return len(m.Brokers) == 3, fmt.Sprint(brokerIDs(m))
		})
	}
	resp, err := createAssigned(external[1], "external", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("CreateTopics: %v", kerr.ErrorForCode(code))
	}
	waitUntil(t, 30*time.Second, "every partition of external has a leader on every node", func() (bool, string) {
		for _, n := range nodes {
			m, err := metadataOf(n.addr, "external")
			if err != nil {
				return false, err.Error()
			}
			if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 3 {
				return false, fmt.Sprintf("node %d: %+v", n.id, m.Topics)
			}
			for _, p := range m.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != 3 {
					return false, fmt.Sprintf("node %d: partition %d leader %d isr %v error %d", n.id, p.Partition, p.Leader, p.ISR, p.ErrorCode)
				}
			}
		}
		return true, ""
	})
	for _, n := range nodes {
		checkListenerAnswers(t, external[n.id], "external", advertised)
		checkListenerAnswers(t, n.addr, "external", internals)
	}

	// A consumer's Fetch at a broker that is not a replica is told the
	// leader's endpoint on EXTERNAL (KIP-951).
	if resp, err := createAssigned(external[1], "hint", [][]int32{{1}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics hint: %v %+v", err, resp)
	}
	waitUntil(t, 30*time.Second, "node 2's EXTERNAL listener names hint-0's leader", func() (bool, string) {
		m, err := metadataOf(external[2], "hint")
		if err != nil || len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 || m.Topics[0].Partitions[0].Leader != 1 {
			return false, fmt.Sprintf("%v %+v", err, m)
		}
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(16)
		req.ReplicaID, req.ReplicaState.ID, req.SessionEpoch, req.MaxBytes = -1, -1, -1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = m.Topics[0].TopicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = -1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := request(external[2], req)
		if err != nil {
			return false, err.Error()
		}
		f := resp.(*kmsg.FetchResponse)
		if len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 || f.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
			return false, fmt.Sprintf("%+v", f.Topics)
		}
		if len(f.Brokers) != 1 || f.Brokers[0].NodeID != 1 ||
			net.JoinHostPort(f.Brokers[0].Host, strconv.Itoa(int(f.Brokers[0].Port))) != advertised[0] {
			t.Fatalf("Fetch at node 2 on EXTERNAL names leaders %+v, want node 1 at %s", f.Brokers, advertised[0])
		}
		return true, ""
	})

	d := &dialLog{alias: alias}
	produceConsume(t, external[1], d, "external", 300)
	d.only(t, append([]string{external[1]}, advertised...))

	// acks=all returned once every ISR member had the records: each node's
	// replica of each partition holds the same bytes.
	for p := range 3 {
		var sizes []int64
		for _, n := range nodes {
			fi, err := os.Stat(filepath.Join(n.dir, fmt.Sprintf("external-%d", p), "00000000000000000000.log"))
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, fi.Size())
		}
		if sizes[0] == 0 || sizes[1] != sizes[0] || sizes[2] != sizes[0] {
			t.Fatalf("external-%d: log sizes %v on nodes 1-3, want one non-zero size", p, sizes)
		}
	}
}

// TestMaxConnectionsSpansListeners: max.connections counts the connections
// of every listener, as Kafka's does; at the limit a connection on the
// other listener waits unanswered until one closes.
func TestMaxConnectionsSpansListeners(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	first := "127.0.0.1:" + strconv.Itoa(freePort(t))
	second := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := launchArgs(t, dir, first,
		"--override", "listeners=PLAINTEXT://"+first+",SECOND://"+second,
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECOND:PLAINTEXT",
		"--override", "max.connections=2",
		"--override", "log.dirs="+dir)
	p.waitReady(30 * time.Second)
	// The readiness probe may still hold a slot until the broker sees it
	// close, so the admitted connections retry.
	held := servedWithin(t, first, 10*time.Second)
	servedWithin(t, first, 10*time.Second)
	over := dial(t, second)
	if _, err := over.Write(apiVersionsFrame()); err != nil {
		t.Fatal(err)
	}
	_ = over.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [1]byte
	var ne net.Error
	if n, err := over.Read(b[:]); n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a connection on the second listener over max.connections was answered or closed: %d bytes, %v", n, err)
	}
	held.Close()
	_ = over.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(over, size[:]); err != nil {
		t.Fatalf("the waiting connection was not served after a slot freed: %v", err)
	}
	if _, err := io.ReadFull(over, make([]byte, binary.BigEndian.Uint32(size[:]))); err != nil {
		t.Fatal(err)
	}
	apiVersions(t, over)
}
