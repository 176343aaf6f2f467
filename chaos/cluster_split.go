package chaos

// The controller failover of a split cluster (ClusterConfig.Controllers):
// with the metadata quorum on controller-only nodes, killing the active
// controller leaves every partition's leader and ISR where they are, so a
// producer should see at most a blip; a remaining controller must take the
// quorum over, and a partition leader killed after that must still be
// replaced (the new controller fences the dead broker and moves the
// leadership). The leader-broker kill alone is Failover's.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// ControllerFailoverOptions configure one controller failover.
type ControllerFailoverOptions struct {
	Cluster *Cluster // split roles
	Topic   string   // default "controller-failover"; 1 partition, RF=all brokers, min.insync.replicas=2
	Rate    int      // records per second (default 200)
	Before  int      // acknowledgements before the controller kill (default 2 s worth)
	After   int      // acknowledgements after each step (default 2 s worth)
	Tuning  ProducerTuning
	Logger  *zap.Logger
}

// ControllerFailoverReport is what one controller failover showed.
type ControllerFailoverReport struct {
	FaultAt         time.Time // when the active controller was SIGKILLed
	Controller      int32     // the active controller killed
	Epoch           int32     // its leader epoch
	NewController   int32     // the quorum leader first seen after it, in a later epoch
	NewEpoch        int32
	ControllerSeen  time.Duration // from the kill to a running node naming NewController
	ControllerPause time.Duration // longest gap between acks ending from the controller kill to the leader kill
	LeaderKillAt    time.Time     // when the partition's leader was SIGKILLed
	Victim          int32         // that leader
	LeaderKilledBy  int32         // the active controller then
	NewLeader       int32         // the partition leader first seen after it
	LeaderSeen      time.Duration // from the leader kill to a running broker naming NewLeader
	LeaderPause     time.Duration // longest gap between acks from the leader kill on
	LongestPause    time.Duration // over the whole run
	Check           Report
	ISR             []PartitionState
}

func (r ControllerFailoverReport) String() string {
	return fmt.Sprintf("SIGKILL at %s of active controller %d (epoch %d): new quorum leader %d (epoch %d) seen after %d ms, longest pause between acks %d ms until the leader kill; "+
		"SIGKILL at %s of leader %d (active controller %d): new leader %d seen after %d ms, longest pause %d ms; whole run's longest pause %d ms; "+
		"acked %d, lost %d, duplicates %d, indeterminate %d; ISR after: %v",
		r.FaultAt.Format("15:04:05.000"), r.Controller, r.Epoch, r.NewController, r.NewEpoch, r.ControllerSeen.Milliseconds(), r.ControllerPause.Milliseconds(),
		r.LeaderKillAt.Format("15:04:05.000"), r.Victim, r.LeaderKilledBy, r.NewLeader, r.LeaderSeen.Milliseconds(), r.LeaderPause.Milliseconds(),
		r.LongestPause.Milliseconds(), r.Check.Acked, len(r.Check.Lost), len(r.Check.Duplicates), r.Check.Indeterminate, r.ISR)
}

