// Command sarama is the compat runner for github.com/IBM/sarama (version pinned in go.mod).
package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/strata-io/strata/compat-tests/runners/rt"
)

func main() { rt.Main("sarama", run) }

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.ClientID = "compat-sarama"
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Retry.Max = 3
	c.Metadata.Retry.Max = 5
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	c.Consumer.Return.Errors = true
	c.Net.DialTimeout = 5 * time.Second
	c.Net.ReadTimeout = 15 * time.Second
	secure(c)
	return c
}

type env struct{ a rt.Args }

func run(a rt.Args) rt.Result {
	e := env{a}
	if err := setSecurity(a.Security()); err != nil {
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
		GroupConsumerProtocol: rt.Skipping("sarama implements only the classic group protocol (no ConsumerGroupHeartbeat / KIP-848)"),
		CrossProduce:          e.crossProduce,
		CrossConsume:          e.crossConsume,
	})
}

func (e env) admin() (sarama.ClusterAdmin, error) {
	return sarama.NewClusterAdmin(e.a.Brokers(), config())
}

func (e env) ensureTopic(parts int32) error {
	adm, err := e.admin()
	if err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	defer adm.Close()
	err = adm.CreateTopic(e.a.Topic, &sarama.TopicDetail{NumPartitions: parts, ReplicationFactor: e.a.ReplicationFactor}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("CreateTopic: %w", err)
	}
	return e.waitReady(adm, int(parts))
}

// waitReady waits until DescribeTopics shows the topic with n partitions, each led by a
// broker DescribeCluster lists that answers ListOffsets for it.
func (e env) waitReady(adm sarama.ClusterAdmin, n int) error {
	return rt.WaitReady(context.Background(), e.a.Topic, n, func(context.Context) (rt.TopicMeta, error) {
		md, err := adm.DescribeTopics([]string{e.a.Topic})
		if err != nil {
			return rt.TopicMeta{}, err
		}
		if len(md) != 1 || md[0].Err != sarama.ErrNoError {
			return rt.TopicMeta{}, fmt.Errorf("DescribeTopics: %+v", md)
		}
		brokers, _, err := adm.DescribeCluster()
		if err != nil {
			return rt.TopicMeta{}, err
		}
		tm := rt.TopicMeta{Brokers: []int32{}, Leaders: make([]int32, len(md[0].Partitions))}
		for _, b := range brokers {
			tm.Brokers = append(tm.Brokers, b.ID())
		}
		for i := range tm.Leaders {
			tm.Leaders[i] = -1
		}
		for _, p := range md[0].Partitions {
			if int(p.ID) < len(tm.Leaders) && p.Err == sarama.ErrNoError {
				tm.Leaders[p.ID] = p.Leader
			}
		}
		return tm, nil
	}, func(context.Context) error {
		req := map[int32]int64{}
		for p := 0; p < n; p++ {
			req[int32(p)] = sarama.OffsetNewest
		}
		res, err := adm.ListOffsets(map[string]map[int32]int64{e.a.Topic: req}, nil)
		if err != nil {
			return err
		}
		for p, r := range res[e.a.Topic] {
			if r.Err != nil && !errors.Is(r.Err, sarama.ErrNoError) {
				return fmt.Errorf("ListOffsets partition %d: %w", p, r.Err)
			}
		}
		return nil
	})
}

func (e env) metadata() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	cl, err := sarama.NewClient(e.a.Brokers(), config())
	if err != nil {
		return rt.Failf("client: %v", err)
	}
	defer cl.Close()
	if err := cl.RefreshMetadata(); err != nil {
		return rt.Failf("RefreshMetadata: %v", err)
	}
	bs := cl.Brokers()
	if len(bs) == 0 || bs[0].Addr() == "" {
		return rt.Failf("no brokers")
	}
	topics, err := cl.Topics()
	if err != nil {
		return rt.Failf("Topics: %v", err)
	}
	for _, t := range topics {
		if t == e.a.Topic {
			return rt.Pass(fmt.Sprintf("%d broker(s), first %s, %d topics", len(bs), bs[0].Addr(), len(topics)), nil)
		}
	}
	return rt.Failf("topic %s not listed among %d", e.a.Topic, len(topics))
}

