package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Result is one workload on one broker in one mode.
type Result struct {
	Workload   string
	Broker     Kind
	Mode       Mode
	Records    int64
	Bytes      int64 // value bytes
	Seconds    float64
	CPUSeconds float64
	PeakRSS    int64
	// Latencies in nanoseconds, sorted (produce-to-ack, or produce-to-consume for W5).
	Latencies []int64 `json:",omitempty"`
	// Millis holds start-up and recovery times (W7) and failover pauses,
	// keyed by what was timed.
	Millis map[string]float64
	// Lost and Duplicates are what a failover's history check found;
	// ControllerKilled says its killed leader was the active controller too.
	Lost, Duplicates int  `json:",omitempty"`
	ControllerKilled bool `json:",omitempty"`
	Note             string
}

// RecordsPerSec is the measured rate.
func (r *Result) RecordsPerSec() float64 {
	if r.Seconds == 0 {
		return 0
	}
	return float64(r.Records) / r.Seconds
}

// MBPerSec is value bytes per second in MB (10^6).
func (r *Result) MBPerSec() float64 {
	if r.Seconds == 0 {
		return 0
	}
	return float64(r.Bytes) / r.Seconds / 1e6
}

// Quantile of the sorted latencies in milliseconds.
func (r *Result) Quantile(q float64) float64 {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(q * float64(len(r.Latencies)))
	if i >= len(r.Latencies) {
		i = len(r.Latencies) - 1
	}
	return float64(r.Latencies[i]) / 1e6
}

// randomPool is incompressible bytes record values are sliced from.
var randomPool = func() []byte {
	b := make([]byte, 64<<20)
	_, _ = rand.Read(b)
	return b
}()

func randomValue(rng *mrand.Rand, size int) []byte {
	off := rng.IntN(len(randomPool) - size)
	return randomPool[off : off+size : off+size]
}

// progress prints one line every 2 s while a workload runs.
type progress struct {
	label string
	total int64
	done  atomic.Int64
	stopC chan struct{}
	wg    sync.WaitGroup
}

func startProgress(label string, total int64) *progress {
	p := &progress{label: label, total: total, stopC: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t0 := time.Now()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-p.stopC:
				return
			case <-tick.C:
				n := p.done.Load()
				fmt.Printf("  %s: %d/%d records, %.0f records/s so far, %s\n", p.label, n, p.total,
					float64(n)/time.Since(t0).Seconds(), time.Since(t0).Round(time.Second))
			}
		}
	}()
	return p
}

func (p *progress) stop() { close(p.stopC); p.wg.Wait() }

// createTopic makes topic with d's replication factor (min.insync.replicas=2
// when replicated, unless configs say otherwise) and waits until every
// partition has a leader and its full ISR.
func createTopic(ctx context.Context, d deployment, topic string, partitions int32, configs map[string]*string) error {
	rf := d.Replication()
	if rf > 1 {
		configs = maps.Clone(configs)
		if configs == nil {
			configs = map[string]*string{}
		}
		if _, ok := configs["min.insync.replicas"]; !ok {
			two := "2"
			configs["min.insync.replicas"] = &two
		}
	}
	cl, err := kgo.NewClient(append(d.Security().kgoOpts(), kgo.SeedBrokers(d.Bootstrap()...))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, topic)
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return fmt.Errorf("create topic %s: %w", topic, resp.Err)
	}
	// Wait until every broker's metadata lists every partition with a
	// leader and all its replicas in sync: brokers learn of a new topic
	// asynchronously, and the wire producers go straight to the leaders.
	for _, addr := range d.Bootstrap() {
		if err := waitTopicReady(ctx, d.Security(), addr, topic, partitions, rf); err != nil {
			return err
		}
	}
	return nil
}

