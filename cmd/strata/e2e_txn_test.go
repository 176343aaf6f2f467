package main

// End-to-end test of transactions with the real binary: committed and
// aborted transactions survive kill -9, and a transaction left open by the
// crash is aborted after its timeout, which releases the LSO.

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnArgs check for timed out transactions every 100 ms.
var txnArgs = []string{"--override", "transaction.abort.timed.out.transaction.cleanup.interval.ms=100"}

// runTxn produces n records in one transaction and commits or aborts it;
// with an empty prefix and commit false it leaves the transaction open.
func runTxn(t *testing.T, cl *kgo.Client, topic, prefix string, n int, commit bool) {
	t.Helper()
	ctx := timeoutCtx(t, 30*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s%d", prefix, i)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if commit || prefix != "" {
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
}

// isolatedValues reads topic from the start until n records arrived (then
// 300 ms more) at the isolation level.
func isolatedValues(t *testing.T, addr, topic string, level kgo.IsolationLevel, n int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	ctx := timeoutCtx(t, 60*time.Second)
	var vals []string
	for len(vals) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: %d of %d records", topic, len(vals), n)
		}
		fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	}
	quiet, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cl.PollFetches(quiet).EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	if len(vals) != n {
		t.Fatalf("%s: %d records, want %d", topic, len(vals), n)
	}
	return vals
}

// latest is the sum over partitions of ListOffsets latest at the isolation
// level (1 = read_committed: the LSO).
func latest(t *testing.T, cl *kgo.Client, topic string, partitions int32, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, rp := range resp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			t.Fatal(err)
		}
		sum += rp.Offset
	}
	return sum
}

func TestTransactionsSurviveKill9(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", txnArgs...)
	admin := newClient(t, p.addr)
	const topic = "txn"
	createTopic(t, admin, topic, 2)
	tx := newClient(t, p.addr, kgo.TransactionalID("e2e-txn"), kgo.TransactionTimeout(2*time.Second))
	runTxn(t, tx, topic, "c", 100, true)
	runTxn(t, tx, topic, "a", 100, false)
	check := func(p *proc, uncommitted int) {
		t.Helper()
		for _, v := range isolatedValues(t, p.addr, topic, kgo.ReadCommitted(), 100) {
			if v[0] != 'c' {
				t.Fatalf("read_committed returned %q", v)
			}
		}
		isolatedValues(t, p.addr, topic, kgo.ReadUncommitted(), uncommitted)
	}
	check(p, 200)

	// A third transaction is left open by the crash.
	runTxn(t, tx, topic, "", 50, false)
	tx.Close()
	cl := newClient(t, p.addr)
	if lso, hw := latest(t, cl, topic, 2, 1), latest(t, cl, topic, 2, 0); lso >= hw {
		t.Fatalf("open transaction: LSO sum %d, HW sum %d", lso, hw)
	}
	p.kill()
	q := p.restart(txnArgs...)
	q.waitLog(regexp.MustCompile(`aborted a timed out transaction.*e2e-txn`), 30*time.Second)
	cl = newClient(t, q.addr)
	deadline := time.Now().Add(30 * time.Second)
	for latest(t, cl, topic, 2, 1) != latest(t, cl, topic, 2, 0) {
		if time.Now().After(deadline) {
			t.Fatal("LSO did not reach the high watermark after the timeout abort")
		}
		time.Sleep(20 * time.Millisecond)
	}
	check(q, 250)
	// The transactional id works again after the abort.
	tx2 := newClient(t, q.addr, kgo.TransactionalID("e2e-txn"), kgo.TransactionTimeout(2*time.Second))
	runTxn(t, tx2, topic, "c", 10, true)
	isolatedValues(t, q.addr, topic, kgo.ReadCommitted(), 110)
}