func (e env) createTopic() rt.Result {
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(e.a.Topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: e.a.ReplicationFactor}, false); err != nil {
		return rt.Failf("CreateTopic: %v", err)
	}
	if err := e.waitReady(adm, 3); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("created with 3 partitions, described 3", nil)
}

func codec(name string) sarama.CompressionCodec {
	switch name {
	case "gzip":
		return sarama.CompressionGZIP
	case "snappy":
		return sarama.CompressionSnappy
	case "lz4":
		return sarama.CompressionLZ4
	case "zstd":
		return sarama.CompressionZSTD
	}
	return sarama.CompressionNone
}

func (e env) toMsgs(rs []rt.Rec) []*sarama.ProducerMessage {
	var out []*sarama.ProducerMessage
	for _, r := range rs {
		m := &sarama.ProducerMessage{Topic: e.a.Topic, Value: sarama.ByteEncoder(r.Value)}
		if r.Key != nil {
			m.Key = sarama.ByteEncoder(r.Key)
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: h[0], Value: h[1]})
		}
		if r.Timestamp != 0 {
			m.Timestamp = time.UnixMilli(r.Timestamp)
		}
		out = append(out, m)
	}
	return out
}

func (e env) produce(c *sarama.Config, rs []rt.Rec) error {
	p, err := sarama.NewSyncProducer(e.a.Brokers(), c)
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer p.Close()
	return p.SendMessages(e.toMsgs(rs))
}

func fromMsg(m *sarama.ConsumerMessage) rt.Rec {
	r := rt.Rec{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp.UnixMilli()}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, [2][]byte{h.Key, h.Value})
	}
	return r
}

// consume reads every partition from the oldest offset until n records, then waits extra.
func (e env) consume(c *sarama.Config, n int, extra time.Duration) ([]rt.Rec, error) {
	cons, err := sarama.NewConsumer(e.a.Brokers(), c)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	defer cons.Close()
	parts, err := cons.Partitions(e.a.Topic)
	if err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	ch := make(chan rt.Rec, 1000)
	errc := make(chan error, 10)
	for _, p := range parts {
		pc, err := cons.ConsumePartition(e.a.Topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, fmt.Errorf("ConsumePartition %d: %w", p, err)
		}
		defer pc.Close()
		go func() {
			for m := range pc.Messages() {
				ch <- fromMsg(m)
			}
		}()
		go func() {
			for err := range pc.Errors() {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	var out []rt.Rec
	timeout := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case r := <-ch:
			out = append(out, r)
		case err := <-errc:
			return out, err
		case <-timeout:
			return out, fmt.Errorf("consumed %d of %d before the deadline", len(out), n)
		}
	}
	end := time.After(extra)
	for {
		select {
		case r := <-ch:
			out = append(out, r)
		case <-end:
			return out, nil
		}
	}
}

func (e env) produceConsume(c string) rt.Result {
	if err := e.ensureTopic(3); err != nil {
		return rt.Failf("%v", err)
	}
	cfg := config()
	cfg.Producer.Compression = codec(c)
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	if err := e.produce(cfg, rt.ProduceSet()); err != nil {
		return rt.Failf("produce (%s): %v", c, err)
	}
	got, err := e.consume(config(), 40, 500*time.Millisecond)
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	// Sarama delivers per partition in order; CheckProduceConsume checks order per partition.
	if err := rt.CheckProduceConsume(got); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("produced and consumed 40 records with "+c, nil)
}

func (e env) headers() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	var rs []rt.Rec
	for i := 0; i < rt.HeadersRecords; i++ {
		rs = append(rs, rt.Rec{Key: rt.HeadersKey(i), Value: rt.HeadersValue(i), Headers: rt.Headers()})
	}
	if err := e.produce(config(), rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	got, err := e.consume(config(), 5, 300*time.Millisecond)
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	if err := rt.CheckHeaders(got); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("5 records with 3 headers each, order and duplicates kept", nil)
}

func (e env) listOffsets() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	var rs []rt.Rec
	for i := 0; i < rt.ListOffsetsRecords; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("t%d", i)), Timestamp: rt.BaseTS + int64(i)*rt.TSStep})
	}
	if err := e.produce(config(), rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	cl, err := sarama.NewClient(e.a.Brokers(), config())
	if err != nil {
		return rt.Failf("client: %v", err)
	}
	defer cl.Close()
	var got, bad []string
	for _, q := range []struct {
		name     string
		ts, want int64
	}{{"earliest", sarama.OffsetOldest, 0}, {"latest", sarama.OffsetNewest, 10}, {"ts+5000", rt.BaseTS + 5000, 5}, {"after-last", rt.BaseTS + 60_000, -1}} {
		off, err := cl.GetOffset(e.a.Topic, 0, q.ts)
		if err != nil {
			return rt.Failf("GetOffset %s: %v", q.name, err)
		}
		got = append(got, fmt.Sprintf("%s=%d", q.name, off))
		if off != q.want {
			bad = append(bad, fmt.Sprintf("%s=%d want %d", q.name, off, q.want))
		}
	}
	if len(bad) > 0 {
		return rt.Failf("%s", strings.Join(bad, ", "))
	}
	return rt.Pass(strings.Join(got, " "), nil)
}

