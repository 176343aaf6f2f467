// Command franzgo is the compat runner for github.com/twmb/franz-go (version pinned in
// compat-tests/go.mod).
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() { rt.Main("franz-go", run) }

type logger struct{ r *rt.Ring }

func (l logger) Level() kgo.LogLevel { return kgo.LogLevelWarn }
func (l logger) Log(level kgo.LogLevel, msg string, kv ...any) {
	l.r.Add(fmt.Sprint(level, " ", msg, " ", kv))
}

type env struct {
	a    rt.Args
	ring *rt.Ring
	ctx  context.Context
	sec  []kgo.Opt // securityOpts of the arguments
}

func (e *env) client(opts ...kgo.Opt) *kgo.Client {
	base := append([]kgo.Opt{kgo.SeedBrokers(e.a.Brokers()...), kgo.WithLogger(logger{e.ring}), kgo.RetryTimeout(15 * time.Second)}, e.sec...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		panic(err)
	}
	return cl
}

// commitSync commits offset of partition 0 of the scenario topic for c's
// group and returns the request's error or a partition's.
func (e *env) commitSync(c *kgo.Client, offset int64) error {
	var cerr error
	c.CommitOffsetsSync(e.ctx, map[string]map[int32]kgo.EpochOffset{e.a.Topic: {0: {Epoch: -1, Offset: offset}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						cerr = err
					}
				}
			}
		})
	return cerr
}

func (e *env) failf(format string, a ...any) rt.Result {
	return rt.Fail(fmt.Sprintf(format, a...)+e.ring.String(), nil)
}

func run(a rt.Args) rt.Result {
	ctx, cancel := context.WithTimeout(context.Background(), rt.Budget(a.Scenario))
	defer cancel()
	e := &env{a: a, ring: &rt.Ring{}, ctx: ctx}
	var err error
	if e.sec, err = securityOpts(a.Security()); err != nil {
		return rt.Failf("security arguments: %v", err)
	}
	return rt.Dispatch(a.Scenario, rt.Handlers{
		Auth:                  e.auth,
		AuthRefused:           e.authRefused,
		AclAllowed:            e.aclAllowed,
		AclDenied:             e.aclDenied,
		AclGroupDenied:        e.aclGroupDenied,
		Metadata:              e.metadata,
		CreateTopic:           e.createTopic,
		ProduceConsume:        e.produceConsume,
		Headers:               e.headers,
		ListOffsets:           e.listOffsets,
		IdempotentProduce:     e.idempotent,
		GroupCommitResume:     e.groupCommitResume,
		Transactions:          e.transactions,
		DescribeListGroups:    e.describeListGroups,
		DescribeConfigs:       e.describeConfigs,
		CreatePartitions:      e.createPartitions,
		DeleteTopic:           e.deleteTopic,
		MaxMessageSize:        e.maxMessageSize,
		AlterConfigs:          e.alterConfigs,
		DescribeTopic:         e.describeTopic,
		LogDirs:               e.logDirs,
		DeleteRecords:         e.deleteRecords,
		ConsumerGroupsCLI:     rt.Skipping("kafka-cli only: checks the kafka-consumer-groups tool's output"),
		GroupConsumerProtocol: e.groupConsumerProtocol,
		CrossProduce:          e.crossProduce,
		CrossConsume:          e.crossConsume,
		TransactionsV2:        e.transactionsV2,
		FetchSessions:         e.fetchSessions,
		GroupConsumerRestart:  e.groupConsumerRestart,
		GroupConfigs:          e.groupConfigs,
		DelegationToken:       e.delegationToken,
		ShareConsume:          e.shareConsume,
		ShareRelease:          e.shareRelease,
		ShareReject:           e.shareReject,
		ShareDeliveryLimit:    e.shareDeliveryLimit,
		ShareLockExpiry:       e.shareLockExpiry,
		ShareReadCommitted:    e.shareReadCommitted,
	})
}

func (e *env) ensureTopic(adm *kadm.Client, parts int32) error {
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	r, err := adm.CreateTopic(ctx, parts, e.a.ReplicationFactor, nil, e.a.Topic)
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("CreateTopics: %v %s", r.Err, r.ErrMessage)
	}
	return rt.WaitReadyKadm(ctx, adm, e.a.Topic, int(parts))
}

func (e *env) admin() (*kgo.Client, *kadm.Client) {
	cl := e.client()
	return cl, kadm.NewClient(cl)
}

