package chaos

// The cluster harness (issue 14, item 6): N brokers on 127.0.0.1 (or, with
// ClusterConfig.Netns, each in its own network namespace on its own
// address, netns.go), each a
// KRaft combined broker+controller with its own data directory, client port
// and controller port (or, with ClusterConfig.Controllers, Kafka's split
// layout: controller-only nodes with a controller port, broker-only nodes
// with a client port), started from one server.properties per node that the
// same template (clusterProps) writes for Apache Kafka and for Strata. On it
// run these workloads (cluster_failover.go unless named):
//
//   - Failover: a steady idempotent acks=all producer on a 1-partition RF=3
//     topic (min.insync.replicas=2); the partition's leader is killed with
//     SIGKILL (or stopped with SIGSTOP, resumed 10 s later), and the longest
//     pause between two consecutive acknowledgements is measured; everything
//     is read back and checked (Check: lost 0, duplicates 0).
//   - ClusterKills: a random node (in the split layout a controller-only
//     one too) SIGKILLed every few seconds, restarted after a short delay,
//     for minutes, under the writer and a group consumer; then the history
//     is checked, every partition's ISR (including __consumer_offsets)
//     must be full again and every voter at the quorum leader's log end
//     (cluster_catchup.go).
//   - NetworkPartition (cluster_partition.go): the leader cut off from the
//     other nodes in its namespace, then healed.
//   - SlowFollower (cluster_slow.go): one follower's link slowed below the
//     partition's throughput until it leaves the ISR, then given its speed
//     back until it rejoins.
//   - ControllerFailover (cluster_split.go), on a cluster with split roles
//     (ClusterConfig.Controllers: controller-only and broker-only nodes):
//     the active controller SIGKILLed under the producer, then the
//     partition's leader under the new controller.
//   - ChangeVoters (cluster_voters.go), on a split cluster whose files name
//     the quorum by controller.quorum.bootstrap.servers alone: a fourth
//     controller added with kafka-metadata-quorum add-controller,
//     controller 1 removed with remove-controller, then controllers 1 and 2
//     SIGKILLed under the producer; the quorum left must still commit.
//   - The SASL script (cluster_sasl_test.go): both listeners SASL_PLAINTEXT,
//     the nodes logging in to each other as admin under the
//     StandardAuthorizer (ClusterConfig.ClientOpts logs the harness in).
//
// Run them with `make cluster-chaos` (Kafka 4.4.0 as the control needs
// compat-tests/scripts/install-kafka.sh; the Strata runs
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

// Cluster is the processes of one cluster. In the combined layout
// (ClusterConfig.Controllers 0) every node is a KRaft broker and controller,
// node ids 1 to N. In the split layout, as Kafka's docs lay it out, nodes 1
// to C are controllers only (the metadata quorum's voters) and nodes C+1 to
// C+B brokers only; clients talk to the brokers alone.
type Cluster struct {
	name  string
	nodes []*clusterNode // by node id
	// launch is the command line starting one node from its properties file.
	launch func(n *clusterNode) []string
	// format prepares a node's storage before its first start; nil when the
	// broker needs none (Strata).
	format func(ctx context.Context, n *clusterNode) error
	// netns, when set, runs each node in its own network namespace.
	netns *Netns
	// cfg is what the cluster was made from, for a node added later
	// (AddController, cluster_voters.go).
	cfg ClusterConfig
}

type clusterNode struct {
	process   // addr is the client listener; "" on a controller-only node
	id        int32
	roles     string // process.roles
	ctrlAddr  string // the controller listener; "" on a broker-only node
	dir       string
	props     string
	formatted bool
	started   time.Time // the last launch
	// dirID is a controller's metadata directory id (Kafka's Uuid) in a
	// dynamic quorum (ClusterConfig.QuorumBootstrap): what Kafka is
	// formatted with and kafka-metadata-quorum remove-controller names.
	dirID string

	pauseMu sync.Mutex
	paused  bool // SIGSTOPped and not yet continued
}

// process.roles of the two layouts.
const (
	rolesCombined   = "broker,controller"
	rolesBroker     = "broker"
	rolesController = "controller"
)

// broker says the node serves clients; controller that it is a voter of
// the metadata quorum.
func (n *clusterNode) broker() bool     { return n.roles != rolesController }
func (n *clusterNode) controller() bool { return n.roles != rolesBroker }