func (e env) idempotent() rt.Result {
	if err := e.ensureTopic(3); err != nil {
		return rt.Failf("%v", err)
	}
	cfg := config()
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	var rs []rt.Rec
	for i := 0; i < 100; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("i%d", i)), Value: []byte(fmt.Sprintf("idem-%d", i))})
	}
	if err := e.produce(cfg, rs); err != nil {
		return rt.Failf("idempotent produce: %v", err)
	}
	got, err := e.consume(config(), 100, 500*time.Millisecond)
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r.Value)] {
			return rt.Failf("duplicate %s", r.Value)
		}
		seen[string(r.Value)] = true
	}
	if len(got) != 100 {
		return rt.Failf("consumed %d, want 100", len(got))
	}
	return rt.Pass("100 records, no duplicates (Producer.Idempotent)", nil)
}

func (e env) produceN(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("g%d", i))})
	}
	return e.produce(config(), rs)
}

type handler struct {
	want   int
	commit int64 // offset to mark (-1: none)
	mu     sync.Mutex
	got    []rt.Rec
	done   chan struct{}
	once   sync.Once
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.got = append(h.got, fromMsg(m))
		n := len(h.got)
		h.mu.Unlock()
		if n == h.want {
			if h.commit >= 0 {
				s.MarkOffset(m.Topic, m.Partition, h.commit, "")
				s.Commit()
			}
			h.once.Do(func() { close(h.done) })
		}
	}
	return nil
}

// groupRun joins the group and consumes until want records; it returns the records and a stop func.
func (e env) groupRun(want int, commit int64) ([]rt.Rec, func(), error) {
	cfg := config()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup(e.a.Brokers(), e.a.Group(), cfg)
	if err != nil {
		return nil, func() {}, fmt.Errorf("NewConsumerGroup: %w", err)
	}
	h := &handler{want: want, commit: commit, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{e.a.Topic}, h); err != nil {
				select {
				case errc <- err:
				default:
				}
				time.Sleep(300 * time.Millisecond)
			}
		}
	}()
	stop := func() { cancel(); cg.Close() }
	var lastErr error
	timeout := time.After(20 * time.Second)
	for {
		select {
		case <-h.done:
			h.mu.Lock()
			defer h.mu.Unlock()
			return append([]rt.Rec(nil), h.got...), stop, nil
		case err := <-errc:
			lastErr = err
		case err := <-cg.Errors():
			lastErr = err
		case <-timeout:
			stop()
			return nil, func() {}, fmt.Errorf("group consumer got no %d records within 20s (last error: %v)", want, lastErr)
		}
	}
}