func (e *env) metadata() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	m, err := adm.Metadata(e.ctx)
	if err != nil {
		return e.failf("Metadata: %v", err)
	}
	if len(m.Brokers) == 0 || m.Brokers[0].Host == "" || m.Brokers[0].Port == 0 {
		return e.failf("no broker with host/port: %+v", m.Brokers)
	}
	if _, ok := m.Topics[e.a.Topic]; !ok {
		return e.failf("topic %s not listed", e.a.Topic)
	}
	return rt.Pass(fmt.Sprintf("%d broker(s), first %s:%d, controller %d, %d topics", len(m.Brokers), m.Brokers[0].Host, m.Brokers[0].Port, m.Controller, len(m.Topics)), nil)
}

func (e *env) createTopic() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	r, err := adm.CreateTopic(e.ctx, 3, e.a.ReplicationFactor, nil, e.a.Topic)
	if err != nil || r.Err != nil {
		return e.failf("CreateTopics: %v %v %s", err, r.Err, r.ErrMessage)
	}
	if err := rt.WaitReadyKadm(e.ctx, adm, e.a.Topic, 3); err != nil {
		return e.failf("%v", err)
	}
	return rt.Pass("created with 3 partitions, described 3", nil)
}

func codec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func toKgo(topic string, rs []rt.Rec) []*kgo.Record {
	var out []*kgo.Record
	for _, r := range rs {
		kr := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: string(h[0]), Value: h[1]})
		}
		if r.Timestamp != 0 {
			kr.Timestamp = time.UnixMilli(r.Timestamp)
		}
		out = append(out, kr)
	}
	return out
}

func fromKgo(r *kgo.Record) rt.Rec {
	out := rt.Rec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli()}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, [2][]byte{[]byte(h.Key), h.Value})
	}
	return out
}

func (e *env) produce(opts []kgo.Opt, rs []rt.Rec) error {
	cl := e.client(append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, opts...)...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, toKgo(e.a.Topic, rs)...).FirstErr()
}

// consume reads from the beginning until n records (or the deadline), then waits
// extra for any surplus record.
func (e *env) consume(n int, extra time.Duration, opts ...kgo.Opt) ([]rt.Rec, error) {
	cl := e.client(append([]kgo.Opt{kgo.ConsumeTopics(e.a.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	defer cl.Close()
	var out []rt.Rec
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return out, fmt.Errorf("consumed %d of %d records before the deadline", len(out), n)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err) })
		if ferr != nil {
			return out, ferr
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fromKgo(r)) })
	}
	if extra > 0 {
		ctx2, cancel2 := context.WithTimeout(e.ctx, extra)
		defer cancel2()
		fs := cl.PollFetches(ctx2)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fromKgo(r)) })
	}
	return out, nil
}

func (e *env) produceConsume(c string) rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 3); err != nil {
		return e.failf("%v", err)
	}
	if err := e.produce([]kgo.Opt{kgo.ProducerBatchCompression(codec(c))}, rt.ProduceSet()); err != nil {
		return e.failf("produce (%s): %v", c, err)
	}
	got, err := e.consume(40, 500*time.Millisecond)
	if err != nil {
		return e.failf("consume: %v", err)
	}
	if err := rt.CheckProduceConsume(got); err != nil {
		return e.failf("%v", err)
	}
	return rt.Pass(fmt.Sprintf("produced and consumed 40 records with %s", c), nil)
}

func (e *env) headers() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	var rs []rt.Rec
	for i := 0; i < rt.HeadersRecords; i++ {
		rs = append(rs, rt.Rec{Key: rt.HeadersKey(i), Value: rt.HeadersValue(i), Headers: rt.Headers()})
	}
	if err := e.produce(nil, rs); err != nil {
		return e.failf("produce: %v", err)
	}
	got, err := e.consume(5, 300*time.Millisecond)
	if err != nil {
		return e.failf("consume: %v", err)
	}
	if err := rt.CheckHeaders(got); err != nil {
		return e.failf("%v", err)
	}
	return rt.Pass("5 records with 3 headers each, order and duplicates kept", nil)
}

func (e *env) listOffset(cl *kgo.Client, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = e.a.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = 0
	p.Timestamp = ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(e.ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("ListOffsets: malformed response")
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, fmt.Errorf("ListOffsets(ts=%d): %w", ts, err)
	}
	return rp.Offset, nil
}

