package main

// Strata started on a log dir Apache Kafka 4.4.0 (KRaft, one combined node)
// wrote: it adopts Kafka's topics, data, committed offsets and producer state.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-io/strata/chaos"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaHome is where compat-tests/scripts/install-kafka.sh (run by make tools)
// installs Apache Kafka 4.4.0's jars: the Kafka the e2e tests run, as a
// control and for its tools.
var kafkaHome = filepath.Join("..", "..", "compat-tests", ".cache", "kafka-4.4.0")

// newKafka prepares Apache Kafka in KRaft combined mode (node 1) as chaos
// runs it, with the offsets and transaction topics at Kafka's default 50
// partitions and metadata snapshots every second, so that the metadata log
// has both records and snapshots. Its data is in dir/data, its log in
// dir/kafka.log, printed when the test fails; it is killed at the end.
func newKafka(t *testing.T, dir string) *chaos.KafkaTarget {
	t.Helper()
	return newKafkaFrom(t, kafkaHome, dir)
}

// newKafkaFrom is newKafka with the Kafka installed in home.
func newKafkaFrom(t *testing.T, home, dir string) *chaos.KafkaTarget {
	t.Helper()
	return kafkaTargetFrom(t, home, dir, "offsets.topic.num.partitions=50", "transaction.state.log.num.partitions=50",
		"metadata.log.max.snapshot.interval.ms=1000")
}

// kafkaTargetFrom prepares Apache Kafka installed in home with its data in
// dir and extra server.properties lines; it is killed at the end of the
// test, and its log shown when the test failed.
func kafkaTargetFrom(t *testing.T, home, dir string, extra ...string) *chaos.KafkaTarget {
	t.Helper()
	home, err := filepath.Abs(home)
	if err != nil {
		t.Fatal(err)
	}
	k, err := chaos.NewKafka(home, dir, extra...)
	if err != nil {
		t.Fatalf("%v (make tools installs Kafka)", err)
	}
	t.Cleanup(func() {
		if err := k.Kill(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "kafka.log"))
			t.Logf("kafka log:\n%s", tail(string(log), 8<<10))
		}
	})
	return k
}

// commitTxn writes records from..from+9 to topic txn in one committed
// transaction of transactional id adopt-txn and returns its producer id and
// epoch.
func commitTxn(t *testing.T, addr string, from int) (int64, int16) {
	t.Helper()
	ctx := timeoutCtx(t, time.Minute)
	cl := newClient(t, addr, kgo.TransactionalID("adopt-txn"))
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceAll(t, cl, "txn", from, from+10)
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit transaction on %s: %v", addr, err)
	}
	return pid, epoch
}

