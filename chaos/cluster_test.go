package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Cluster runs (cluster.go), none of them part of `make test`:
//
//	STRATA_CHAOS_KAFKA=1        run the Apache Kafka 4.4.0 control (compat-tests/scripts/install-kafka.sh)
//	STRATA_CLUSTER=1            run the Strata cluster (issue 14)
//	STRATA_FAILOVERS=3          failover repetitions per fault (default 3 for SIGKILL, 2 for SIGSTOP;
//	                            1 round of leader and controller kills in the split run, cluster_split_test.go)
//	STRATA_FAILOVER_CONTROLLER=1 the failover's partition led by the active controller, so the fault hits both
//	STRATA_KILLS=200            random kills in the kills runs (combined and split); unset, they run for STRATA_CLUSTER_SECONDS
//	STRATA_CLUSTER_SECONDS=180  length of the kills run (default 180)
//	STRATA_KILL_PAIRS=1         the split kills run kills a controller and a broker together (ClusterKillOptions.Pairs)
//	STRATA_CHAOS_SEED=7         seed of the kill schedule (default 1)
//	STRATA_CLUSTER_CLIENT_LOG=d the producer's franz-go debug log of each run into directory d
//	                            (the exactly-once run's: the transformer's)
//	STRATA_GROUP_ROUNDS=3       group coordinator kills in the group-offsets run (cluster_txn_test.go)
//	STRATA_EOS_RECORDS=10000    input records of the exactly-once run
//	STRATA_EOS_RATE=200         input records the exactly-once run transforms per second at most
//	STRATA_PARTITIONS=3         network partitions of the leader per cluster (cluster_partition_test.go; needs root)
//	STRATA_SLOW_FOLLOWERS=2     slow followers per cluster (cluster_slow_test.go; needs root and tc)

