package chaos

// The exactly-once run (issue 14, "a transactional consume-transform-produce
// run survives leader kills exactly once"): a franz-go GroupTransactSession
// reads a filled input topic read_committed and, in one transaction per
// poll, writes one output record per input record and commits its offsets
// (TxnOffsetCommit), aborting every tenth transaction on purpose, while the harness SIGKILLs the leader of an input or
// output partition, the transaction coordinator's broker or the group
// coordinator's, in turn, every few seconds, and restarts it. At the end a
// read_committed read of the output must hold every input exactly once and
// nothing of an aborted transaction (CheckTxn).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/zap"
)

// TxnOptions configure an exactly-once run.
type TxnOptions struct {
	Cluster    *Cluster
	Input      string // default "eos-in"
	Output     string // default "eos-out"
	Partitions int32  // of each topic (default 3), RF=all nodes, min.insync.replicas=2
	Records    int    // input records (default 10000)
	Rate       int    // input records transformed per second at most (default 200), so the run spans kills
	PerTxn     int    // input records per transaction at most (default 50)
	AbortEvery int    // abort every AbortEvery-th transaction on purpose (default 10), so aborted records are always in the output's log
	Group      string // default "eos"
	TxnID      string // default "eos-transform"
	MinUp      time.Duration
	MaxUp      time.Duration // a kill every MinUp-MaxUp (default 2-5 s)
	Down       time.Duration // how long a killed node stays down (default 1 s)
	Seed       uint64
	Tuning     ProducerTuning // only Log is used: the transformer's franz-go debug log
	Logger     *zap.Logger
	// TransactionsV1 caps the transformer's versions below KIP-890 part
	// 2 (EndTxn 4, Produce 11, TxnOffsetCommit 4), so that it runs the
	// original flow even where transaction.version 2 is finalized; else
	// franz-go runs v2 where the cluster finalizes it.
	TransactionsV1 bool
}

