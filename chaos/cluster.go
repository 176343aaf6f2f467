package chaos

// The cluster harness (issue 14, item 6): N brokers on 127.0.0.1 (or, with
// ClusterConfig.Netns, each in its own network namespace on its own
// address, netns.go), each a
// KRaft combined broker+controller with its own data directory, client port
// and controller port, started from one server.properties per node that the
// same template (clusterProps) writes for Apache Kafka and for Strata. On it
// run three workloads (cluster_failover.go):
//
//   - Failover: a steady idempotent acks=all producer on a 1-partition RF=3
//     topic (min.insync.replicas=2); the partition's leader is killed with
//     SIGKILL (or stopped with SIGSTOP, resumed 10 s later), and the longest
//     pause between two consecutive acknowledgements is measured; everything
//     is read back and checked (Check: lost 0, duplicates 0).
//   - ClusterKills: a random node SIGKILLed every few seconds, restarted
//     after a short delay, for minutes, under the writer and a group
//     consumer; then the history is checked and every partition's ISR
//     (including __consumer_offsets) must be full again.
//   - NetworkPartition (cluster_partition.go): the leader cut off from the
//     other nodes in its namespace, then healed.
//
// Run them with `make cluster-chaos` (Kafka 4.4.0 as the control needs
// KAFKA_VERSION=4.4.0 compat-tests/scripts/install-kafka.sh; the Strata runs
// need STRATA_CLUSTER=1, once the Strata cluster forms). cluster_test.go
// lists the environment knobs.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is N broker processes forming one cluster. Nodes are named by
// their node.id, 1 to N.
type Cluster struct {
	name  string
	nodes []*clusterNode
	// launch is the command line starting one node from its properties file.
	launch func(n *clusterNode) []string
	// format prepares a node's storage before its first start; nil when the
	// broker needs none (Strata).
	format func(ctx context.Context, n *clusterNode) error
	// netns, when set, runs each node in its own network namespace.
	netns *Netns
}

type clusterNode struct {
	process
	id        int32
	ctrlAddr  string
	dir       string
	props     string
	formatted bool

	pauseMu sync.Mutex
	paused  bool // SIGSTOPped and not yet continued
}

// ClusterConfig describes the cluster to make.
type ClusterConfig struct {
	Nodes int      // default 3
	Dir   string   // each node gets Dir/node-<id>/
	Extra []string // more server.properties lines, for every node; {id} is its node.id
	// Netns, when set, runs node id inside Netns's namespace id on its own
	// address instead of on 127.0.0.1 (netns.go).
	Netns *Netns
	// KafkaJVM holds the java options of each Kafka node, placed before -cp;
	// nil means -Xmx512m -XX:+UseSerialGC. bench sets kafka-server-start's.
	KafkaJVM []string
}