// ClusterConfig describes the cluster to make.
type ClusterConfig struct {
	Nodes int // brokers (combined nodes when Controllers is 0); default 3
	// Controllers, when above 0, splits the roles: that many
	// controller-only nodes (ids 1 to Controllers) and Nodes broker-only
	// nodes after them.
	Controllers int
	Dir         string   // each node gets Dir/node-<id>/
	Extra       []string // more server.properties lines, for every node; {id} is its node.id
	// Netns, when set, runs node id inside Netns's namespace id on its own
	// address instead of on 127.0.0.1 (netns.go); it needs a namespace for
	// every node, controllers too.
	Netns *Netns
	// KafkaJVM holds the java options of each Kafka node, placed before -cp;
	// nil means -Xmx512m -XX:+UseSerialGC. bench sets kafka-server-start's.
	KafkaJVM []string
	// QuorumBootstrap, when set, names the quorum in every file by
	// controller.quorum.bootstrap.servers (the controllers' addresses), not
	// controller.quorum.voters: KIP-853's dynamic quorum (cluster_voters.go).
	QuorumBootstrap bool
	// ClientOpts are added to every client the harness opens itself (the
	// serving checks, Describe, DescribeQuorum): a SASL login when the
	// brokers' listener has SASL (cluster_sasl_test.go).
	ClientOpts []kgo.Opt
	// KafkaFormat are more kafka-storage format arguments for every Kafka
	// node (--add-scram); Strata has no format step.
	KafkaFormat []string
}

// clusterProps is the one server.properties template of both brokers
// (Kafka and Strata): node n's, in a cluster whose quorum is named by the
// line quorum (quorumLine) and whose brokers number brokers (the
// replication factor of every default). A broker-only node has no
// controller listener and a controller-only node no client listener; the
// keys one role does not use are the same on every node, as Kafka ignores
// them.
func clusterProps(n *clusterNode, quorum string, brokers int, extra []string) string {
	var listeners []string
	if n.broker() {
		listeners = append(listeners, "PLAINTEXT://"+n.addr)
	}
	if n.controller() {
		listeners = append(listeners, "CONTROLLER://"+n.ctrlAddr)
	}
	props := fmt.Sprintf("process.roles=%s\nnode.id=%d\n%s\nlisteners=%s\n",
		n.roles, n.id, quorum, strings.Join(listeners, ","))
	if n.broker() {
		props += fmt.Sprintf("advertised.listeners=PLAINTEXT://%s\ninter.broker.listener.name=PLAINTEXT\n", n.addr)
	}
	props += fmt.Sprintf(`controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=%[1]s
num.partitions=1
default.replication.factor=%[2]d
min.insync.replicas=2
offsets.topic.replication.factor=%[2]d
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=%[2]d
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=5
broker.session.timeout.ms=2000
broker.heartbeat.interval.ms=500
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
`, filepath.Join(n.dir, "data"), brokers)
	for _, l := range extra {
		props += strings.ReplaceAll(l, "{id}", strconv.Itoa(int(n.id))) + "\n"
	}
	return props
}

func newCluster(name string, cfg ClusterConfig) (*Cluster, error) {
	brokers := cfg.Nodes
	if brokers == 0 {
		brokers = 3
	}
	c := &Cluster{name: name, netns: cfg.Netns, cfg: cfg}
	for i := range cfg.Controllers + brokers {
		id := int32(i + 1)
		roles := rolesCombined
		switch {
		case cfg.Controllers > 0 && i < cfg.Controllers:
			roles = rolesController
		case cfg.Controllers > 0:
			roles = rolesBroker
		}
		host := "127.0.0.1"
		if cfg.Netns != nil {
			host = cfg.Netns.Addr(id)
		}
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", id))
		node := &clusterNode{
			process: process{name: fmt.Sprintf("%s-%d", name, id), logPath: filepath.Join(dir, "stdout.log")},
			id:      id,
			roles:   roles,
			dir:     dir,
			props:   filepath.Join(dir, "server.properties"),
		}
		if node.broker() {
			port, err := FreePort()
			if err != nil {
				return nil, err
			}
			node.addr = net.JoinHostPort(host, strconv.Itoa(port))
		}
		if node.controller() {
			port, err := FreePort()
			if err != nil {
				return nil, err
			}
			node.ctrlAddr = net.JoinHostPort(host, strconv.Itoa(port))
		}
		c.nodes = append(c.nodes, node)
	}
	quorum := c.quorumLine()
	for _, n := range c.nodes {
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(n.props, []byte(clusterProps(n, quorum, brokers, cfg.Extra)), 0o644); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// NewKafkaCluster prepares an Apache Kafka cluster from the jars in home
// (compat-tests/.cache/kafka-4.4.0): each node formatted with one shared
// cluster id, then run as kafka.Kafka at -Xmx512m.
func NewKafkaCluster(home string, cfg ClusterConfig) (*Cluster, error) {
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		return nil, fmt.Errorf("kafka not installed in %s (run compat-tests/scripts/install-kafka.sh): %w", home, err)
	}
	c, err := newCluster("kafka", cfg)
	if err != nil {
		return nil, err
	}
	c.assignDirIDs()
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
		argv := append(java(n, "tools-log4j2.properties", "kafka.tools.StorageTool", "format", "-t", clusterID, "-c", n.props),
			append(c.kafkaQuorumFormat(n), cfg.KafkaFormat...)...)
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

// IDs are the brokers' node ids: every node's in the combined layout,
// C+1 to C+B in the split one.
func (c *Cluster) IDs() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		if n.broker() {
			ids = append(ids, n.id)
		}
	}
	return ids
}