func (e env) groupCommitResume() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceN(20); err != nil {
		return rt.Failf("produce: %v", err)
	}
	_, stop, err := e.groupRun(10, 10)
	if err != nil {
		return rt.Failf("first consumer: %v", err)
	}
	stop()
	got, stop2, err := e.groupRun(1, -1)
	if err != nil {
		return rt.Failf("second consumer: %v", err)
	}
	stop2()
	if got[0].Offset != 10 {
		return rt.Failf("second consumer resumed at offset %d, want 10", got[0].Offset)
	}
	return rt.Pass("committed 10, new consumer resumed at offset 10", nil)
}

func (e env) transactions() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	cfg := config()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "tx-" + e.a.Topic
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(e.a.Brokers(), cfg)
	if err != nil {
		return rt.Failf("transactional producer: %v", err)
	}
	defer p.Close()
	for round, commit := range []bool{true, false} {
		if err := p.BeginTxn(); err != nil {
			return rt.Failf("BeginTxn %d: %v", round, err)
		}
		var rs []rt.Rec
		for i := 0; i < 5; i++ {
			rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("txn%d-%d", round, i))})
		}
		if err := p.SendMessages(e.toMsgs(rs)); err != nil {
			return rt.Failf("send in txn %d: %v", round, err)
		}
		if commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			return rt.Failf("end txn %d (commit=%v): %v", round, commit, err)
		}
	}
	rc := config()
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	got, err := e.consume(rc, 5, 1500*time.Millisecond)
	if err != nil {
		return rt.Failf("read_committed consume: %v", err)
	}
	if len(got) != 5 {
		return rt.Failf("read_committed saw %d records, want 5", len(got))
	}
	for _, r := range got {
		if !strings.HasPrefix(string(r.Value), "txn0-") {
			return rt.Failf("read_committed saw aborted record %s", r.Value)
		}
	}
	return rt.Pass("committed 5 visible, aborted 5 hidden under read_committed", nil)
}

func (e env) describeListGroups() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceN(3); err != nil {
		return rt.Failf("produce: %v", err)
	}
	_, stop, err := e.groupRun(1, -1)
	if err != nil {
		return rt.Failf("group consume: %v", err)
	}
	defer stop()
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	gs, err := adm.ListConsumerGroups()
	if err != nil {
		return rt.Failf("ListConsumerGroups: %v", err)
	}
	if _, ok := gs[e.a.Group()]; !ok {
		return rt.Failf("ListConsumerGroups does not list %s (%d groups)", e.a.Group(), len(gs))
	}
	ds, err := adm.DescribeConsumerGroups([]string{e.a.Group()})
	if err != nil {
		return rt.Failf("DescribeConsumerGroups: %v", err)
	}
	if len(ds) != 1 || ds[0].Err != sarama.ErrNoError {
		return rt.Failf("DescribeConsumerGroups: %+v", ds)
	}
	if ds[0].State == "" || len(ds[0].Members) == 0 {
		return rt.Failf("state %q, %d members", ds[0].State, len(ds[0].Members))
	}
	return rt.Pass(fmt.Sprintf("listed; state %s, %d member(s)", ds[0].State, len(ds[0].Members)), nil)
}

func (e env) describeConfigs() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: e.a.Topic})
	if err != nil {
		return rt.Failf("DescribeConfig: %v", err)
	}
	for _, c := range entries {
		if c.Name == "cleanup.policy" || c.Name == "retention.ms" {
			return rt.Pass(fmt.Sprintf("%d configs, %s=%s", len(entries), c.Name, c.Value), nil)
		}
	}
	return rt.Failf("%d configs, no cleanup.policy or retention.ms", len(entries))
}

func (e env) createPartitions() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreatePartitions(e.a.Topic, 3, nil, false); err != nil {
		return rt.Failf("CreatePartitions: %v", err)
	}
	if err := e.waitReady(adm, 3); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("1 -> 3 partitions", nil)
}

