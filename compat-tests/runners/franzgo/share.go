package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The share group scenarios (KIP-932, compat-tests/README.md) through
// kgo.ShareGroup: every record a member polls is acknowledged explicitly
// (Record.Ack) or, left alone, accepted by its next PollRecords (franz-go's
// implicit acknowledgement); FlushAcks waits for the broker's answers.

// delivery is one record as a share member got it.
type delivery struct {
	value    string
	count    int32
	at       time.Time
	deadline time.Time // the acquisition lock's end as the client computed it
}

// shareMember is a member of one share group on the scenario topic; ackErr
// keeps the first acknowledgement error its ShareAckCallback saw.
type shareMember struct {
	cl     *kgo.Client
	mu     sync.Mutex
	ackErr error
}

func (e *env) shareMember(g string) *shareMember {
	m := &shareMember{}
	m.cl = e.client(kgo.ShareGroup(g), kgo.ConsumeTopics(e.a.Topic), kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
		if err := rs.Error(); err != nil {
			m.mu.Lock()
			if m.ackErr == nil {
				m.ackErr = err
			}
			m.mu.Unlock()
		}
	}))
	return m
}

// poll polls once (up to d) and acknowledges each record with ack(record)
// when ack is set, else leaves it to the next poll's implicit acceptance.
func (m *shareMember) poll(ctx context.Context, d time.Duration, ack func(delivery) kgo.AckStatus) ([]delivery, error) {
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	fs := m.cl.PollRecords(pctx, 0)
	if err := fs.Err0(); err != nil && pctx.Err() == nil {
		return nil, fmt.Errorf("PollRecords: %w", err)
	}
	var out []delivery
	fs.EachRecord(func(r *kgo.Record) {
		dl := delivery{value: string(r.Value), count: r.DeliveryCount(), at: time.Now(), deadline: r.AcquisitionDeadline()}
		if ack != nil {
			r.Ack(ack(dl))
		}
		out = append(out, dl)
	})
	return out, nil
}

// receive polls until done(every delivery so far), acknowledging as poll
// does, within d.
func (m *shareMember) receive(ctx context.Context, d time.Duration, ack func(delivery) kgo.AckStatus, done func([]delivery) bool) ([]delivery, error) {
	deadline := time.Now().Add(d)
	var all []delivery
	for !done(all) {
		if time.Now().After(deadline) {
			return all, fmt.Errorf("not done within %s after %d deliveries %v", d, len(all), values(all))
		}
		got, err := m.poll(ctx, time.Until(deadline), ack)
		if err != nil {
			return all, err
		}
		all = append(all, got...)
	}
	return all, nil
}

// flush accepts, by one more poll, what the last poll left unacknowledged,
// sends every pending acknowledgement and returns the first error the
// broker answered to any of them.
func (m *shareMember) flush(ctx context.Context) error {
	done, cancel := context.WithCancel(ctx)
	cancel()
	m.cl.PollRecords(done, 0)
	fctx, fcancel := context.WithTimeout(ctx, 15*time.Second)
	defer fcancel()
	if err := m.cl.FlushAcks(fctx); err != nil {
		return fmt.Errorf("FlushAcks: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ackErr != nil {
		return fmt.Errorf("acknowledgement: %w", m.ackErr)
	}
	return nil
}

func values(ds []delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s#%d", d.value, d.count))
	}
	return out
}

// countsOf are the delivery counts of value's deliveries, in order.
func countsOf(ds []delivery, value string) []int32 {
	var out []int32
	for _, d := range ds {
		if d.value == value {
			out = append(out, d.count)
		}
	}
	return out
}

// hasAll says whether ds holds every one of the ShareRecords values.
func hasAll(ds []delivery) bool {
	for i := range rt.ShareRecords {
		if countsOf(ds, rt.ShareValue(i)) == nil {
			return false
		}
	}
	return true
}

// hasValue says whether ds holds value.
func hasValue(value string) func([]delivery) bool {
	return func(ds []delivery) bool { return countsOf(ds, value) != nil }
}

