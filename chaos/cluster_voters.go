package chaos

// Changing the metadata quorum's voters (KIP-853) on a split cluster whose
// files name the quorum by controller.quorum.bootstrap.servers alone
// (ClusterConfig.QuorumBootstrap): a fourth controller started later, added
// with Kafka's kafka-metadata-quorum add-controller, controller 1 removed
// with remove-controller, then controllers 1 and 2 SIGKILLed, which leaves
// the new quorum {3, 7} a majority and the old one {1, 2, 3} none. Kafka
// needs its controllers formatted with --initial-controllers (each with a
// directory id) for such a quorum, and a joining controller with
// --no-initial-controllers (StorageTool.runFormatCommand refuses a
// controller with neither when controller.quorum.voters is unset); its
// brokers format as before. Strata formats nothing and has no directory
// ids: it reports, and remove-controller may name, the zero id.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// zeroDirID is Kafka's Uuid.ZERO_UUID as text: the directory id of every
// Strata controller.
const zeroDirID = "AAAAAAAAAAAAAAAAAAAAAA"

// strataObserver is a Strata controller's line saying it is not among the
// voters it learned and waits to be added; Strata's DescribeQuorum lists it
// only once add-controller has made it a raft non-voter.
var strataObserver = regexp.MustCompile(`not one of the voters: an observer`)

// initialNodes is how many nodes the cluster was made with; nodes after
// them were added (AddController).
func (c *Cluster) initialNodes() int {
	brokers := c.cfg.Nodes
	if brokers == 0 {
		brokers = 3
	}
	return c.cfg.Controllers + brokers
}

// initialControllers are the controllers the cluster was made with.
func (c *Cluster) initialControllers() []*clusterNode {
	var ns []*clusterNode
	for _, n := range c.nodes[:min(len(c.nodes), c.initialNodes())] {
		if n.controller() {
			ns = append(ns, n)
		}
	}
	return ns
}

// quorumLine is the properties line naming the quorum: the initial
// controllers as controller.quorum.voters, or, with QuorumBootstrap, their
// addresses as controller.quorum.bootstrap.servers.
func (c *Cluster) quorumLine() string {
	var voters, servers []string
	for _, n := range c.initialControllers() {
		voters = append(voters, fmt.Sprintf("%d@%s", n.id, n.ctrlAddr))
		servers = append(servers, n.ctrlAddr)
	}
	if c.cfg.QuorumBootstrap {
		return "controller.quorum.bootstrap.servers=" + strings.Join(servers, ",")
	}
	return "controller.quorum.voters=" + strings.Join(voters, ",")
}

// assignDirIDs gives each initial controller of a dynamic quorum the
// directory id Kafka formats it with.
func (c *Cluster) assignDirIDs() {
	if !c.cfg.QuorumBootstrap {
		return
	}
	for _, n := range c.initialControllers() {
		n.dirID = kafkaClusterID()
	}
}

// kafkaQuorumFormat are the arguments kafka-storage format needs for node
// n's quorum: none for a static quorum or a broker; for a dynamic one
// --initial-controllers id@host:port:dirid,... on an initial controller
// and --no-initial-controllers on one that joins later.
func (c *Cluster) kafkaQuorumFormat(n *clusterNode) []string {
	if !c.cfg.QuorumBootstrap || !n.controller() {
		return nil
	}
	initial := c.initialControllers()
	if !slices.Contains(initial, n) {
		return []string{"--no-initial-controllers"}
	}
	var voters []string
	for _, v := range initial {
		voters = append(voters, fmt.Sprintf("%d@%s:%s", v.id, v.ctrlAddr, v.dirID))
	}
	return []string{"--initial-controllers", strings.Join(voters, ",")}
}

// DirectoryID is controller id's metadata directory id: the one Kafka was
// formatted with (or, for a controller added later, chose), the zero id on
// Strata.
func (c *Cluster) DirectoryID(id int32) string {
	if d := c.node(id).dirID; d != "" {
		return d
	}
	return zeroDirID
}

// Props is node id's server.properties file.
func (c *Cluster) Props(id int32) string { return c.node(id).props }

