package chaos

import (
	"context"
	"fmt"
	gonet "net"
	"os"
	"testing"
	"time"
)

// slowLagTime is replica.lag.time.max.ms for the slow-follower runs, set
// in the template for both brokers (Kafka's default is 30 s).
const slowLagTime = 10 * time.Second

// slowPauseMargin is how much longer than slowLagTime Strata's producer may
// go without an acknowledgement once a follower is slowed: the follower
// still counts as caught up until it has lagged slowLagTime, the leader
// looks for lagging followers every half of it (as Kafka's isr-expiration
// task), and the shrink is then committed by the metadata quorum and
// applied before the waiting produce is answered, which 2 s covers on a
// loaded machine.
const slowPauseMargin = slowLagTime/2 + 2*time.Second

// slowRejoinWithin bounds the time from the unshaping to the ISR full on
// every broker: the follower has some tens of megabytes to fetch at veth
// speed, then its next fetch at the log end brings it back.
const slowRejoinWithin = 30 * time.Second

func slowExtra() []string {
	return []string{fmt.Sprintf("replica.lag.time.max.ms=%d", slowLagTime.Milliseconds())}
}

// netnsShapeCluster is netnsCluster, skipped where tc is missing.
func netnsShapeCluster(t *testing.T) *Netns {
	t.Helper()
	if why := TCUnavailable(); why != "" {
		t.Skipf("slow link: %s", why)
	}
	return netnsCluster(t)
}

// runSlowFollowers runs STRATA_SLOW_FOLLOWERS (default 2; needs root and tc) slow followers,
// each on its own topic, and checks what each showed; pauseWithin, when not
// zero, bounds the longest pause between acknowledgements.
func runSlowFollowers(t *testing.T, c *Cluster, net *Netns, pauseWithin time.Duration) {
	startCluster(t, c)
	reps := envInt(t, "STRATA_SLOW_FOLLOWERS", 2)
	for i := range reps {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		topic := fmt.Sprintf("slow-%d", i+1)
		opts := SlowFollowerOptions{
			Cluster: c, Net: net, Topic: topic, LagTime: slowLagTime,
			Tuning: clientLog(t, c.Name()+"-"+topic), Logger: testLogger(t),
		}
		rep, err := SlowFollower(ctx, opts)
		cancel()
		if err != nil {
			t.Fatalf("slow follower %d: %v\n%s", i+1, err, c.LogTails(3000))
		}
		t.Logf("%s slow follower %d/%d: %v", c.Name(), i+1, reps, rep)
		opts.defaults()
		checkSlowFollower(t, rep, opts.SlowFor)
		if pauseWithin > 0 && rep.LongestPause > pauseWithin {
			t.Errorf("longest pause between acknowledgements %v (from %v after the shaping), want within %v", rep.LongestPause, rep.PauseAt, pauseWithin)
		}
	}
}

// checkSlowFollower holds a run to what the issue asks of a slow follower:
// nothing acknowledged lost or duplicated, the follower dropped from the
// ISR while its link is slow, acknowledgements going on without it, and
// the ISR full again soon after the link is fast.
func checkSlowFollower(t *testing.T, rep SlowFollowerReport, slowFor time.Duration) {
	t.Helper()
	if rep.Check.Acked == 0 {
		t.Errorf("nothing acknowledged: the workload did not run")
	}
	if !rep.Check.OK() {
		t.Errorf("anomalies found: %s", rep.Check.Summary())
	}
	if rep.ShrinkAfter >= slowFor {
		t.Errorf("follower %d left the ISR %v after its link was slowed, after the %v it stayed slow", rep.Slow, rep.ShrinkAfter, slowFor)
	}
	if rep.ShrunkAcks == 0 {
		t.Errorf("no acknowledgement between the ISR shrink and the unshaping")
	}
	if rep.RejoinAfter > slowRejoinWithin {
		t.Errorf("ISR full %v after the unshaping, want within %v", rep.RejoinAfter, slowRejoinWithin)
	}
	for _, p := range rep.ISR {
		if !p.Full() {
			t.Errorf("ISR not full after the unshaping: %v", p)
		}
	}
}

