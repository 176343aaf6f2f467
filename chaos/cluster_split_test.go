package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// splitConfig is Kafka's split layout: three controller-only nodes (1-3)
// and three broker-only nodes (4-6).
func splitConfig(t *testing.T) ClusterConfig {
	return ClusterConfig{Dir: t.TempDir(), Controllers: 3, Nodes: 3}
}

// controllerBlip is the longest pause a producer may see when only the
// active controller dies: below broker.session.timeout.ms (2000), since
// no partition leader or ISR has to change.
const controllerBlip = 1500 * time.Millisecond

// runSplitFailovers runs STRATA_FAILOVERS (default 1) rounds on a split
// cluster, each (a) a Failover by SIGKILL of the partition's leader broker
// and (b) a ControllerFailover, and checks each history. Over the 1 s
// target a leader kill's pause is only reported for Kafka (mustMeetTarget
// false), which fences a dead broker after broker.session.timeout.ms;
// the controller kill's blip is held to controllerBlip on both.
func runSplitFailovers(t *testing.T, c *Cluster, mustMeetTarget bool) {
	startCluster(t, c)
	controllers, brokers := c.ControllerIDs(), c.IDs()
	reps := envInt(t, "STRATA_FAILOVERS", 1)
	for i := range reps {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		topic := fmt.Sprintf("split-leader-%d", i+1)
		rep, err := Failover(ctx, FailoverOptions{Cluster: c, Fault: FaultKill, Topic: topic,
			Tuning: clientLog(t, c.Name()+"-"+topic), Logger: testLogger(t)})
		cancel()
		if err != nil {
			t.Fatalf("leader broker kill %d: %v\n%s", i+1, err, c.LogTails(3000))
		}
		t.Logf("%s split, leader broker kill %d/%d: %v", c.Name(), i+1, reps, rep)
		checkFailover(t, rep)
		if !slices.Contains(brokers, rep.Victim) || !slices.Contains(brokers, rep.NewLeader) || !slices.Contains(controllers, rep.QuorumLeader) {
			t.Errorf("leader %d -> %d (brokers %v), active controller %d (controllers %v)",
				rep.Victim, rep.NewLeader, brokers, rep.QuorumLeader, controllers)
		}
		if mustMeetTarget && rep.LongestPause > failoverTarget {
			t.Errorf("leader broker kill %d: longest pause %v, over the %v target", i+1, rep.LongestPause, failoverTarget)
		}

		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
		topic = fmt.Sprintf("split-controller-%d", i+1)
		crep, err := ControllerFailover(ctx, ControllerFailoverOptions{Cluster: c, Topic: topic,
			Tuning: clientLog(t, c.Name()+"-"+topic), Logger: testLogger(t)})
		cancel()
		if err != nil {
			t.Fatalf("controller kill %d: %v\n%s", i+1, err, c.LogTails(3000))
		}
		t.Logf("%s split, active controller kill %d/%d: %v", c.Name(), i+1, reps, crep)
		if crep.Check.Acked == 0 {
			t.Errorf("nothing acknowledged: the workload did not run")
		}
		if !crep.Check.OK() {
			t.Errorf("anomalies found: %s", crep.Check.Summary())
		}
		for _, p := range crep.ISR {
			if !p.Full() {
				t.Errorf("ISR not full after the controller failover: %v", p)
			}
		}
		if crep.ControllerPause > controllerBlip {
			t.Errorf("controller kill %d: producing paused %v, over %v, though no partition leader died", i+1, crep.ControllerPause, controllerBlip)
		}
		if crep.LeaderKilledBy != crep.NewController || !slices.Contains(brokers, crep.NewLeader) {
			t.Errorf("leader %d -> %d (brokers %v) under active controller %d; the new one was %d",
				crep.Victim, crep.NewLeader, brokers, crep.LeaderKilledBy, crep.NewController)
		}
		if mustMeetTarget && crep.LeaderPause > failoverTarget {
			t.Errorf("controller kill %d, then leader kill: longest pause %v, over the %v target", i+1, crep.LeaderPause, failoverTarget)
		}
	}
}

// TestKafkaClusterSplitFailover is the control: Kafka 4.4.0 with three
// controller-only and three broker-only nodes, under an idempotent
// acks=all producer on a 1-partition RF=3 topic: (a) the partition's
// leader broker SIGKILLed and restarted; (b) the active controller
// SIGKILLed (a blip at most, a new quorum leader), then the partition's
// leader again, which the new controller must replace.
func TestKafkaClusterSplitFailover(t *testing.T) {
	runSplitFailovers(t, kafkaClusterWith(t, splitConfig(t)), false)
}

