package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Options configure one run.
type Options struct {
	Target     Target
	Kills      int           // SIGKILLs to send; each is followed by a restart
	MinUp      time.Duration // shortest time the broker serves between restart and kill (default 500ms)
	MaxUp      time.Duration // longest (default 5s)
	Seed       uint64        // seeds the kill schedule
	Topic      string        // default "chaos"
	Partitions int32         // default 3
	Group      string        // consumer group; empty means a direct partition consumer
	Rate       int           // records produced per second (default 1000)
	Logger     *zap.Logger
}

func (o *Options) defaults() {
	if o.MinUp == 0 {
		o.MinUp = 500 * time.Millisecond
	}
	if o.MaxUp == 0 {
		o.MaxUp = 5 * time.Second
	}
	if o.Topic == "" {
		o.Topic = "chaos"
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.Rate == 0 {
		o.Rate = 1000
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// recorder collects the history from the producer's and consumer's goroutines.
type recorder struct {
	mu      sync.Mutex
	h       History
	errSeen map[string]bool
}

func (r *recorder) ack(rec *kgo.Record, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.h.Indeterminate++
		if msg := err.Error(); !r.errSeen[msg] && len(r.errSeen) < 20 {
			r.errSeen[msg] = true
			r.h.SendErrors = append(r.h.SendErrors, msg)
		}
		return
	}
	r.h.Acked = append(r.h.Acked, Ack{Value: string(rec.Value), Pos: Pos{rec.Partition, rec.Offset}})
}

func (r *recorder) polled(session int64, recs []*kgo.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		r.h.Polls = append(r.h.Polls, Read{Session: session, Value: string(rec.Value), Pos: Pos{rec.Partition, rec.Offset}})
	}
}

// Run starts the target, creates the topic, runs the producer and consumer
// while killing and restarting the target opts.Kills times, then stops
// producing, waits for every outstanding send to resolve, reads every
// partition from offset 0, and checks the history. The target is killed
// before Run returns.
func Run(ctx context.Context, opts Options) (Report, error) {
	opts.defaults()
	log := opts.Logger
	t := opts.Target
	defer t.Kill() //nolint:errcheck // best effort on the way out

	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := t.Start(startCtx)
	cancel()
	if err != nil {
		return Report{}, err
	}
	if err := createTopic(ctx, t.Addr(), opts.Topic, opts.Partitions); err != nil {
		return Report{}, err
	}

	rec := &recorder{errSeen: map[string]bool{}}
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(t.Addr()),
		kgo.DefaultProduceTopic(opts.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(4096),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.RetryTimeout(2*time.Minute),
	)
	if err != nil {
		return Report{}, err
	}
	defer prod.Close()

	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var pending sync.WaitGroup
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		tick := time.NewTicker(time.Second / time.Duration(opts.Rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-workCtx.Done():
				return
			case <-tick.C:
			}
			r := &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: int32(i) % opts.Partitions}
			pending.Add(1)
			rec.mu.Lock()
			rec.h.Attempted++
			rec.mu.Unlock()
			prod.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				rec.ack(r, err)
				pending.Done()
			})
		}
	}()

	consDone := make(chan error, 1)
	go func() { consDone <- consume(workCtx, []string{t.Addr()}, opts, rec) }()

	// The kill schedule.
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6368616f73))
	cycles := 0
	for cycles < opts.Kills {
		up := opts.MinUp + time.Duration(rng.Int64N(int64(opts.MaxUp-opts.MinUp)+1))
		select {
		case <-ctx.Done():
			return Report{}, ctx.Err()
		case err := <-consDone:
			return Report{}, fmt.Errorf("consumer stopped during kill cycle %d: %w", cycles, err)
		case <-time.After(up):
		}
		if err := t.Kill(); err != nil {
			return Report{}, err
		}
		cycles++
		log.Info("killed", zap.String("target", t.Name()), zap.Int("cycle", cycles), zap.Duration("up", up))
		startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := t.Start(startCtx)
		cancel()
		if err != nil {
			return Report{}, fmt.Errorf("restart after kill %d: %w", cycles, err)
		}
	}

	// Recovery is over: stop producing and let every send resolve (the
	// producer retries until RecordDeliveryTimeout).
	stopWork()
	<-prodDone
	flushCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	ferr := prod.Flush(flushCtx)
	cancel()
	if ferr != nil {
		return Report{}, fmt.Errorf("flush: %w", ferr)
	}
	pending.Wait()
	if err := <-consDone; err != nil {
		return Report{}, fmt.Errorf("consumer: %w", err)
	}

	final, err := readAll(ctx, []string{t.Addr()}, opts.Topic, opts.Partitions)
	if err != nil {
		return Report{}, fmt.Errorf("final read: %w", err)
	}
	rec.mu.Lock()
	h := rec.h
	rec.mu.Unlock()
	h.Final = final
	rep := Check(h)
	rep.Target = t.Name()
	rep.KillCycles = cycles
	return rep, nil
}

func createTopic(ctx context.Context, addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(cctx, partitions, 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w (%s)", topic, resp.Err, resp.ErrMessage)
	}
	return nil
}

// consume runs the consumer of the brokers at seeds until ctx ends: a group
// member when opts.Group is set, else a direct consumer of every partition
// from offset 0. Each assignment change, and each new client, starts a new
// session.
func consume(ctx context.Context, seeds []string, opts Options, rec *recorder) error {
	var session atomic.Int64
	newSession := func(context.Context, *kgo.Client, map[string][]int32) { session.Add(1) }
	kopts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	if opts.Group != "" {
		kopts = append(kopts,
			kgo.ConsumerGroup(opts.Group),
			kgo.ConsumeTopics(opts.Topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(6*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsAssigned(newSession),
			kgo.OnPartitionsRevoked(newSession),
			kgo.OnPartitionsLost(newSession),
			kgo.AutoCommitInterval(time.Second),
		)
	} else {
		parts := map[int32]kgo.Offset{}
		for p := range opts.Partitions {
			parts[p] = kgo.NewOffset().At(0)
		}
		kopts = append(kopts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{opts.Topic: parts}))
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	session.Add(1)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			cl.AllowRebalance()
			return nil
		}
		// Errors (a killed broker, a group being reloaded) are retried by
		// the client; only records matter here.
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		rec.polled(session.Load(), recs)
		cl.AllowRebalance()
	}
}

// readAll reads every partition of topic from its start offset to its end
// offset with a new direct consumer of the brokers at seeds.
func readAll(ctx context.Context, seeds []string, topic string, partitions int32) ([]Read, error) {
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(admCl)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	ends, err := adm.ListEndOffsets(lctx, topic)
	if err == nil {
		err = ends.Error()
	}
	cancel()
	admCl.Close()
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	want := map[int32]int64{}
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		o, ok := ends.Lookup(topic, p)
		if !ok {
			return nil, fmt.Errorf("no end offset for partition %d", p)
		}
		want[p] = o.Offset
		parts[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	next := map[int32]int64{}
	var out []Read
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return nil, fmt.Errorf("read %v of end offsets %v: %w", next, want, err)
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < want[r.Partition] {
				out = append(out, Read{Value: string(r.Value), Pos: Pos{r.Partition, r.Offset}})
			}
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
	}
	slices.SortFunc(out, func(a, b Read) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out, nil
}