func (e env) deleteTopic() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	if err := adm.DeleteTopic(e.a.Topic); err != nil {
		return rt.Failf("DeleteTopic: %v", err)
	}
	// Not adm.ListTopics: it also sends DescribeConfigs for every topic.
	cl, err := sarama.NewClient(e.a.Brokers(), config())
	if err != nil {
		return rt.Failf("client: %v", err)
	}
	defer cl.Close()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if err := cl.RefreshMetadata(); err == nil {
			ts, _ := cl.Topics()
			found := false
			for _, t := range ts {
				found = found || t == e.a.Topic
			}
			if !found {
				return rt.Pass("deleted; metadata no longer lists it", nil)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return rt.Failf("topic still listed 15 s after DeleteTopic")
}

func (e env) maxMessageSize() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	cfg := config()
	cfg.Producer.MaxMessageBytes = 4 << 20
	cfg.Producer.Retry.Max = 0
	if err := e.produce(cfg, []rt.Rec{{Value: make([]byte, 1_000_000)}}); err != nil {
		return rt.Failf("1_000_000-byte value rejected: %v", err)
	}
	err := e.produce(cfg, []rt.Rec{{Value: make([]byte, 1_100_000)}})
	if err == nil {
		return rt.Fail("1_100_000-byte value accepted", map[string]any{"error": "none"})
	}
	name := err.Error()
	var pes sarama.ProducerErrors
	if errors.As(err, &pes) && len(pes) > 0 {
		name = pes[0].Err.Error()
		var ke sarama.KError
		if errors.As(pes[0].Err, &ke) {
			name = fmt.Sprintf("%d %s", int16(ke), ke.Error())
		}
	}
	return rt.Pass("1_000_000 accepted; 1_100_000 rejected: "+err.Error(), map[string]any{"error": name})
}

func (e env) crossProduce() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	var rs []rt.Rec
	for _, c := range rt.CrossSet(e.a.Client) {
		rs = append(rs, rt.Rec{Key: []byte(c.Key), Value: []byte(c.Value), Headers: [][2][]byte{{[]byte(rt.CrossHeader), []byte(e.a.Client)}}})
	}
	if err := e.produce(config(), rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	return rt.Pass("produced 20 cross records", nil)
}

func (e env) crossConsume() rt.Result {
	got, err := e.consume(config(), 20, 300*time.Millisecond)
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	return rt.CrossResult(got, e.a.Arg("expect_from", ""))
}

// kafkaSource maps sarama's config source names to Kafka's (DescribeConfigs v1+ codes).
var kafkaSource = map[sarama.ConfigSource]string{
	sarama.SourceUnknown: "UNKNOWN", sarama.SourceTopic: rt.DynamicTopicConfig, sarama.SourceDynamicBroker: "DYNAMIC_BROKER_CONFIG",
	sarama.SourceDynamicDefaultBroker: "DYNAMIC_DEFAULT_BROKER_CONFIG", sarama.SourceStaticBroker: "STATIC_BROKER_CONFIG", sarama.SourceDefault: "DEFAULT_CONFIG",
}

// alterConfigs: IncrementalAlterConfig SET retention.ms, DescribeConfig: value, source Topic.
func (e env) alterConfigs() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	v := rt.AlterRetentionMs
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, e.a.Topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}}, false); err != nil {
		return rt.Failf("IncrementalAlterConfig: %v", err)
	}
	res, err := rt.AwaitAlteredRetention("IncrementalAlterConfig", "DescribeConfig", func() (string, string, error) {
		entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: e.a.Topic})
		if err != nil {
			return "", "", fmt.Errorf("DescribeConfig: %v", err)
		}
		for _, c := range entries {
			if c.Name == "retention.ms" {
				return c.Value, kafkaSource[c.Source], nil
			}
		}
		return "(absent)", "", nil
	})
	if err != nil {
		return rt.Failf("%v", err)
	}
	return res
}