// AddController starts one more controller-only node, the next node id,
// from a file naming the initial controllers as its bootstrap servers
// (Kafka formats it with --no-initial-controllers), and waits until it
// observes the quorum: Kafka's DescribeQuorum lists it among the
// observers, or Strata's says in its log that it waits to be added. It is
// no voter until add-controller makes it one.
func (c *Cluster) AddController(ctx context.Context) (int32, error) {
	if !c.cfg.QuorumBootstrap || c.netns != nil {
		return 0, errors.New("add a controller: only to a quorum named by controller.quorum.bootstrap.servers, on 127.0.0.1")
	}
	id := int32(len(c.nodes) + 1)
	port, err := FreePort()
	if err != nil {
		return 0, err
	}
	dir := filepath.Join(c.cfg.Dir, fmt.Sprintf("node-%d", id))
	n := &clusterNode{
		process:  process{name: fmt.Sprintf("%s-%d", c.name, id), logPath: filepath.Join(dir, "stdout.log")},
		id:       id,
		roles:    rolesController,
		ctrlAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:      dir,
		props:    filepath.Join(dir, "server.properties"),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(n.props, []byte(clusterProps(n, c.quorumLine(), len(c.IDs()), c.cfg.Extra)), 0o644); err != nil {
		return 0, err
	}
	c.nodes = append(c.nodes, n)
	if err := c.spawn(ctx, n); err != nil {
		return id, err
	}
	if c.format != nil {
		if n.dirID, err = metaDirectoryID(filepath.Join(n.dir, "data")); err != nil {
			return id, err
		}
	}
	err = waitFor(ctx, 2*time.Minute, fmt.Sprintf("controller %d observing the quorum", id), func(ctx context.Context) (bool, string) {
		select {
		case <-n.exited():
			return false, "exited: " + n.LogTail(2000)
		default:
		}
		if strataObserver.MatchString(n.LogTail(1 << 16)) {
			return true, ""
		}
		q, err := c.describeQuorum(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, o := range q.Observers {
			if o.ReplicaID == id {
				return true, ""
			}
		}
		return false, fmt.Sprintf("not among the observers of quorum leader %d", q.LeaderID)
	})
	return id, err
}

// metaDirectoryID is directory.id in dir's meta.properties.
func metaDirectoryID(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		return "", fmt.Errorf("directory id: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "directory.id="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no directory.id in %s/meta.properties", dir)
}

// Voters are the quorum's voters as DescribeQuorum reports them: ids
// sorted, and each one's directory id as text.
func (c *Cluster) Voters(ctx context.Context) ([]int32, map[int32]string, error) {
	q, err := c.describeQuorum(ctx)
	if err != nil {
		return nil, nil, err
	}
	var ids []int32
	dirs := map[int32]string{}
	for _, v := range q.CurrentVoters {
		ids = append(ids, v.ReplicaID)
		dirs[v.ReplicaID] = base64.RawURLEncoding.EncodeToString(v.ReplicaDirectoryID[:])
	}
	slices.Sort(ids)
	return ids, dirs, nil
}

// MetadataQuorumTool runs Kafka's kafka-metadata-quorum
// (org.apache.kafka.tools.MetadataQuorumCommand, from the jars in home)
// against the brokers, returning its output and wall time, JVM start
// included.
func (c *Cluster) MetadataQuorumTool(ctx context.Context, home string, args ...string) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	argv := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + filepath.Join(home, "tools-log4j2.properties"),
		"-cp", filepath.Join(home, "libs", "*"), "org.apache.kafka.tools.MetadataQuorumCommand",
		"--bootstrap-server", strings.Join(c.Bootstrap(), ",")}, args...)
	start := time.Now()
	out, err := exec.CommandContext(ctx, "java", argv...).CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return string(out), took, fmt.Errorf("kafka-metadata-quorum %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), took, nil
}

// ChangeVotersOptions configure one voter change.
type ChangeVotersOptions struct {
	Cluster *Cluster // split roles, QuorumBootstrap
	Kafka   string   // the Kafka whose kafka-metadata-quorum runs (compat-tests/.cache/kafka-4.4.0)
	Topic   string   // default "change-voters"; 1 partition, RF=all brokers, min.insync.replicas=2
	Rate    int      // records per second (default 200)
	Before  int      // acknowledgements before the change (default 2 s worth)
	After   int      // acknowledgements after each step (default 2 s worth)
	Tuning  ProducerTuning
	Logger  *zap.Logger
}

// ChangeVotersReport is what one voter change showed.
type ChangeVotersReport struct {
	ToolStart     time.Duration // kafka-metadata-quorum describe --status: the tool's own cost
	Added         int32         // the controller started and added
	AddedDirID    string        // its directory id as DescribeQuorum reports it
	ObserverSeen  time.Duration // from its launch to it observing the quorum
	AddWall       time.Duration // add-controller's wall time
	AddSeen       time.Duration // from add-controller's start to DescribeQuorum listing it a voter
	Removed       int32         // the controller removed (1)
	RemovedDirID  string        // the directory id remove-controller named
	LeaderAtRemov int32         // the quorum leader when it was removed
	RemoveWall    time.Duration // remove-controller's wall time
	RemoveSeen    time.Duration // from its start to DescribeQuorum no longer listing it
	Voters        [3][]int32    // before, after the add, after the remove
	KillAt        time.Time     // when controllers 1 and 2 were SIGKILLed
	CreateAfter   time.Duration // from the kill to a topic created through a broker
	LeaderAfter   int32         // the quorum leader then
	ChangePause   time.Duration // longest gap between acks ending from the add to the kill
	KillPause     time.Duration // longest gap between acks ending from the kill on
	LongestPause  time.Duration // over the whole run
	Check         Report
}

