package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// broker is one column of the matrix: a single Strata or Kafka node, or a
// three-node cluster of either.
type broker struct {
	name  string // a targetDef's name
	tag   string // short suffix of the topic names created on it
	addr  string // every node's PLAINTEXT address, comma-separated: the clients' bootstrap list
	rf    int16  // replication factor of every topic the harness and the runners create on it
	nodes []*node
	// skip names the clients and scenarios the target leaves out (a cluster's -cluster-skip).
	skip map[string]bool
	// secure says the target is a secure column, which runs the secureScenarios
	// only; sec is its listeners and certificates (nil while it is down).
	secure bool
	sec    *security
	// client and ctrl are the nodes' PLAINTEXT and CONTROLLER ports.
	client, ctrl []int
}

// node is one broker process of a target.
type node struct {
	id      int
	addr    string
	dir     string // the node's directory (server.properties, logs, data)
	dataDir string // where the partition directories live
	log     string
	cmd     *exec.Cmd     // nil until launched
	exited  chan struct{} // closed once cmd exited
	argv    []string      // what launch ran, for a restart (restart.go)
}

// up says the target started (one that could not has no addresses).
func (b *broker) up() bool { return b.addr != "" }

// seeds is the bootstrap list.
func (b *broker) seeds() []string { return strings.Split(b.addr, ",") }

// Ports of the targets: below Linux's ephemeral range (32768-60999), so
// that no connect() gets one as its local port while its node is down, as
// it does on a restart (restart.go): a client reconnecting to the node, or
// a Kafka node's broker to its own controller port before it listens,
// connects to itself there (TCP simultaneous open) and holds the port.
const (
	portLo, portHi = 20000, 32768
)

var (
	portMu   sync.Mutex
	portUsed = map[int]bool{}
)

