package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestJava44ProducerUsesTransactionsV2: Apache Kafka 4.4.0's
// TransactionalMessageCopier (the Java 4.4 producer and consumer) copies
// 50 records in transactions of 10, committing its offsets with them;
// Strata finalizes transaction.version 2, so the producer runs KIP-890
// part 2 and the coordinator bumps the epoch with every transaction, as
// DescribeTransactions shows, and Kafka 4.4's DumpLogSegments decodes
// Strata's __transaction_state records (TransactionLogValue v1, the
// client's transaction version 2). Kafka 4.4.0 itself is the control.
func TestJava44ProducerUsesTransactionsV2(t *testing.T) {
	e2e(t)
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skipf("Kafka 4.4.0 not installed in %s (make compat installs it)", home)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	p := startBroker(t, "")
	strataEpoch := copyAndDescribe(t, home, p.addr)
	k := kafkaTargetFrom(t, home, t.TempDir())
	if err := k.Start(timeoutCtx(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	kafkaEpoch := copyAndDescribe(t, home, k.Addr())
	t.Logf("final producer epoch after the copy: strata %d, kafka 4.4.0 %d", strataEpoch, kafkaEpoch)
	if strataEpoch < 5 || kafkaEpoch < 5 {
		t.Fatalf("final producer epoch: strata %d, kafka %d; want at least 5 (one bump per transaction of 10 of 50 records)", strataEpoch, kafkaEpoch)
	}
	segs, _ := filepath.Glob(filepath.Join(p.dir, "__transaction_state-*", "*.log"))
	var dumped strings.Builder
	for _, seg := range segs {
		if fi, err := os.Stat(seg); err == nil && fi.Size() > 0 {
			out, errOut, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.DumpLogSegments", "--files", seg, "--transaction-log-decoder")
			if err != nil {
				t.Fatalf("DumpLogSegments %s: %v\n%s%s", seg, err, out, errOut)
			}
			dumped.WriteString(out + errOut)
		}
	}
	for _, want := range []string{`"version":"1"`, `"clientTransactionVersion":2`, `"transactionStatus":"CompleteCommit"`} {
		if !strings.Contains(strings.ReplaceAll(dumped.String(), " ", ""), want) {
			t.Fatalf("Kafka 4.4's decoding of Strata's __transaction_state has no %s:\n%s", want, dumped.String())
		}
	}
}

// copyAndDescribe fills in with 50 records, runs the copier to out and
// returns the copier's final producer epoch, after checking out holds the
// 50 records under read_committed.
func copyAndDescribe(t *testing.T, home, addr string) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := timeoutCtx(t, 3*time.Minute)
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	var rs []*kgo.Record
	for i := range 50 {
		rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.TransactionalMessageCopier",
		"--broker-list", addr, "--input-topic", "in", "--input-partition", "0", "--output-topic", "out",
		"--transactional-id", "copier", "--consumer-group", "copier", "--transaction-size", "10", "--use-group-metadata")
	if err != nil {
		t.Fatalf("TransactionalMessageCopier against %s: %v\n%s%s", addr, err, out, errOut)
	}
	rc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	n := 0
	for n < 50 && ctx.Err() == nil {
		fs := rc.PollFetches(ctx)
		n += fs.NumRecords()
	}
	if n != 50 {
		t.Fatalf("%s: %d records read_committed in out, want 50", addr, n)
	}
	ds, err := adm.DescribeTransactions(ctx, "copier")
	if err != nil {
		t.Fatal(err)
	}
	d := ds["copier"]
	if d.Err != nil {
		t.Fatalf("describe copier: %v", d.Err)
	}
	return d.ProducerEpoch
}