func (e *env) listOffsets() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	var rs []rt.Rec
	for i := 0; i < rt.ListOffsetsRecords; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("t%d", i)), Timestamp: rt.BaseTS + int64(i)*rt.TSStep})
	}
	if err := e.produce(nil, rs); err != nil {
		return e.failf("produce: %v", err)
	}
	type q struct {
		name string
		ts   int64
		want int64
	}
	var got []string
	var bad []string
	for _, c := range []q{{"earliest", -2, 0}, {"latest", -1, 10}, {"ts+5000", rt.BaseTS + 5000, 5}, {"after-last", rt.BaseTS + 60_000, -1}} {
		off, err := e.listOffset(cl, c.ts)
		if err != nil {
			return e.failf("%s: %v", c.name, err)
		}
		got = append(got, fmt.Sprintf("%s=%d", c.name, off))
		if off != c.want {
			bad = append(bad, fmt.Sprintf("%s=%d want %d", c.name, off, c.want))
		}
	}
	if len(bad) > 0 {
		return e.failf("%s", strings.Join(bad, ", "))
	}
	return rt.Pass(strings.Join(got, " "), nil)
}

func (e *env) idempotent() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 3); err != nil {
		return e.failf("%v", err)
	}
	var rs []rt.Rec
	for i := 0; i < 100; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("i%d", i)), Value: []byte(fmt.Sprintf("idem-%d", i))})
	}
	// franz-go is idempotent by default with acks=all.
	if err := e.produce(nil, rs); err != nil {
		return e.failf("produce: %v", err)
	}
	got, err := e.consume(100, 500*time.Millisecond)
	if err != nil {
		return e.failf("consume: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r.Value)] {
			return e.failf("duplicate %s", r.Value)
		}
		seen[string(r.Value)] = true
	}
	if len(got) != 100 {
		return e.failf("consumed %d, want 100", len(got))
	}
	return rt.Pass("100 records, no duplicates (idempotent producer)", nil)
}

func (e *env) produceN(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("g%d", i))})
	}
	return e.produce(nil, rs)
}

// groupConsume joins group g, polls until it has >= n records, returns them and the open client.
func (e *env) groupConsume(n int, opts ...kgo.Opt) (*kgo.Client, []rt.Rec, error) {
	cl := e.client(append([]kgo.Opt{kgo.ConsumerGroup(e.a.Group()), kgo.ConsumeTopics(e.a.Topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	var out []rt.Rec
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return cl, out, fmt.Errorf("group consumer got %d of %d records before the deadline", len(out), n)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = err })
		if ferr != nil {
			return cl, out, ferr
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, fromKgo(r)) })
	}
	return cl, out, nil
}

func (e *env) groupCommitResume() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	if err := e.produceN(20); err != nil {
		return e.failf("produce: %v", err)
	}
	c1, _, err := e.groupConsume(10)
	if err != nil {
		c1.Close()
		return e.failf("first consumer: %v", err)
	}
	cerr := e.commitSync(c1, 10)
	c1.Close()
	if cerr != nil {
		return e.failf("commit: %v", cerr)
	}
	c2, recs2, err := e.groupConsume(1)
	c2.Close()
	if err != nil {
		return e.failf("second consumer: %v", err)
	}
	if recs2[0].Offset != 10 {
		return e.failf("second consumer resumed at offset %d, want 10", recs2[0].Offset)
	}
	return rt.Pass("committed 10, new consumer resumed at offset 10", nil)
}

func (e *env) transactions() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	p := e.client(kgo.TransactionalID("tx-"+e.a.Topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionTimeout(30*time.Second))
	defer p.Close()
	for round, commit := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
		if err := p.BeginTransaction(); err != nil {
			cancel()
			return e.failf("begin txn %d: %v", round, err)
		}
		var rs []rt.Rec
		for i := 0; i < 5; i++ {
			rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("txn%d-%d", round, i))})
		}
		if err := p.ProduceSync(ctx, toKgo(e.a.Topic, rs)...).FirstErr(); err != nil {
			cancel()
			return e.failf("produce in txn %d: %v", round, err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			cancel()
			return e.failf("end txn %d (commit=%v): %v", round, commit, err)
		}
		cancel()
	}
	got, err := e.consume(5, 1500*time.Millisecond, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return e.failf("read_committed consume: %v", err)
	}
	if len(got) != 5 {
		return e.failf("read_committed saw %d records, want 5", len(got))
	}
	for _, r := range got {
		if !strings.HasPrefix(string(r.Value), "txn0-") {
			return e.failf("read_committed saw aborted record %s", r.Value)
		}
	}
	return rt.Pass("committed 5 visible, aborted 5 hidden under read_committed", nil)
}