// freePort is a port of [portLo, portHi) that no target has and that binds.
func freePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 1000 {
		p := portLo + mrand.IntN(portHi-portLo)
		if portUsed[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		portUsed[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d", portLo, portHi-1)
}

// launch starts argv in its own process group with output appended to n.log
// (a restarted node's output follows its first run's).
func (h *harness) launch(n *node, argv ...string) error {
	f, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	n.cmd, n.argv = cmd, argv
	n.exited = make(chan struct{})
	go func() { cmd.Wait(); f.Close(); close(n.exited) }()
	return nil
}

// stop stops every node of b that runs, all at once (a cluster's nodes one
// after the other would each wait out the others' shutdown), and keeps
// their logs next to the run's logs.
func (h *harness) stop(b *broker) {
	for _, n := range b.nodes {
		if n.cmd != nil {
			syscall.Kill(-n.cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	deadline := time.After(15 * time.Second)
	for _, n := range b.nodes {
		if n.cmd == nil {
			continue
		}
		select {
		case <-n.exited:
		case <-deadline:
			syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.exited
		}
		name := b.name
		if len(b.nodes) > 1 {
			name = fmt.Sprintf("%s-%d", b.name, n.id)
		}
		if data, err := os.ReadFile(n.log); err == nil {
			os.WriteFile(filepath.Join(h.logDir, name+"-broker.log"), data, 0o644)
		}
		if data, err := os.ReadFile(filepath.Join(n.dir, "kafka.log")); err == nil {
			os.WriteFile(filepath.Join(h.logDir, name+"-server.log"), data, 0o644)
		}
	}
}

func (h *harness) tempDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "compat-"+name+"-")
	if err != nil {
		return "", err
	}
	h.atExit(func() {
		if h.keep {
			fmt.Printf("compat: kept %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir, nil
}

// serverProperties is the one configuration every target runs with, Strata and
// Kafka alike: node id of a KRaft combined cluster on 127.0.0.1 whose nodes
// have the client and controller ports client and ctrl (one node, or three),
// as a stock Kafka setup has it, with the suite's group and internal-topic
// settings. On three nodes every topic and internal topic (the share
// coordinator's __share_group_state too) defaults to RF=3 with
// min.insync.replicas=2. A secure target (sec set, one node) adds its
// SASL_SSL and SSL listeners and their keys (security.properties). The
// KIP-848 session timeout may be raised to 5 minutes by a group config
// (group_consumer_restart's outlives a Kafka node's restart). The
// retention check runs hourly, not every 5 minutes: list_offsets and
// dump_log write records stamped in 2001, which a check during the run
// would delete under the default retention.ms (7 days) before the
// scenario reads them back.
func serverProperties(id int, client, ctrl []int, dataDir string, sec *security) string {
	var voters []string
	for i, c := range ctrl {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, c))
	}
	rf := len(ctrl)
	var listeners, advertised, protocols, secure string
	if sec != nil {
		listeners = ",SASL_SSL://" + sec.saslAddr + ",SSL://" + sec.sslAddr
		advertised, protocols, secure = listeners, ",SASL_SSL:SASL_SSL,SSL:SSL", sec.properties()
	}
	return fmt.Sprintf(`process.roles=broker,controller
node.id=%[1]d
controller.quorum.voters=%[2]s
listeners=PLAINTEXT://127.0.0.1:%[3]d,CONTROLLER://127.0.0.1:%[4]d%[8]s
advertised.listeners=PLAINTEXT://127.0.0.1:%[3]d%[9]s
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT%[10]s
log.dirs=%[5]s
num.partitions=1
default.replication.factor=%[6]d
min.insync.replicas=%[7]d
offsets.topic.replication.factor=%[6]d
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=%[6]d
transaction.state.log.min.isr=%[7]d
transaction.state.log.num.partitions=5
share.coordinator.state.topic.replication.factor=%[6]d
share.coordinator.state.topic.min.isr=%[7]d
share.coordinator.state.topic.num.partitions=5
group.initial.rebalance.delay.ms=0
group.consumer.max.session.timeout.ms=300000
auto.create.topics.enable=true
log.retention.check.interval.ms=3600000
%[11]s`, id, strings.Join(voters, ","), client[id-1], ctrl[id-1], dataDir, rf, min(rf, 2), listeners, advertised, protocols, secure)
}

// newTarget picks the ports of a target's n nodes and writes each node's
// server.properties (see serverProperties) into a fresh temporary directory,
// with the certificates of a secure target.
func (h *harness) newTarget(name, tag string, n int, rf int16, secure bool) (*broker, error) {
	client, ctrl := make([]int, n), make([]int, n)
	for i := range n {
		var err error
		if client[i], err = freePort(); err != nil {
			return nil, err
		}
		if ctrl[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	dir, err := h.tempDir(name)
	if err != nil {
		return nil, err
	}
	b := &broker{name: name, tag: tag, rf: rf, secure: secure, client: client, ctrl: ctrl}
	if secure {
		if b.sec, err = newSecurity(dir); err != nil {
			return nil, fmt.Errorf("%s: certificates: %w", name, err)
		}
	}
	h.atExit(func() { h.stop(b) })
	var addrs []string
	for i := range n {
		nd := &node{id: i + 1, addr: fmt.Sprintf("127.0.0.1:%d", client[i]), dir: dir}
		if n > 1 {
			nd.dir = filepath.Join(dir, fmt.Sprintf("node-%d", nd.id))
			if err := os.MkdirAll(nd.dir, 0o755); err != nil {
				return nil, err
			}
		}
		nd.dataDir, nd.log = filepath.Join(nd.dir, "data"), filepath.Join(nd.dir, "stdout.log")
		b.nodes = append(b.nodes, nd)
		addrs = append(addrs, nd.addr)
	}
	b.addr = strings.Join(addrs, ",")
	return b, b.writeProps()
}

// writeProps writes every node's server.properties.
func (b *broker) writeProps() error {
	for _, nd := range b.nodes {
		if err := os.WriteFile(nd.props(), []byte(serverProperties(nd.id, b.client, b.ctrl, nd.dataDir, b.sec)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (n *node) props() string { return filepath.Join(n.dir, "server.properties") }

// startStrata starts a Strata target of n nodes, each from its server.properties.
func (h *harness) startStrata(name, tag string, n int, rf int16, secure bool) (*broker, error) {
	b, err := h.newTarget(name, tag, n, rf, secure)
	if err != nil {
		return nil, err
	}
	for _, nd := range b.nodes {
		if err := h.launch(nd, filepath.Join(h.root, ".cache/bin/strata"), "--config", nd.props()); err != nil {
			return b, err
		}
	}
	return b, h.waitReady(b, 60*time.Second)
}

// startKafka starts an Apache Kafka target of n nodes from the jars in home
// (relative to compat-tests/): every node formatted with one cluster id by
// StorageTool, then run as kafka.Kafka at -Xmx512m.
func (h *harness) startKafka(name, tag, home string, n int, rf int16, secure bool) (*broker, error) {
	b, err := h.newTarget(name, tag, n, rf, secure)
	if err != nil {
		return nil, err
	}
	// Kafka's Uuid.randomUuid draws again when the text starts with '-',
	// which kafka-storage's argument parser would take for an option.
	var cid string
	for cid == "" || cid[0] == '-' {
		var id [16]byte
		rand.Read(id[:])
		cid = base64.RawURLEncoding.EncodeToString(id[:])
	}
	home = filepath.Join(h.root, home)
	java := func(nd *node, main string, args ...string) []string {
		return append([]string{"java", "-Xmx512m", "-XX:+UseSerialGC", "-Dlog4j2.configurationFile=" + filepath.Join(home, "log4j2.properties"),
			"-Dkafka.logs.file=" + filepath.Join(nd.dir, "kafka.log"), "-cp", filepath.Join(home, "libs/*"), main}, args...)
	}
	for _, nd := range b.nodes {
		if err := h.command(fmt.Sprintf("%s-format-%d", name, nd.id), nd.dir, nil, java(nd, "kafka.tools.StorageTool", "format", "-t", cid, "-c", nd.props())...); err != nil {
			return nil, err
		}
	}
	for _, nd := range b.nodes {
		if err := h.launch(nd, java(nd, "kafka.Kafka", nd.props())...); err != nil {
			return nil, err
		}
	}
	return b, h.waitReady(b, 120*time.Second)
}

// waitReady polls every node's Metadata until it lists all the target's
// nodes (so each is registered and unfenced), or the deadline.
func (h *harness) waitReady(b *broker, d time.Duration) error {
	deadline := time.Now().Add(d)
	for _, nd := range b.nodes {
		for {
			last := metadataLists(nd.addr, len(b.nodes))
			if last == nil {
				break
			}
			exited := false
			select {
			case <-nd.exited:
				exited, last = true, fmt.Errorf("exited: %v", nd.cmd.ProcessState)
			default:
			}
			if exited || time.Now().After(deadline) {
				data, _ := os.ReadFile(nd.log)
				return fmt.Errorf("%s node %d at %s not ready after %s (%v); log: %s", b.name, nd.id, nd.addr, d, last, tailStr(string(data), 800))
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	return nil
}

// metadataLists asks the broker at addr itself for Metadata and checks it lists n brokers.
func metadataLists(addr string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return err
	}
	if len(m.Brokers) < n {
		return fmt.Errorf("metadata lists %d of %d brokers", len(m.Brokers), n)
	}
	return nil
}

// createTopic creates topic with franz-go (an existing one is fine) and waits until it is ready.
func createTopic(seeds []string, topic string, parts int32, rf int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := adm.CreateTopic(ctx, parts, rf, nil, topic)
	if err != nil {
		return err
	}
	if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("%v %s", r.Err, r.ErrMessage)
	}
	return rt.WaitReadyKadm(ctx, adm, topic, int(parts))
}

// readAll reads n records of a 1-partition topic from the start with franz-go.
func readAll(seeds []string, topic string, n int) ([]rt.Rec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []rt.Rec
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("franz-go read %d of %d records", len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			x := rt.Rec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, hd := range r.Headers {
				x.Headers = append(x.Headers, [2][]byte{[]byte(hd.Key), hd.Value})
			}
			out = append(out, x)
		})
	}
	return out, nil
}
