package broker

import (
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Group tests run real franz-go group consumers against an in-process
// broker. Session timeouts are the minimum Kafka allows (6 s) and the
// initial rebalance delay is 0 (testGroupConfig), so rebalances are quick.

const (
	testSession   = 6 * time.Second
	testRebalance = 10 * time.Second
)

// waitUntil polls cond every 20 ms until it holds, failing after d with
// the last reason cond gave.
func waitUntil(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ownership records which member holds which partition, from the
// consumers' assign/revoke/lost callbacks, and fails the test the moment a
// partition is assigned while another member still holds it.
type ownership struct {
	t     *testing.T
	mu    sync.Mutex
	owner map[int32]string
}

func newOwnership(t *testing.T) *ownership {
	return &ownership{t: t, owner: map[int32]string{}}
}

func (o *ownership) opts(name string) []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, ps := range m {
				for _, p := range ps {
					if prev, ok := o.owner[p]; ok && prev != name {
						o.t.Errorf("partition %d assigned to %s while %s holds it", p, name, prev)
					}
					o.owner[p] = name
				}
			}
		}),
		kgo.OnPartitionsRevoked(o.drop(name)),
		kgo.OnPartitionsLost(o.drop(name)),
	}
}

func (o *ownership) drop(name string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, ps := range m {
			for _, p := range ps {
				if o.owner[p] == name {
					delete(o.owner, p)
				}
			}
		}
	}
}

// held returns the partitions each member holds.
func (o *ownership) held() map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string][]int32{}
	for p, name := range o.owner {
		out[name] = append(out[name], p)
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return out
}

