package chaos

// The share group runs (KIP-932): three members of one share group
// (shareMember, driven with kmsg so that each confirmed acknowledgement is
// known to the record) read a multi-partition topic of records written
// before by an idempotent acks=all producer. Each member accepts what it
// acquires, except a record at an offset divisible by ten on its first
// delivery, which it releases so that it is delivered again. The ledger
// checks, as deliveries come: no record whose acceptance the broker
// confirmed is delivered again or confirmed accepted twice, and the run
// ends once every record's acceptance is confirmed (a record never
// accepted is lost).
// Faults: a member process (Holder) that acquires records and holds them
// unacknowledged is SIGKILLed, then another is SIGSTOPped: what it held
// must come to the others (the run says how long after the signal and
// after the acquisition, against the lock duration); and the broker is
// SIGKILLed and restarted on its data directory BrokerKills times.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// ShareOptions configure a share group run.
type ShareOptions struct {
	Target     Target
	Records    int   // records in the topic (default 100000)
	Partitions int32 // default 3
	Members    int   // steady members (default 3)
	// Holder, when set, is the command line of a member process holding
	// what it acquires (HoldShareRecords): one is SIGKILLed, one SIGSTOPped.
	Holder func(addr, group, topic string) *exec.Cmd
	Lock   time.Duration // the broker's share.record.lock.duration.ms, for the report
	// Rate caps the records accepted a second (0: none), so that a run with
	// faults has records left for each.
	Rate        int
	BrokerKills int
	Down        time.Duration // the broker's time down after a kill (default 1s)
	Stall       time.Duration // no acceptance confirmed for this long fails the run (default 60s)
	Seed        uint64
	Logger      *zap.Logger
}

// ShareReport is what a share group run saw.
type ShareReport struct {
	Records     int
	Deliveries  int // records acquired by a member, all deliveries counted
	Redelivered int // records delivered more than once
	Released    int // releases confirmed
	Unconfirmed int // acknowledgements sent and not confirmed (a failed request or partition)
	Kills       int
	Faults      []ShareFault
	Took        time.Duration
	Anomalies   []string
}

// ShareFault is what came of one member fault.
type ShareFault struct {
	Signal syscall.Signal
	Held   int // records the member held
	// AfterSignal and AfterAcquire are the times from the signal and from
	// the acquisition to the first delivery of a held record to another
	// member.
	AfterSignal, AfterAcquire time.Duration
	Lock                      time.Duration
}

func (f ShareFault) String() string {
	return fmt.Sprintf("%v: %d held records all accepted by the others; the first delivered again %v after the signal, %v after its acquisition (lock duration %v)",
		f.Signal, f.Held, f.AfterSignal.Round(time.Millisecond), f.AfterAcquire.Round(time.Millisecond), f.Lock)
}

// OK says whether every record was accepted exactly once and none was
// delivered after its acceptance was confirmed.
func (r ShareReport) OK() bool { return len(r.Anomalies) == 0 }

func (r ShareReport) Summary() string {
	return fmt.Sprintf("%d records, %d deliveries, %d delivered more than once, %d releases, %d acknowledgements unconfirmed, %d broker kills, %v, %d anomalies",
		r.Records, r.Deliveries, r.Redelivered, r.Released, r.Unconfirmed, r.Kills, r.Took.Round(100*time.Millisecond), len(r.Anomalies))
}

// shareLedger is every record's history, shared by the members.
type shareLedger struct {
	mu        sync.Mutex
	recs      map[Pos]*shareRecord
	accepted  int
	progress  time.Time // the last confirmed acceptance
	rep       *ShareReport
	watch     map[Pos]bool // held by a faulty member, not yet delivered again
	paused    bool         // the steady members do not fetch while a holder joins
	rate      int          // records accepted a second at most, 0 for no limit
	start     time.Time
	watchBack time.Time // the first delivery of a watched record to another member
}

type shareRecord struct {
	deliveries int
	accepted   bool
}

