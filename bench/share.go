package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-io/strata/chaos"
)

// shareMembers is how many kgo.ShareGroup members SHARE runs.
const shareMembers = 3

// runShare is SHARE: records 100 B values are produced to a 6-partition
// topic first (not timed), then three kgo.ShareGroup members of one share
// group (KIP-932, share.auto.offset.reset=earliest) read and accept them
// all; the time is from the first record's delivery to the last one's
// (joining the group and the first assignment, timed apart as "first
// delivery", are not in it), and the broker's CPU and peak RSS are from the
// members' start.
func runShare(ctx context.Context, d deployment, records int64, label string) (*Result, error) {
	const topic, group = "share", "bench-share"
	if _, err := runProduce(ctx, d, ProduceSpec{Name: "SHARE", Topic: topic, Partitions: 6, Records: records, ValueSize: 100, Linger: 5 * time.Millisecond}, label+" (produce)"); err != nil {
		return nil, err
	}
	if err := setShareEarliest(ctx, d, group); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var n, bytes, first atomic.Int64 // first: the first delivery, ns after t0
	var errMu sync.Mutex
	var firstErr error
	pr := startProgress(label, records)
	u := startUsage(d)
	t0 := time.Now()
	var wg sync.WaitGroup
	for m := range shareMembers {
		cl, err := kgo.NewClient(append(d.Security().kgoOpts(), kgo.SeedBrokers(d.Bootstrap()...), kgo.ShareGroup(group),
			kgo.ConsumeTopics(topic), kgo.ClientID("bench-share-"+strconv.Itoa(m)))...)
		if err != nil {
			cancel()
			wg.Wait()
			pr.stop()
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for n.Load() < records && cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachError(func(_ string, _ int32, e error) {
					if !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) {
						errMu.Lock()
						firstErr = errors.Join(firstErr, e)
						errMu.Unlock()
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					if len(r.Value) > 8 && r.DeliveryCount() == 1 { // not the warm-up records, each record once
						first.CompareAndSwap(0, int64(time.Since(t0)))
						bytes.Add(int64(len(r.Value)))
						pr.done.Store(n.Add(1))
					}
				})
				cl.MarkAcks(kgo.AckAccept)
				if n.Load() >= records {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	pr.stop()
	if got := n.Load(); got < records {
		return nil, fmt.Errorf("SHARE: %d of %d records delivered (%v)", got, records, errors.Join(firstErr, ctx.Err()))
	}
	join := time.Duration(first.Load())
	r := &Result{Workload: "SHARE", Broker: kindOf(d), Records: n.Load(), Bytes: bytes.Load(), Seconds: (elapsed - join).Seconds(),
		Millis: map[string]float64{"first delivery": float64(join.Microseconds()) / 1000}}
	u.finish(r)
	return r, nil
}

// setShareEarliest sets group's share.auto.offset.reset to earliest.
func setShareEarliest(ctx context.Context, d deployment, group string) error {
	cl, err := kgo.NewClient(append(d.Security().kgoOpts(), kgo.SeedBrokers(d.Bootstrap()...))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := chaos.ShareEarliest(ctx, cl, group); err != nil {
		return fmt.Errorf("SHARE: %w", err)
	}
	return nil
}