func (o *TxnOptions) defaults() {
	if o.Input == "" {
		o.Input = "eos-in"
	}
	if o.Output == "" {
		o.Output = "eos-out"
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.Records == 0 {
		o.Records = 10000
	}
	if o.Rate == 0 {
		o.Rate = 200
	}
	if o.PerTxn == 0 {
		o.PerTxn = 50
	}
	if o.AbortEvery == 0 {
		o.AbortEvery = 10
	}
	if o.Group == "" {
		o.Group = "eos"
	}
	if o.TxnID == "" {
		o.TxnID = "eos-transform"
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
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Kill targets of the exactly-once run.
const (
	victimInputLeader  = "input leader"
	victimOutputLeader = "output leader"
	victimTxnCoord     = "transaction coordinator"
	victimGroupCoord   = "group coordinator"
)

// TxnRunReport is what an exactly-once run showed.
type TxnRunReport struct {
	Kills        int
	KillsOf      map[string]int // kills per target kind
	Sessions     int            // transformer clients made (one more after each failed EndTxn)
	EndErrors    []string       // distinct errors of failed transactions
	ISRFullAfter time.Duration  // from the last restart to every ISR full
	Took         time.Duration
	// FinalEpoch is the transactional id's producer epoch at the end:
	// under transactions v2 every transaction bumps it, under v1 only
	// each session's InitProducerId.
	FinalEpoch int16
	Check      TxnReport
}

func (r TxnRunReport) String() string {
	return fmt.Sprintf("%d kills %v in %v, %d transformer sessions, every ISR full %d ms after the last restart, final producer epoch %d; %s; end errors %q",
		r.Kills, r.KillsOf, r.Took.Round(time.Second), r.Sessions, r.ISRFullAfter.Milliseconds(), r.FinalEpoch, r.Check.Summary(), r.EndErrors)
}

// transformer runs GroupTransactSessions until the group has committed
// every input offset.
type transformer struct {
	opts     TxnOptions
	seeds    []string
	ends     map[int32]int64 // the input's end offsets
	mu       sync.Mutex
	outcomes map[int64]TxnOutcome
	attempt  int64
	sessions int
	errSeen  map[string]bool
	errs     []string
}

// TxnExactlyOnce fills the input, runs the transformer and the kills until
// the group has committed the whole input, waits for every ISR to be full,
// reads the output back read_committed and read_uncommitted and checks it.
// Every node must be serving when it is called.
func TxnExactlyOnce(ctx context.Context, opts TxnOptions) (TxnRunReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	start := time.Now()
	rep := TxnRunReport{KillsOf: map[string]int{}}
	for _, topic := range []string{opts.Input, opts.Output} {
		if err := createReplicatedTopic(ctx, c, topic, opts.Partitions); err != nil {
			return rep, err
		}
	}
	if _, err := c.ISRFull(ctx, time.Minute, opts.Input, opts.Output); err != nil {
		return rep, err
	}
	if err := fillTopic(ctx, c, opts.Input, opts.Partitions, opts.Records); err != nil {
		return rep, err
	}
	ends, err := endOffsets(ctx, c.Bootstrap(), opts.Input)
	if err != nil {
		return rep, err
	}
	tr := &transformer{opts: opts, seeds: c.Bootstrap(), ends: ends, outcomes: map[int64]TxnOutcome{}, errSeen: map[string]bool{}}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	trDone := make(chan error, 1)
	go func() { trDone <- tr.run(runCtx) }()

	rng := rand.New(rand.NewPCG(opts.Seed, 0x656f73))
	kinds := []string{victimInputLeader, victimOutputLeader, victimTxnCoord, victimGroupCoord}
	lastRestart := time.Now()
	var trErr error
	skipped := 0 // kills not made for want of a victim, so the next kind comes next
kills:
	for {
		up := opts.MinUp + time.Duration(rng.Int64N(int64(opts.MaxUp-opts.MinUp)+1))
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case trErr = <-trDone:
			break kills
		case <-time.After(up):
		}
		kind := kinds[(rep.Kills+skipped)%len(kinds)]
		victim, err := txnVictim(ctx, c, opts, kind, rng.Int32N(opts.Partitions))
		if err != nil {
			log.Warn("no victim found", zap.String("kind", kind), zap.Error(err))
			skipped++
			continue
		}
		if err := c.Kill(victim); err != nil {
			return rep, err
		}
		rep.Kills++
		rep.KillsOf[kind]++
		log.Info("killed", zap.String("kind", kind), zap.Int32("node", victim), zap.Int("kill", rep.Kills))
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(opts.Down):
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err = c.Start(sctx, victim)
		cancel()
		if err != nil {
			return rep, fmt.Errorf("restart of node %d after kill %d: %w", victim, rep.Kills, err)
		}
		lastRestart = time.Now()
	}
	if trErr != nil {
		return rep, fmt.Errorf("transformer after %d kills: %w", rep.Kills, trErr)
	}
	if _, err := c.ISRFull(ctx, 3*time.Minute); err != nil {
		return rep, fmt.Errorf("after %d kills: %w", rep.Kills, err)
	}
	rep.ISRFullAfter = time.Since(lastRestart)
	committed, err := readTxnOutput(ctx, c, opts.Output, opts.Partitions, kgo.ReadCommitted())
	if err != nil {
		return rep, fmt.Errorf("read_committed read of the output (a transaction left open holds it back): %w", err)
	}
	uncommitted, err := readTxnOutput(ctx, c, opts.Output, opts.Partitions, kgo.ReadUncommitted())
	if err != nil {
		return rep, fmt.Errorf("read_uncommitted read of the output: %w", err)
	}
	inputs := make([]string, opts.Records)
	for i := range inputs {
		inputs[i] = strconv.Itoa(i)
	}
	tr.mu.Lock()
	rep.Check = CheckTxn(TxnHistory{Inputs: inputs, Outcomes: tr.outcomes, ReadCommitted: committed, ReadUncommitted: uncommitted})
	rep.Sessions, rep.EndErrors = tr.sessions, tr.errs
	tr.mu.Unlock()
	if rep.FinalEpoch, err = finalEpoch(ctx, c.Bootstrap(), opts.TxnID); err != nil {
		return rep, err
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// finalEpoch is the producer epoch DescribeTransactions gives id.
func finalEpoch(ctx context.Context, seeds []string, id string) (int16, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ds, err := kadm.NewClient(cl).DescribeTransactions(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("describe transaction %s: %w", id, err)
	}
	d, ok := ds[id]
	if !ok || d.Err != nil {
		return 0, fmt.Errorf("describe transaction %s: %v", id, d.Err)
	}
	return d.ProducerEpoch, nil
}

// txnVictim is the node a kill of kind hits now.
func txnVictim(ctx context.Context, c *Cluster, opts TxnOptions, kind string, partition int32) (int32, error) {
	var id int32
	var err error
	switch kind {
	case victimInputLeader:
		id, err = c.LeaderOf(ctx, opts.Input, partition)
	case victimOutputLeader:
		id, err = c.LeaderOf(ctx, opts.Output, partition)
	case victimTxnCoord:
		id, err = c.coordinatorOf(ctx, 1, opts.TxnID)
	default:
		id, err = c.coordinatorOf(ctx, 0, opts.Group)
	}
	if err == nil && id < 1 {
		err = fmt.Errorf("%s is node %d", kind, id)
	}
	return id, err
}

// run transforms until the group's committed offsets reach the input's
// end, making a new session whenever a transaction's end fails (the next
// InitProducerId fences the old one and aborts what it left open).
func (tr *transformer) run(ctx context.Context) error {
	for {
		done, err := tr.session(ctx)
		if done || ctx.Err() != nil {
			return ctx.Err()
		}
		tr.noteErr(err)
		tr.opts.Logger.Info("new transformer session", zap.Error(err))
	}
}

func (tr *transformer) noteErr(err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if msg := err.Error(); !tr.errSeen[msg] && len(tr.errSeen) < 20 {
		tr.errSeen[msg] = true
		tr.errs = append(tr.errs, msg)
	}
}

// session runs one GroupTransactSession until the input is all committed
// (true) or a transaction fails to end (the error).
func (tr *transformer) session(ctx context.Context) (bool, error) {
	o := tr.opts
	kopts := []kgo.Opt{
		kgo.SeedBrokers(tr.seeds...),
		kgo.ConsumerGroup(o.Group),
		kgo.ConsumeTopics(o.Input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.TransactionalID(o.TxnID),
		kgo.TransactionTimeout(30 * time.Second),
		kgo.DefaultProduceTopic(o.Output),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	if o.Tuning.Log != nil {
		kopts = append(kopts, kgo.WithLogger(kgo.BasicLogger(o.Tuning.Log, kgo.LogLevelDebug, func() string {
			return time.Now().Format("15:04:05.000 ")
		})))
	}
	if o.TransactionsV1 {
		v := kversion.Stable()
		v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
		v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
		v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
		kopts = append(kopts, kgo.MaxVersions(v))
	}
	s, err := kgo.NewGroupTransactSession(kopts...)
	if err != nil {
		return false, err
	}
	defer s.Close()
	tr.mu.Lock()
	tr.sessions++
	tr.mu.Unlock()
	for ctx.Err() == nil {
		if tr.allCommitted(s.Client()) {
			return true, nil
		}
		began := time.Now()
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		recs := s.PollRecords(pctx, o.PerTxn).Records()
		cancel()
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			return false, fmt.Errorf("begin: %w", err)
		}
		tr.mu.Lock()
		tr.attempt++
		attempt := tr.attempt
		tr.outcomes[attempt] = TxnUnknown
		tr.mu.Unlock()
		out := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			out[i] = &kgo.Record{Value: r.Value, Partition: r.Partition,
				Headers: []kgo.RecordHeader{{Key: "attempt", Value: []byte(strconv.FormatInt(attempt, 10))}}}
		}
		try := kgo.TransactionEndTry(attempt%int64(o.AbortEvery) != 0)
		pctx, cancel = context.WithTimeout(ctx, time.Minute)
		if err := s.ProduceSync(pctx, out...).FirstErr(); err != nil {
			tr.noteErr(fmt.Errorf("produce: %w", err))
			try = kgo.TryAbort
		}
		cancel()
		ectx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		committed, err := s.End(ectx, try)
		cancel()
		if err != nil {
			return false, fmt.Errorf("end transaction %d: %w", attempt, err)
		}
		tr.mu.Lock()
		if committed {
			tr.outcomes[attempt] = TxnCommitted
		} else {
			tr.outcomes[attempt] = TxnAborted
		}
		tr.mu.Unlock()
		if pause := time.Duration(len(recs))*time.Second/time.Duration(o.Rate) - time.Since(began); pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
	return false, ctx.Err()
}

// allCommitted says the session's group has committed the input's end on
// every partition.
func (tr *transformer) allCommitted(cl *kgo.Client) bool {
	got := cl.CommittedOffsets()[tr.opts.Input]
	for p, end := range tr.ends {
		if got[p].Offset < end {
			return false
		}
	}
	return true
}

func endOffsets(ctx context.Context, seeds []string, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(lctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// readTxnOutput reads every partition of the output from offset 0 with
// isolation: it first appends a non-transactional end record to each
// partition and reads until it has seen them all, so a read_committed read
// that stops short of it shows a transaction left open.
func readTxnOutput(ctx context.Context, c *Cluster, topic string, partitions int32, isolation kgo.IsolationLevel) ([]TxnRead, error) {
	const endValue = "end"
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	var ends []*kgo.Record
	for p := range partitions {
		ends = append(ends, &kgo.Record{Value: []byte(endValue), Partition: p})
	}
	err = prod.ProduceSync(pctx, ends...).FirstErr()
	cancel()
	prod.Close()
	if err != nil {
		return nil, fmt.Errorf("append end records to %s: %w", topic, err)
	}
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchIsolationLevel(isolation), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var out []TxnRead
	reached := map[int32]bool{}
	for len(reached) < int(partitions) {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return nil, fmt.Errorf("%d records read, end records seen on %d of %d partitions: %w", len(out), len(reached), partitions, err)
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if reached[r.Partition] {
				return
			}
			if string(r.Value) == endValue {
				reached[r.Partition] = true
				return
			}
			rd := TxnRead{Read: Read{Value: string(r.Value), Pos: Pos{r.Partition, r.Offset}}, Attempt: -1}
			for _, h := range r.Headers {
				if h.Key == "attempt" {
					rd.Attempt, _ = strconv.ParseInt(string(h.Value), 10, 64)
				}
			}
			out = append(out, rd)
		})
	}
	return out, nil
}