// ControllerIDs are the metadata quorum's voters: every node in the
// combined layout, 1 to C in the split one.
func (c *Cluster) ControllerIDs() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		if n.controller() {
			ids = append(ids, n.id)
		}
	}
	return ids
}

// Split says the cluster has controller-only and broker-only nodes.
func (c *Cluster) Split() bool { return c.nodes[0].roles == rolesController }

func (c *Cluster) node(id int32) *clusterNode {
	if id < 1 || int(id) > len(c.nodes) {
		panic(fmt.Sprintf("chaos: no node %d in a cluster of %d", id, len(c.nodes)))
	}
	return c.nodes[id-1]
}

// Bootstrap is every broker's client address.
func (c *Cluster) Bootstrap() []string {
	var addrs []string
	for _, n := range c.nodes {
		if n.broker() {
			addrs = append(addrs, n.addr)
		}
	}
	return addrs
}

// Addr is broker id's client address.
func (c *Cluster) Addr(id int32) string { return c.node(id).addr }

// Pid is node id's process id, 0 when it is not running.
func (c *Cluster) Pid(id int32) int { return c.node(id).Pid() }

// StartAll launches every node at once (a KRaft quorum needs a majority to
// elect a leader before any broker serves) and waits until each serves;
// any node exiting meanwhile fails it.
func (c *Cluster) StartAll(ctx context.Context) error {
	for _, n := range c.nodes {
		if err := c.spawn(ctx, n); err != nil {
			return err
		}
	}
	for _, n := range c.nodes {
		if err := c.waitServing(ctx, n, c.nodes); err != nil {
			return err
		}
	}
	return nil
}

// Start launches node id and waits until it serves: a broker answers
// Metadata listing itself, so it is registered and unfenced; a controller
// is back in the quorum (controllerServing).
func (c *Cluster) Start(ctx context.Context, id int32) error {
	n := c.node(id)
	if err := c.spawn(ctx, n); err != nil {
		return err
	}
	return c.waitServing(ctx, n, []*clusterNode{n})
}

func (c *Cluster) spawn(ctx context.Context, n *clusterNode) error {
	if c.format != nil && !n.formatted {
		if err := c.format(ctx, n); err != nil {
			return err
		}
		n.formatted = true
	}
	n.setPaused(false)
	n.started = time.Now()
	argv := c.launch(n)
	if c.netns != nil {
		argv = c.netns.Exec(n.id, argv)
	}
	return n.launch(argv)
}