// TestNetnsShape: a node's shaped link carries to it no more than the
// rate it was given, while what the node sends goes at full speed; Unshape
// gives the link its speed back. It runs with the cluster runs, not in
// `make test`: it makes the same namespaces (and so removes a running
// cluster's).
func TestNetnsShape(t *testing.T) {
	if os.Getenv("STRATA_CLUSTER") == "" && os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("network namespaces of the cluster runs: set STRATA_CLUSTER=1 or STRATA_CHAOS_KAFKA=1")
	}
	net := netnsShapeCluster(t)
	const rate = 1_000_000 // bits a second
	const perSecond = rate / 8
	before := throughput(t, net, 2, 1)
	if err := net.Shape(1, rate); err != nil {
		t.Fatal(err)
	}
	shaped := throughput(t, net, 2, 1)
	out := throughput(t, net, 1, 2)
	if err := net.Unshape(1); err != nil {
		t.Fatal(err)
	}
	after := throughput(t, net, 2, 1)
	if err := net.Unshape(1); err != nil {
		t.Errorf("unshaping a link not shaped: %v", err)
	}
	t.Logf("node 2 to node 1: %.0f KB/s, shaped to %d bit/s %.0f KB/s (node 1 to node 2 meanwhile %.0f KB/s), unshaped %.0f KB/s",
		before/1e3, rate, shaped/1e3, out/1e3, after/1e3)
	if shaped > 1.5*perSecond || shaped < perSecond/4 {
		t.Errorf("shaped to %d bytes a second, node 1 received %.0f a second", perSecond, shaped)
	}
	for what, got := range map[string]float64{"before the shaping": before, "from the shaped node": out, "after the unshaping": after} {
		if got < 10*perSecond {
			t.Errorf("%s: %.0f bytes a second, want at least %d", what, got, 10*perSecond)
		}
	}
}

// throughput is how many bytes a second a new connection from node from's
// namespace to a listener in node to's carries over one second.
func throughput(t *testing.T, net *Netns, from, to int32) float64 {
	t.Helper()
	ln, held := listenIn(t, net, to)
	var client gonet.Conn
	var err error
	inNetns(t, net, from, func() { client, err = gonet.DialTimeout("tcp", ln.Addr().String(), time.Second) })
	if err != nil {
		t.Fatalf("node %d to node %d: %v", from, to, err)
	}
	defer client.Close()
	server := <-held
	defer server.Close()
	const d = time.Second
	end := time.Now().Add(d)
	go func() {
		buf := make([]byte, 64<<10)
		_ = client.SetWriteDeadline(end)
		for {
			if _, err := client.Write(buf); err != nil {
				return
			}
		}
	}()
	if err := server.SetReadDeadline(end); err != nil {
		t.Fatal(err)
	}
	n := 0
	buf := make([]byte, 64<<10)
	for {
		k, err := server.Read(buf)
		n += k
		if err != nil {
			break
		}
	}
	return float64(n) / d.Seconds()
}

// TestKafkaClusterSlowFollower is the control: three Kafka 4.4.0 nodes in
// their own network namespaces, one follower's link slowed
// (STRATA_SLOW_FOLLOWERS times) under an idempotent acks=all producer.
func TestKafkaClusterSlowFollower(t *testing.T) {
	if os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("Apache Kafka cluster control: set STRATA_CHAOS_KAFKA=1 to run it")
	}
	net := netnsShapeCluster(t)
	runSlowFollowers(t, kafkaClusterWith(t, ClusterConfig{Dir: t.TempDir(), Netns: net, Extra: slowExtra()}), net, 0)
}

// TestStrataClusterSlowFollower is the same on three Strata nodes, whose
// producer must not wait longer than the lag time and its margin.
func TestStrataClusterSlowFollower(t *testing.T) {
	if os.Getenv("STRATA_CLUSTER") == "" {
		t.Skip("Strata cluster: set STRATA_CLUSTER=1 to run it")
	}
	net := netnsShapeCluster(t)
	c, err := NewStrataCluster(buildStrata(t), ClusterConfig{Dir: t.TempDir(), Netns: net, Extra: slowExtra()})
	if err != nil {
		t.Fatal(err)
	}
	runSlowFollowers(t, c, net, slowLagTime+slowPauseMargin)
}