// deliver records one delivery and says how to acknowledge it; ok false
// is an anomaly (an unknown record, or one whose acceptance was confirmed)
// not to be counted again.
func (l *shareLedger) deliver(d shareDelivery) (ack int8, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recs[d.Pos]
	switch {
	case r == nil:
		l.anomaly("%v (delivery count %d): delivered but never written", d.Pos, d.Count)
		return shareAccept, false
	case r.accepted:
		l.anomaly("%v: delivered again (delivery count %d, delivery %d) after its acceptance was confirmed", d.Pos, d.Count, r.deliveries+1)
		return shareAccept, false
	}
	if r.deliveries++; r.deliveries == 2 {
		l.rep.Redelivered++
	}
	l.rep.Deliveries++
	if l.watch[d.Pos] {
		delete(l.watch, d.Pos)
		if l.watchBack.IsZero() {
			l.watchBack = time.Now()
		}
	}
	if d.Pos.Offset%10 == 0 && d.Count == 1 {
		return shareRelease, true
	}
	return shareAccept, true
}

// confirm takes the acknowledgements the broker confirmed.
func (l *shareLedger) confirm(acks map[Pos]int8) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, t := range acks {
		if t == shareRelease {
			l.rep.Released++
			continue
		}
		r := l.recs[p]
		if r.accepted {
			l.anomaly("%v: acceptance confirmed twice", p)
			continue
		}
		r.accepted = true
		l.accepted++
		l.progress = time.Now()
	}
}

// wait says whether the steady members should not fetch now: they are
// paused, or ahead of the rate while no held record is outstanding.
func (l *shareLedger) wait() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused || len(l.watch) == 0 && l.rate > 0 && float64(l.accepted) > float64(l.rate)*time.Since(l.start).Seconds()
}

func (l *shareLedger) unconfirmed(n int) {
	l.mu.Lock()
	l.rep.Unconfirmed += n
	l.mu.Unlock()
}

func (l *shareLedger) anomaly(format string, args ...any) {
	if len(l.rep.Anomalies) < 100 {
		l.rep.Anomalies = append(l.rep.Anomalies, fmt.Sprintf(format, args...))
	}
}

func (l *shareLedger) state() (accepted int, since time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted, l.progress
}

// missing lists up to n records not accepted.
func (l *shareLedger) missing(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range sortedPos(l.recs) {
		if r := l.recs[p]; !r.accepted && len(out) < n {
			out = append(out, fmt.Sprintf("%v (%d deliveries)", p, r.deliveries))
		}
	}
	return out
}

