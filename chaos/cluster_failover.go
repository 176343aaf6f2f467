package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Fault is what Failover does to the partition's leader.
type Fault string

const (
	FaultKill Fault = "SIGKILL" // kill -9, restarted once a new leader serves
	FaultStop Fault = "SIGSTOP" // stopped, continued with SIGCONT StopFor later
)

// ProducerTuning are the client-side timeouts the producer runs with: they
// bound how soon a client notices a dead or hung leader, so they are part of
// every failover figure.
type ProducerTuning struct {
	ProduceTimeout  time.Duration // the produce request's timeout field (acks=all wait)
	TimeoutOverhead time.Duration // added to it for the client's read deadline
	MetadataMinAge  time.Duration // shortest time between metadata refreshes
	RetryBackoff    time.Duration // between retries of a failed produce
	// Log, when set, gets the producer's franz-go debug log, which shows
	// what a pause was spent on (timeouts, metadata refreshes, leader moves).
	Log io.Writer
}

// DefaultTuning: a hung leader is given up on after 3 s, metadata is
// refreshed at most every 250 ms, retries wait 100 ms.
var DefaultTuning = ProducerTuning{
	ProduceTimeout:  2 * time.Second,
	TimeoutOverhead: time.Second,
	MetadataMinAge:  250 * time.Millisecond,
	RetryBackoff:    100 * time.Millisecond,
}

func (tu ProducerTuning) orDefault() ProducerTuning {
	if tu.ProduceTimeout == 0 {
		log := tu.Log
		tu = DefaultTuning
		tu.Log = log
	}
	return tu
}

// FailoverOptions configure one failover measurement.
type FailoverOptions struct {
	Cluster *Cluster
	Fault   Fault
	Topic   string        // default "failover"; created with 1 partition, RF=all nodes, min.insync.replicas=2
	Rate    int           // records per second (default 200)
	Before  int           // acknowledgements before the fault (default 2 s worth)
	After   int           // acknowledgements after the new leader is seen, and again after the ISR is full (default 2 s worth)
	StopFor time.Duration // FaultStop: how long the leader stays stopped (default 10 s)
	Acks    kgo.Acks      // the zero value means all; kgo.LeaderAck() only to show what the checker catches
	// OnController places the partition's preferred leader on the active
	// controller, so the fault hits both.
	OnController bool
	Tuning       ProducerTuning
	Logger       *zap.Logger
}

// steadyDefaults fills the steady producer's defaults of a leader-fault
// run: 200 records a second, and 2 s worth of acknowledgements before the
// fault and after each step.
func steadyDefaults(rate, before, after *int) {
	if *rate == 0 {
		*rate = 200
	}
	if *before == 0 {
		*before = 2 * *rate
	}
	if *after == 0 {
		*after = 2 * *rate
	}
}