func (r ChangeVotersReport) String() string {
	return fmt.Sprintf("tool start %d ms; controller %d (dir %s) observing after %d ms; add-controller %d ms wall, voter seen after %d ms; "+
		"remove-controller %d (dir %s, leader %d) %d ms wall, gone after %d ms; voters %v -> %v -> %v; "+
		"SIGKILL of 1 and 2 at %s: topic created after %d ms, quorum leader %d; longest pause between acks %d ms during the change, %d ms after the kill, %d ms overall; "+
		"acked %d, lost %d, duplicates %d, indeterminate %d",
		r.ToolStart.Milliseconds(), r.Added, r.AddedDirID, r.ObserverSeen.Milliseconds(), r.AddWall.Milliseconds(), r.AddSeen.Milliseconds(),
		r.Removed, r.RemovedDirID, r.LeaderAtRemov, r.RemoveWall.Milliseconds(), r.RemoveSeen.Milliseconds(), r.Voters[0], r.Voters[1], r.Voters[2],
		r.KillAt.Format("15:04:05.000"), r.CreateAfter.Milliseconds(), r.LeaderAfter,
		r.ChangePause.Milliseconds(), r.KillPause.Milliseconds(), r.LongestPause.Milliseconds(),
		r.Check.Acked, len(r.Check.Lost), len(r.Check.Duplicates), r.Check.Indeterminate)
}

