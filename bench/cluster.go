package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-io/strata/chaos"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The cluster pass: three brokers of each kind, all on this machine, each a
// KRaft combined node started by the chaos package's cluster launcher from
// one server.properties template (chaos/cluster.go). W1, W3 and W5 run on
// topics with replication factor 3 and min.insync.replicas=2, producing
// with acks=all from clients that bootstrap from all three brokers; then
// chaos.Failover measures the longest pause between acknowledgements when
// the partition leader is SIGKILLed.

// Failover names the failover measurement among the workloads.
const Failover = "FAILOVER"

// clusterNodes is the size of the cluster the pass runs.
const clusterNodes = 3

// ClusterKafkaJVM is kafka-server-start.sh's JVM options with a 512 MiB
// heap: three JVMs share the machine's memory with Strata's three nodes.
var ClusterKafkaJVM = append([]string{"-Xmx512m", "-Xms512m"}, KafkaJVM[2:]...)

// clusterDeployment is a running cluster as workloads see it.
type clusterDeployment struct{ *chaos.Cluster }

func (c clusterDeployment) Pids() []int {
	var pids []int
	for _, id := range c.IDs() {
		if pid := c.Pid(id); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (c clusterDeployment) Replication() int16 { return int16(len(c.IDs())) }

func (clusterDeployment) Security() *clientSecurity { return nil }

// runCluster is the cluster pass for broker kind k.
func (c *Config) runCluster(ctx context.Context, run *Run, k Kind) error {
	dir := filepath.Join(c.WorkDir, fmt.Sprintf("%s-%s", k, Cluster))
	_ = os.RemoveAll(dir)
	if !c.Keep {
		defer os.RemoveAll(dir)
	}
	cfg := chaos.ClusterConfig{Nodes: clusterNodes, Dir: dir, KafkaJVM: ClusterKafkaJVM}
	var cl *chaos.Cluster
	var err error
	switch k {
	case Strata:
		cl, err = chaos.NewStrataCluster(c.StrataBin, cfg)
	case Kafka:
		cl, err = chaos.NewKafkaCluster(c.KafkaHome, cfg)
	default:
		err = fmt.Errorf("unknown broker %q", k)
	}
	if err != nil {
		return err
	}
	defer cl.KillAll()
	fmt.Printf("== %s (%s): starting %d nodes at %v\n", k, Cluster, clusterNodes, cl.Bootstrap())
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	err = cl.StartAll(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("start the cluster: %w", err)
	}
	d := clusterDeployment{cl}
	add := run.adder(Cluster)
	label := func(w string) string { return fmt.Sprintf("%s %s %s", w, k, Cluster) }
	// A failed workload leaves the cluster serving: note it and go on.
	note := func(err error) {
		if err != nil {
			msg := fmt.Sprintf("%s %s: %v", k, Cluster, err)
			fmt.Println("ERROR", msg)
			run.Errors = append(run.Errors, msg)
		}
	}
	// wire runs a wire-generator workload, and once more on a new topic when
	// a partition's leader moved under it: the generator does not follow a
	// leader as a client does, and on a busy machine a broker that misses
	// heartbeats for broker.session.timeout.ms (2 s) is fenced and loses its
	// leaderships for a while.
	wire := func(s ProduceSpec) (*Result, error) {
		r, err := runProduceWire(ctx, d, s, label(s.Name))
		if err == nil || !errors.Is(err, kerr.NotLeaderForPartition) {
			return r, err
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		msg := fmt.Sprintf("%s %s %s: a leader moved during the first attempt (%s); measured again on a new topic", s.Name, k, Cluster, first)
		fmt.Println("   " + msg)
		run.Notes = append(run.Notes, msg)
		s.Topic += "-again"
		return runProduceWire(ctx, d, s, label(s.Name))
	}
	if c.want("W1") {
		note(add(wire(ProduceSpec{Name: "W1", Topic: "w1", Partitions: 6, Records: c.ClusterW1Records, ValueSize: 100, BatchBytes: c.BatchBytes})))
	}
	if c.want("W3") {
		note(add(wire(w3Spec(c.ClusterW3Records))))
	}
	if c.want("W5") {
		note(add(runLatency(ctx, d, "W5", "w5", c.W5Rate, c.W5Duration, 100, label("W5"))))
	}
	if c.want(Failover) {
		for i := range c.Failovers {
			if err := add(failover(ctx, cl, k, i+1)); err != nil {
				return fmt.Errorf("failover %d: %w\n%s", i+1, err, cl.LogTails(2000))
			}
		}
	}
	return nil
}

// failover is one chaos.Failover with SIGKILL on its own topic, as a
// Result: Millis["pause"] is the longest pause between acknowledgements,
// Millis["leader"] the time from the kill to a new leader being named.
func failover(ctx context.Context, cl *chaos.Cluster, k Kind, n int) (*Result, error) {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	fmt.Printf("   %s %s %s: SIGKILL of the partition leader under a steady producer (run %d)\n", Failover, k, Cluster, n)
	rep, err := chaos.Failover(fctx, chaos.FailoverOptions{Cluster: cl, Fault: chaos.FaultKill, Topic: fmt.Sprintf("failover-%d", n)})
	if err != nil {
		return nil, err
	}
	r := &Result{Workload: Failover, Broker: k, Records: int64(rep.Check.Acked),
		Millis: map[string]float64{"pause": msOf(rep.LongestPause), "leader": msOf(rep.LeaderSeen)},
		Lost:   len(rep.Check.Lost), Duplicates: len(rep.Check.Duplicates), ControllerKilled: rep.Victim == rep.QuorumLeader,
		Note: rep.String()}
	if !rep.Check.OK() {
		return r, fmt.Errorf("the history check failed: %s", rep.Check.Summary())
	}
	return r, nil
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