// waitServing waits until n serves, failing as soon as one of watch (n
// among them) exits.
func (c *Cluster) waitServing(ctx context.Context, n *clusterNode, watch []*clusterNode) error {
	var last error
	addr := n.addr
	if !n.broker() {
		addr = n.ctrlAddr
	}
	for {
		for _, w := range watch {
			select {
			case <-w.exited():
				when := "before serving"
				if w != n {
					when = "while " + n.name + " was starting"
				}
				if last != nil {
					when += fmt.Sprintf(" (its last error: %v)", last)
				}
				return fmt.Errorf("%s (process.roles=%s) exited %s; output:\n%s", w.name, w.roles, when, w.LogTail(4000))
			default:
			}
		}
		if n.broker() {
			last = brokerServing(ctx, n, c.cfg.ClientOpts)
		} else {
			last = c.controllerServing(ctx, n)
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not serving at %s: %v (%w); output:\n%s", n.name, addr, last, ctx.Err(), n.LogTail(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// brokerServing says why broker n does not serve yet: it must answer
// Metadata listing itself.
func brokerServing(ctx context.Context, n *clusterNode, opts []kgo.Opt) error {
	m, err := metadataOf(ctx, n.addr, nil, opts...)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(m.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == n.id }) {
		return fmt.Errorf("node %d not among the brokers it lists", n.id)
	}
	return nil
}

// controllerServing says why controller-only node n does not serve yet: it
// must answer ApiVersions on its controller listener, and the quorum must
// have a leader that either is n or, when it reports n's last fetch (-1
// while it has not heard from n in its term; Strata's is n's last reply to
// AppendEntries), saw n fetch since n started.
func (c *Cluster) controllerServing(ctx context.Context, n *clusterNode) error {
	if _, err := requestAt(ctx, n.ctrlAddr, kmsg.NewPtrApiVersionsRequest(), c.cfg.ClientOpts...); err != nil {
		return fmt.Errorf("ApiVersions on the controller listener: %w", err)
	}
	q, err := c.describeQuorum(ctx)
	if err != nil {
		return err
	}
	if q.LeaderID == n.id {
		return nil
	}
	for _, v := range q.CurrentVoters {
		if v.ReplicaID != n.id {
			continue
		}
		if v.LastFetchTimestamp > 0 && v.LastFetchTimestamp < n.started.UnixMilli() {
			return fmt.Errorf("quorum leader %d last saw node %d fetch at %s, before it started", q.LeaderID, n.id,
				time.UnixMilli(v.LastFetchTimestamp).Format("15:04:05.000"))
		}
		return nil
	}
	return fmt.Errorf("quorum leader %d does not list node %d among its voters", q.LeaderID, n.id)
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
// to) for the metadata of topics, every topic when nil, with opts added to
// its client.
func metadataOf(ctx context.Context, addr string, topics []string, opts ...kgo.Opt) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := requestAt(ctx, addr, req, opts...)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
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
	m, err := metadataOf(ctx, c.node(id).addr, topics, c.cfg.ClientOpts...)
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

// upBrokers are the brokers whose process runs and is not paused.
func (c *Cluster) upBrokers() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		if n.broker() && n.up() {
			ids = append(ids, n.id)
		}
	}
	return ids
}

// LeaderOf is the leader of topic's partition as the first running broker
// that answers says.
func (c *Cluster) LeaderOf(ctx context.Context, topic string, partition int32) (int32, error) {
	var errs []error
	for _, id := range c.upBrokers() {
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
	return -1, fmt.Errorf("no running broker answered for %s[%d]: %w", topic, partition, errors.Join(errs...))
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

// ISRFull waits until every broker runs and reports every partition of topics
// (all topics when none is named) led and with its full replica set in
// sync, and returns the last state seen.
func (c *Cluster) ISRFull(ctx context.Context, timeout time.Duration, topics ...string) ([]PartitionState, error) {
	var state []PartitionState
	err := waitFor(ctx, timeout, "every ISR full on every broker", func(ctx context.Context) (bool, string) {
		ids := c.upBrokers()
		if len(ids) < len(c.IDs()) {
			return false, fmt.Sprintf("only brokers %v running", ids)
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
// DescribeQuorum answers it, -1 when no running node answers. With split
// roles this is the one way to find it: Kafka's Metadata and
// DescribeCluster name a random broker as the controller.
func (c *Cluster) QuorumLeader(ctx context.Context) int32 {
	q, err := c.describeQuorum(ctx)
	if err != nil {
		return -1
	}
	return q.LeaderID
}

// describeQuorum is __cluster_metadata's partition as the first running
// node that answers DescribeQuorum without error describes it: each
// controller-only node asked on its controller listener (only the leader
// answers there), then the brokers, which forward it to the active
// controller.
func (c *Cluster) describeQuorum(ctx context.Context) (kmsg.DescribeQuorumResponseTopicPartition, error) {
	var errs []error
	var order []*clusterNode
	for _, n := range c.nodes {
		if !n.broker() {
			order = append(order, n)
		}
	}
	for _, n := range c.nodes {
		if n.broker() {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if !n.up() {
			continue
		}
		addr := n.addr
		if !n.broker() {
			addr = n.ctrlAddr
		}
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp, err := requestAt(ctx, addr, req, c.cfg.ClientOpts...)
		if err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", n.id, err))
			continue
		}
		q := resp.(*kmsg.DescribeQuorumResponse)
		if err := kerr.ErrorForCode(q.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", n.id, err))
			continue
		}
		if len(q.Topics) != 1 || len(q.Topics[0].Partitions) != 1 {
			errs = append(errs, fmt.Errorf("node %d: %d topics answered", n.id, len(q.Topics)))
			continue
		}
		p := q.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", n.id, err))
			continue
		}
		return p, nil
	}
	return kmsg.DescribeQuorumResponseTopicPartition{}, fmt.Errorf("no running node described the quorum: %w", errors.Join(errs...))
}

// requestAt sends req to the node at addr itself, with no retry, by a
// client with opts added.
func requestAt(ctx context.Context, addr string, req kmsg.Request, opts ...kgo.Opt) (kmsg.Response, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.DialTimeout(time.Second), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(rctx, req)
}