func (o *FailoverOptions) defaults() {
	if o.Topic == "" {
		o.Topic = "failover"
	}
	steadyDefaults(&o.Rate, &o.Before, &o.After)
	if o.StopFor == 0 {
		o.StopFor = 10 * time.Second
	}
	if o.Acks == (kgo.Acks{}) {
		o.Acks = kgo.AllISRAcks()
	}
	o.Tuning = o.Tuning.orDefault()
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// FailoverReport is what one failover showed.
type FailoverReport struct {
	Fault        Fault
	FaultAt      time.Time     // when the signal was sent
	Victim       int32         // the partition's leader when the fault hit
	QuorumLeader int32         // the active controller then (-1 if unknown)
	NewLeader    int32         // the leader first seen after it
	LeaderSeen   time.Duration // from the fault to a running node naming NewLeader
	LongestPause time.Duration // longest gap between two consecutive acknowledgements over the whole run
	PauseAt      time.Duration // when that gap began, relative to the fault (negative: before it)
	Check        Report        // the history's verdict
	ISR          []PartitionState
}

func (r FailoverReport) String() string {
	return fmt.Sprintf("%s at %s of leader %d (active controller %d): longest pause between acks %d ms, starting %d ms after the fault; new leader %d seen after %d ms; acked %d, lost %d, duplicates %d, indeterminate %d; ISR after: %v",
		r.Fault, r.FaultAt.Format("15:04:05.000"), r.Victim, r.QuorumLeader, r.LongestPause.Milliseconds(), r.PauseAt.Milliseconds(), r.NewLeader, r.LeaderSeen.Milliseconds(),
		r.Check.Acked, len(r.Check.Lost), len(r.Check.Duplicates), r.Check.Indeterminate, r.ISR)
}

// writer is a steady idempotent producer that records each send's outcome
// and the time of each acknowledgement.
type writer struct {
	rec      *recorder
	cl       *kgo.Client
	mu       sync.Mutex
	ackTimes []time.Time
	ackParts []int32 // the partition of each acknowledgement in ackTimes
	stop     context.CancelFunc
	done     chan struct{}
	pending  sync.WaitGroup
}

// startWriter starts a writer at rate records per second; extra are more
// client options (hooks).
func startWriter(c *Cluster, topic string, partitions int32, rate int, acks kgo.Acks, tu ProducerTuning, extra ...kgo.Opt) (*writer, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(acks),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(4096),
		kgo.RecordDeliveryTimeout(2 * time.Minute),
		kgo.RetryTimeout(2 * time.Minute),
		kgo.ProduceRequestTimeout(tu.ProduceTimeout),
		kgo.RequestTimeoutOverhead(tu.TimeoutOverhead),
		kgo.MetadataMinAge(tu.MetadataMinAge),
		kgo.RetryBackoffFn(func(int) time.Duration { return tu.RetryBackoff }),
	}
	if tu.Log != nil {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(tu.Log, kgo.LogLevelDebug, func() string {
			return time.Now().Format("15:04:05.000 ")
		})))
	}
	if acks != kgo.AllISRAcks() {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &writer{rec: &recorder{errSeen: map[string]bool{}}, cl: cl, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r := &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: int32(i) % partitions}
			w.pending.Add(1)
			w.rec.mu.Lock()
			w.rec.h.Attempted++
			w.rec.mu.Unlock()
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				if err == nil {
					w.mu.Lock()
					w.ackTimes = append(w.ackTimes, time.Now())
					w.ackParts = append(w.ackParts, r.Partition)
					w.mu.Unlock()
				}
				w.rec.ack(r, err)
				w.pending.Done()
			})
		}
	}()
	return w, nil
}

func (w *writer) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ackTimes)
}

// waitAcked waits until n acknowledgements have come in.
func (w *writer) waitAcked(ctx context.Context, n int, timeout time.Duration) error {
	return waitFor(ctx, timeout, fmt.Sprintf("%d acknowledgements", n), func(context.Context) (bool, string) {
		got := w.acked()
		return got >= n, fmt.Sprintf("%d acknowledged", got)
	})
}

// finish stops producing and waits until every send has resolved.
func (w *writer) finish(ctx context.Context) error {
	w.stop()
	<-w.done
	fctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := w.cl.Flush(fctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	w.pending.Wait()
	w.cl.Close()
	return nil
}

// close stops the writer and its client, for a run that ends early.
// check reads topic's one partition back from c and checks the writer's
// history against it, leaving out the records unchecked says were not
// the writer's (nil: none).
func (w *writer) check(ctx context.Context, c *Cluster, topic string, unchecked func(Read) bool) (Report, error) {
	final, err := readAll(ctx, c.Bootstrap(), topic, 1)
	if err != nil {
		return Report{}, fmt.Errorf("final read: %w", err)
	}
	if unchecked != nil {
		final = slices.DeleteFunc(final, unchecked)
	}
	w.rec.mu.Lock()
	h := w.rec.h
	w.rec.mu.Unlock()
	h.Final = final
	res := Check(h)
	res.Target = c.Name()
	return res, nil
}

func (w *writer) close() {
	w.stop()
	w.cl.Close()
}

// longestPause is the longest gap between consecutive acknowledgements and
// when it began.
func (w *writer) longestPause() (time.Duration, time.Time) {
	w.mu.Lock()
	ts := slices.Clone(w.ackTimes)
	w.mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	var at time.Time
	for i := 1; i < len(ts); i++ {
		if d := ts[i].Sub(ts[i-1]); d > longest {
			longest, at = d, ts[i-1]
		}
	}
	return longest, at
}

// longestPartitionPause is the longest gap between consecutive
// acknowledgements of one partition, which partition and when the gap
// began: with several partitions the others' acknowledgements go on while
// one waits for a new leader, hiding its pause from longestPause.
func (w *writer) longestPartitionPause() (time.Duration, int32, time.Time) {
	w.mu.Lock()
	byPart := map[int32][]time.Time{}
	for i, at := range w.ackTimes {
		byPart[w.ackParts[i]] = append(byPart[w.ackParts[i]], at)
	}
	w.mu.Unlock()
	var longest time.Duration
	var part int32
	var at time.Time
	for p, ts := range byPart {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d > longest {
				longest, part, at = d, p, ts[i-1]
			}
		}
	}
	return longest, part, at
}