// waitTopicReady waits up to a minute until the broker at addr itself (not
// one it leads the client to) answers Metadata with every partition of
// topic led and rf replicas in sync.
func waitTopicReady(ctx context.Context, sec *clientSecurity, addr, topic string, partitions int32, rf int16) error {
	cl, err := kgo.NewClient(append(sec.kgoOpts(), kgo.SeedBrokers(addr))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	last := "no answer"
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
		if err != nil {
			last = err.Error()
			continue
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != int(partitions) {
			last = fmt.Sprintf("%d topics, error %v", len(resp.Topics), topicErr(resp))
			continue
		}
		ready := true
		for _, p := range resp.Topics[0].Partitions {
			if p.Leader < 0 || p.ErrorCode != 0 || len(p.ISR) < int(rf) {
				ready = false
				last = fmt.Sprintf("partition %d: leader %d, ISR %v, error %v", p.Partition, p.Leader, p.ISR, kerr.ErrorForCode(p.ErrorCode))
			}
		}
		if ready {
			return nil
		}
	}
	return fmt.Errorf("topic %s not ready on %s: %s", topic, addr, last)
}

func topicErr(resp *kmsg.MetadataResponse) error {
	if len(resp.Topics) == 0 {
		return nil
	}
	return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

func producerOpts(d deployment, topic string, linger time.Duration, extra ...kgo.Opt) []kgo.Opt {
	return append(append(d.Security().kgoOpts(),
		kgo.SeedBrokers(d.Bootstrap()...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // acks=all, idempotent (franz-go's default)
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(linger),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.RecordDeliveryTimeout(2*time.Minute),
	), extra...)
}

// latencySample: produce workloads time one record in this many.
const latencySample = 16

// ProduceSpec is one throughput workload.
type ProduceSpec struct {
	Name       string
	Topic      string
	Partitions int32
	Records    int64
	ValueSize  int
	Producers  int // clients, each producing Records/Producers
	Keys       bool
	Linger     time.Duration
	MaxBuf     int // per client MaxBufferedRecords
	BatchBytes int // wire generator: the size of each record batch
	Configs    map[string]*string
}

// runProduce creates the topic and produces as fast as the broker takes it,
// timing from the first Produce call to the last acknowledgement.
func runProduce(ctx context.Context, d deployment, s ProduceSpec, label string) (*Result, error) {
	if err := createTopic(ctx, d, s.Topic, s.Partitions, s.Configs); err != nil {
		return nil, err
	}
	if s.Producers == 0 {
		s.Producers = 1
	}
	if s.MaxBuf == 0 {
		s.MaxBuf = 100_000
	}
	clients := make([]*kgo.Client, s.Producers)
	for i := range clients {
		cl, err := kgo.NewClient(producerOpts(d, s.Topic, s.Linger, kgo.MaxBufferedRecords(s.MaxBuf))...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		// Warm the connection and metadata so the timer measures producing.
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
			return nil, fmt.Errorf("warm-up produce: %w", err)
		}
		clients[i] = cl
	}
	lat := make([]int64, s.Records/latencySample+int64(s.Producers))
	var nlat atomic.Int64
	var firstErr atomic.Value
	pr := startProgress(label, s.Records)
	u := startUsage(d)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, cl := range clients {
		n := s.Records / int64(s.Producers)
		if i == 0 {
			n += s.Records % int64(s.Producers)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(uint64(i), 7))
			// One record in latencySample carries a closure timing it; the
			// rest share one promise, to keep the load generator cheap.
			done := func(_ *kgo.Record, err error) {
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
				pr.done.Add(1)
			}
			for j := int64(0); j < n; j++ {
				r := &kgo.Record{Value: randomValue(rng, s.ValueSize)}
				if s.Keys {
					r.Key = randomValue(rng, 16)
				}
				if j%latencySample != 0 {
					cl.Produce(ctx, r, done)
					continue
				}
				start := time.Now()
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					lat[nlat.Add(1)-1] = int64(time.Since(start))
					done(r, err)
				})
			}
			if err := cl.Flush(ctx); err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	pr.stop()
	r := &Result{Workload: s.Name, Broker: kindOf(d), Records: s.Records, Bytes: s.Records * int64(s.ValueSize), Seconds: elapsed.Seconds()}
	u.finish(r)
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, fmt.Errorf("%s: produce: %w", s.Name, err)
	}
	r.Latencies = lat[:nlat.Load()]
	slices.Sort(r.Latencies)
	return r, nil
}

// runConsume reads records records of topic from the start with one
// direct consumer.
func runConsume(ctx context.Context, d deployment, name, topic string, records int64, label string) (*Result, error) {
	cl, err := kgo.NewClient(append(d.Security().kgoOpts(), kgo.SeedBrokers(d.Bootstrap()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pr := startProgress(label, records)
	u := startUsage(d)
	t0 := time.Now()
	var n, bytes int64
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for n < records {
		fs := cl.PollFetches(cctx)
		if err := cctx.Err(); err != nil {
			pr.stop()
			return nil, fmt.Errorf("%s: consumed %d of %d: %w", name, n, records, err)
		}
		fs.EachError(func(t string, p int32, e error) { err = errors.Join(err, e) })
		if err != nil {
			pr.stop()
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) > 8 { // skip warm-up records
				n++
				bytes += int64(len(r.Value))
			}
		})
		pr.done.Store(n)
	}
	elapsed := time.Since(t0)
	pr.stop()
	r := &Result{Workload: name, Broker: kindOf(d), Records: n, Bytes: bytes, Seconds: elapsed.Seconds()}
	u.finish(r)
	return r, nil
}

// runLatency produces at a fixed rate for dur while a consumer reads the
// same topic; each value starts with its produce time, and the latency of
// a record is its consume time minus that. The first second is warm-up.
func runLatency(ctx context.Context, d deployment, name, topic string, rate int, dur time.Duration, valueSize int, label string) (*Result, error) {
	if err := createTopic(ctx, d, topic, 6, nil); err != nil {
		return nil, err
	}
	prod, err := kgo.NewClient(producerOpts(d, topic, 0, kgo.MaxBufferedRecords(1_000_000))...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(append(d.Security().kgoOpts(), kgo.SeedBrokers(d.Bootstrap()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	total := int64(float64(rate) * dur.Seconds())
	warm := int64(rate) // first second
	lat := make([]int64, 0, total)
	consumed := make(chan error, 1)
	pr := startProgress(label, total)
	go func() {
		var seen int64
		cctx, cancel := context.WithTimeout(ctx, dur+2*time.Minute)
		defer cancel()
		for seen < total {
			fs := cons.PollFetches(cctx)
			now := time.Now().UnixNano()
			if cctx.Err() != nil {
				consumed <- fmt.Errorf("consumed %d of %d: %w", seen, total, cctx.Err())
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				seq := int64(binary.BigEndian.Uint64(r.Value[8:]))
				if seq >= warm {
					lat = append(lat, now-int64(binary.BigEndian.Uint64(r.Value)))
				}
				seen++
			})
			pr.done.Store(seen)
		}
		consumed <- nil
	}()
	var firstErr atomic.Value
	u := startUsage(d)
	rng := mrand.New(mrand.NewPCG(1, 2))
	t0 := time.Now()
	for i := int64(0); i < total; {
		due := int64(time.Since(t0).Seconds() * float64(rate))
		for ; i < due && i < total; i++ {
			v := make([]byte, valueSize)
			copy(v[16:], randomValue(rng, valueSize-16))
			binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
			binary.BigEndian.PutUint64(v[8:], uint64(i))
			prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			})
		}
		time.Sleep(200 * time.Microsecond)
	}
	if err := prod.Flush(ctx); err != nil {
		return nil, err
	}
	err = <-consumed
	elapsed := time.Since(t0)
	pr.stop()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, fmt.Errorf("%s: produce: %w", name, err)
	}
	r := &Result{Workload: name, Broker: kindOf(d), Records: total, Bytes: total * int64(valueSize), Seconds: elapsed.Seconds(), Latencies: lat}
	u.finish(r)
	slices.Sort(r.Latencies)
	return r, nil
}

// firstProduce produces one record to topic until it is acknowledged and
// returns when it was.
func firstProduce(ctx context.Context, addr, topic string) (time.Time, error) {
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
			kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }),
			kgo.MetadataMinAge(10*time.Millisecond), kgo.DialTimeout(100*time.Millisecond))
		if err != nil {
			return time.Time{}, err
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = cl.ProduceSync(pctx, &kgo.Record{Value: []byte("first")}).FirstErr()
		cancel()
		cl.Close()
		if err == nil {
			return time.Now(), nil
		}
		if ctx.Err() != nil {
			return time.Time{}, fmt.Errorf("no produce answered: %w (last: %v)", ctx.Err(), err)
		}
		time.Sleep(time.Millisecond)
	}
}

// timedStart starts b and returns the time from launch to the first
// acknowledged produce to topic (which exists in b's data dir).
func timedStart(ctx context.Context, b Broker, topic string) (time.Duration, error) {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	started := make(chan error, 1)
	t0 := time.Now()
	go func() { started <- b.Start(sctx) }()
	t1, err := firstProduce(sctx, b.Addr(), topic)
	if err != nil {
		cancel()
		<-started // launched or not: the caller's Kill must see the process
		return 0, err
	}
	if err := <-started; err != nil {
		return 0, err
	}
	return t1.Sub(t0), nil
}

func kindOf(d deployment) Kind { return Kind(d.Name()) }
