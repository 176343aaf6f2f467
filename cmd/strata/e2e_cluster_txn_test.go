package main

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterTransactionsSpanBrokers checks transactions on three strata
// processes whose partitions have three different leaders: the
// coordinator sends WriteTxnMarkers to the other leaders, so a
// read_committed consumer sees the committed records once each and none
// of the aborted ones.
func TestClusterTransactionsSpanBrokers(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	waitFormed(t, nodes, 15*time.Second)
	resp, err := createAssigned(nodes[0].addr, "tx", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("CreateTopics: %v", kerr.ErrorForCode(code))
	}
	checkTransactionsSpan(t, []string{nodes[0].addr, nodes[1].addr, nodes[2].addr})
}

// checkTransactionsSpan runs transactions on topic tx, whose three
// partitions have three different leaders, through clients of seeds
// (with common added to their options), and checks what a read_committed
// consumer reads.
func checkTransactionsSpan(t *testing.T, seeds []string, common ...kgo.Opt) {
	t.Helper()
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(slices.Concat([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30 * time.Second)}, common, opts)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr := client(kgo.TransactionalID("spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := map[string]bool{}
	for i, commit := range []bool{true, false, true} {
		if err := pr.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 6 {
			v := "t" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
			if err := pr.ProduceSync(ctx, &kgo.Record{Topic: "tx", Partition: int32(j % 3), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			if commit {
				want[v] = true
			}
		}
		if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d (commit %t): %v", i, commit, err)
		}
	}
	// A sentinel on every partition: read until each, so all before it came.
	plain := client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(3) {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "tx", Partition: p, Value: []byte("sentinel")}).FirstErr(); err != nil {
			t.Fatalf("sentinel to tx-%d: %v", p, err)
		}
	}
	cons := client(kgo.ConsumeTopics("tx"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	sentinels := map[int32]bool{}
	for len(sentinels) < 3 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed: sentinels %v, saw %v: %v", sentinels, seen, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "sentinel" {
				sentinels[r.Partition] = true
				return
			}
			seen[string(r.Value)]++
		})
	}
	for v := range want {
		if seen[v] != 1 {
			t.Errorf("committed %s read %d times, want once", v, seen[v])
		}
	}
	for v, n := range seen {
		if !want[v] {
			t.Errorf("read %s %d times, which no committed transaction wrote", v, n)
		}
	}
}