func (e *env) describeListGroups() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	if err := e.produceN(3); err != nil {
		return e.failf("produce: %v", err)
	}
	c, _, err := e.groupConsume(1)
	defer c.Close()
	if err != nil {
		return e.failf("group consume: %v", err)
	}
	g := e.a.Group()
	lg, err := adm.ListGroups(e.ctx)
	if err != nil {
		return e.failf("ListGroups: %v", err)
	}
	if _, ok := lg[g]; !ok {
		return e.failf("ListGroups does not list %s (%d groups)", g, len(lg))
	}
	dg, err := adm.DescribeGroups(e.ctx, g)
	if err != nil {
		return e.failf("DescribeGroups: %v", err)
	}
	d := dg[g]
	if d.Err != nil {
		return e.failf("DescribeGroups %s: %v", g, d.Err)
	}
	if d.State == "" || len(d.Members) == 0 {
		return e.failf("DescribeGroups: state %q, %d members", d.State, len(d.Members))
	}
	return rt.Pass(fmt.Sprintf("listed; state %s, %d member(s), protocol %s", d.State, len(d.Members), d.Protocol), nil)
}

func (e *env) describeConfigs() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	rcs, err := adm.DescribeTopicConfigs(e.ctx, e.a.Topic)
	if err != nil {
		return e.failf("DescribeConfigs: %v", err)
	}
	rc, err := rcs.On(e.a.Topic, nil)
	if err != nil {
		return e.failf("DescribeConfigs: %v", err)
	}
	if rc.Err != nil {
		return e.failf("DescribeConfigs: %v %s", rc.Err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" || c.Key == "retention.ms" {
			return rt.Pass(fmt.Sprintf("%d configs, %s=%s", len(rc.Configs), c.Key, c.MaybeValue()), nil)
		}
	}
	return e.failf("%d configs, no cleanup.policy or retention.ms", len(rc.Configs))
}

func (e *env) createPartitions() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	r, err := adm.CreatePartitions(e.ctx, 2, e.a.Topic)
	if err != nil {
		return e.failf("CreatePartitions: %v", err)
	}
	if rr := r[e.a.Topic]; rr.Err != nil {
		return e.failf("CreatePartitions: %v %s", rr.Err, rr.ErrMessage)
	}
	if err := rt.WaitReadyKadm(e.ctx, adm, e.a.Topic, 3); err != nil {
		return e.failf("%v", err)
	}
	return rt.Pass("1 -> 3 partitions", nil)
}

func (e *env) deleteTopic() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	r, err := adm.DeleteTopic(e.ctx, e.a.Topic)
	if err != nil || r.Err != nil {
		return e.failf("DeleteTopics: %v %v %s", err, r.Err, r.ErrMessage)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		m, err := adm.Metadata(e.ctx)
		if err == nil {
			if _, ok := m.Topics[e.a.Topic]; !ok {
				return rt.Pass("deleted; metadata no longer lists it", nil)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return e.failf("topic still listed 15 s after DeleteTopics")
}

func (e *env) maxMessageSize() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	opts := []kgo.Opt{kgo.ProducerBatchMaxBytes(4 << 20), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(1)}
	small := rt.Rec{Value: make([]byte, 1_000_000)}
	if err := e.produce(opts, []rt.Rec{small}); err != nil {
		return e.failf("1_000_000-byte value rejected: %v", err)
	}
	big := rt.Rec{Value: make([]byte, 1_100_000)}
	err := e.produce(opts, []rt.Rec{big})
	if err == nil {
		return rt.Fail("1_100_000-byte value accepted", map[string]any{"error": "none"})
	}
	name := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		name = ke.Message
	}
	return rt.Pass("1_000_000 accepted; 1_100_000 rejected: "+err.Error(), map[string]any{"error": name})
}

func (e *env) crossProduce() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	var rs []rt.Rec
	for _, c := range rt.CrossSet(e.a.Client) {
		rs = append(rs, rt.Rec{Key: []byte(c.Key), Value: []byte(c.Value), Headers: [][2][]byte{{[]byte(rt.CrossHeader), []byte(e.a.Client)}}})
	}
	if err := e.produce([]kgo.Opt{kgo.ProducerBatchCompression(kgo.NoCompression())}, rs); err != nil {
		return e.failf("produce: %v", err)
	}
	return rt.Pass("produced 20 cross records", nil)
}

