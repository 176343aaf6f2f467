package chaos

// The slow follower (issue 14): on a cluster whose nodes run in their own
// network namespaces (netns.go), one follower of a 1-partition RF=3 topic
// (min.insync.replicas=2) gets a link slower than the partition's
// throughput. An acks=all acknowledgement waits for every replica in the
// ISR, and the slow follower stays in it until it has not caught up with
// the leader's log end for replica.lag.time.max.ms (checked every half of
// it, as Kafka's isr-expiration task does), so the producer may stall about
// that long; then the leader drops it from the ISR and acknowledgements
// resume at the two other replicas' pace. Once the link is fast again the
// follower catches up and rejoins the ISR. Nothing acknowledged may be lost
// or duplicated on the way.
//
// The partition's throughput comes from a second producer of large records
// with acks=1 (the load), not from the checked acks=all one: an acks=all
// producer alone is paced by the slow follower (Kafka reads a connection's
// next request only once the one before is answered; Strata, which reads
// ahead, was seen paced the same way), so the follower keeps reaching the
// leader's log end and, by Kafka's rule, stays in the ISR however slow it
// is. The load's records are left out of the check.
// The checked records stay small: large ones make requests that Kafka
// leaves unread in the socket (socket.receive.buffer.bytes, 100 KiB)
// while the one before waits for the slow follower, and a write that
// waits past DefaultTuning's 1 s of overhead makes the producer drop the
// connection and then send later batches first on the new one, which
// Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER over and over.
//
// The link is slowed with a token bucket (tc's tbf qdisc, which needs no
// netem) on the host-side end of the node's veth pair: its egress is
// everything the bridge sends the node, the leader's fetch responses among
// them, while what the node sends (its fetch requests, heartbeats) goes at
// full speed, but for the TCP acknowledgements coming back to it through
// the same queue (TestNetnsShape measures 1-2 GB/s from the node unshaped,
// about 120 MB/s shaped to 1 Mbit/s).

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Shape limits the traffic towards node id (other nodes' and clients'
// bytes to it) to bitsPerSecond: a token bucket of 4 KiB (a few packets,
// so the rate holds over milliseconds) on its host-side veth end, whose
// queue holds at most 400 ms of traffic at that rate; what exceeds it is
// dropped, and TCP slows down to the rate. Shaping again replaces the
// bucket.
func (n *Netns) Shape(id int32, bitsPerSecond int64) error {
	return tcCmd("qdisc", "replace", "dev", n.hostEnd(id), "root", "tbf",
		"rate", fmt.Sprintf("%dbit", bitsPerSecond), "burst", "32kbit", "latency", "400ms")
}

// Unshape gives node id's link its full speed back; a link not shaped is
// left as it is.
func (n *Netns) Unshape(id int32) error {
	out, err := exec.Command("tc", "qdisc", "del", "dev", n.hostEnd(id), "root").CombinedOutput()
	// A veth with no root qdisc of its own answers "Cannot delete qdisc
	// with handle of zero".
	if err != nil && !strings.Contains(string(out), "handle of zero") && !strings.Contains(string(out), "No such file") {
		return fmt.Errorf("tc qdisc del dev %s root: %w: %s", n.hostEnd(id), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// TCUnavailable says why links cannot be shaped here, "" when they can.
func TCUnavailable() string {
	if _, err := exec.LookPath("tc"); err != nil {
		return "iproute2's tc is not installed"
	}
	return ""
}

func tcCmd(args ...string) error {
	if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tc %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// SlowFollowerOptions configure one slow-follower run.
type SlowFollowerOptions struct {
	Cluster *Cluster // its nodes run in Net's namespaces
	Net     *Netns
	Topic   string // default "slow"
	Rate    int    // the checked producer's records per second (default 200)
	// LoadRate is the load's records per second (default 250) and
	// LoadSize their size in bytes (default 4096); LoadRate × LoadSize
	// must be well above LinkRate.
	LoadRate int
	LoadSize int
	// LinkRate is the slow follower's link in bits per second (default
	// 1 Mbit/s, an eighth of the default load's 1 MB/s).
	LinkRate int64
	Before   int // acknowledgements before the shaping (default 2 s worth)
	After    int // acknowledgements after the ISR shrinks, and after it is full again (default 2 s worth)
	// LagTime is the replica.lag.time.max.ms the cluster runs with; the
	// ISR must shrink within 3 × LagTime of the shaping.
	LagTime time.Duration
	// SlowFor is how long the link stays slow (default LagTime + 10 s).
	SlowFor time.Duration
	Tuning  ProducerTuning
	Logger  *zap.Logger
}

func (o *SlowFollowerOptions) defaults() {
	if o.Topic == "" {
		o.Topic = "slow"
	}
	steadyDefaults(&o.Rate, &o.Before, &o.After)
	if o.LoadRate == 0 {
		o.LoadRate = 250
	}
	if o.LoadSize == 0 {
		o.LoadSize = 4096
	}
	if o.LinkRate == 0 {
		o.LinkRate = 1_000_000
	}
	if o.SlowFor == 0 {
		o.SlowFor = o.LagTime + 10*time.Second
	}
	o.Tuning = o.Tuning.orDefault()
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// SlowFollowerReport is what one slow-follower run showed. Durations named
// After are from the shaping, RejoinAfter from the unshaping.
type SlowFollowerReport struct {
	Leader       int32 // the partition's leader throughout
	Slow         int32 // the follower whose link was slowed
	QuorumLeader int32 // the active controller at the shaping (-1 if unknown)
	ShrinkAfter  time.Duration
	Shrunk       PartitionState // the partition as the leader answered Metadata once it dropped Slow
	// LongestPause is the longest gap between consecutive acknowledgements
	// over the run, PauseAt when it began (from the shaping).
	LongestPause time.Duration
	PauseAt      time.Duration
	// ShrunkAcks counts acknowledgements from the ISR shrink to the
	// unshaping, ShrunkRate their rate (records a second).
	ShrunkAcks int
	ShrunkRate float64
	// SlowBehind is how many offsets the slow follower's log end was
	// behind the leader's just before the unshaping (-1 if either did not
	// answer).
	SlowBehind  int64
	RejoinAfter time.Duration // from the unshaping to every broker listing the ISR full
	ISR         []PartitionState
	LoadAcked   int // the load's acknowledged records
	Check       Report
}

func (r SlowFollowerReport) String() string {
	return fmt.Sprintf("follower %d of leader %d (active controller %d) slowed: ISR shrank %d ms after (%v); longest pause between acks %d ms, starting %d ms after the shaping; "+
		"%d acks at %.0f/s while shrunk, the slow follower %d offsets behind before the unshaping; ISR full %d ms after the unshaping; load acked %d; acked %d, lost %d, duplicates %d, indeterminate %d",
		r.Slow, r.Leader, r.QuorumLeader, r.ShrinkAfter.Milliseconds(), r.Shrunk, r.LongestPause.Milliseconds(), r.PauseAt.Milliseconds(),
		r.ShrunkAcks, r.ShrunkRate, r.SlowBehind, r.RejoinAfter.Milliseconds(), r.LoadAcked,
		r.Check.Acked, len(r.Check.Lost), len(r.Check.Duplicates), r.Check.Indeterminate)
}

// loadValuePrefix starts every load record's value.
const loadValuePrefix = "load-"

// load is a producer of large records with acks=1, unchecked.
type load struct {
	cl    *kgo.Client
	stop  context.CancelFunc
	done  chan struct{}
	mu    sync.Mutex
	acked int
}

// startLoad produces rate records a second of size bytes each (values
// loadValuePrefix and a number, then a header of bytes that do not
// compress) to topic's partition 0 with acks=1 and no compression.
func startLoad(c *Cluster, topic string, rate, size int) (*load, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(4096),
	)
	if err != nil {
		return nil, err
	}
	pad := make([]byte, size)
	x := uint32(2463534242)
	for i := range pad {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		pad[i] = byte(x)
	}
	ctx, stop := context.WithCancel(context.Background())
	l := &load{cl: cl, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r := &kgo.Record{Value: []byte(loadValuePrefix + strconv.Itoa(i)), Headers: []kgo.RecordHeader{{Key: "pad", Value: pad}}}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err == nil {
					l.mu.Lock()
					l.acked++
					l.mu.Unlock()
				}
			})
		}
	}()
	return l, nil
}

// close stops the load and its client, dropping what it has not sent.
func (l *load) close() int {
	l.stop()
	<-l.done
	l.cl.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked
}

// SlowFollower runs one slow follower: it creates the topic, waits for its
// ISR to be full and opts.Before acknowledgements, slows the link of a
// follower (one that is not the active controller when it can, so the
// metadata quorum keeps its pace), waits for the leader to drop it from the
// ISR and for opts.After acknowledgements, keeps the link slow for
// opts.SlowFor in all, gives it back its speed, waits for every broker to
// list the ISR full and opts.After more acknowledgements, stops the writer,
// reads the partition back and checks the history. Every node must be
// serving when it is called.
func SlowFollower(ctx context.Context, opts SlowFollowerOptions) (SlowFollowerReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	rep := SlowFollowerReport{SlowBehind: -1}
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
	ld, err := startLoad(c, opts.Topic, opts.LoadRate, opts.LoadSize)
	if err != nil {
		return rep, err
	}
	loadClosed := false
	defer func() {
		if !loadClosed {
			ld.close()
		}
	}()
	if err := w.waitAcked(ctx, opts.Before, time.Minute); err != nil {
		return rep, fmt.Errorf("before the shaping: %w", err)
	}
	if rep.Leader, err = c.LeaderOf(ctx, opts.Topic, 0); err != nil {
		return rep, err
	}
	if rep.Leader < 1 {
		return rep, fmt.Errorf("%s[0] has no leader before the shaping", opts.Topic)
	}
	rep.QuorumLeader = c.QuorumLeader(ctx)
	followers := slices.DeleteFunc(c.IDs(), func(id int32) bool { return id == rep.Leader })
	rep.Slow = followers[0]
	if rep.Slow == rep.QuorumLeader && len(followers) > 1 {
		rep.Slow = followers[1]
	}

	shapeAt := time.Now()
	if err := opts.Net.Shape(rep.Slow, opts.LinkRate); err != nil {
		return rep, err
	}
	defer func() { _ = opts.Net.Unshape(rep.Slow) }()
	log.Info("slowed", zap.Int32("node", rep.Slow), zap.Int64("bits/s", opts.LinkRate), zap.Int32("leader", rep.Leader))
	err = waitFor(ctx, 3*opts.LagTime, fmt.Sprintf("the leader dropping follower %d from the ISR", rep.Slow), func(ctx context.Context) (bool, string) {
		ps, err := c.Describe(ctx, rep.Leader, opts.Topic)
		if err != nil {
			return false, err.Error()
		}
		if len(ps) != 1 || ps[0].Err != nil {
			return false, fmt.Sprintf("%s has partitions %v", opts.Topic, ps)
		}
		rep.Shrunk = ps[0]
		return !slices.Contains(ps[0].ISR, rep.Slow), ps[0].String()
	})
	if err != nil {
		return rep, err
	}
	shrinkAt := time.Now()
	rep.ShrinkAfter = shrinkAt.Sub(shapeAt)
	if rep.Shrunk.Leader != rep.Leader {
		return rep, fmt.Errorf("the leader moved from %d while follower %d was slow: %v", rep.Leader, rep.Slow, rep.Shrunk)
	}
	log.Info("ISR shrank", zap.Int32("node", rep.Slow), zap.Duration("after", rep.ShrinkAfter))
	shrunkFrom := w.acked()
	if err := w.waitAcked(ctx, shrunkFrom+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the ISR shrank: %w", err)
	}
	select {
	case <-ctx.Done():
		return rep, ctx.Err()
	case <-time.After(time.Until(shapeAt.Add(opts.SlowFor))):
	}
	leaderEnd, lerr := logEndOf(ctx, c.Addr(rep.Leader), opts.Topic)
	slowEnd, serr := logEndOf(ctx, c.Addr(rep.Slow), opts.Topic)
	if lerr == nil && serr == nil {
		rep.SlowBehind = leaderEnd - slowEnd
	}

	unshapeAt := time.Now()
	rep.ShrunkAcks = w.acked() - shrunkFrom
	rep.ShrunkRate = float64(rep.ShrunkAcks) / unshapeAt.Sub(shrinkAt).Seconds()
	if err := opts.Net.Unshape(rep.Slow); err != nil {
		return rep, err
	}
	log.Info("unshaped", zap.Int32("node", rep.Slow))
	if rep.ISR, err = c.ISRFull(ctx, 2*time.Minute, opts.Topic); err != nil {
		return rep, fmt.Errorf("after the unshaping: %w", err)
	}
	rep.RejoinAfter = time.Since(unshapeAt)
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the ISR is full: %w", err)
	}
	rep.LoadAcked, loadClosed = ld.close(), true
	if err := w.finish(ctx); err != nil {
		return rep, err
	}
	var pauseStart time.Time
	rep.LongestPause, pauseStart = w.longestPause()
	rep.PauseAt = pauseStart.Sub(shapeAt)
	check, err := w.check(ctx, c, opts.Topic, func(r Read) bool { return strings.HasPrefix(r.Value, loadValuePrefix) })
	rep.Check = check
	return rep, err
}
