package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wireInFlight is the most Produce requests one idempotent producer keeps
// outstanding (Kafka's limit for max.in.flight.requests.per.connection with
// idempotence).
const wireInFlight = 5

// wireTemplates is how many differently filled batch templates a partition
// cycles through.
const wireTemplates = 8

type wirePending struct {
	corr    int32
	sent    time.Time
	records int64
}

// runProduceWire is a throughput workload for s.Producers idempotent
// acks=all producers on the wire generator, each with its share of
// s.Records and one connection to each partition leader, as a client has:
// each Produce request carries one batch of up to s.BatchBytes for every
// partition the broker leads, with up to five requests in flight per
// connection. With s.Keys, each record has a 16-byte random key that
// hashes (murmur2, as the Java and franz-go partitioners) to its
// partition. Latency is per request, from its write to its
// acknowledgement.
func runProduceWire(ctx context.Context, d deployment, s ProduceSpec, label string) (*Result, error) {
	if err := createTopic(ctx, d, s.Topic, s.Partitions, s.Configs); err != nil {
		return nil, err
	}
	s.Producers = max(s.Producers, 1)
	var producers []*wireProducer
	var err error
	for deadline := time.Now().Add(time.Minute); ; {
		producers, err = connectWire(ctx, d, s)
		if err == nil || !errors.Is(err, kerr.NotLeaderForPartition) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		// A leader moved after Metadata named it (a broker fenced for a
		// moment on a busy machine): ask again, as a client does.
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	defer func() {
		for _, p := range producers {
			p.w.Close()
		}
	}()
	pr := startProgress(label, s.Records)
	u := startUsage(d)
	t0 := time.Now()
	errs := make(chan error, len(producers))
	for _, p := range producers {
		go func() { errs <- p.run(ctx, &pr.done) }()
	}
	for range producers {
		err = errors.Join(err, <-errs)
	}
	elapsed := time.Since(t0)
	pr.stop()
	r := &Result{Workload: s.Name, Broker: kindOf(d), Records: s.Records, Bytes: s.Records * int64(s.ValueSize), Seconds: elapsed.Seconds()}
	u.finish(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	for _, p := range producers {
		r.Latencies = append(r.Latencies, p.lat...)
	}
	slices.Sort(r.Latencies)
	r.Note = fmt.Sprintf("wire generator, %d producer(s) on %d connection(s), %d records per batch", s.Producers, len(producers), producers[0].perBatch)
	return r, nil
}

// connectWire makes s.Producers producers, each with its share of
// s.Records and a connection to every partition leader, warmed up. On an
// error it closes what it opened.
func connectWire(ctx context.Context, d deployment, s ProduceSpec) ([]*wireProducer, error) {
	leaders, err := partitionLeaders(ctx, d, s.Topic)
	if err != nil {
		return nil, err
	}
	var producers []*wireProducer
	for i := range s.Producers {
		n := s.Records / int64(s.Producers)
		if i == 0 {
			n += s.Records % int64(s.Producers)
		}
		ps, err := newWireProducer(ctx, d.Security(), leaders, s, i, n)
		producers = append(producers, ps...)
		if err != nil {
			for _, p := range producers {
				p.w.Close()
			}
			return nil, fmt.Errorf("producer %d: %w", i, err)
		}
	}
	return producers, nil
}

// partitionLeaders is the client address of each leader of topic's
// partitions and the partitions it leads, in order, as Metadata from any of
// d's brokers says (createTopic has waited until each of them agrees).
func partitionLeaders(ctx context.Context, d deployment, topic string) (map[string][]int32, error) {
	cl, err := kgo.NewClient(append(d.Security().kgoOpts(), kgo.SeedBrokers(d.Bootstrap()...))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil {
		return nil, fmt.Errorf("metadata of %s: topic missing (%v)", topic, t.Err)
	}
	leaders := map[string][]int32{}
	for _, p := range t.Partitions.Sorted() {
		i := slices.IndexFunc(md.Brokers, func(b kadm.BrokerDetail) bool { return b.NodeID == p.Leader })
		if i < 0 {
			return nil, fmt.Errorf("%s[%d]: leader %d not among the brokers", topic, p.Partition, p.Leader)
		}
		addr := net.JoinHostPort(md.Brokers[i].Host, strconv.Itoa(int(md.Brokers[i].Port)))
		leaders[addr] = append(leaders[addr], p.Partition)
	}
	return leaders, nil
}

// wireProducer is one connection of an idempotent producer of the wire
// generator, to the leader of the partitions parts.
type wireProducer struct {
	w         *wireConn
	topic     string
	pid       int64
	epoch     int16
	parts     []int32           // partitions this connection produces to
	templates [][]batchTemplate // per entry of parts
	perBatch  int64
	remaining []int64 // records still to send, per entry of parts
	seq       []int32 // next sequence, per entry of parts
	lat       []int64
}

// newWireProducer is producer id: a connection to each leader, sharing one
// producer ID, each with its batch templates and warm-up records sent;
// everything before the timer starts. The connections it returns are open
// even when it fails.
func newWireProducer(ctx context.Context, sec *clientSecurity, leaders map[string][]int32, s ProduceSpec, id int, records int64) ([]*wireProducer, error) {
	var ps []*wireProducer
	for _, addr := range slices.Sorted(maps.Keys(leaders)) {
		w, err := sec.dial(addr)
		if err != nil {
			return ps, err
		}
		parts := leaders[addr]
		p := &wireProducer{w: w, topic: s.Topic, parts: parts, remaining: make([]int64, len(parts)), seq: make([]int32, len(parts))}
		ps = append(ps, p)
		if len(ps) == 1 {
			if p.pid, p.epoch, err = initProducerID(ctx, w); err != nil {
				return ps, err
			}
		} else {
			p.pid, p.epoch = ps[0].pid, ps[0].epoch
		}
		rng := mrand.New(mrand.NewPCG(uint64(id), 11+uint64(len(ps)-1)))
		partitioner := kgo.StickyKeyPartitioner(nil).ForTopic(s.Topic)
		p.templates = make([][]batchTemplate, len(parts))
		for i, part := range parts {
			var key func() []byte
			if s.Keys {
				key = func() []byte {
					for {
						k := randomValue(rng, 16)
						if partitioner.Partition(&kgo.Record{Key: k}, int(s.Partitions)) == int(part) {
							return k
						}
					}
				}
			}
			for range wireTemplates {
				p.templates[i] = append(p.templates[i], newBatchTemplate(rng, s.ValueSize, s.BatchBytes, key))
			}
			p.remaining[i] = records / int64(s.Partitions)
			if int64(part) < records%int64(s.Partitions) {
				p.remaining[i]++
			}
		}
		p.perBatch = int64(len(p.templates[0][0].ends))
		if err := warmWire(ctx, w, s.Topic, parts, p.templates, p.pid, p.epoch); err != nil {
			return ps, fmt.Errorf("warm-up produce to %s: %w", addr, err)
		}
		for i := range p.seq {
			p.seq[i] = 1
		}
	}
	return ps, nil
}

// run sends every remaining record, adding acknowledged ones to done.
func (p *wireProducer) run(ctx context.Context, done *atomic.Int64) error {
	// The reader holds one request it waits on, the channel the rest.
	pending := make(chan wirePending, wireInFlight-1)
	readerDone := make(chan error, 1)
	go func() {
		// The reader: responses come back in request order.
		for pend := range pending {
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = wireProduceVersion
			if err := p.w.recv(pend.corr, resp); err != nil {
				readerDone <- err
				return
			}
			for _, t := range resp.Topics {
				for _, part := range t.Partitions {
					if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
						readerDone <- fmt.Errorf("produce %s[%d]: %w", t.Topic, part.Partition, err)
						return
					}
				}
			}
			p.lat = append(p.lat, int64(time.Since(pend.sent)))
			done.Add(pend.records)
		}
		readerDone <- nil
	}()
	var buf []byte
	var bounds []int
	var sendErr error
	for round := 0; sendErr == nil; round++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version = wireProduceVersion
		req.Acks = -1
		req.TimeoutMillis = 30_000
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = p.topic
		now := time.Now().UnixMilli()
		buf, bounds = buf[:0], bounds[:0]
		var records int64
		for i, part := range p.parts {
			m := min(p.perBatch, p.remaining[i])
			if m == 0 {
				continue
			}
			t := &p.templates[i][round%wireTemplates]
			start := len(buf)
			buf = t.appendBatch(buf, int(m), p.pid, p.epoch, p.seq[i], now)
			bounds = append(bounds, start, len(buf))
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = part
			topic.Partitions = append(topic.Partitions, rp)
			p.seq[i] += int32(m)
			p.remaining[i] -= m
			records += m
		}
		if records == 0 {
			break
		}
		// buf is complete: point each partition at its batch.
		for i := range topic.Partitions {
			topic.Partitions[i].Records = buf[bounds[2*i]:bounds[2*i+1]]
		}
		req.Topics = append(req.Topics, topic)
		if err := ctx.Err(); err != nil {
			sendErr = err
			break
		}
		sent := time.Now()
		corr, err := p.w.send(req)
		if err != nil {
			sendErr = err
			break
		}
		select {
		case pending <- wirePending{corr: corr, sent: sent, records: records}:
		case err := <-readerDone:
			readerDone <- err
			sendErr = errors.Join(errors.New("reader stopped"), err)
		}
	}
	close(pending)
	return errors.Join(sendErr, <-readerDone)
}

// warmWire produces one record to each partition of parts (sequence 0),
// retrying retriable errors for up to a minute, except NOT_LEADER: Kafka
// may answer it for a moment after its metadata lists a new partition, or
// once a leader has moved, and the caller then asks Metadata again. It also
// warms the connection, so the timer measures producing.
func warmWire(ctx context.Context, w *wireConn, topic string, parts []int32, templates [][]batchTemplate, pid int64, epoch int16) error {
	deadline := time.Now().Add(time.Minute)
	for {
		req := kmsg.NewPtrProduceRequest()
		req.Version = wireProduceVersion
		req.Acks = -1
		req.TimeoutMillis = 30_000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = topic
		for i, p := range parts {
			part := kmsg.NewProduceRequestTopicPartition()
			part.Partition = p
			part.Records = templates[i][0].appendBatch(nil, 1, pid, epoch, 0, time.Now().UnixMilli())
			t.Partitions = append(t.Partitions, part)
		}
		req.Topics = append(req.Topics, t)
		resp, err := w.roundTrip(req)
		if err != nil {
			return err
		}
		err = nil
		for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
			for _, rp := range rt.Partitions {
				if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
					err = fmt.Errorf("%s[%d]: %w", rt.Topic, rp.Partition, e)
				}
			}
		}
		if err == nil {
			return nil
		}
		if errors.Is(err, kerr.NotLeaderForPartition) || !kerr.IsRetriable(errors.Unwrap(err)) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// initProducerID asks for an idempotent producer ID, retrying retriable
// errors for up to a minute (Kafka answers COORDINATOR_LOAD_IN_PROGRESS
// while it first loads __transaction_state).
func initProducerID(ctx context.Context, w *wireConn) (int64, int16, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = wireInitPIDVersion
		req.TransactionTimeoutMillis = 60_000
		resp, err := w.roundTrip(req)
		if err != nil {
			return 0, 0, err
		}
		r := resp.(*kmsg.InitProducerIDResponse)
		err = kerr.ErrorForCode(r.ErrorCode)
		if err == nil {
			return r.ProducerID, r.ProducerEpoch, nil
		}
		if !kerr.IsRetriable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return 0, 0, fmt.Errorf("init producer id: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runConsumeWire reads all of topic's partitions from offset 0 to the high
// watermark with one consumer, from the first broker d lists (the
// single-broker passes only), and checks that at least records records
// came back.
func runConsumeWire(ctx context.Context, d deployment, name, topic string, partitions int32, records int64, valueSize int, label string) (*Result, error) {
	pr := startProgress(label, records)
	defer pr.stop()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	u := startUsage(d)
	t0 := time.Now()
	if err := consumeWire(cctx, d.Security(), d.Bootstrap()[0], topic, partitions, &pr.done); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	elapsed := time.Since(t0)
	n := pr.done.Load()
	if n < records {
		return nil, fmt.Errorf("%s: read %d records to the high watermark, want at least %d", name, n, records)
	}
	r := &Result{Workload: name, Broker: kindOf(d), Records: n, Bytes: n * int64(valueSize), Seconds: elapsed.Seconds(),
		Note: "wire generator: batch headers read, CRCs checked, records counted"}
	u.finish(r)
	return r, nil
}

// consumeWire is one consumer: it reads the partitions of topic from offset 0
// until each reaches its high watermark, with one Fetch in flight, 1 MiB
// per partition and 50 MiB per response (the Java consumer's defaults),
// adding the records it counts to done. As a consumer's fetcher does, it
// asks for the next data before it checks what it got: the next offsets
// come from the batch headers, then the CRCs are verified while the broker
// works on the next response.
func consumeWire(ctx context.Context, sec *clientSecurity, addr, topic string, partitions int32, done *atomic.Int64) error {
	w, err := sec.dial(addr)
	if err != nil {
		return err
	}
	defer w.Close()
	offsets := make([]int64, partitions) // next offset to fetch, by partition
	hws := make([]int64, partitions)     // high watermark last reported, -1 before the first
	for p := range hws {
		hws[p] = -1
	}
	finished := func() bool {
		for p := range offsets {
			if hws[p] < 0 || offsets[p] < hws[p] {
				return false
			}
		}
		return true
	}
	fetch := func() (int32, error) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = wireFetchVersion
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = 50 << 20
		req.SessionEpoch = -1
		t := kmsg.NewFetchRequestTopic()
		t.Topic = topic
		for p := range partitions {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition = p
			fp.FetchOffset = offsets[p]
			fp.PartitionMaxBytes = 1 << 20
			t.Partitions = append(t.Partitions, fp)
		}
		req.Topics = append(req.Topics, t)
		return w.send(req)
	}
	corr, err := fetch()
	if err != nil {
		return err
	}
	var check [][]byte
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("at offsets %v: %w", offsets, err)
		}
		fr := kmsg.NewPtrFetchResponse()
		fr.Version = wireFetchVersion
		if err := w.recv(corr, fr); err != nil {
			return err
		}
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		check = check[:0]
		var n int64
		for _, rt := range fr.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return fmt.Errorf("fetch %s[%d]: %w", rt.Topic, rp.Partition, err)
				}
				if rt.Topic != topic || rp.Partition < 0 || rp.Partition >= partitions {
					return fmt.Errorf("fetch answered %s[%d], not asked for", rt.Topic, rp.Partition)
				}
				next, got, complete, err := countBatches(rp.RecordBatches, offsets[rp.Partition])
				if err != nil {
					return fmt.Errorf("%s[%d]: %w", rt.Topic, rp.Partition, err)
				}
				offsets[rp.Partition], hws[rp.Partition] = next, rp.HighWatermark
				n += got
				check = append(check, complete)
			}
		}
		more := !finished()
		if more {
			if corr, err = fetch(); err != nil {
				return err
			}
		}
		for _, c := range check {
			if err := checkCRCs(c); err != nil {
				return err
			}
		}
		done.Add(n)
		if !more {
			return nil
		}
	}
}