func (o *ChangeVotersOptions) defaults() {
	if o.Topic == "" {
		o.Topic = "change-voters"
	}
	steadyDefaults(&o.Rate, &o.Before, &o.After)
	o.Tuning = o.Tuning.orDefault()
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// ChangeVoters runs the voter change under a steady idempotent acks=all
// producer: it creates the topic, produces opts.Before acknowledgements,
// starts a new controller and adds it with add-controller (voters must
// become the initial controllers and it), removes controller 1 with
// remove-controller naming its directory id (voters without 1), SIGKILLs
// controllers 1 and 2, creates a topic through a broker, which only the
// new quorum can commit, produces opts.After more, then reads the
// partition back and checks the history. Controllers 1 and 2 are left
// dead.
func ChangeVoters(ctx context.Context, opts ChangeVotersOptions) (ChangeVotersReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	var rep ChangeVotersReport
	initial := c.ControllerIDs()
	if !c.Split() || !c.cfg.QuorumBootstrap || len(initial) != 3 {
		return rep, fmt.Errorf("change voters: the %s cluster needs 3 controller-only nodes named by controller.quorum.bootstrap.servers", c.Name())
	}
	var err error
	if rep.Voters[0], _, err = c.Voters(ctx); err != nil {
		return rep, err
	}
	if !slices.Equal(rep.Voters[0], initial) {
		return rep, fmt.Errorf("voters %v before the change, want %v", rep.Voters[0], initial)
	}
	if _, rep.ToolStart, err = c.MetadataQuorumTool(ctx, opts.Kafka, "describe", "--status"); err != nil {
		return rep, err
	}
	if err := createReplicatedTopic(ctx, c, opts.Topic, 1); err != nil {
		return rep, err
	}
	if _, err := c.ISRFull(ctx, time.Minute, opts.Topic); err != nil {
		return rep, err
	}
	w, err := startWriter(c, opts.Topic, 1, opts.Rate, kgo.AllISRAcks(), opts.Tuning)
	if err != nil {
		return rep, err
	}
	defer w.close()
	if err := w.waitAcked(ctx, opts.Before, time.Minute); err != nil {
		return rep, fmt.Errorf("before the change: %w", err)
	}

	changeAt := time.Now()
	if rep.Added, err = c.AddController(ctx); err != nil {
		return rep, fmt.Errorf("start controller %d: %w", rep.Added, err)
	}
	rep.ObserverSeen = time.Since(changeAt)
	log.Info("new controller observing", zap.Int32("node", rep.Added), zap.Duration("after", rep.ObserverSeen))
	want := append(slices.Clone(initial), rep.Added)
	addAt := time.Now()
	out, took, err := c.MetadataQuorumTool(ctx, opts.Kafka, "--command-config", c.Props(rep.Added), "add-controller")
	rep.AddWall = took
	if err != nil {
		return rep, err
	}
	if !strings.Contains(out, fmt.Sprintf("Added controller %d", rep.Added)) {
		return rep, fmt.Errorf("add-controller said: %s", out)
	}
	var dirs map[int32]string
	if err := waitVoters(ctx, c, want, &rep.Voters[1], &dirs); err != nil {
		return rep, err
	}
	rep.AddSeen = time.Since(addAt)
	rep.AddedDirID = dirs[rep.Added]
	if rep.AddedDirID != c.DirectoryID(rep.Added) {
		return rep, fmt.Errorf("DescribeQuorum reports voter %d's directory id %s, its own is %s", rep.Added, rep.AddedDirID, c.DirectoryID(rep.Added))
	}
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after add-controller: %w", err)
	}

	rep.Removed, rep.RemovedDirID = initial[0], c.DirectoryID(initial[0])
	if dirs[rep.Removed] != rep.RemovedDirID {
		return rep, fmt.Errorf("DescribeQuorum reports voter %d's directory id %s, it was formatted with %s", rep.Removed, dirs[rep.Removed], rep.RemovedDirID)
	}
	rep.LeaderAtRemov = c.QuorumLeader(ctx)
	want = slices.DeleteFunc(slices.Clone(want), func(id int32) bool { return id == rep.Removed })
	removeAt := time.Now()
	out, took, err = c.MetadataQuorumTool(ctx, opts.Kafka, "remove-controller",
		"--controller-id", strconv.Itoa(int(rep.Removed)), "--controller-directory-id", rep.RemovedDirID)
	rep.RemoveWall = took
	if err != nil {
		return rep, err
	}
	if !strings.Contains(out, fmt.Sprintf("KRaft controller %d with directory id", rep.Removed)) {
		return rep, fmt.Errorf("remove-controller said: %s", out)
	}
	if err := waitVoters(ctx, c, want, &rep.Voters[2], &dirs); err != nil {
		return rep, err
	}
	rep.RemoveSeen = time.Since(removeAt)
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after remove-controller: %w", err)
	}

	rep.KillAt = time.Now()
	for _, id := range initial[:2] {
		if err := c.Kill(id); err != nil {
			return rep, err
		}
	}
	log.Info("killed controllers", zap.Int32s("nodes", initial[:2]), zap.String("at", rep.KillAt.Format("15:04:05.000")))
	if err := createThroughBroker(ctx, c, opts.Topic+"-after-kill"); err != nil {
		return rep, err
	}
	rep.CreateAfter = time.Since(rep.KillAt)
	if rep.LeaderAfter = c.QuorumLeader(ctx); !slices.Contains(want, rep.LeaderAfter) || rep.LeaderAfter == initial[1] {
		return rep, fmt.Errorf("quorum leader %d after the kill; want one of %v alive", rep.LeaderAfter, want)
	}
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the kill: %w", err)
	}
	if err := w.finish(ctx); err != nil {
		return rep, err
	}
	rep.ChangePause = w.longestPauseIn(changeAt, rep.KillAt)
	rep.KillPause = w.longestPauseIn(rep.KillAt, time.Time{})
	rep.LongestPause, _ = w.longestPause()
	check, err := w.check(ctx, c, opts.Topic, nil)
	rep.Check = check
	return rep, err
}

// waitVoters waits until DescribeQuorum reports exactly want as the
// voters, keeping the last ids and directory ids seen.
func waitVoters(ctx context.Context, c *Cluster, want []int32, ids *[]int32, dirs *map[int32]string) error {
	return waitFor(ctx, time.Minute, fmt.Sprintf("voters %v", want), func(ctx context.Context) (bool, string) {
		got, d, err := c.Voters(ctx)
		if err != nil {
			return false, err.Error()
		}
		*ids, *dirs = got, d
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}

// createThroughBroker creates topic (1 partition, RF=all brokers) through
// the brokers until it is created or found to exist (an attempt that timed
// out may have committed it), for at most a minute.
func createThroughBroker(ctx context.Context, c *Cluster, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(5000)
	return waitFor(ctx, time.Minute, "topic "+topic+" created", func(ctx context.Context) (bool, string) {
		cctx, cancel := context.WithTimeout(ctx, 8*time.Second)
		defer cancel()
		resp, err := adm.CreateTopic(cctx, 1, int16(len(c.IDs())), nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return true, ""
		}
		return false, err.Error()
	})
}