func (o *ControllerFailoverOptions) defaults() {
	if o.Topic == "" {
		o.Topic = "controller-failover"
	}
	steadyDefaults(&o.Rate, &o.Before, &o.After)
	o.Tuning = o.Tuning.orDefault()
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// ControllerFailover measures the active controller's death under a steady
// idempotent acks=all producer: it creates the topic, waits for its ISR to
// be full, produces opts.Before acknowledgements, SIGKILLs the active
// controller, waits for another controller to lead the quorum in a later
// epoch and opts.After more acknowledgements, SIGKILLs the partition's
// leader, waits for another broker to lead it and opts.After more
// acknowledgements, restarts both, waits for the ISR to be full and opts.After more, then
// stops, reads the partition back and checks the history. Every node must
// be serving when it is called; it leaves them all serving.
func ControllerFailover(ctx context.Context, opts ControllerFailoverOptions) (ControllerFailoverReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	var rep ControllerFailoverReport
	if !c.Split() {
		return rep, fmt.Errorf("controller failover: the %s cluster has no controller-only nodes", c.Name())
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
		return rep, fmt.Errorf("before the controller kill: %w", err)
	}
	controllers := c.ControllerIDs()
	q, err := c.describeQuorum(ctx)
	if err != nil {
		return rep, err
	}
	if rep.Controller, rep.Epoch = q.LeaderID, q.LeaderEpoch; !slices.Contains(controllers, rep.Controller) {
		return rep, fmt.Errorf("the quorum leader is %d, not one of the controllers %v", rep.Controller, controllers)
	}
	rep.FaultAt = time.Now()
	if err := c.Kill(rep.Controller); err != nil {
		return rep, err
	}
	log.Info("killed the active controller", zap.Int32("node", rep.Controller), zap.String("at", rep.FaultAt.Format("15:04:05.000")))
	err = waitFor(ctx, time.Minute, "a new quorum leader", func(ctx context.Context) (bool, string) {
		q, err := c.describeQuorum(ctx)
		if err != nil {
			return false, err.Error()
		}
		rep.NewController, rep.NewEpoch = q.LeaderID, q.LeaderEpoch
		return rep.NewController != rep.Controller && slices.Contains(controllers, rep.NewController) && rep.NewEpoch > rep.Epoch,
			fmt.Sprintf("quorum leader %d in epoch %d", rep.NewController, rep.NewEpoch)
	})
	if err != nil {
		return rep, err
	}
	rep.ControllerSeen = time.Since(rep.FaultAt)
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the new quorum leader %d: %w", rep.NewController, err)
	}

	if rep.Victim, err = c.LeaderOf(ctx, opts.Topic, 0); err != nil {
		return rep, err
	}
	if rep.Victim < 1 {
		return rep, fmt.Errorf("%s[0] has no leader after the controller kill", opts.Topic)
	}
	rep.LeaderKilledBy = c.QuorumLeader(ctx)
	rep.LeaderKillAt = time.Now()
	if err := c.Kill(rep.Victim); err != nil {
		return rep, err
	}
	log.Info("killed the partition leader", zap.Int32("node", rep.Victim), zap.Int32("controller", rep.LeaderKilledBy),
		zap.String("at", rep.LeaderKillAt.Format("15:04:05.000")))
	err = waitFor(ctx, time.Minute, "a new partition leader", func(ctx context.Context) (bool, string) {
		l, err := c.LeaderOf(ctx, opts.Topic, 0)
		if err != nil {
			return false, err.Error()
		}
		rep.NewLeader = l
		return l >= 1 && l != rep.Victim, fmt.Sprintf("leader %d", l)
	})
	if err != nil {
		return rep, err
	}
	rep.LeaderSeen = time.Since(rep.LeaderKillAt)
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the new leader %d: %w", rep.NewLeader, err)
	}

	for _, id := range []int32{rep.Victim, rep.Controller} {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := c.Start(sctx, id)
		cancel()
		if err != nil {
			return rep, fmt.Errorf("restart node %d: %w", id, err)
		}
	}
	if rep.ISR, err = c.ISRFull(ctx, 2*time.Minute, opts.Topic); err != nil {
		return rep, err
	}
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the ISR is full: %w", err)
	}
	if err := w.finish(ctx); err != nil {
		return rep, err
	}
	rep.ControllerPause = w.longestPauseIn(rep.FaultAt, rep.LeaderKillAt)
	rep.LeaderPause = w.longestPauseIn(rep.LeaderKillAt, time.Time{})
	rep.LongestPause, _ = w.longestPause()
	check, err := w.check(ctx, c, opts.Topic, nil)
	rep.Check = check
	return rep, err
}

// longestPauseIn is the longest gap between consecutive acknowledgements
// that ends after from and no later than to (to zero: no end): a gap that
// a fault at from interrupts counts whole, one that a fault at to
// interrupts belongs to that fault.
func (w *writer) longestPauseIn(from, to time.Time) time.Duration {
	w.mu.Lock()
	ts := slices.Clone(w.ackTimes)
	w.mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	for i := 1; i < len(ts); i++ {
		if ts[i].After(from) && (to.IsZero() || !ts[i].After(to)) {
			longest = max(longest, ts[i].Sub(ts[i-1]))
		}
	}
	return longest
}