// groupMember is a franz-go group consumer polling in the background; the
// records it receives go to recs.
type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, b *Broker, group, topic string, recs chan<- *kgo.Record, opts ...kgo.Opt) *groupMember {
	t.Helper()
	all := append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(testSession), kgo.RebalanceTimeout(testRebalance),
		kgo.HeartbeatInterval(300 * time.Millisecond), kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.AutoCommitInterval(200 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr().String())}, all...)...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { recs <- r })
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop ends polling and closes the client (leaving the group).
func (m *groupMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

func produceN(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	ctx := testCtx(t)
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%d", i)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// collect reads records until every offset below end of every partition
// was seen; duplicates (redelivery after a rebalance) are allowed.
func collect(t *testing.T, recs <-chan *kgo.Record, end map[int32]int64) {
	t.Helper()
	seen := map[int32]map[int64]bool{}
	missing := func() int64 {
		var n int64
		for p, e := range end {
			n += e - int64(len(seen[p]))
		}
		return n
	}
	timeout := time.After(30 * time.Second)
	for missing() > 0 {
		select {
		case r := <-recs:
			if seen[r.Partition] == nil {
				seen[r.Partition] = map[int64]bool{}
			}
			seen[r.Partition][r.Offset] = true
		case <-timeout:
			t.Fatalf("%d records not consumed after 30s", missing())
		}
	}
}

func endOffsetsOf(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func committedOf(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resp, err := adm.FetchOffsets(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out
}

func TestGroupBalancersSplitCommitAndResume(t *testing.T) {
	for _, bal := range []struct {
		name string
		b    kgo.GroupBalancer
	}{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
	} {
		t.Run(bal.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, nil)
			adm := newAdmin(t, b)
			const topic, group = "orders", "g"
			if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			own := newOwnership(t)
			recs := make(chan *kgo.Record, 1000)
			a := startMember(t, b, group, topic, recs, append(own.opts("a"), kgo.Balancers(bal.b))...)
			c := startMember(t, b, group, topic, recs, append(own.opts("c"), kgo.Balancers(bal.b))...)
			waitUntil(t, 20*time.Second, func() (bool, string) {
				h := own.held()
				return len(h["a"]) > 0 && len(h["c"]) > 0 && len(h["a"])+len(h["c"]) == 3, fmt.Sprintf("held %v", h)
			})

			produceN(t, newClient(t, b), topic, 0, 300)
			end := endOffsetsOf(t, adm, topic)
			collect(t, recs, end)
			waitUntil(t, 10*time.Second, func() (bool, string) {
				got := committedOf(t, adm, group, topic)
				return fmt.Sprint(got) == fmt.Sprint(end), fmt.Sprintf("committed %v, end offsets %v", got, end)
			})
			a.stop()
			c.stop()

			// A new member resumes exactly after the committed offsets.
			produceN(t, newClient(t, b), topic, 300, 400)
			fresh := make(chan *kgo.Record, 1000)
			startMember(t, b, group, topic, fresh, kgo.Balancers(bal.b))
			next := map[int32]int64{}
			for p, o := range end {
				next[p] = o
			}
			for i := 0; i < 100; i++ {
				select {
				case r := <-fresh:
					if r.Offset != next[r.Partition] {
						t.Fatalf("partition %d: resumed at offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
					}
					next[r.Partition]++
				case <-time.After(30 * time.Second):
					t.Fatalf("only %d of 100 new records consumed", i)
				}
			}
			if got := endOffsetsOf(t, adm, topic); fmt.Sprint(got) != fmt.Sprint(next) {
				t.Fatalf("consumed up to %v, end offsets %v", next, got)
			}
		})
	}
}

// killableDialer hands out connections it can cut all at once, refusing
// new ones afterwards: a member that dies without leaving.
type killableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killed {
		return nil, fmt.Errorf("dial %s: member killed", host)
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, c := range d.conns {
		c.(*net.TCPConn).SetLinger(0) // RST, as a killed process's sockets
		c.Close()
	}
}

func TestGroupMemberKilledLosesPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	const topic, group = "jobs", "g"
	if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	own := newOwnership(t)
	recs := make(chan *kgo.Record, 1000)
	go func() {
		for range recs {
		}
	}()
	d := &killableDialer{}
	startMember(t, b, group, topic, recs, append(own.opts("doomed"), kgo.Dialer(d.dial))...)
	startMember(t, b, group, topic, recs, own.opts("survivor")...)
	waitUntil(t, 20*time.Second, func() (bool, string) {
		h := own.held()
		return len(h["doomed"]) > 0 && len(h["survivor"]) > 0, fmt.Sprintf("held %v", h)
	})
	start := time.Now()
	d.kill()
	// The broker notices only through the missed session timeout, then the
	// survivor rejoins on its next heartbeat.
	waitUntil(t, testSession+testRebalance, func() (bool, string) {
		ds, err := adm.DescribeGroups(testCtx(t), group)
		if err != nil {
			return false, err.Error()
		}
		g := ds[group]
		if g.State != "Stable" || len(g.Members) != 1 {
			return false, fmt.Sprintf("state %s with %d members", g.State, len(g.Members))
		}
		h := own.held()
		return len(h["survivor"]) == 3, fmt.Sprintf("survivor holds %v", h["survivor"])
	})
	if took := time.Since(start); took < testSession-time.Second {
		t.Fatalf("partitions moved after %v, before the session timeout", took)
	}
}

func TestGroupStaticMemberReturnsWithoutRebalance(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	const topic, group = "static", "g"
	if _, err := adm.CreateTopic(testCtx(t), 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	own := newOwnership(t)
	recs := make(chan *kgo.Record, 1000)
	go func() {
		for range recs {
		}
	}()
	// The leader joins first; the follower is the one that restarts.
	leader := startMember(t, b, group, topic, recs, append(own.opts("leader"), kgo.InstanceID("leader"), kgo.Balancers(kgo.RangeBalancer()))...)
	waitUntil(t, 20*time.Second, func() (bool, string) { h := own.held(); return len(h["leader"]) == 3, fmt.Sprintf("held %v", h) })
	follower := startMember(t, b, group, topic, recs, append(own.opts("follower"), kgo.InstanceID("follower"), kgo.Balancers(kgo.RangeBalancer()))...)
	waitUntil(t, 20*time.Second, func() (bool, string) {
		h := own.held()
		return len(h["follower"]) > 0 && len(h["leader"])+len(h["follower"]) == 3, fmt.Sprintf("held %v", h)
	})
	held := own.held()["follower"]
	_, gen := follower.cl.GroupMetadata()
	follower.stop() // a static member does not leave on close
	ds, err := adm.DescribeGroups(testCtx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	if g := ds[group]; g.State != "Stable" || len(g.Members) != 2 {
		t.Fatalf("after the static member closed: state %s, %d members", g.State, len(g.Members))
	}

	back := startMember(t, b, group, topic, recs, append(own.opts("follower"), kgo.InstanceID("follower"), kgo.Balancers(kgo.RangeBalancer()))...)
	waitUntil(t, testSession, func() (bool, string) {
		h := own.held()
		return fmt.Sprint(h["follower"]) == fmt.Sprint(held), fmt.Sprintf("held %v, want follower %v", h, held)
	})
	if _, g := back.cl.GroupMetadata(); g != gen {
		t.Fatalf("returning member at generation %d, want %d (no rebalance)", g, gen)
	}
	if _, g := leader.cl.GroupMetadata(); g != gen {
		t.Fatalf("leader at generation %d, want %d (no rebalance)", g, gen)
	}
}