// onceEach checks every value but skip was delivered exactly once, with
// delivery count 1.
func onceEach(ds []delivery, skip string) error {
	for i := range rt.ShareRecords {
		v := rt.ShareValue(i)
		if c := countsOf(ds, v); v != skip && !slices.Equal(c, []int32{1}) {
			return fmt.Errorf("%s delivered with counts %v, want once with count 1 (deliveries %v)", v, c, values(ds))
		}
	}
	return nil
}

// shareSetup creates the 1-partition topic and sets share.auto.offset.reset
// and the configs of extra on every group.
func (e *env) shareSetup(groups []string, extra ...[2]string) error {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return err
	}
	for _, g := range groups {
		for _, c := range append([][2]string{{"share.auto.offset.reset", rt.ShareAutoOffsetReset}}, extra...) {
			if err := e.setGroupConfig(cl, g, c[0], c[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// shareRecords sets up groups as shareSetup does and produces the
// ShareRecords records.
func (e *env) shareRecords(groups []string, extra ...[2]string) error {
	if err := e.shareSetup(groups, extra...); err != nil {
		return err
	}
	var rs []*kgo.Record
	for i := range rt.ShareRecords {
		rs = append(rs, &kgo.Record{Topic: e.a.Topic, Value: []byte(rt.ShareValue(i))})
	}
	return e.produceShare(rs...)
}

func (e *env) produceShare(rs ...*kgo.Record) error {
	p := e.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	defer p.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	return nil
}

func (e *env) sentinel() error {
	return e.produceShare(&kgo.Record{Topic: e.a.Topic, Value: []byte(rt.ShareSentinel)})
}

func accept(delivery) kgo.AckStatus { return kgo.AckAccept }

// shareConsume: one group acknowledges every record explicitly (ACCEPT),
// another implicitly; after the sentinel a new member of each group gets
// the sentinel only, as every record was accepted.
func (e *env) shareConsume() rt.Result {
	g := e.a.Group()
	modes := []struct {
		group string
		ack   func(delivery) kgo.AckStatus
	}{{g + "-explicit", accept}, {g + "-implicit", nil}}
	if err := e.shareRecords([]string{modes[0].group, modes[1].group}); err != nil {
		return e.failf("%v", err)
	}
	for _, md := range modes {
		m := e.shareMember(md.group)
		ds, err := m.receive(e.ctx, 20*time.Second, md.ack, hasAll)
		if err == nil {
			err = onceEach(ds, "")
		}
		if err == nil {
			err = m.flush(e.ctx)
		}
		m.cl.Close()
		if err != nil {
			return e.failf("%s: %v", md.group, err)
		}
	}
	if err := e.sentinel(); err != nil {
		return e.failf("%v", err)
	}
	for _, md := range modes {
		m := e.shareMember(md.group)
		ds, err := m.receive(e.ctx, 20*time.Second, accept, hasValue(rt.ShareSentinel))
		if err == nil && len(ds) != 1 {
			err = fmt.Errorf("a new member got %v, want only %s: acknowledged records delivered again", values(ds), rt.ShareSentinel)
		}
		if err == nil {
			err = m.flush(e.ctx)
		}
		m.cl.Close()
		if err != nil {
			return e.failf("%s: %v", md.group, err)
		}
	}
	return rt.Pass(fmt.Sprintf("%d records accepted explicitly and implicitly, each delivered once", rt.ShareRecords), nil)
}

// shareRelease: the poison record, released at its first delivery, is
// delivered again with delivery count 2.
func (e *env) shareRelease() rt.Result {
	g, poison := e.a.Group(), rt.ShareValue(rt.SharePoison)
	if err := e.shareRecords([]string{g}); err != nil {
		return e.failf("%v", err)
	}
	m := e.shareMember(g)
	defer m.cl.Close()
	ack := func(d delivery) kgo.AckStatus {
		if d.value == poison && d.count == 1 {
			return kgo.AckRelease
		}
		return kgo.AckAccept
	}
	ds, err := m.receive(e.ctx, 30*time.Second, ack, func(ds []delivery) bool { return hasAll(ds) && len(countsOf(ds, poison)) >= 2 })
	if err == nil {
		err = onceEach(ds, poison)
	}
	if c := countsOf(ds, poison); err == nil && !slices.Equal(c, []int32{1, 2}) {
		err = fmt.Errorf("released %s delivered with counts %v, want [1 2]", poison, c)
	}
	if err == nil {
		err = m.flush(e.ctx)
	}
	if err != nil {
		return e.failf("%v", err)
	}
	return rt.Pass(fmt.Sprintf("released %s delivered again with delivery count 2", poison), nil)
}

// shareReject: the poison record, rejected at its first delivery, is not
// delivered again before the sentinel.
func (e *env) shareReject() rt.Result {
	g, poison := e.a.Group(), rt.ShareValue(rt.SharePoison)
	if err := e.shareRecords([]string{g}); err != nil {
		return e.failf("%v", err)
	}
	m := e.shareMember(g)
	defer m.cl.Close()
	ack := func(d delivery) kgo.AckStatus {
		if d.value == poison {
			return kgo.AckReject
		}
		return kgo.AckAccept
	}
	ds, err := m.receive(e.ctx, 20*time.Second, ack, hasAll)
	if err == nil {
		err = m.flush(e.ctx)
	}
	if err == nil {
		err = e.sentinel()
	}
	var more []delivery
	if err == nil {
		more, err = m.receive(e.ctx, 20*time.Second, ack, hasValue(rt.ShareSentinel))
		ds = append(ds, more...)
	}
	if err == nil {
		err = onceEach(ds, "")
	}
	if err == nil {
		err = m.flush(e.ctx)
	}
	if err != nil {
		return e.failf("%v", err)
	}
	return rt.Pass(fmt.Sprintf("rejected %s not delivered again (%d deliveries up to the sentinel)", poison, len(ds)), nil)
}

// shareDeliveryLimit: with share.delivery.count.limit set on the group, the
// poison record released at every delivery is delivered that many times,
// then archived: not delivered before the sentinel.
func (e *env) shareDeliveryLimit() rt.Result {
	g, poison := e.a.Group(), rt.ShareValue(rt.SharePoison)
	var limit int32
	fmt.Sscan(rt.ShareDeliveryLimit, &limit)
	if err := e.shareRecords([]string{g}, [2]string{"share.delivery.count.limit", rt.ShareDeliveryLimit}); err != nil {
		return e.failf("%v", err)
	}
	m := e.shareMember(g)
	defer m.cl.Close()
	ack := func(d delivery) kgo.AckStatus {
		if d.value == poison {
			return kgo.AckRelease
		}
		return kgo.AckAccept
	}
	ds, err := m.receive(e.ctx, 30*time.Second, ack, func(ds []delivery) bool { return hasAll(ds) && len(countsOf(ds, poison)) >= int(limit) })
	if err == nil {
		err = m.flush(e.ctx)
	}
	if err == nil {
		err = e.sentinel()
	}
	var more []delivery
	if err == nil {
		more, err = m.receive(e.ctx, 20*time.Second, ack, hasValue(rt.ShareSentinel))
		ds = append(ds, more...)
	}
	if err == nil {
		err = onceEach(ds, poison)
	}
	var want []int32
	for i := int32(1); i <= limit; i++ {
		want = append(want, i)
	}
	if c := countsOf(ds, poison); err == nil && !slices.Equal(c, want) {
		err = fmt.Errorf("%s released at every delivery was delivered with counts %v, want %v (share.delivery.count.limit %d)", poison, c, want, limit)
	}
	if err == nil {
		err = m.flush(e.ctx)
	}
	if err != nil {
		return e.failf("%v", err)
	}
	return rt.Pass(fmt.Sprintf("%s delivered %d times (share.delivery.count.limit), then archived", poison, limit), nil)
}

// shareLockExpiry: with share.record.lock.duration.ms set on the group, the
// records a member polled and then stopped on (no poll, no acknowledgement,
// its fetches paused) go to a second member with delivery count 2, not
// before their acquisition lock ended nor 10 s after the group's lock
// duration.
func (e *env) shareLockExpiry() rt.Result {
	g := e.a.Group()
	if err := e.shareRecords([]string{g}, [2]string{"share.record.lock.duration.ms", rt.ShareLockDurationMs}); err != nil {
		return e.failf("%v", err)
	}
	var lockMs int64
	fmt.Sscan(rt.ShareLockDurationMs, &lockMs)
	lock := time.Duration(lockMs) * time.Millisecond
	m1 := e.shareMember(g)
	defer m1.cl.Close()
	var held []delivery
	var err error
	for len(held) == 0 && err == nil && e.ctx.Err() == nil {
		held, err = m1.poll(e.ctx, 20*time.Second, nil)
	}
	if err == nil && len(held) == 0 {
		err = fmt.Errorf("the first member got no record")
	}
	if err != nil {
		return e.failf("first member: %v", err)
	}
	m1.cl.PauseFetchTopics(e.a.Topic)
	m2 := e.shareMember(g)
	defer m2.cl.Close()
	ds, err := m2.receive(e.ctx, 40*time.Second, accept, hasAll)
	if err == nil {
		err = m2.flush(e.ctx)
	}
	if err != nil {
		return e.failf("second member: %v", err)
	}
	for _, h := range held {
		for _, d := range ds {
			if d.value != h.value {
				continue
			}
			if d.count != 2 {
				return e.failf("%s, held by the stopped member, reached the second with delivery count %d, want 2 (deliveries %v)", d.value, d.count, values(ds))
			}
			if early := h.deadline.Sub(d.at); early > 500*time.Millisecond {
				return e.failf("%s reached the second member %s before the first member's acquisition lock ended", d.value, early)
			}
			if late := d.at.Sub(h.at) - lock; late > 10*time.Second {
				return e.failf("%s reached the second member %s after the group's share.record.lock.duration.ms (%s) from its first delivery", d.value, late, lock)
			}
		}
	}
	return rt.Pass(fmt.Sprintf("%d records held by a stopped member delivered to another with delivery count 2, %s after the first delivery", len(held), ds[len(ds)-1].at.Sub(held[0].at).Round(time.Second)), nil)
}

// shareReadCommitted: with share.isolation.level=read_committed on the
// group, a member gets the committed transactions' records and none of
// the aborted one's.
func (e *env) shareReadCommitted() rt.Result {
	g := e.a.Group()
	if err := e.shareSetup([]string{g}, [2]string{"share.isolation.level", "read_committed"}); err != nil {
		return e.failf("%v", err)
	}
	p := e.client(kgo.TransactionalID("share-"+e.a.Topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer p.Close()
	var committed []string
	for txn, end := range rt.TxnV2Ends {
		if err := p.BeginTransaction(); err != nil {
			return e.failf("BeginTransaction: %v", err)
		}
		for i := range rt.ShareTxnRecords {
			v := rt.ShareTxnValue(txn, i)
			if end == "commit" {
				committed = append(committed, v)
			}
			if err := p.ProduceSync(e.ctx, &kgo.Record{Topic: e.a.Topic, Value: []byte(v)}).FirstErr(); err != nil {
				return e.failf("produce: %v", err)
			}
		}
		if err := p.EndTransaction(e.ctx, kgo.TransactionEndTry(end == "commit")); err != nil {
			return e.failf("EndTransaction (%s): %v", end, err)
		}
	}
	m := e.shareMember(g)
	defer m.cl.Close()
	ds, err := m.receive(e.ctx, 20*time.Second, accept, hasValue(committed[len(committed)-1]))
	if err == nil {
		err = m.flush(e.ctx)
	}
	if err != nil {
		return e.failf("%v", err)
	}
	var got []string
	for _, d := range ds {
		got = append(got, d.value)
	}
	if !slices.Equal(got, committed) {
		return e.failf("read_committed share member got %v, want the committed %v", got, committed)
	}
	return rt.Pass(fmt.Sprintf("%d committed records, none of the aborted transaction's", len(committed)), nil)
}