// TestStrataClusterSplitFailover is the same on six Strata nodes from the
// same properties files, held to the 1 s target.
func TestStrataClusterSplitFailover(t *testing.T) {
	if os.Getenv("STRATA_CLUSTER") == "" {
		t.Skip("Strata cluster: set STRATA_CLUSTER=1 to run it")
	}
	c, err := NewStrataCluster(buildStrata(t), splitConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	runSplitFailovers(t, c, true)
}

// TestKafkaClusterSplitKills: random SIGKILLs of any node of Kafka's
// split layout, controller-only or broker-only, one at a time, for
// STRATA_CLUSTER_SECONDS (or STRATA_KILLS kills) under the writer and a
// group consumer; nothing acknowledged lost, no duplicate, every ISR full,
// DescribeQuorum showing every controller and broker at the leader's log
// end, both roles killed.
func TestKafkaClusterSplitKills(t *testing.T) {
	runClusterKills(t, kafkaClusterWith(t, splitConfig(t)))
}

// TestStrataClusterSplitKills is the same on six Strata nodes.
func TestStrataClusterSplitKills(t *testing.T) {
	if os.Getenv("STRATA_CLUSTER") == "" {
		t.Skip("Strata cluster: set STRATA_CLUSTER=1 to run it")
	}
	c, err := NewStrataCluster(buildStrata(t), splitConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	runClusterKills(t, c)
}

// TestClusterPropsSplitRoles: in the split layout the controllers' files
// carry process.roles=controller and only the controller listener, the
// brokers' process.roles=broker and only the client listener (advertised,
// inter-broker), all naming the same three voters, the controllers alone;
// clients are pointed at the brokers alone.
func TestClusterPropsSplitRoles(t *testing.T) {
	c, err := NewStrataCluster("strata", ClusterConfig{Dir: t.TempDir(), Controllers: 3, Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ControllerIDs(), []int32{1, 2, 3}) || !slices.Equal(c.IDs(), []int32{4, 5, 6}) || !c.Split() {
		t.Fatalf("controllers %v, brokers %v, split %v; want 1-3, 4-6, true", c.ControllerIDs(), c.IDs(), c.Split())
	}
	var voters, bootstrap []string
	for _, id := range c.ControllerIDs() {
		voters = append(voters, fmt.Sprintf("%d@%s", id, c.node(id).ctrlAddr))
	}
	for _, id := range c.IDs() {
		bootstrap = append(bootstrap, c.Addr(id))
	}
	if !slices.Equal(c.Bootstrap(), bootstrap) {
		t.Errorf("bootstrap %v, want the brokers' %v", c.Bootstrap(), bootstrap)
	}
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
			"node.id":                        fmt.Sprint(n.id),
			"controller.quorum.voters":       strings.Join(voters, ","),
			"controller.listener.names":      "CONTROLLER",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"default.replication.factor":     "3",
			"min.insync.replicas":            "2",
			"broker.session.timeout.ms":      "2000",
		}
		if n.id <= 3 {
			want["process.roles"] = "controller"
			want["listeners"] = "CONTROLLER://" + n.ctrlAddr
			for _, k := range []string{"advertised.listeners", "inter.broker.listener.name"} {
				if v, ok := props[k]; ok {
					t.Errorf("controller %d has %s=%s", n.id, k, v)
				}
			}
		} else {
			want["process.roles"] = "broker"
			want["listeners"] = "PLAINTEXT://" + n.addr
			want["advertised.listeners"] = "PLAINTEXT://" + n.addr
			want["inter.broker.listener.name"] = "PLAINTEXT"
		}
		for k, v := range want {
			if props[k] != v {
				t.Errorf("node %d: %s=%q, want %q", n.id, k, props[k], v)
			}
		}
	}
}

// TestKafkaFormatsSplitProps: Kafka 4.4.0's StorageTool, which builds a
// KafkaConfig from each file (and so runs its validation), formats every
// node of the split layout with the static voters.
func TestKafkaFormatsSplitProps(t *testing.T) {
	c := kafkaClusterWith(t, splitConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range c.nodes {
		if err := c.format(ctx, n); err != nil {
			t.Errorf("node %d (process.roles=%s): %v", n.id, n.roles, err)
		}
	}
}