// createReplicatedTopic makes topic with partitions partitions replicated
// to every node, min.insync.replicas=2.
func createReplicatedTopic(ctx context.Context, c *Cluster, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	minISR := "2"
	resp, err := kadm.NewClient(cl).CreateTopic(cctx, partitions, int16(len(c.IDs())),
		map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w (%s)", topic, resp.Err, resp.ErrMessage)
	}
	return nil
}

// createLedBy makes topic with one partition replicated to every node,
// lead first (its preferred leader), min.insync.replicas=2.
func createLedBy(ctx context.Context, c *Cluster, topic string, lead int32) error {
	if lead < 1 {
		return fmt.Errorf("create topic %s: no active controller to lead it", topic)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	replicas := []int32{lead}
	for _, id := range c.IDs() {
		if id != lead {
			replicas = append(replicas, id)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("create topic %s: %d topics answered", topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create topic %s led by %d: %w", topic, lead, err)
	}
	return nil
}

// Failover measures one leader failure under a steady producer: it creates
// the topic, waits for its ISR to be full, produces opts.Before
// acknowledgements, applies the fault to the partition's leader, waits for
// another node to lead and opts.After more acknowledgements, brings the
// victim back (restart, or SIGCONT once StopFor has passed), waits for the
// ISR to be full again and opts.After more acknowledgements, then stops,
// reads the partition back and checks the history. Every node must be
// serving when it is called; it leaves them all serving.
func Failover(ctx context.Context, opts FailoverOptions) (FailoverReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	rep := FailoverReport{Fault: opts.Fault}
	create := createReplicatedTopic
	if opts.OnController {
		create = func(ctx context.Context, c *Cluster, topic string, _ int32) error {
			return createLedBy(ctx, c, topic, c.QuorumLeader(ctx))
		}
	}
	if err := create(ctx, c, opts.Topic, 1); err != nil {
		return rep, err
	}
	if _, err := c.ISRFull(ctx, time.Minute, opts.Topic); err != nil {
		return rep, err
	}
	w, err := startWriter(c, opts.Topic, 1, opts.Rate, opts.Acks, opts.Tuning)
	if err != nil {
		return rep, err
	}
	defer w.close()
	if err := w.waitAcked(ctx, opts.Before, time.Minute); err != nil {
		return rep, fmt.Errorf("before the fault: %w", err)
	}
	if rep.Victim, err = c.LeaderOf(ctx, opts.Topic, 0); err != nil {
		return rep, err
	}
	if rep.Victim < 1 {
		return rep, fmt.Errorf("%s[0] has no leader before the fault", opts.Topic)
	}
	rep.QuorumLeader = c.QuorumLeader(ctx)
	faultAt := time.Now()
	rep.FaultAt = faultAt
	switch opts.Fault {
	case FaultKill:
		err = c.Kill(rep.Victim)
	case FaultStop:
		err = c.Pause(rep.Victim)
	default:
		err = fmt.Errorf("unknown fault %q", opts.Fault)
	}
	if err != nil {
		return rep, err
	}
	log.Info("fault", zap.String("fault", string(opts.Fault)), zap.Int32("node", rep.Victim),
		zap.Int32("controller", rep.QuorumLeader), zap.String("at", faultAt.Format("15:04:05.000")))
	err = waitFor(ctx, time.Minute, "a new leader", func(ctx context.Context) (bool, string) {
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
	rep.LeaderSeen = time.Since(faultAt)
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the new leader %d: %w", rep.NewLeader, err)
	}
	switch opts.Fault {
	case FaultKill:
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err = c.Start(sctx, rep.Victim)
		cancel()
	case FaultStop:
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(time.Until(faultAt.Add(opts.StopFor))):
		}
		err = c.Resume(rep.Victim)
	}
	if err != nil {
		return rep, fmt.Errorf("bring node %d back: %w", rep.Victim, err)
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
	var pauseStart time.Time
	rep.LongestPause, pauseStart = w.longestPause()
	rep.PauseAt = pauseStart.Sub(faultAt)
	check, err := w.check(ctx, c, opts.Topic, nil)
	rep.Check = check
	return rep, err
}

// ClusterKillOptions configure a random-kills run.
type ClusterKillOptions struct {
	Cluster    *Cluster
	Kills      int           // kill this many times; 0 means for Duration
	Duration   time.Duration // default 3 min
	MinUp      time.Duration // shortest wait between a restart and the next kill (default 2 s)
	MaxUp      time.Duration // longest (default 5 s)
	Down       time.Duration // how long a killed node stays down (default 1 s)
	Seed       uint64
	Topic      string // default "chaos"
	Partitions int32  // default 3
	Rate       int    // default 300
	Group      string // default "chaos"
	// Pairs, in the split layout, follows each kill with one of a node of
	// the other role within Down, both restarted Down after the first:
	// a controller and a broker down together, as a combined node's kill
	// takes down both.
	Pairs  bool
	Tuning ProducerTuning
	Logger *zap.Logger
}

func (o *ClusterKillOptions) defaults() {
	if o.Duration == 0 {
		o.Duration = 3 * time.Minute
	}
	if o.MinUp == 0 {
		o.MinUp = 2 * time.Second
	}
	if o.MaxUp == 0 {
		o.MaxUp = 5 * time.Second
	}
	if o.Down == 0 {
		o.Down = time.Second
	}
	if o.Topic == "" {
		o.Topic = "chaos"
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.Rate == 0 {
		o.Rate = 300
	}
	if o.Group == "" {
		o.Group = "chaos"
	}
	o.Tuning = o.Tuning.orDefault()
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// ClusterKillReport is what a random-kills run showed.
type ClusterKillReport struct {
	Kills        int
	Victims      map[int32]int  // kills per node
	ByRole       map[string]int // kills per process.roles
	LongestPause time.Duration  // between two acknowledgements of any partitions
	// PartitionPause is the longest between two of one partition,
	// PausePartition's, beginning at PauseAt.
	PartitionPause time.Duration
	PausePartition int32
	PauseAt        time.Time
	// PauseKill is the last kill sent before that gap ended (0: none),
	// the one that can have caused it; PauseVictim its victim,
	// PauseKillAt when.
	PauseKill           int
	PauseVictim         int32
	PauseKillAt         time.Time
	Check               Report
	ISR                 []PartitionState // every partition of every topic after the run
	ISRFullAfter        time.Duration    // from the last restart to every ISR full
	Quorum              QuorumState      // the DescribeQuorum answer showing every voter caught up
	QuorumCaughtUpAfter time.Duration    // from the last restart to that answer
}

func (r ClusterKillReport) String() string {
	after := "before the first kill"
	if r.PauseKill > 0 {
		after = fmt.Sprintf("ending %d ms after kill %d (node %d)", r.PauseAt.Add(r.PartitionPause).Sub(r.PauseKillAt).Milliseconds(), r.PauseKill, r.PauseVictim)
	}
	return fmt.Sprintf("%d kills %v by role %v: longest pause between acks %d ms; of one partition %d ms (partition %d) at %s, %s; every ISR full %d ms after the last restart (%d partitions); quorum caught up %d ms after it (%v); %s",
		r.Kills, r.Victims, r.ByRole, r.LongestPause.Milliseconds(), r.PartitionPause.Milliseconds(), r.PausePartition, r.PauseAt.Format("15:04:05.000"), after,
		r.ISRFullAfter.Milliseconds(), len(r.ISR), r.QuorumCaughtUpAfter.Milliseconds(), r.Quorum, r.Check.Summary())
}

// ClusterKills SIGKILLs a random node every MinUp-MaxUp, restarting it Down
// later, for Kills kills or Duration, under an idempotent acks=all writer
// and a group consumer; then waits until every node reports every
// partition's ISR full and DescribeQuorum shows every controller (and in
// the split layout every broker) at the quorum leader's log end, stops
// the writer, reads everything back and checks the history. Every node
// must be serving when it is called. Any node may be the victim, a
// controller-only one too, but one at a time (or one pair, Pairs): the
// next kill waits until the last victims serve again, so at most one
// voter is down (the quorum keeps its majority) and at most one broker
// (of three, enough for min.insync.replicas=2).
func ClusterKills(ctx context.Context, opts ClusterKillOptions) (ClusterKillReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	rep := ClusterKillReport{Victims: map[int32]int{}, ByRole: map[string]int{}}
	if err := createReplicatedTopic(ctx, c, opts.Topic, opts.Partitions); err != nil {
		return rep, err
	}
	if _, err := c.ISRFull(ctx, time.Minute, opts.Topic); err != nil {
		return rep, err
	}
	w, err := startWriter(c, opts.Topic, opts.Partitions, opts.Rate, kgo.AllISRAcks(), opts.Tuning)
	if err != nil {
		return rep, err
	}
	defer w.close()
	consCtx, stopCons := context.WithCancel(ctx)
	defer stopCons()
	consDone := make(chan error, 1)
	go func() {
		consDone <- consume(consCtx, c.Bootstrap(), Options{Topic: opts.Topic, Partitions: opts.Partitions, Group: opts.Group}, w.rec)
	}()

	rng := rand.New(rand.NewPCG(opts.Seed, 0x636c7573746572))
	ids := c.nodeIDs()
	end := time.Now().Add(opts.Duration)
	lastRestart := time.Now()
	type kill struct {
		node int32
		at   time.Time
	}
	var kills []kill
	for (opts.Kills > 0 && rep.Kills < opts.Kills) || (opts.Kills == 0 && time.Now().Before(end)) {
		up := opts.MinUp + time.Duration(rng.Int64N(int64(opts.MaxUp-opts.MinUp)+1))
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case err := <-consDone:
			return rep, fmt.Errorf("consumer stopped after %d kills: %w", rep.Kills, err)
		case <-time.After(up):
		}
		killOne := func(victim int32) error {
			kills = append(kills, kill{victim, time.Now()})
			if err := c.Kill(victim); err != nil {
				return err
			}
			rep.Kills++
			rep.Victims[victim]++
			rep.ByRole[c.node(victim).roles]++
			log.Info("killed", zap.Int32("node", victim), zap.String("roles", c.node(victim).roles), zap.Int("kill", rep.Kills))
			return nil
		}
		victims := []int32{ids[rng.IntN(len(ids))]}
		if err := killOne(victims[0]); err != nil {
			return rep, err
		}
		restartAt := time.Now().Add(opts.Down)
		if opts.Pairs && c.Split() {
			other := c.ControllerIDs()
			if c.node(victims[0]).controller() {
				other = c.IDs()
			}
			victims = append(victims, other[rng.IntN(len(other))])
			select {
			case <-ctx.Done():
				return rep, ctx.Err()
			case <-time.After(time.Duration(rng.Int64N(int64(opts.Down)))):
			}
			if err := killOne(victims[1]); err != nil {
				return rep, err
			}
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(time.Until(restartAt)):
		}
		for _, victim := range victims {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			err := c.Start(sctx, victim)
			cancel()
			if err != nil {
				return rep, fmt.Errorf("restart of node %d after kill %d: %w", victim, rep.Kills, err)
			}
		}
		lastRestart = time.Now()
	}
	if rep.ISR, err = c.ISRFull(ctx, 3*time.Minute); err != nil {
		return rep, fmt.Errorf("after %d kills: %w", rep.Kills, err)
	}
	rep.ISRFullAfter = time.Since(lastRestart)
	if rep.Quorum, err = c.QuorumCaughtUp(ctx, time.Minute); err != nil {
		return rep, fmt.Errorf("after %d kills: %w", rep.Kills, err)
	}
	rep.QuorumCaughtUpAfter = time.Since(lastRestart)
	if err := w.waitAcked(ctx, w.acked()+opts.Rate, time.Minute); err != nil {
		return rep, fmt.Errorf("after the ISRs are full: %w", err)
	}
	if err := w.finish(ctx); err != nil {
		return rep, err
	}
	stopCons()
	if err := <-consDone; err != nil {
		return rep, fmt.Errorf("consumer: %w", err)
	}
	rep.LongestPause, _ = w.longestPause()
	rep.PartitionPause, rep.PausePartition, rep.PauseAt = w.longestPartitionPause()
	for i, k := range kills {
		if k.at.Before(rep.PauseAt.Add(rep.PartitionPause)) {
			rep.PauseKill, rep.PauseVictim, rep.PauseKillAt = i+1, k.node, k.at
		}
	}
	final, err := readAll(ctx, c.Bootstrap(), opts.Topic, opts.Partitions)
	if err != nil {
		return rep, fmt.Errorf("final read: %w", err)
	}
	w.rec.mu.Lock()
	h := w.rec.h
	w.rec.mu.Unlock()
	h.Final = final
	rep.Check = Check(h)
	rep.Check.Target = c.Name()
	rep.Check.KillCycles = rep.Kills
	return rep, nil
}