func (e *env) crossConsume() rt.Result {
	got, err := e.consume(20, 300*time.Millisecond)
	if err != nil {
		return e.failf("consume: %v", err)
	}
	return rt.CrossResult(got, e.a.Arg("expect_from", ""))
}

// alterConfigs sets retention.ms with IncrementalAlterConfigs (kadm.AlterTopicConfigs) and
// checks DescribeConfigs reports the value with source DYNAMIC_TOPIC_CONFIG.
func (e *env) alterConfigs() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	v := rt.AlterRetentionMs
	ar, err := adm.AlterTopicConfigs(e.ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &v}}, e.a.Topic)
	if err != nil {
		return e.failf("IncrementalAlterConfigs: %v", err)
	}
	for _, r := range ar {
		if r.Err != nil {
			return e.failf("IncrementalAlterConfigs %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	res, err := rt.AwaitAlteredRetention("IncrementalAlterConfigs", "DescribeConfigs", func() (string, string, error) {
		rcs, err := adm.DescribeTopicConfigs(e.ctx, e.a.Topic)
		if err != nil {
			return "", "", fmt.Errorf("DescribeConfigs: %v", err)
		}
		rc, err := rcs.On(e.a.Topic, nil)
		if err == nil && rc.Err != nil {
			err = fmt.Errorf("%v %s", rc.Err, rc.ErrMessage)
		}
		if err != nil {
			return "", "", fmt.Errorf("DescribeConfigs: %v", err)
		}
		for _, c := range rc.Configs {
			if c.Key == "retention.ms" {
				return c.MaybeValue(), c.Source.String(), nil
			}
		}
		return "(absent)", "", nil
	})
	if err != nil {
		return e.failf("%v", err)
	}
	return res
}

// describeTopic checks Metadata's view of a 3-partition topic: leader, replicas and ISR.
func (e *env) describeTopic() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 3); err != nil {
		return e.failf("%v", err)
	}
	td, err := adm.ListTopics(e.ctx, e.a.Topic)
	if err != nil {
		return e.failf("Metadata: %v", err)
	}
	t, ok := td[e.a.Topic]
	if !ok || t.Err != nil {
		return e.failf("Metadata: topic %s missing or in error: %v", e.a.Topic, t.Err)
	}
	var parts []string
	for _, p := range t.Partitions.Sorted() {
		if p.Err != nil {
			return e.failf("partition %d: %v", p.Partition, p.Err)
		}
		if err := rt.CheckReplicas(p.Leader, p.Replicas, p.ISR, int(e.a.ReplicationFactor)); err != nil {
			return e.failf("partition %d: %v", p.Partition, err)
		}
		parts = append(parts, fmt.Sprintf("p%d leader %d replicas %v isr %v", p.Partition, p.Leader, p.Replicas, p.ISR))
	}
	if len(parts) != 3 {
		return e.failf("%d partitions, want 3", len(parts))
	}
	if t.ID == [16]byte{} {
		return e.failf("Metadata has no topic ID for %s", e.a.Topic)
	}
	return rt.Pass("topic ID "+t.ID.String()+"; "+strings.Join(parts, ", "), nil)
}

// produceNumbered produces n records "r0".."r<n-1>" to partition 0 of a 1-partition topic.
func (e *env) produceNumbered(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("r%d", i))})
	}
	return e.produce(nil, rs)
}

// logDirs produces 10 records, then DescribeLogDirs must show partition 0 with a size > 0.
func (e *env) logDirs() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	if err := e.produceNumbered(rt.LogDirsProduce); err != nil {
		return e.failf("produce: %v", err)
	}
	all, err := adm.DescribeAllLogDirs(e.ctx, kadm.TopicsSet{e.a.Topic: {0: {}}})
	if err != nil {
		return e.failf("DescribeLogDirs: %v", err)
	}
	var found []string
	var errs []string
	for _, d := range all.Sorted() {
		if d.Err != nil {
			errs = append(errs, fmt.Sprintf("broker %d dir %s: %v", d.Broker, d.Dir, d.Err))
			continue
		}
		if p, ok := d.Topics.Lookup(e.a.Topic, 0); ok {
			if p.Size <= 0 {
				return e.failf("DescribeLogDirs: %s-0 in %s has size %d after producing %d records", e.a.Topic, d.Dir, p.Size, rt.LogDirsProduce)
			}
			found = append(found, fmt.Sprintf("broker %d dir %s: %s-0 size %d offsetLag %d", d.Broker, d.Dir, e.a.Topic, p.Size, p.OffsetLag))
		}
	}
	if len(found) == 0 {
		return e.failf("DescribeLogDirs lists no dir with %s-0 (%d dirs; errors: %v)", e.a.Topic, len(all.Sorted()), errs)
	}
	return rt.Pass(strings.Join(found, "; "), nil)
}

