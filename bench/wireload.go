package bench

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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

// runProduceWire is a throughput workload for one idempotent acks=all
// producer on the wire generator: each Produce request carries one batch
// of up to BatchBytes for every partition, with up to five requests in
// flight. Latency is per request, from its write to its acknowledgement.
func runProduceWire(ctx context.Context, b Broker, s ProduceSpec, label string) (*Result, error) {
	if err := createTopic(ctx, b.Addr(), s.Topic, s.Partitions, s.Configs); err != nil {
		return nil, err
	}
	w, err := dialWire(b.Addr())
	if err != nil {
		return nil, err
	}
	defer w.Close()
	pid, epoch, err := initProducerID(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	rng := mrand.New(mrand.NewPCG(uint64(s.Partitions), 11))
	templates := make([][]batchTemplate, s.Partitions)
	for p := range templates {
		for range wireTemplates {
			templates[p] = append(templates[p], newBatchTemplate(rng, s.ValueSize, s.BatchBytes))
		}
	}
	perBatch := int64(len(templates[0][0].ends))
	remaining := make([]int64, s.Partitions)
	for p := range remaining {
		remaining[p] = s.Records / int64(s.Partitions)
		if int64(p) < s.Records%int64(s.Partitions) {
			remaining[p]++
		}
	}
	seq := make([]int32, s.Partitions)
	if err := warmWire(ctx, w, s.Topic, templates, pid, epoch); err != nil {
		return nil, fmt.Errorf("%s: warm-up produce: %w", s.Name, err)
	}
	for p := range seq {
		seq[p] = 1
	}

	pending := make(chan wirePending, wireInFlight)
	readerDone := make(chan error, 1)
	pr := startProgress(label, s.Records)
	lat := make([]int64, 0, s.Records/perBatch/int64(s.Partitions)+1)
	go func() {
		// The reader: responses come back in request order.
		for p := range pending {
			produceResp := kmsg.NewPtrProduceResponse()
			produceResp.Version = wireProduceVersion
			if err := w.recv(p.corr, produceResp); err != nil {
				readerDone <- err
				return
			}
			for _, t := range produceResp.Topics {
				for _, part := range t.Partitions {
					if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
						readerDone <- fmt.Errorf("produce %s[%d]: %w", t.Topic, part.Partition, err)
						return
					}
				}
			}
			lat = append(lat, int64(time.Since(p.sent)))
			pr.done.Add(p.records)
		}
		readerDone <- nil
	}()

	u := startUsage(b)
	t0 := time.Now()
	var buf []byte
	var sendErr error
	for round := 0; sendErr == nil; round++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version = wireProduceVersion
		req.Acks = -1
		req.TimeoutMillis = 30_000
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = s.Topic
		now := time.Now().UnixMilli()
		buf = buf[:0]
		var records int64
		var bounds []int
		for p := range s.Partitions {
			m := min(perBatch, remaining[p])
			if m == 0 {
				continue
			}
			t := &templates[p][round%wireTemplates]
			start := len(buf)
			buf = t.appendBatch(buf, int(m), pid, epoch, seq[p], now)
			bounds = append(bounds, start, len(buf))
			part := kmsg.NewProduceRequestTopicPartition()
			part.Partition = p
			topic.Partitions = append(topic.Partitions, part)
			seq[p] += int32(m)
			remaining[p] -= m
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
		if ctx.Err() != nil {
			sendErr = ctx.Err()
			break
		}
		sent := time.Now()
		corr, err := w.send(req)
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
	readErr := <-readerDone
	elapsed := time.Since(t0)
	pr.stop()
	r := &Result{Workload: s.Name, Broker: kindOf(b), Records: s.Records, Bytes: s.Records * int64(s.ValueSize), Seconds: elapsed.Seconds()}
	u.finish(r)
	if err := errors.Join(sendErr, readErr); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	r.Latencies = lat
	slices.Sort(r.Latencies)
	r.Note = fmt.Sprintf("wire generator, %d records per batch", perBatch)
	return r, nil
}

// warmWire produces one record to every partition (sequence 0), retrying
// retriable errors for up to a minute: Kafka may answer NOT_LEADER for a
// moment after its metadata lists a new partition. It also warms the
// connection, so the timer measures producing.
func warmWire(ctx context.Context, w *wireConn, topic string, templates [][]batchTemplate, pid int64, epoch int16) error {
	deadline := time.Now().Add(time.Minute)
	for {
		req := kmsg.NewPtrProduceRequest()
		req.Version = wireProduceVersion
		req.Acks = -1
		req.TimeoutMillis = 30_000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = topic
		for p := range templates {
			part := kmsg.NewProduceRequestTopicPartition()
			part.Partition = int32(p)
			part.Records = templates[p][0].appendBatch(nil, 1, pid, epoch, 0, time.Now().UnixMilli())
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
		if !kerr.IsRetriable(errors.Unwrap(err)) || time.Now().After(deadline) || ctx.Err() != nil {
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
// watermark with one consumer and checks that at least records records
// came back.
func runConsumeWire(ctx context.Context, b Broker, name, topic string, partitions int32, records int64, valueSize int, label string) (*Result, error) {
	pr := startProgress(label, records)
	defer pr.stop()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	u := startUsage(b)
	t0 := time.Now()
	if err := consumeWire(cctx, b.Addr(), topic, partitions, &pr.done); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	elapsed := time.Since(t0)
	n := pr.done.Load()
	if n < records {
		return nil, fmt.Errorf("%s: read %d records to the high watermark, want at least %d", name, n, records)
	}
	r := &Result{Workload: name, Broker: kindOf(b), Records: n, Bytes: n * int64(valueSize), Seconds: elapsed.Seconds(),
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
func consumeWire(ctx context.Context, addr, topic string, count int32, done *atomic.Int64) error {
	partitions := make([]int32, count)
	for p := range partitions {
		partitions[p] = int32(p)
	}
	w, err := dialWire(addr)
	if err != nil {
		return err
	}
	defer w.Close()
	offsets := make(map[int32]int64, len(partitions))
	hws := make(map[int32]int64, len(partitions))
	for _, p := range partitions {
		hws[p] = -1
	}
	finished := func() bool {
		for _, p := range partitions {
			if offsets[p] < hws[p] || hws[p] < 0 {
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
		for _, p := range partitions {
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
			return fmt.Errorf("partitions %v at offsets %v: %w", partitions, offsets, err)
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
				if _, ok := hws[rp.Partition]; rt.Topic != topic || !ok {
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
