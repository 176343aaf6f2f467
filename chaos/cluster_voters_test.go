package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// votersConfig is the split layout (controllers 1-3, brokers 4-6) with the
// quorum named by controller.quorum.bootstrap.servers alone.
func votersConfig(t *testing.T) ClusterConfig {
	cfg := splitConfig(t)
	cfg.QuorumBootstrap = true
	return cfg
}

// runChangeVoters starts c, runs ChangeVoters with kafka-metadata-quorum
// from home and checks what it saw: voters {1,2,3} -> {1,2,3,7} -> {2,3,7},
// a topic created and a quorum leader among 3 and 7 once 1 and 2 are dead,
// and a producer history with nothing lost or duplicated.
func runChangeVoters(t *testing.T, c *Cluster, home string) {
	startCluster(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := ChangeVoters(ctx, ChangeVotersOptions{Cluster: c, Kafka: home,
		Tuning: clientLog(t, c.Name()+"-change-voters"), Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("change voters: %v\nso far: %v\n%s", err, rep, c.LogTails(3000))
	}
	t.Logf("%s voter change: %v", c.Name(), rep)
	for i, want := range [][]int32{{1, 2, 3}, {1, 2, 3, 7}, {2, 3, 7}} {
		if !slices.Equal(rep.Voters[i], want) {
			t.Errorf("voters at step %d: %v, want %v", i, rep.Voters[i], want)
		}
	}
	if rep.LeaderAfter != 3 && rep.LeaderAfter != 7 {
		t.Errorf("quorum leader %d after controllers 1 and 2 died, want 3 or 7", rep.LeaderAfter)
	}
	if rep.Check.Acked == 0 {
		t.Errorf("nothing acknowledged: the workload did not run")
	}
	if !rep.Check.OK() {
		t.Errorf("anomalies found: %s", rep.Check.Summary())
	}
}

// TestKafkaClusterChangesVoters is the control: Kafka 4.4.0, three
// controllers formatted with --initial-controllers and three brokers, under
// an idempotent acks=all producer on a 1-partition RF=3 topic: controller
// 7 (formatted with --no-initial-controllers) added with add-controller,
// controller 1 removed with remove-controller and its directory id, then
// controllers 1 and 2 SIGKILLed; {3, 7} must still commit a topic.
func TestKafkaClusterChangesVoters(t *testing.T) {
	c := kafkaClusterWith(t, votersConfig(t))
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	runChangeVoters(t, c, home)
}

// TestStrataClusterChangesVoters is the same on seven Strata nodes from
// the same properties files, no format step, remove-controller naming the
// zero directory id.
func TestStrataClusterChangesVoters(t *testing.T) {
	if os.Getenv("STRATA_CLUSTER") == "" {
		t.Skip("Strata cluster: set STRATA_CLUSTER=1 to run it")
	}
	home := toolLibs(t)
	c, err := NewStrataCluster(buildStrata(t), votersConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	runChangeVoters(t, c, home)
}

// TestClusterPropsQuorumBootstrap: with QuorumBootstrap every file names
// the three controllers' addresses as controller.quorum.bootstrap.servers
// and no controller.quorum.voters; Kafka formats each controller with
// --initial-controllers listing id@address:directory-id of all three, its
// brokers with no quorum argument.
func TestClusterPropsQuorumBootstrap(t *testing.T) {
	c, err := NewStrataCluster("strata", ClusterConfig{Dir: t.TempDir(), Controllers: 3, Nodes: 3, QuorumBootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	c.assignDirIDs()
	var servers, initial []string
	for _, id := range c.ControllerIDs() {
		n := c.node(id)
		if len(n.dirID) != 22 || n.dirID == zeroDirID {
			t.Fatalf("controller %d directory id %q", id, n.dirID)
		}
		servers = append(servers, n.ctrlAddr)
		initial = append(initial, fmt.Sprintf("%d@%s:%s", id, n.ctrlAddr, n.dirID))
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
		if got := props["controller.quorum.bootstrap.servers"]; got != strings.Join(servers, ",") {
			t.Errorf("node %d: controller.quorum.bootstrap.servers=%q, want %q", n.id, got, strings.Join(servers, ","))
		}
		if v, ok := props["controller.quorum.voters"]; ok {
			t.Errorf("node %d has controller.quorum.voters=%s", n.id, v)
		}
		args := c.kafkaQuorumFormat(n)
		want := []string{"--initial-controllers", strings.Join(initial, ",")}
		if n.broker() {
			want = nil
		}
		if !slices.Equal(args, want) {
			t.Errorf("node %d formats with %q, want %q", n.id, args, want)
		}
	}
}