// clientLog is the producer's debug log file for run, when
// STRATA_CLUSTER_CLIENT_LOG names a directory.
func clientLog(t *testing.T, run string) ProducerTuning {
	t.Helper()
	dir := os.Getenv("STRATA_CLUSTER_CLIENT_LOG")
	if dir == "" {
		return ProducerTuning{}
	}
	f, err := os.Create(filepath.Join(dir, run+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ProducerTuning{Log: f}
}

// failoverTarget is the pause the issue sets for a leader failover.
const failoverTarget = time.Second

func kafkaCluster(t *testing.T, extra ...string) *Cluster {
	t.Helper()
	return kafkaClusterWith(t, ClusterConfig{Dir: t.TempDir(), Extra: extra})
}

// kafkaClusterWith is the Kafka control made from cfg; it skips unless
// STRATA_CHAOS_KAFKA is set and Kafka 4.4.0 is installed.
func kafkaClusterWith(t *testing.T, cfg ClusterConfig) *Cluster {
	t.Helper()
	if os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("Apache Kafka cluster control: set STRATA_CHAOS_KAFKA=1 to run it")
	}
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skipf("Apache Kafka cluster control: %s not installed; run compat-tests/scripts/install-kafka.sh", home)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("Apache Kafka cluster control: java not installed")
	}
	c, err := NewKafkaCluster(home, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func strataCluster(t *testing.T, extra ...string) *Cluster {
	t.Helper()
	if os.Getenv("STRATA_CLUSTER") == "" {
		t.Skip("Strata cluster: set STRATA_CLUSTER=1 to run it once Strata forms a multi-node cluster (issue 14)")
	}
	c, err := NewStrataCluster(buildStrata(t), ClusterConfig{Dir: t.TempDir(), Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startCluster starts every node and kills them all when the test ends.
func startCluster(t *testing.T, c *Cluster) {
	t.Helper()
	t.Cleanup(c.KillAll)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.StartAll(ctx); err != nil {
		t.Fatalf("start %s cluster: %v\n%s", c.Name(), err, c.LogTails(3000))
	}
}

// runFailovers runs STRATA_FAILOVERS (default reps) failovers of each
// fault on one cluster, each on its own topic, and checks each history.
// Over the target pause is only reported for Kafka (mustMeetTarget
// false), and for SIGSTOP on both: a paused leader holds the producer's
// request until the client's own timeout (DefaultTuning's produce timeout
// and overhead, 3 s) whatever the broker does, and it is found paused only
// once broker.session.timeout.ms passes.
func runFailovers(t *testing.T, c *Cluster, mustMeetTarget bool) {
	startCluster(t, c)
	for _, f := range []struct {
		fault Fault
		reps  int
	}{{FaultKill, 3}, {FaultStop, 2}} {
		reps := envInt(t, "STRATA_FAILOVERS", f.reps)
		for i := range reps {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			topic := fmt.Sprintf("failover-%s-%d", f.fault, i+1)
			rep, err := Failover(ctx, FailoverOptions{
				Cluster: c, Fault: f.fault, Topic: topic, Tuning: clientLog(t, c.Name()+"-"+topic), Logger: testLogger(t),
				OnController: os.Getenv("STRATA_FAILOVER_CONTROLLER") != "",
			})
			cancel()
			if err != nil {
				t.Fatalf("%s failover %d: %v\n%s", f.fault, i+1, err, c.LogTails(3000))
			}
			t.Logf("%s failover %d/%d: %v", c.Name(), i+1, reps, rep)
			checkFailover(t, rep)
			if mustMeetTarget && f.fault == FaultKill && rep.LongestPause > failoverTarget {
				t.Errorf("%s failover %d: longest pause %v, over the %v target", f.fault, i+1, rep.LongestPause, failoverTarget)
			}
		}
	}
}

func checkFailover(t *testing.T, rep FailoverReport) {
	t.Helper()
	if rep.Check.Acked == 0 {
		t.Errorf("nothing acknowledged: the workload did not run")
	}
	if !rep.Check.OK() {
		t.Errorf("anomalies found: %s", rep.Check.Summary())
	}
	for _, p := range rep.ISR {
		if !p.Full() {
			t.Errorf("ISR not full after the failover: %v", p)
		}
	}
}

func runClusterKills(t *testing.T, c *Cluster) {
	startCluster(t, c)
	kills := envInt(t, "STRATA_KILLS", 0)
	pairs := os.Getenv("STRATA_KILL_PAIRS") != ""
	dur := time.Duration(envInt(t, "STRATA_CLUSTER_SECONDS", 180)) * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*time.Minute+dur+15*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := ClusterKills(ctx, ClusterKillOptions{
		Cluster: c, Kills: kills, Duration: dur, Seed: uint64(envInt(t, "STRATA_CHAOS_SEED", 1)), Pairs: pairs,
		Tuning: clientLog(t, c.Name()+"-kills"), Logger: testLogger(t),
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.LogTails(3000))
	}
	t.Logf("%s random kills (%v): %v", c.Name(), time.Since(start).Round(time.Second), rep)
	for _, p := range rep.ISR {
		t.Logf("  %v", p)
	}
	if rep.Kills == 0 || (kills > 0 && rep.Kills != kills) {
		t.Errorf("ran %d kills, want %d (0 means by duration)", rep.Kills, kills)
	}
	if rep.Check.Acked == 0 || rep.Check.Polled == 0 {
		t.Errorf("nothing acknowledged (%d) or polled (%d): the workload did not run", rep.Check.Acked, rep.Check.Polled)
	}
	if !rep.Check.OK() {
		t.Errorf("anomalies found: %s", rep.Check.Summary())
	}
	if c.Split() && rep.Kills >= 2 && (rep.ByRole[rolesController] == 0 || rep.ByRole[rolesBroker] == 0) {
		t.Errorf("kills by role %v: the split run must kill controllers and brokers", rep.ByRole)
	}
	if c.Split() && pairs && rep.ByRole[rolesController] != rep.ByRole[rolesBroker] {
		t.Errorf("kills by role %v: each pair must be a controller and a broker", rep.ByRole)
	}
}

// TestKafkaClusterFailover is the control: three Kafka 4.4.0 nodes, the
// leader of a 1-partition RF=3 topic killed with SIGKILL (3 times) and
// stopped with SIGSTOP (2 times) under an idempotent acks=all producer.
// Kafka fences a broker after broker.session.timeout.ms=2000, so its pause
// is reported, not held to the 1 s target.
func TestKafkaClusterFailover(t *testing.T) {
	runFailovers(t, kafkaCluster(t), false)
}

// TestStrataClusterFailover is the same on three Strata nodes, held to the
// 1 s target.
func TestStrataClusterFailover(t *testing.T) {
	runFailovers(t, strataCluster(t), true)
}

// TestKafkaClusterKills: random SIGKILLs of any Kafka node for
// STRATA_CLUSTER_SECONDS (or STRATA_KILLS kills) under the writer and a
// group consumer; nothing acknowledged lost, no duplicate, every ISR full,
// every voter at the quorum leader's log end.
func TestKafkaClusterKills(t *testing.T) {
	runClusterKills(t, kafkaCluster(t))
}

// TestStrataClusterKills is the same on three Strata nodes.
func TestStrataClusterKills(t *testing.T) {
	runClusterKills(t, strataCluster(t))
}

// TestKafkaClusterLossCaught shows the checker catches acknowledged writes
// that a broker really loses, when STRATA_CHAOS_LOSS=1 (with
// STRATA_CHAOS_KAFKA=1): Kafka with acks=1 (no idempotence) and followers
// that fetch only every 2 s (replica.fetch.min.bytes far above what arrives
// in that time, replica.fetch.wait.max.ms=2000), so when the leader is
// killed up to 2 s of what it acknowledged exists nowhere else; a follower,
// still in the ISR, takes over without it and writes new records at those
// offsets. The checker must report records lost and offsets holding two
// values. (With acks=1 its lost count also takes in the last records
// acknowledged before the final read, which ran while they were still above
// the high watermark; with acks=all an acknowledgement implies the high
// watermark passed the record.)
func TestKafkaClusterLossCaught(t *testing.T) {
	if os.Getenv("STRATA_CHAOS_LOSS") == "" {
		t.Skip("loss demonstration: set STRATA_CHAOS_LOSS=1 (and STRATA_CHAOS_KAFKA=1)")
	}
	c := kafkaCluster(t, "replica.fetch.min.bytes=100000000", "replica.fetch.wait.max.ms=2000")
	startCluster(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Failover(ctx, FailoverOptions{Cluster: c, Fault: FaultKill, Acks: kgo.LeaderAck(), Rate: 500,
		Tuning: clientLog(t, c.Name()+"-loss"), Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.LogTails(3000))
	}
	t.Logf("acks=1, followers fetching every 2 s: %v\n%s", rep, rep.Check.Summary())
	if len(rep.Check.Lost) == 0 || len(rep.Check.InconsistentOffsets) == 0 {
		t.Errorf("the checker reported %d lost and %d offsets with two values although dead leader %d acknowledged records no follower had fetched",
			len(rep.Check.Lost), len(rep.Check.InconsistentOffsets), rep.Victim)
	}
}

// TestClusterPropsNameEveryNode: each node's server.properties, from the
// one template, has its own node.id, listeners and log dir, and the same
// controller.quorum.voters naming every node's controller listener.
func TestClusterPropsNameEveryNode(t *testing.T) {
	c, err := NewStrataCluster("strata", ClusterConfig{Dir: t.TempDir(), Extra: []string{"log.segment.bytes=1048576", "broker.rack=r{id}"}})
	if err != nil {
		t.Fatal(err)
	}
	var voters []string
	for _, n := range c.nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", n.id, n.ctrlAddr))
	}
	dirs := map[string]bool{}
	for _, n := range c.nodes {
		data, err := os.ReadFile(n.props)
		if err != nil {
			t.Fatal(err)
		}
		props, err := parseLines(string(data))
		if err != nil {
			t.Fatalf("node %d: %v", n.id, err)
		}
		want := map[string]string{
			"node.id":                    fmt.Sprint(n.id),
			"process.roles":              "broker,controller",
			"controller.quorum.voters":   strings.Join(voters, ","),
			"listeners":                  "PLAINTEXT://" + n.addr + ",CONTROLLER://" + n.ctrlAddr,
			"advertised.listeners":       "PLAINTEXT://" + n.addr,
			"default.replication.factor": "3",
			"min.insync.replicas":        "2",
			"broker.session.timeout.ms":  "2000",
			"log.segment.bytes":          "1048576",
			"broker.rack":                fmt.Sprint("r", n.id),
		}
		for k, v := range want {
			if props[k] != v {
				t.Errorf("node %d: %s=%q, want %q", n.id, k, props[k], v)
			}
		}
		if dirs[props["log.dirs"]] {
			t.Errorf("node %d shares log.dirs %s", n.id, props["log.dirs"])
		}
		dirs[props["log.dirs"]] = true
	}
	if len(c.nodes) != 3 || len(c.Bootstrap()) != 3 {
		t.Errorf("%d nodes, %d bootstrap addresses; want 3", len(c.nodes), len(c.Bootstrap()))
	}
}

// parseLines reads key=value lines, refusing a key given twice.
func parseLines(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("line %q has no '='", l)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		m[k] = v
	}
	return m, nil
}