// deleteRecords produces 10 records, deletes before offset 5: low watermark 5, earliest 5.
func (e *env) deleteRecords() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	if err := e.produceNumbered(rt.DeleteRecordsProduce); err != nil {
		return e.failf("produce: %v", err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: e.a.Topic, Partition: 0, At: rt.DeleteRecordsBefore, LeaderEpoch: -1})
	dr, err := adm.DeleteRecords(e.ctx, os)
	if err != nil {
		return e.failf("DeleteRecords: %v", err)
	}
	r, ok := dr.Lookup(e.a.Topic, 0)
	if !ok {
		return e.failf("DeleteRecords: no response for partition 0")
	}
	if r.Err != nil {
		return e.failf("DeleteRecords: %v", r.Err)
	}
	lo, err := adm.ListStartOffsets(e.ctx, e.a.Topic)
	if err != nil {
		return e.failf("ListOffsets(earliest): %v", err)
	}
	st, ok := lo.Lookup(e.a.Topic, 0)
	if !ok || st.Err != nil {
		return e.failf("ListOffsets(earliest): %v", st.Err)
	}
	if r.LowWatermark != rt.DeleteRecordsBefore || st.Offset != rt.DeleteRecordsBefore {
		return e.failf("DeleteRecords before %d: low watermark %d, earliest offset %d (want %d, %d)", rt.DeleteRecordsBefore, r.LowWatermark, st.Offset, rt.DeleteRecordsBefore, rt.DeleteRecordsBefore)
	}
	got, err := e.consume(1, 0)
	if err != nil {
		return e.failf("consume from the start: %v", err)
	}
	if got[0].Offset != rt.DeleteRecordsBefore {
		return e.failf("consume from the start: first offset %d, want %d", got[0].Offset, rt.DeleteRecordsBefore)
	}
	return rt.Pass(fmt.Sprintf("DeleteRecords before %d: low watermark %d; earliest offset %d; a consumer from the start begins at %d", rt.DeleteRecordsBefore, r.LowWatermark, st.Offset, got[0].Offset), nil)
}

// groupType asks ListGroups (v5) for the group's type: "consumer" for a KIP-848 group.
func (e *env) groupType(cl *kgo.Client, g string) (string, error) {
	req := kmsg.NewPtrListGroupsRequest()
	resp, err := req.RequestWith(e.ctx, cl)
	if err != nil {
		return "", err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return "", err
	}
	for _, lg := range resp.Groups {
		if lg.Group == g {
			return lg.GroupType, nil
		}
	}
	return "", fmt.Errorf("ListGroups does not list %s", g)
}

// groupConsumerProtocol is group_commit_resume with KIP-848 (kgo.ServerSideBalancer with the
// range assignor): the group must be of type "consumer" in ListGroups.
func (e *env) groupConsumerProtocol() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	if err := e.ensureTopic(adm, 1); err != nil {
		return e.failf("%v", err)
	}
	if err := e.produceN(20); err != nil {
		return e.failf("produce: %v", err)
	}
	opts := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())}
	c1, _, err := e.groupConsume(10, opts...)
	if err != nil {
		c1.Close()
		return e.failf("first consumer: %v", err)
	}
	cerr := e.commitSync(c1, 10)
	gt, gterr := e.groupType(cl, e.a.Group())
	c1.Close()
	if cerr != nil {
		return e.failf("commit: %v", cerr)
	}
	if gterr != nil {
		return e.failf("ListGroups: %v", gterr)
	}
	if gt != "consumer" {
		return e.failf("ListGroups says group type %q, want \"consumer\" (empty: ListGroups below v5 or franz-go used the classic protocol)", gt)
	}
	c2, recs2, err := e.groupConsume(1, opts...)
	c2.Close()
	if err != nil {
		return e.failf("second consumer: %v", err)
	}
	if recs2[0].Offset != 10 {
		return e.failf("second consumer resumed at offset %d, want 10", recs2[0].Offset)
	}
	return rt.Pass("KIP-848 group (type consumer, range assignor): committed 10, new member resumed at offset 10", nil)
}
