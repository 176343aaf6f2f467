package broker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createTopicN(t *testing.T, b *Broker, topic string, partitions int32) {
	t.Helper()
	resp, err := newAdmin(t, b).CreateTopic(testCtx(t), partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// consumeValues reads topic from the start at the isolation level until
// want records arrived, then for quiet more, and returns the values seen.
func consumeValues(t *testing.T, b *Broker, topic string, level kgo.IsolationLevel, want int, quiet time.Duration) []string {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	var vals []string
	deadline := time.Now().Add(60 * time.Second)
	for len(vals) < want {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		fs := cl.PollFetches(ctx)
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d records after 60s", topic, len(vals), want)
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), quiet)
	defer cancel()
	fs := cl.PollFetches(ctx)
	fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	if len(vals) != want {
		t.Fatalf("%s: %d records, want %d", topic, len(vals), want)
	}
	return vals
}

func produceTxn(t *testing.T, cl *kgo.Client, topic, prefix string, n int, commit bool) {
	t.Helper()
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s%d", prefix, i)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce in transaction: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// TestTxnCommitAndAbortIsolation: 100 committed and 100 aborted records;
// read_committed sees exactly the committed ones, read_uncommitted all.
// While a third transaction is open, the LSO (ListOffsets read_committed)
// stays at its first offset and the tooling APIs describe it.
func TestTxnCommitAndAbortIsolation(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	const topic = "txn-iso"
	createTopicN(t, b, topic, 3)
	cl := newClient(t, b, kgo.TransactionalID("iso"), kgo.TransactionTimeout(time.Minute))
	produceTxn(t, cl, topic, "c", 100, true)
	produceTxn(t, cl, topic, "a", 100, false)

	committed := consumeValues(t, b, topic, kgo.ReadCommitted(), 100, 300*time.Millisecond)
	seen := map[string]bool{}
	for _, v := range committed {
		if v[0] != 'c' || seen[v] {
			t.Fatalf("read_committed returned %q (aborted or duplicate)", v)
		}
		seen[v] = true
	}
	consumeValues(t, b, topic, kgo.ReadUncommitted(), 200, 300*time.Millisecond)

	adm := newAdmin(t, b)
	ends, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var p0 int32 = -1
	ends.Each(func(o kadm.ListedOffset) {
		if p0 < 0 && o.Partition >= 0 {
			p0 = o.Partition
		}
	})
	stable, err := adm.ListCommittedOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	newEnds, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	stable.Each(func(o kadm.ListedOffset) {
		end, _ := newEnds.Lookup(topic, o.Partition)
		before, _ := ends.Lookup(topic, o.Partition)
		if o.Offset != before.Offset {
			t.Errorf("partition %d: read_committed latest %d, want the open transaction's first offset %d (end now %d)",
				o.Partition, o.Offset, before.Offset, end.Offset)
		}
	})

	desc := kmsg.NewPtrDescribeTransactionsRequest()
	desc.TransactionalIDs = []string{"iso", "nope"}
	dresp, err := desc.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if s := dresp.TransactionStates[0]; s.ErrorCode != 0 || s.State != "Ongoing" || len(s.Topics) != 1 || s.Topics[0].Topic != topic || s.StartTimestamp < 0 {
		t.Errorf("describe iso: %+v", s)
	}
	if s := dresp.TransactionStates[1]; s.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("describe unknown id: error %d", s.ErrorCode)
	}
	list := kmsg.NewPtrListTransactionsRequest()
	list.StateFilters = []string{"Ongoing", "Bogus"}
	lresp, err := list.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != "iso" || len(lresp.UnknownStateFilters) != 1 {
		t.Errorf("list ongoing: %+v", lresp)
	}
	if err := cl.EndTransaction(testCtx(t), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	consumeValues(t, b, topic, kgo.ReadCommitted(), 100, 300*time.Millisecond)
}

// TestTxnSecondProducerFencesFirst: a second producer with the same
// transactional id aborts the first one's open transaction and fences it.
func TestTxnSecondProducerFencesFirst(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	const topic = "txn-fence"
	createTopicN(t, b, topic, 2)
	first := newClient(t, b, kgo.TransactionalID("fence"))
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := first.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "zombie%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	second := newClient(t, b, kgo.TransactionalID("fence"))
	produceTxn(t, second, topic, "second", 5, true)

	err := first.EndTransaction(testCtx(t), kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	// The fenced producer can no longer write either.
	perr := first.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte("late")}).FirstErr()
	if perr == nil {
		t.Fatal("fenced producer produced")
	}
	for _, v := range consumeValues(t, b, topic, kgo.ReadCommitted(), 5, 300*time.Millisecond) {
		if v[0] != 's' {
			t.Fatalf("read_committed returned the fenced producer's %q", v)
		}
	}
	consumeValues(t, b, topic, kgo.ReadUncommitted(), 15, 300*time.Millisecond)
}

// eosRecords is how many input records TestTxnGroupTransactSession
// processes: STRATA_EOS_RECORDS, else the 100,000 (about 6 s with
// -race on the build machine).
func eosRecords(t *testing.T) int {
	if v := os.Getenv("STRATA_EOS_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("STRATA_EOS_RECORDS=%q", v)
		}
		return n
	}
	return 100000
}