// RunShare runs the share group workload on o.Target, which must be
// running.
func RunShare(ctx context.Context, o ShareOptions) (ShareReport, error) {
	if o.Records == 0 {
		o.Records = 100000
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.Members == 0 {
		o.Members = 3
	}
	if o.Down == 0 {
		o.Down = time.Second
	}
	if o.Stall == 0 {
		o.Stall = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	rep := ShareReport{Records: o.Records}
	topic, group := "share-chaos", "share-chaos"
	addr := o.Target.Addr()
	if err := createTopic(ctx, addr, topic, o.Partitions); err != nil {
		return rep, err
	}
	if err := setShareAutoOffsetReset(ctx, addr, group); err != nil {
		return rep, err
	}
	start := time.Now()
	written, err := produceShareRecords(ctx, addr, topic, o.Records, o.Partitions)
	if err != nil {
		return rep, err
	}
	led := &shareLedger{recs: map[Pos]*shareRecord{}, rep: &rep, progress: time.Now(), watch: map[Pos]bool{}, rate: o.Rate, start: time.Now()}
	for _, p := range written {
		led.recs[p] = &shareRecord{}
	}
	o.Logger.Info("share records written", zap.Int("records", len(written)), zap.Duration("took", time.Since(start)))

	mctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for i := range o.Members {
		m, err := newShareMember(addr, group, topic, func(s string) { o.Logger.Debug("share member", zap.Int("member", i), zap.String("event", s)) })
		if err != nil {
			return rep, err
		}
		wg.Add(2)
		go func() { defer wg.Done(); m.heartbeat(mctx) }()
		go func() {
			defer wg.Done()
			defer m.close()
			runShareMember(mctx, m, led, o.Records)
			m.leave(ctx)
		}()
	}
	// waitAccepted waits until n records are accepted, failing on a stall.
	waitAccepted := func(n int) error {
		for {
			acc, since := led.state()
			if acc >= n {
				return nil
			}
			if time.Since(since) > o.Stall {
				return fmt.Errorf("stalled: %d of %d records accepted, none for %v; not accepted: %s",
					acc, o.Records, o.Stall, strings.Join(led.missing(10), ", "))
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%d of %d records accepted: %w", acc, o.Records, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	if o.Holder != nil {
		for i, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
			if err := waitAccepted(o.Records * (i + 1) / 10); err != nil {
				return rep, err
			}
			f, err := holderFault(ctx, o, led, group, topic, sig)
			if err != nil {
				return rep, err
			}
			o.Logger.Info("member fault", zap.Stringer("fault", f))
			rep.Faults = append(rep.Faults, f)
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 932))
	for rep.Kills < o.BrokerKills {
		acc, _ := led.state()
		if err := waitAccepted(min(o.Records, acc+o.Records/(2*o.BrokerKills+2))); err != nil {
			return rep, err
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		acc, _ = led.state()
		o.Logger.Info("killing the broker", zap.Int("kill", rep.Kills+1), zap.Int("accepted", acc))
		if err := o.Target.Kill(); err != nil {
			return rep, err
		}
		rep.Kills++
		time.Sleep(o.Down)
		if err := o.Target.Start(ctx); err != nil {
			return rep, fmt.Errorf("restart after kill %d: %w", rep.Kills, err)
		}
	}
	if err := waitAccepted(o.Records); err != nil {
		return rep, err
	}
	rep.Took = time.Since(start)
	stop()
	wg.Wait()
	return rep, nil
}

// runShareMember fetches and acknowledges until every record is accepted
// or ctx ends.
func runShareMember(ctx context.Context, m *shareMember, led *shareLedger, records int) {
	for ctx.Err() == nil {
		if acc, _ := led.state(); acc == records {
			return
		}
		if led.wait() {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		ds, err := m.fetch(ctx)
		if err != nil {
			m.notify(err.Error())
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		acks, counted := map[Pos]int8{}, map[Pos]bool{}
		for _, d := range ds {
			t, ok := led.deliver(d)
			acks[d.Pos], counted[d.Pos] = t, ok
		}
		confirmed, err := m.acknowledge(ctx, acks)
		if err != nil {
			m.notify(err.Error())
		}
		for p := range confirmed {
			if !counted[p] {
				delete(confirmed, p)
			}
		}
		led.confirm(confirmed)
		led.unconfirmed(len(acks) - len(confirmed))
	}
}

// holderFault starts a holder process, waits until it holds records,
// sends it sig and waits until every record it held was delivered to
// another member and accepted; a stopped holder is then killed.
func holderFault(ctx context.Context, o ShareOptions, led *shareLedger, group, topic string, sig syscall.Signal) (ShareFault, error) {
	f := ShareFault{Signal: sig, Lock: o.Lock}
	cmd := o.Holder(o.Target.Addr(), group, topic)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return f, err
	}
	if err := cmd.Start(); err != nil {
		return f, fmt.Errorf("start the holding member: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The others pause until the holder holds records, else they could
	// read everything before its first assignment.
	led.mu.Lock()
	led.paused = true
	led.mu.Unlock()
	tooLong := time.AfterFunc(o.Stall, func() { _ = cmd.Process.Kill() })
	member, held, acquired, err := readHeld(out)
	tooLong.Stop()
	led.mu.Lock()
	led.paused = false
	led.mu.Unlock()
	if err != nil {
		return f, fmt.Errorf("the holding member: %w", err)
	}
	led.mu.Lock()
	for _, d := range held {
		if r := led.recs[d.Pos]; r != nil {
			if r.deliveries++; r.deliveries == 2 {
				led.rep.Redelivered++
			}
			led.rep.Deliveries++
		}
		led.watch[d.Pos] = true
	}
	led.watchBack = time.Time{}
	led.mu.Unlock()
	signalled := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		return f, err
	}
	deadline := time.Now().Add(o.Stall)
	for {
		led.mu.Lock()
		left, back := len(led.watch), led.watchBack
		notAccepted := 0
		for _, d := range held {
			if r := led.recs[d.Pos]; r != nil && !r.accepted {
				notAccepted++
			}
		}
		led.mu.Unlock()
		if left == 0 && notAccepted == 0 {
			f.Held, f.AfterSignal, f.AfterAcquire = len(held), back.Sub(signalled), back.Sub(acquired)
			// The others pause again until the holder is out of the group,
			// so that the next fault starts with records left to read.
			_ = cmd.Process.Kill()
			led.mu.Lock()
			led.paused = true
			led.mu.Unlock()
			err := waitShareMemberGone(ctx, o.Target.Addr(), group, member, o.Stall)
			led.mu.Lock()
			led.paused = false
			led.mu.Unlock()
			return f, err
		}
		if time.Now().After(deadline) {
			return f, fmt.Errorf("%v: %d of %d held records not delivered again, %d not accepted, %v after the signal",
				sig, left, len(held), notAccepted, o.Stall)
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// readHeld reads a holder's "member ID" line, its "held P O C" lines and
// then "holding".
func readHeld(r io.Reader) (string, []shareDelivery, time.Time, error) {
	sc := bufio.NewScanner(r)
	var member string
	var held []shareDelivery
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "member":
			member = f[1]
		case len(f) == 1 && f[0] == "holding" && len(held) > 0:
			return member, held, time.Now(), nil
		case len(f) == 4 && f[0] == "held":
			p, _ := strconv.ParseInt(f[1], 10, 32)
			off, _ := strconv.ParseInt(f[2], 10, 64)
			c, _ := strconv.ParseInt(f[3], 10, 16)
			held = append(held, shareDelivery{Pos{int32(p), off}, int16(c)})
		}
	}
	return "", nil, time.Time{}, fmt.Errorf("exited before holding records: %v", sc.Err())
}

// HoldShareRecords is the holding member: it joins group, fetches until it
// acquires records, writes each as "held partition offset count" and then
// "holding" to w, and holds them, acknowledging nothing, until ctx ends.
func HoldShareRecords(ctx context.Context, addr, group, topic string, w io.Writer) error {
	m, err := newShareMember(addr, group, topic, func(string) {})
	if err != nil {
		return err
	}
	defer m.close()
	fmt.Fprintf(w, "member %s\n", m.id)
	go m.heartbeat(ctx)
	for ctx.Err() == nil {
		ds, err := m.fetch(ctx)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
		}
		if len(ds) == 0 {
			continue
		}
		for _, d := range ds {
			fmt.Fprintf(w, "held %d %d %d\n", d.Pos.Partition, d.Pos.Offset, d.Count)
		}
		fmt.Fprintln(w, "holding")
		<-ctx.Done()
	}
	return ctx.Err()
}

// waitShareMemberGone waits until member is out of group (a killed member
// is, once its session timed out).
func waitShareMemberGone(ctx context.Context, addr, group, member string, wait time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		if resp, err := req.RequestWith(ctx, cl); err == nil && len(resp.Groups) == 1 && resp.Groups[0].ErrorCode == 0 &&
			!slices.ContainsFunc(resp.Groups[0].Members, func(m kmsg.ShareGroupDescribeResponseGroupMember) bool { return m.MemberID == member }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("member %s still in share group %s %v after it was killed", member, group, wait)
}

// setShareAutoOffsetReset sets the group's share.auto.offset.reset to
// earliest, so the members read the records written before they join.
func setShareAutoOffsetReset(ctx context.Context, addr, group string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	return ShareEarliest(ctx, cl, group)
}

// ShareEarliest sets share group group's share.auto.offset.reset to
// earliest with IncrementalAlterConfigs on its GROUP resource.
func ShareEarliest(ctx context.Context, cl *kgo.Client, group string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && resp.Resources[0].ErrorCode != 0 {
		err = fmt.Errorf("error code %d", resp.Resources[0].ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("set share.auto.offset.reset: %w", err)
	}
	return nil
}

// produceShareRecords writes n records round robin over the partitions
// with an idempotent acks=all producer, in batches of a few hundred (a
// share fetch acquires whole batches), and returns where they went.
func produceShareRecords(ctx context.Context, addr, topic string, n int, partitions int32) ([]Pos, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(4<<10))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Partition: int32(i) % partitions, Value: []byte(strconv.Itoa(i))}
	}
	out := make([]Pos, 0, n)
	for chunk := range slices.Chunk(recs, 10000) {
		if err := cl.ProduceSync(ctx, chunk...).FirstErr(); err != nil {
			return nil, fmt.Errorf("produce the share records: %w", err)
		}
		for _, r := range chunk {
			out = append(out, Pos{r.Partition, r.Offset})
		}
	}
	return out, nil
}