// describeTopic: DescribeTopics of a 3-partition topic: leader, replicas and ISR (rt.CheckReplicas).
func (e env) describeTopic() rt.Result {
	if err := e.ensureTopic(3); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	md, err := adm.DescribeTopics([]string{e.a.Topic})
	if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError {
		return rt.Failf("DescribeTopics: %v %+v", err, md)
	}
	var parts []string
	ps := md[0].Partitions
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	for _, p := range ps {
		if err := rt.CheckReplicas(p.Leader, p.Replicas, p.Isr, int(e.a.ReplicationFactor)); err != nil {
			return rt.Failf("partition %d: %v", p.ID, err)
		}
		parts = append(parts, fmt.Sprintf("p%d leader/replicas/isr %d", p.ID, p.Leader))
	}
	if len(parts) != 3 {
		return rt.Failf("%d partitions, want 3", len(parts))
	}
	return rt.Pass("DescribeTopics: "+strings.Join(parts, ", "), nil)
}

func (e env) produceNumbered(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("r%d", i))})
	}
	return e.produce(config(), rs)
}

// logDirs: after producing 10 records, DescribeLogDirs shows partition 0 with a size > 0.
func (e env) logDirs() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceNumbered(rt.LogDirsProduce); err != nil {
		return rt.Failf("produce: %v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	brokers, _, err := adm.DescribeCluster()
	if err != nil {
		return rt.Failf("DescribeCluster: %v", err)
	}
	var ids []int32
	for _, b := range brokers {
		ids = append(ids, b.ID())
	}
	all, err := adm.DescribeLogDirs(ids)
	if err != nil {
		return rt.Failf("DescribeLogDirs(%v): %v", ids, err)
	}
	var found, errs []string
	for id, dirs := range all {
		for _, d := range dirs {
			if d.ErrorCode != sarama.ErrNoError {
				errs = append(errs, fmt.Sprintf("broker %d %s: %v", id, d.Path, d.ErrorCode))
			}
			for _, t := range d.Topics {
				if t.Topic != e.a.Topic {
					continue
				}
				for _, p := range t.Partitions {
					if p.PartitionID != 0 {
						continue
					}
					if p.Size <= 0 {
						return rt.Failf("DescribeLogDirs: %s-0 in %s has size %d after producing %d records", e.a.Topic, d.Path, p.Size, rt.LogDirsProduce)
					}
					found = append(found, fmt.Sprintf("broker %d %s: %s-0 size %d offsetLag %d", id, d.Path, e.a.Topic, p.Size, p.OffsetLag))
				}
			}
		}
	}
	if len(found) == 0 {
		return rt.Failf("DescribeLogDirs(%v) lists no dir with %s-0 (errors: %v)", ids, e.a.Topic, errs)
	}
	return rt.Pass(strings.Join(found, "; "), nil)
}

// deleteRecords: produce 10, DeleteRecords before 5 (sarama returns no low watermark), then
// the oldest offset is 5.
func (e env) deleteRecords() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceNumbered(rt.DeleteRecordsProduce); err != nil {
		return rt.Failf("produce: %v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	if err := adm.DeleteRecords(e.a.Topic, map[int32]int64{0: rt.DeleteRecordsBefore}); err != nil {
		return rt.Failf("DeleteRecords: %v", err)
	}
	cl, err := sarama.NewClient(e.a.Brokers(), config())
	if err != nil {
		return rt.Failf("client: %v", err)
	}
	defer cl.Close()
	earliest, err := cl.GetOffset(e.a.Topic, 0, sarama.OffsetOldest)
	if err != nil {
		return rt.Failf("GetOffset(oldest): %v", err)
	}
	if earliest != rt.DeleteRecordsBefore {
		return rt.Failf("DeleteRecords before %d: earliest offset %d, want %d", rt.DeleteRecordsBefore, earliest, rt.DeleteRecordsBefore)
	}
	return rt.Pass(fmt.Sprintf("DeleteRecords before %d; earliest offset %d", rt.DeleteRecordsBefore, earliest), nil)
}