// clusterProps is the one server.properties template of both brokers: node
// id of n nodes, whose addresses are hosts and client and controller ports
// are client and ctrl.
func clusterProps(id int32, hosts []string, client, ctrl []int, dataDir string, extra []string) string {
	var voters []string
	for i, c := range ctrl {
		voters = append(voters, fmt.Sprintf("%d@%s:%d", i+1, hosts[i], c))
	}
	me := id - 1
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=%[1]d
controller.quorum.voters=%[2]s
listeners=PLAINTEXT://%[7]s:%[3]d,CONTROLLER://%[7]s:%[4]d
advertised.listeners=PLAINTEXT://%[7]s:%[3]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=%[5]s
num.partitions=1
default.replication.factor=%[6]d
min.insync.replicas=2
offsets.topic.replication.factor=%[6]d
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=%[6]d
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=5
broker.session.timeout.ms=2000
broker.heartbeat.interval.ms=500
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
`, id, strings.Join(voters, ","), client[me], ctrl[me], dataDir, len(ctrl), hosts[me])
	for _, l := range extra {
		props += strings.ReplaceAll(l, "{id}", strconv.Itoa(int(id))) + "\n"
	}
	return props
}

func newCluster(name string, cfg ClusterConfig) (*Cluster, error) {
	n := cfg.Nodes
	if n == 0 {
		n = 3
	}
	client, ctrl, hosts := make([]int, n), make([]int, n), make([]string, n)
	for i := range n {
		hosts[i] = "127.0.0.1"
		if cfg.Netns != nil {
			hosts[i] = cfg.Netns.Addr(int32(i + 1))
		}
		var err error
		if client[i], err = FreePort(); err != nil {
			return nil, err
		}
		if ctrl[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{name: name, netns: cfg.Netns}
	for i := range n {
		id := int32(i + 1)
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", id))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		node := &clusterNode{
			process: process{
				name:    fmt.Sprintf("%s-%d", name, id),
				addr:    net.JoinHostPort(hosts[i], strconv.Itoa(client[i])),
				logPath: filepath.Join(dir, "stdout.log"),
			},
			id:       id,
			ctrlAddr: net.JoinHostPort(hosts[i], strconv.Itoa(ctrl[i])),
			dir:      dir,
			props:    filepath.Join(dir, "server.properties"),
		}
		if err := os.WriteFile(node.props, []byte(clusterProps(id, hosts, client, ctrl, filepath.Join(dir, "data"), cfg.Extra)), 0o644); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, node)
	}
	return c, nil
}

// NewKafkaCluster prepares an Apache Kafka cluster from the jars in home
// (compat-tests/.cache/kafka-4.4.0): each node formatted with one shared
// cluster id, then run as kafka.Kafka at -Xmx512m.
func NewKafkaCluster(home string, cfg ClusterConfig) (*Cluster, error) {
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		return nil, fmt.Errorf("kafka not installed in %s (run KAFKA_VERSION=4.4.0 compat-tests/scripts/install-kafka.sh): %w", home, err)
	}
	c, err := newCluster("kafka", cfg)
	if err != nil {
		return nil, err
	}
	jvm := cfg.KafkaJVM
	if jvm == nil {
		jvm = []string{"-Xmx512m", "-XX:+UseSerialGC"}
	}
	java := func(n *clusterNode, log4j, main string, args ...string) []string {
		return append(append(append([]string{"java"}, jvm...),
			"-Dlog4j2.configurationFile="+filepath.Join(home, log4j),
			"-Dkafka.logs.file="+filepath.Join(n.dir, "kafka.log"),
			"-cp", filepath.Join(home, "libs", "*"), main), args...)
	}
	clusterID := kafkaClusterID()
	c.format = func(ctx context.Context, n *clusterNode) error {
		argv := java(n, "tools-log4j2.properties", "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", n.props)
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("kafka storage format of node %d: %w\n%s", n.id, err, out)
		}
		return nil
	}
	c.launch = func(n *clusterNode) []string { return java(n, "log4j2.properties", "kafka.Kafka", n.props) }
	return c, nil
}

// NewStrataCluster prepares a Strata cluster: each node runs
// `bin --config <its server.properties>`, with no format step.
func NewStrataCluster(bin string, cfg ClusterConfig) (*Cluster, error) {
	c, err := newCluster("strata", cfg)
	if err != nil {
		return nil, err
	}
	c.launch = func(n *clusterNode) []string { return []string{bin, "--config", n.props} }
	return c, nil
}

// Name is "kafka" or "strata".
func (c *Cluster) Name() string { return c.name }

// IDs are the node ids, 1 to N.
func (c *Cluster) IDs() []int32 {
	ids := make([]int32, len(c.nodes))
	for i, n := range c.nodes {
		ids[i] = n.id
	}
	return ids
}

func (c *Cluster) node(id int32) *clusterNode {
	if id < 1 || int(id) > len(c.nodes) {
		panic(fmt.Sprintf("chaos: no node %d in a cluster of %d", id, len(c.nodes)))
	}
	return c.nodes[id-1]
}

// Bootstrap is every node's client address.
func (c *Cluster) Bootstrap() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.addr
	}
	return addrs
}

// Addr is node id's client address.
func (c *Cluster) Addr(id int32) string { return c.node(id).addr }

// Pid is node id's process id, 0 when it is not running.
func (c *Cluster) Pid(id int32) int { return c.node(id).Pid() }

// StartAll launches every node at once (a KRaft quorum needs a majority to
// elect a leader before any broker serves) and waits until each serves.
func (c *Cluster) StartAll(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := c.spawn(ctx, n); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		if err := c.waitServing(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// Start launches node id and waits until it serves: it answers Metadata
// listing itself, so it is registered and unfenced.
func (c *Cluster) Start(ctx context.Context, id int32) error {
	n := c.node(id)
	if err := c.spawn(ctx, n); err != nil {
		return err
	}
	return c.waitServing(ctx, n)
}

func (c *Cluster) spawn(ctx context.Context, n *clusterNode) error {
	if c.format != nil && !n.formatted {
		if err := c.format(ctx, n); err != nil {
			return err
		}
		n.formatted = true
	}
	n.setPaused(false)
	argv := c.launch(n)
	if c.netns != nil {
		argv = c.netns.Exec(n.id, argv)
	}
	return n.launch(argv)
}

func (c *Cluster) waitServing(ctx context.Context, n *clusterNode) error {
	var last error
	for {
		select {
		case <-n.exited():
			return fmt.Errorf("%s exited before serving: last error %v; output:\n%s", n.name, last, n.LogTail(4000))
		default:
		}
		m, err := metadataOf(ctx, n.addr, nil)
		if err == nil && !slices.ContainsFunc(m.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == n.id }) {
			err = fmt.Errorf("node %d not among the brokers it lists", n.id)
		}
		if last = err; err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not serving at %s: %v (%w); output:\n%s", n.name, n.addr, last, ctx.Err(), n.LogTail(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (n *clusterNode) exited() <-chan struct{} {
	n.process.mu.Lock()
	defer n.process.mu.Unlock()
	if n.done == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return n.done
}

func (n *clusterNode) setPaused(p bool) {
	n.pauseMu.Lock()
	n.paused = p
	n.pauseMu.Unlock()
}

// up says the node's process runs and is not stopped.
func (n *clusterNode) up() bool {
	n.pauseMu.Lock()
	paused := n.paused
	n.pauseMu.Unlock()
	if paused {
		return false
	}
	select {
	case <-n.exited():
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to node id and waits for it to exit.
func (c *Cluster) Kill(id int32) error {
	n := c.node(id)
	err := n.Kill()
	n.setPaused(false)
	return err
}

// KillAll kills every node, for the end of a run.
func (c *Cluster) KillAll() {
	for _, n := range c.nodes {
		_ = n.Kill()
	}
}

// Restart kills node id and starts it again on the same data directory.
func (c *Cluster) Restart(ctx context.Context, id int32) error {
	if err := c.Kill(id); err != nil {
		return err
	}
	return c.Start(ctx, id)
}

// Pause stops node id with SIGSTOP: its sockets stay open but nothing
// answers, like a machine that hangs.
func (c *Cluster) Pause(id int32) error { return c.signal(id, syscall.SIGSTOP, true) }

// Resume continues a paused node with SIGCONT.
func (c *Cluster) Resume(id int32) error { return c.signal(id, syscall.SIGCONT, false) }

func (c *Cluster) signal(id int32, sig syscall.Signal, paused bool) error {
	n := c.node(id)
	pid := n.Pid()
	if pid == 0 || !n.upOrPaused() {
		return fmt.Errorf("%s is not running", n.name)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("%v to %s: %w", sig, n.name, err)
	}
	n.setPaused(paused)
	return nil
}

func (n *clusterNode) upOrPaused() bool {
	select {
	case <-n.exited():
		return false
	default:
		return true
	}
}

// LogTail is the end of node id's output.
func (c *Cluster) LogTail(id int32, size int) string { return c.node(id).LogTail(size) }

// LogTails is the end of every node's output, for a failure message.
func (c *Cluster) LogTails(size int) string {
	var b strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "---- %s (%s):\n%s\n", n.name, n.dir, n.LogTail(size))
	}
	return b.String()
}

// metadataOf asks the broker at addr itself (not one it leads the client
// to) for the metadata of topics, every topic when nil.
func metadataOf(ctx context.Context, addr string, topics []string) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(2*time.Second),
		kgo.DialTimeout(time.Second), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return req.RequestWith(mctx, cl.SeedBrokers()[0])
}

// PartitionState is one partition as a broker's Metadata answer shows it.
type PartitionState struct {
	Topic     string
	Partition int32
	Leader    int32
	Replicas  []int32
	ISR       []int32
	Err       error
}

// Full says the partition has a leader and every replica in its ISR.
func (p PartitionState) Full() bool {
	return p.Err == nil && p.Leader >= 0 && len(p.Replicas) > 0 && len(p.ISR) == len(p.Replicas)
}

func (p PartitionState) String() string {
	s := fmt.Sprintf("%s[%d] leader %d replicas %v isr %v", p.Topic, p.Partition, p.Leader, p.Replicas, p.ISR)
	if p.Err != nil {
		s += " (" + p.Err.Error() + ")"
	}
	return s
}

// Describe is the partitions of topics (every topic, internal ones too, when
// none is named) as node id answers Metadata.
func (c *Cluster) Describe(ctx context.Context, id int32, topics ...string) ([]PartitionState, error) {
	m, err := metadataOf(ctx, c.node(id).addr, topics)
	if err != nil {
		return nil, fmt.Errorf("metadata from node %d: %w", id, err)
	}
	var out []PartitionState
	for _, t := range m.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			out = append(out, PartitionState{Topic: name, Partition: -1, Leader: -1, Err: err})
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, PartitionState{Topic: name, Partition: p.Partition, Leader: p.Leader,
				Replicas: slices.Sorted(slices.Values(p.Replicas)), ISR: slices.Sorted(slices.Values(p.ISR)),
				Err: kerr.ErrorForCode(p.ErrorCode)})
		}
	}
	slices.SortFunc(out, func(a, b PartitionState) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// upNodes are the nodes whose process runs and is not paused.
func (c *Cluster) upNodes() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		if n.up() {
			ids = append(ids, n.id)
		}
	}
	return ids
}

// LeaderOf is the leader of topic's partition as the first running node
// that answers says.
func (c *Cluster) LeaderOf(ctx context.Context, topic string, partition int32) (int32, error) {
	var errs []error
	for _, id := range c.upNodes() {
		ps, err := c.Describe(ctx, id, topic)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range ps {
			if p.Partition == partition {
				if p.Err != nil {
					return -1, fmt.Errorf("%s[%d] on node %d: %w", topic, partition, id, p.Err)
				}
				return p.Leader, nil
			}
		}
		errs = append(errs, fmt.Errorf("node %d does not list %s[%d]", id, topic, partition))
	}
	return -1, fmt.Errorf("no running node answered for %s[%d]: %w", topic, partition, errors.Join(errs...))
}

// waitFor polls cond every 100 ms until it holds or timeout passes; the
// error names what was last seen.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		ok, seen := cond(ctx)
		if ok {
			return nil
		}
		last = seen
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not seen within %v: last %s", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ISRFull waits until every running node reports every partition of topics
// (all topics when none is named) led and with its full replica set in
// sync, and returns the last state seen.
func (c *Cluster) ISRFull(ctx context.Context, timeout time.Duration, topics ...string) ([]PartitionState, error) {
	var state []PartitionState
	err := waitFor(ctx, timeout, "every ISR full on every node", func(ctx context.Context) (bool, string) {
		ids := c.upNodes()
		if len(ids) < len(c.nodes) {
			return false, fmt.Sprintf("only nodes %v running", ids)
		}
		for _, id := range ids {
			ps, err := c.Describe(ctx, id, topics...)
			if err != nil {
				return false, err.Error()
			}
			if len(ps) == 0 {
				return false, fmt.Sprintf("node %d lists no partitions", id)
			}
			for _, p := range ps {
				if !p.Full() {
					return false, fmt.Sprintf("node %d: %v", id, p)
				}
			}
			state = ps
		}
		return true, ""
	})
	return state, err
}

// QuorumLeader is the metadata quorum's leader (the active controller) as
// a running node answers DescribeQuorum, -1 when none answers.
func (c *Cluster) QuorumLeader(ctx context.Context) int32 {
	for _, id := range c.upNodes() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(id).addr), kgo.RequestTimeoutOverhead(2*time.Second), kgo.RequestRetries(0))
		if err != nil {
			continue
		}
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := req.RequestWith(qctx, cl.SeedBrokers()[0])
		cancel()
		cl.Close()
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			continue
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode == 0 {
			return p.LeaderID
		}
	}
	return -1
}
