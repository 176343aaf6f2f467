package chaos

import (
	"context"
	"testing"
	"time"
)

func runGroupOffsets(t *testing.T, c *Cluster) {
	startCluster(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	rep, err := GroupOffsetsFailover(ctx, GroupOffsetsOptions{
		Cluster: c, Rounds: envInt(t, "STRATA_GROUP_ROUNDS", 3), Logger: testLogger(t),
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.LogTails(3000))
	}
	t.Logf("%s group offsets: %v", c.Name(), rep)
	for i, r := range rep.Rounds {
		t.Logf("  round %d: %v", i+1, r)
	}
	if len(rep.Rounds) == 0 || rep.Polled < rep.Records {
		t.Errorf("%d rounds, %d of %d records polled: the workload did not run", len(rep.Rounds), rep.Polled, rep.Records)
	}
	if !rep.OK() {
		t.Errorf("anomalies: %q", rep.Anomalies)
	}
}

// TestKafkaClusterGroupOffsets is the control: a group commits on three
// Kafka 4.4.0 nodes, its coordinator's broker is SIGKILLed (3 times), and
// the new coordinator serves the commit; the next member resumes there.
func TestKafkaClusterGroupOffsets(t *testing.T) {
	runGroupOffsets(t, kafkaCluster(t))
}

// TestStrataClusterGroupOffsets is the same on three Strata nodes.
func TestStrataClusterGroupOffsets(t *testing.T) {
	runGroupOffsets(t, strataCluster(t))
}

func runExactlyOnce(t *testing.T, c *Cluster, v1 bool) {
	startCluster(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	rep, err := TxnExactlyOnce(ctx, TxnOptions{
		Cluster: c, Records: envInt(t, "STRATA_EOS_RECORDS", 10000), Rate: envInt(t, "STRATA_EOS_RATE", 200),
		Seed: uint64(envInt(t, "STRATA_CHAOS_SEED", 1)), Tuning: clientLog(t, c.Name()+"-eos"), Logger: testLogger(t),
		TransactionsV1: v1,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.LogTails(3000))
	}
	t.Logf("%s exactly once: %v", c.Name(), rep)
	if rep.Kills == 0 || rep.Check.Commits == 0 || rep.Check.Aborts == 0 || rep.Check.InLog <= rep.Check.Visible {
		t.Errorf("%d kills, %d committed and %d aborted transactions, %d records in the output's log and %d visible: the workload did not run under kills with aborts",
			rep.Kills, rep.Check.Commits, rep.Check.Aborts, rep.Check.InLog, rep.Check.Visible)
	}
	if !rep.Check.OK() {
		t.Errorf("exactly once broken: %s", rep.Check.Summary())
	}
	// Under v2 every end bumps the epoch; under v1 only the sessions'
	// InitProducerId (and the coordinator's fencing aborts) do.
	ends := rep.Check.Commits + rep.Check.Aborts
	switch {
	case !v1 && int(rep.FinalEpoch) < ends:
		t.Errorf("transactions v2: final epoch %d below the %d transactions ended", rep.FinalEpoch, ends)
	case v1 && int(rep.FinalEpoch) >= ends:
		t.Errorf("transactions v1: final epoch %d, at least the %d transactions ended: the epoch bumped per transaction", rep.FinalEpoch, ends)
	}
}

// TestKafkaClusterExactlyOnce is the control: a GroupTransactSession
// transforms STRATA_EOS_RECORDS records on three Kafka 4.4.0 nodes while
// the leaders of its partitions and its coordinators' brokers are
// SIGKILLed every 2-5 s; the output holds each input once, nothing aborted.
// franz-go runs transactions v2 (KIP-890 part 2), as Kafka 4.4 finalizes
// transaction.version 2.
func TestKafkaClusterExactlyOnce(t *testing.T) {
	runExactlyOnce(t, kafkaCluster(t), false)
}

// TestStrataClusterExactlyOnce is the same on three Strata nodes.
func TestStrataClusterExactlyOnce(t *testing.T) {
	runExactlyOnce(t, strataCluster(t), false)
}

// TestKafkaClusterExactlyOnceV1 is the control with the transformer
// capped below KIP-890 part 2: the original flow on a cluster that
// finalizes transaction.version 2.
func TestKafkaClusterExactlyOnceV1(t *testing.T) {
	runExactlyOnce(t, kafkaCluster(t), true)
}

// TestStrataClusterExactlyOnceV1 is the same on three Strata nodes.
func TestStrataClusterExactlyOnceV1(t *testing.T) {
	runExactlyOnce(t, strataCluster(t), true)
}