// TestTxnGroupTransactSession runs franz-go's consume-transform-produce
// (GroupTransactSession) with three workers, killing one (connections cut,
// no goodbye) and starting its replacement with the same transactional id
// every fifth of the input: every input record appears exactly once in the
// output read with read_committed.
func TestTxnGroupTransactSession(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) {
		c.Groups.MinSessionTimeout = 500 * time.Millisecond
	})
	n := eosRecords(t)
	const in, out, group = "eos-in", "eos-out", "eos"
	createTopicN(t, b, in, 4)
	createTopicN(t, b, out, 4)
	src := newClient(t, b, kgo.ProducerLinger(5*time.Millisecond))
	for from := 0; from < n; from += 5000 {
		produceN(t, src, in, from, min(from+5000, n))
	}

	var processed atomic.Int64
	type worker struct {
		dialer *killableDialer
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(slot int) *worker {
		w := &worker{dialer: &killableDialer{}, done: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.Addr().String()), kgo.Dialer(w.dialer.dial),
			kgo.TransactionalID(fmt.Sprintf("eos-%d", slot)), kgo.TransactionTimeout(20*time.Second),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
			kgo.FetchMaxWait(100*time.Millisecond), kgo.ProducerLinger(2*time.Millisecond),
			// A killed worker's records fail instead of retrying forever.
			kgo.RecordDeliveryTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			// A killed worker stops at once; the client's goodbye (leaving
			// the group through a dialer that refuses everything) can take
			// its retry timeout, so it finishes in the background.
			defer func() {
				close(w.done)
				go sess.Close()
			}()
			for ctx.Err() == nil {
				fs := sess.PollFetches(ctx)
				if ctx.Err() != nil {
					return
				}
				if fs.Empty() {
					continue
				}
				if err := sess.Begin(); err != nil {
					return
				}
				e := kgo.AbortingFirstErrPromise(sess.Client())
				var k int64
				fs.EachRecord(func(r *kgo.Record) {
					k++
					sess.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: append([]byte("out-"), r.Value...)}, e.Promise())
				})
				// Flush first, so that waiting on the promise cannot outlive a
				// kill: records of a killed worker never complete.
				if sess.Client().Flush(ctx) != nil {
					return
				}
				committed, err := sess.End(ctx, kgo.TransactionEndTry(e.Err() == nil))
				if committed && err == nil {
					processed.Add(k)
				}
			}
		}()
		return w
	}
	kill := func(w *worker) {
		w.dialer.kill()
		w.cancel()
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			t.Errorf("a killed worker did not stop within 30s")
		}
	}
	workers := []*worker{start(0), start(1), start(2)}
	t.Cleanup(func() {
		for _, w := range workers {
			kill(w)
		}
	})
	adm := newAdmin(t, b)
	inEnds := endOffsetsOf(t, adm, in)
	for k := 1; k <= 4; k++ {
		waitUntil(t, 60*time.Second, func() (bool, string) {
			p := processed.Load()
			return p >= int64(n*k/5), fmt.Sprintf("%d of %d records processed before kill %d", p, n*k/5, k)
		})
		slot := k % len(workers)
		kill(workers[slot])
		workers[slot] = start(slot)
	}
	waitUntil(t, 90*time.Second, func() (bool, string) {
		got := committedOf(t, adm, group, in)
		for p, end := range inEnds {
			if got[p] != end {
				return false, fmt.Sprintf("committed %v, input ends %v", got, inEnds)
			}
		}
		return true, ""
	})
	for _, w := range workers {
		kill(w)
	}
	workers = nil
	vals := consumeValues(t, b, out, kgo.ReadCommitted(), n, 500*time.Millisecond)
	seen := make(map[string]bool, n)
	for _, v := range vals {
		if seen[v] {
			t.Fatalf("output has %q twice", v)
		}
		seen[v] = true
	}
	for i := range n {
		if !seen[fmt.Sprintf("out-%d", i)] {
			t.Fatalf("input record %d missing from the output", i)
		}
	}
}