// leaderEpochs is each partition's leader epoch from Metadata.
func leaderEpochs(t *testing.T, adm *kadm.Client, topic string) map[int32]int32 {
	t.Helper()
	md, err := adm.Metadata(timeoutCtx(t, 15*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int32{}
	for _, p := range md.Topics[topic].Partitions {
		out[p.Partition] = p.LeaderEpoch
	}
	if len(out) == 0 {
		t.Fatalf("metadata of %s: no partitions", topic)
	}
	return out
}

// lastBatch fetches the batch holding offset (the partition's last) and
// returns its base offset and bytes.
func lastBatch(t *testing.T, cl *kgo.Client, topic string, partition int32, offset int64) (int64, []byte) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes, req.ReplicaID = 0, 4<<20, -1
	td, err := kadm.NewClient(cl).ListTopics(timeoutCtx(t, 15*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 4<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s-%d at %d: %v %+v", topic, partition, offset, err, resp)
	}
	b := resp.Topics[0].Partitions[0].RecordBatches
	if len(b) < 61 {
		t.Fatalf("fetch %s-%d at %d: %d bytes, error %v", topic, partition, offset, len(b), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	size := 12 + int(binary.BigEndian.Uint32(b[8:12]))
	return int64(binary.BigEndian.Uint64(b)), b[:size]
}

// produceBatch sends batch as it is to the partition (acks all).
func produceBatch(t *testing.T, cl *kgo.Client, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	td, err := kadm.NewClient(cl).ListTopics(timeoutCtx(t, 15*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, td[topic].ID // v13 names it by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce to %s-%d: %v %+v", topic, partition, err, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// segmentFiles lists every .log file under the log dir.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestAdoptKafkaLogDir(t *testing.T) {
	e2e(t)
	kafkaDir := t.TempDir()
	k := newKafka(t, kafkaDir)
	ctx := timeoutCtx(t, 3*time.Minute)
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := k.Start(startCtx); err != nil {
		t.Fatal(err)
	}

	// Topics with configs, idempotent records, a committed group offset and
	// a KIP-848 (consumer protocol) group, all written by Kafka.
	adm := kadm.NewClient(newClient(t, k.Addr()))
	retention, compact := "3600000", "compact"
	for topic, spec := range map[string]struct {
		partitions int32
		configs    map[string]*string
	}{
		"orders":    {3, map[string]*string{"retention.ms": &retention}},
		"compacted": {1, map[string]*string{"cleanup.policy": &compact}},
		"txn":       {1, nil},
	} {
		resp, err := adm.CreateTopic(ctx, spec.partitions, 1, spec.configs, topic)
		if err != nil || resp.Err != nil {
			t.Fatalf("create %s on kafka: %v %v", topic, err, resp.Err)
		}
	}
	producer := newClient(t, k.Addr(), kgo.RecordRetries(100), kgo.RetryTimeout(time.Minute))
	ordersAcked := produceAll(t, producer, "orders", 0, 9900)
	compactedAcked := produceAll(t, producer, "compacted", 9900, 10000)
	kafkaPID, kafkaEpoch, err := producer.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ends := endOffsets(t, producer, "orders", 3)
	txnPID, txnEpoch := commitTxn(t, k.Addr(), 0)
	kafkaLeaderEpochs := leaderEpochs(t, adm, "orders")

	const group = "adopt-group"
	member := newClient(t, k.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	for n := 0; n < 300; {
		fs := member.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("group consumer on kafka: %v", err)
		}
		n += fs.NumRecords()
	}
	commit := map[int32]int64{0: ends[0] / 3, 1: ends[1] / 2, 2: 7}
	offsets := map[string]map[int32]kgo.EpochOffset{"orders": {}}
	for p, o := range commit {
		offsets["orders"][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var commitErr error
	member.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if commitErr == nil {
					commitErr = kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	})
	if commitErr != nil {
		t.Fatalf("commit on kafka: %v", commitErr)
	}
	member.Close()
	consoleOut, err := k.Tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", k.Addr(),
		"--topic", "compacted", "--group", "kip848-group", "--from-beginning", "--max-messages", "5",
		"--command-property", "group.protocol=consumer").CombinedOutput()
	if err != nil {
		t.Fatalf("kafka console consumer (group.protocol=consumer): %v\n%s", err, consoleOut)
	}
	kafkaOffsets := map[string]map[int32]int64{}
	for _, g := range []string{group, "kip848-group"} {
		fo, err := adm.FetchOffsets(ctx, g)
		if err != nil || fo.Error() != nil {
			t.Fatalf("fetch offsets of %s on kafka: %v %v", g, err, fo.Error())
		}
		kafkaOffsets[g] = map[int32]int64{}
		fo.Each(func(o kadm.OffsetResponse) { kafkaOffsets[g][o.Partition] = o.At })
	}
	if kafkaOffsets["kip848-group"][0] != 5 {
		t.Fatalf("kip848-group committed %v on kafka, want compacted-0 at 5", kafkaOffsets["kip848-group"])
	}
	// The KIP-848 group Kafka keeps in __consumer_offsets (ConsumerGroup*
	// records): Empty now that its member left, at the epoch it reached.
	kafkaCG, err := adm.DescribeConsumerGroups(ctx, "kip848-group")
	if err != nil || kafkaCG.Error() != nil {
		t.Fatalf("describe kip848-group on kafka: %v %v", err, kafkaCG.Error())
	}
	if d := kafkaCG["kip848-group"]; d.State != "Empty" || d.Epoch < 2 {
		t.Fatalf("kip848-group on kafka: state %s epoch %d, want Empty after a member came and went", d.State, d.Epoch)
	}
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(kafkaDir, "data")
	if _, err := os.Stat(filepath.Join(dataDir, ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("kafka left no clean shutdown marker: %v", err)
	}

	// Strata on Kafka's log dir and address: the producer, still running,
	// reconnects and continues its sequence.
	_, kafkaPort, _ := net.SplitHostPort(k.Addr())
	port, err := strconv.Atoi(kafkaPort)
	if err != nil {
		t.Fatalf("kafka address %s: %v", k.Addr(), err)
	}
	s := launch(t, dataDir, port)
	s.waitReady(60 * time.Second)
	s.waitLog(regexp.MustCompile(`adopted Kafka log dir.*"topics": 5.*"skipped_records": 0`), 10*time.Second)
	sadm := kadm.NewClient(newClient(t, s.addr))
	next := produceAll(t, producer, "orders", 10000, 10001)[0]
	if want := ends[next.Partition]; next.Offset != want {
		t.Errorf("record produced on strata at orders-%d offset %d, want the next offset %d", next.Partition, next.Offset, want)
	}
	if pid, epoch, err := producer.ProducerID(ctx); err != nil || pid != kafkaPID || epoch != kafkaEpoch {
		t.Errorf("producer id %d epoch %d (%v) after the switch, want kafka's %d/%d", pid, epoch, err, kafkaPID, kafkaEpoch)
	}
	// Strata leads at a newer epoch than Kafka did (Kafka's clean shutdown
	// fenced it, bumping the epoch once more): epochs never go backwards.
	for p, e := range leaderEpochs(t, sadm, "orders") {
		if e <= kafkaLeaderEpochs[p] {
			t.Errorf("orders-%d leader epoch %d on strata, %d on kafka", p, e, kafkaLeaderEpochs[p])
		}
	}
	// Kafka's producer snapshot loaded: its last batch, sent again, is a
	// duplicate, answered with its offset and not appended.
	q := (next.Partition + 1) % 3
	base, batch := lastBatch(t, producer, "orders", q, ends[q]-1)
	if got := produceBatch(t, producer, "orders", q, batch); got.ErrorCode != 0 || got.BaseOffset != base {
		t.Errorf("kafka's last batch of orders-%d sent again: error %v, base offset %d; want a duplicate at %d",
			q, kerr.ErrorForCode(got.ErrorCode), got.BaseOffset, base)
	}
	if end := endOffsets(t, producer, "orders", 3)[q]; end != ends[q] {
		t.Errorf("orders-%d end offset %d after a duplicate, want %d", q, end, ends[q])
	}
	fresh := newClient(t, s.addr)
	produceAll(t, fresh, "compacted", 10001, 10002)
	if pid, _, err := fresh.ProducerID(ctx); err != nil || pid <= kafkaPID {
		t.Errorf("new producer got id %d (%v): kafka already handed out ids up to %d", pid, err, kafkaPID)
	}

	// Kafka's __transaction_state loaded: the transactional id keeps its
	// producer id, fenced to a newer epoch.
	if pid, epoch := commitTxn(t, s.addr, 10); pid != txnPID || epoch <= txnEpoch {
		t.Errorf("transactional id on strata: producer %d epoch %d, on kafka %d epoch %d", pid, epoch, txnPID, txnEpoch)
	}
	committed := newClient(t, s.addr, kgo.ConsumeTopics("txn"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	for n := 0; n < 20; {
		fs := committed.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("read_committed consumer on strata: %v", err)
		}
		n += fs.NumRecords()
	}
	checkAcked(t, append(ordersAcked, next), consumeAll(t, s.addr, "orders", 9901))
	checkAcked(t, compactedAcked, consumeAll(t, s.addr, "compacted", 101))

	for g, want := range kafkaOffsets {
		fo, err := sadm.FetchOffsets(ctx, g)
		if err != nil || fo.Error() != nil {
			t.Fatalf("fetch offsets of %s on strata: %v %v", g, err, fo.Error())
		}
		got := map[int32]int64{}
		fo.Each(func(o kadm.OffsetResponse) { got[o.Partition] = o.At })
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("group %s committed %v on strata, %v on kafka", g, got, want)
		}
	}
	strataCG, err := sadm.DescribeConsumerGroups(ctx, "kip848-group")
	if err != nil || strataCG.Error() != nil {
		t.Fatalf("describe kip848-group on strata: %v %v", err, strataCG.Error())
	}
	if got, want := strataCG["kip848-group"], kafkaCG["kip848-group"]; got.State != want.State || got.Epoch != want.Epoch ||
		got.AssignmentEpoch != want.AssignmentEpoch {
		t.Errorf("kip848-group on strata: state %s epoch %d assignment epoch %d; on kafka %s %d %d",
			got.State, got.Epoch, got.AssignmentEpoch, want.State, want.Epoch, want.AssignmentEpoch)
	}
	resumed := newClient(t, s.addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"), kgo.FetchMaxWait(200*time.Millisecond))
	firsts := map[int32]int64{}
	for len(firsts) < 3 {
		fs := resumed.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("group consumer on strata: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := firsts[r.Partition]; !ok {
				firsts[r.Partition] = r.Offset
			}
		})
	}
	if fmt.Sprint(firsts) != fmt.Sprint(commit) {
		t.Errorf("group resumed at %v on strata, committed %v on kafka", firsts, commit)
	}
	resumed.Close()

	rcs, err := sadm.DescribeTopicConfigs(ctx, "orders", "compacted")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ topic, key, value string }{{"orders", "retention.ms", retention}, {"compacted", "cleanup.policy", compact}} {
		rc, err := rcs.On(want.topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range rc.Configs {
			if c.Key == want.key {
				found = c.MaybeValue() == want.value && c.Source.String() == "DYNAMIC_TOPIC_CONFIG"
			}
		}
		if !found {
			t.Errorf("DescribeConfigs %s on strata: %s not %s as a topic config: %+v", want.topic, want.key, want.value, rc.Configs)
		}
	}

	// Segments Strata writes from scratch (small ones, so it rolls) must
	// read in DumpLogSegments too.
	small := "1024"
	if resp, err := sadm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &small}, "strata-made"); err != nil || resp.Err != nil {
		t.Fatalf("create strata-made on strata: %v %v", err, resp.Err)
	}
	for i := range 50 { // one batch each
		if err := fresh.ProduceSync(ctx, keyed("strata-made", i)).FirstErr(); err != nil {
			t.Fatalf("produce to strata-made: %v", err)
		}
	}

	hws := endOffsets(t, fresh, "orders", 3)
	if code := s.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("strata exit code %d", code)
	}
	// The high watermarks Kafka reads when it opens the dir again.
	ckpt, err := os.ReadFile(filepath.Join(dataDir, "replication-offset-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\norders 0 " + strconv.FormatInt(hws[0], 10) + "\n", "\norders 1 " + strconv.FormatInt(hws[1], 10) + "\n",
		"\norders 2 " + strconv.FormatInt(hws[2], 10) + "\n", "\nstrata-made 0 50\n"} {
		if !strings.HasPrefix(string(ckpt), "0\n") || !strings.Contains(string(ckpt), want) {
			t.Errorf("replication-offset-checkpoint lacks %q:\n%s", strings.TrimSpace(want), ckpt)
		}
	}
	files := segmentFiles(t, dataDir)
	if made, _ := filepath.Glob(filepath.Join(dataDir, "strata-made-0", "*.log")); len(made) < 2 {
		t.Fatalf("strata-made-0 has %d segments, want several", len(made))
	}
	out, err := k.Tool("org.apache.kafka.tools.DumpLogSegments", "--deep-iteration", "--files", strings.Join(files, ",")).CombinedOutput()
	if err != nil {
		t.Fatalf("DumpLogSegments: %v\n%s", err, tail(string(out), 8<<10))
	}
	text := string(out)
	if n := strings.Count(text, "Dumping "); n != len(files) {
		t.Errorf("DumpLogSegments dumped %d of %d segments", n, len(files))
	}
	for _, bad := range []string{"isvalid: false", "Exception", "ERROR", "Found ", "corrupt"} {
		if strings.Contains(text, bad) {
			t.Errorf("DumpLogSegments output has %q:\n%s", bad, tail(text, 8<<10))
		}
	}
	if !strings.Contains(text, "producerId: "+strconv.FormatInt(kafkaPID, 10)) || !strings.Contains(text, fmt.Sprintf("baseOffset: %d lastOffset: %d", next.Offset, next.Offset)) {
		t.Errorf("DumpLogSegments did not show the batch strata wrote at orders-%d offset %d", next.Partition, next.Offset)
	}
}
