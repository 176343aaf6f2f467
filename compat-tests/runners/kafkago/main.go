// Command kafkago is the compat runner for github.com/segmentio/kafka-go (version pinned in go.mod).
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/strata-io/strata/compat-tests/runners/rt"
)

func main() { rt.Main("kafka-go", run) }

type env struct {
	a   rt.Args
	ctx context.Context
	cl  *kafka.Client
}

func run(a rt.Args) rt.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	e := env{a: a, ctx: ctx, cl: &kafka.Client{Addr: kafka.TCP(a.Brokers()...), Timeout: 15 * time.Second}}
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
		IdempotentProduce:     rt.Skipping("kafka-go has no idempotent producer"),
		GroupCommitResume:     e.groupCommitResume,
		Transactions:          rt.Skipping("kafka-go has no transactional producer"),
		DescribeListGroups:    e.describeListGroups,
		DescribeConfigs:       e.describeConfigs,
		CreatePartitions:      e.createPartitions,
		DeleteTopic:           e.deleteTopic,
		MaxMessageSize:        e.maxMessageSize,
		AlterConfigs:          e.alterConfigs,
		DescribeTopic:         e.describeTopic,
		LogDirs:               rt.Skipping("kafka-go's Client has no DescribeLogDirs"),
		DeleteRecords:         rt.Skipping("kafka-go's Client has no DeleteRecords"),
		ConsumerGroupsCLI:     rt.Skipping("kafka-cli only: checks the kafka-consumer-groups tool's output"),
		GroupConsumerProtocol: rt.Skipping("kafka-go implements only the classic group protocol (no ConsumerGroupHeartbeat / KIP-848)"),
		CrossProduce:          e.crossProduce,
		CrossConsume:          e.crossConsume,
	})
}

func (e env) ensureTopic(parts int) error {
	resp, err := e.cl.CreateTopics(e.ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: e.a.Topic, NumPartitions: parts, ReplicationFactor: int(e.a.ReplicationFactor)}}})
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	if err := resp.Errors[e.a.Topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	return e.waitReady(parts)
}

// waitReady waits until Metadata shows the topic with n partitions, each led by a listed broker
// that answers ListOffsets for it.
func (e env) waitReady(n int) error {
	return rt.WaitReady(e.ctx, e.a.Topic, n, func(ctx context.Context) (rt.TopicMeta, error) {
		md, err := e.cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{e.a.Topic}})
		if err != nil {
			return rt.TopicMeta{}, err
		}
		if len(md.Topics) != 1 || md.Topics[0].Error != nil {
			return rt.TopicMeta{}, fmt.Errorf("Metadata: %+v", md.Topics)
		}
		tm := rt.TopicMeta{Brokers: []int32{}, Leaders: make([]int32, len(md.Topics[0].Partitions))}
		for _, b := range md.Brokers {
			tm.Brokers = append(tm.Brokers, int32(b.ID))
		}
		for i := range tm.Leaders {
			tm.Leaders[i] = -1
		}
		for _, p := range md.Topics[0].Partitions {
			if p.ID < len(tm.Leaders) && p.Error == nil {
				tm.Leaders[p.ID] = int32(p.Leader.ID)
			}
		}
		return tm, nil
	}, func(ctx context.Context) error {
		var reqs []kafka.OffsetRequest
		for p := 0; p < n; p++ {
			reqs = append(reqs, kafka.LastOffsetOf(p))
		}
		resp, err := e.cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{e.a.Topic: reqs}})
		if err != nil {
			return err
		}
		for _, po := range resp.Topics[e.a.Topic] {
			if po.Error != nil {
				return fmt.Errorf("ListOffsets partition %d: %w", po.Partition, po.Error)
			}
		}
		return nil
	})
}

func (e env) metadata() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	md, err := e.cl.Metadata(e.ctx, &kafka.MetadataRequest{})
	if err != nil {
		return rt.Failf("Metadata: %v", err)
	}
	if len(md.Brokers) == 0 || md.Brokers[0].Host == "" || md.Brokers[0].Port == 0 {
		return rt.Failf("no broker with host/port")
	}
	for _, t := range md.Topics {
		if t.Name == e.a.Topic {
			return rt.Pass(fmt.Sprintf("%d broker(s), first %s:%d, %d topics", len(md.Brokers), md.Brokers[0].Host, md.Brokers[0].Port, len(md.Topics)), nil)
		}
	}
	return rt.Failf("topic %s not listed", e.a.Topic)
}

func (e env) createTopic() rt.Result {
	resp, err := e.cl.CreateTopics(e.ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: e.a.Topic, NumPartitions: 3, ReplicationFactor: int(e.a.ReplicationFactor)}}})
	if err != nil {
		return rt.Failf("CreateTopics: %v", err)
	}
	if err := resp.Errors[e.a.Topic]; err != nil {
		return rt.Failf("CreateTopics: %v", err)
	}
	if err := e.waitReady(3); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("created with 3 partitions, described 3", nil)
}

func codec(name string) kafka.Compression {
	switch name {
	case "gzip":
		return compress.Gzip
	case "snappy":
		return compress.Snappy
	case "lz4":
		return compress.Lz4
	case "zstd":
		return compress.Zstd
	}
	return compress.None
}

func (e env) writer(c kafka.Compression) *kafka.Writer {
	return &kafka.Writer{Addr: kafka.TCP(e.a.Brokers()...), Topic: e.a.Topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		Compression: c, BatchTimeout: 5 * time.Millisecond, BatchSize: 1000, WriteTimeout: 15 * time.Second, ReadTimeout: 15 * time.Second}
}

func toMsgs(rs []rt.Rec) []kafka.Message {
	var out []kafka.Message
	for _, r := range rs {
		m := kafka.Message{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: string(h[0]), Value: h[1]})
		}
		if r.Timestamp != 0 {
			m.Time = time.UnixMilli(r.Timestamp)
		}
		out = append(out, m)
	}
	return out
}

func fromMsg(m kafka.Message) rt.Rec {
	r := rt.Rec{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Time.UnixMilli()}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, [2][]byte{[]byte(h.Key), h.Value})
	}
	return r
}

func (e env) produce(w *kafka.Writer, rs []rt.Rec) error {
	defer w.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	return w.WriteMessages(ctx, toMsgs(rs)...)
}

// consume reads each partition from the first offset with a partition reader.
func (e env) consume(parts, n int, extra time.Duration) ([]rt.Rec, error) {
	var out []rt.Rec
	deadline := time.Now().Add(20 * time.Second)
	for p := 0; p < parts; p++ {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.a.Brokers(), Topic: e.a.Topic, Partition: p, MaxWait: 200 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20})
		r.SetOffset(kafka.FirstOffset)
		for {
			// Stop a partition when its lag reaches 0 (after at least one read attempt).
			ctx, cancel := context.WithTimeout(e.ctx, 700*time.Millisecond)
			m, err := r.ReadMessage(ctx)
			cancel()
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					break
				}
				r.Close()
				return out, fmt.Errorf("partition %d: %w", p, err)
			}
			out = append(out, fromMsg(m))
			if time.Now().After(deadline) {
				break
			}
		}
		r.Close()
	}
	if len(out) != n {
		return out, fmt.Errorf("consumed %d records, want %d", len(out), n)
	}
	return out, nil
}

func (e env) produceConsume(c string) rt.Result {
	if err := e.ensureTopic(3); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produce(e.writer(codec(c)), rt.ProduceSet()); err != nil {
		return rt.Failf("produce (%s): %v", c, err)
	}
	got, err := e.consume(3, 40, 0)
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
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
	if err := e.produce(e.writer(compress.None), rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	got, err := e.consume(1, 5, 0)
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
	if err := e.produce(e.writer(compress.None), rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	var got, bad []string
	for _, q := range []struct {
		name string
		req  kafka.OffsetRequest
		want int64
	}{{"earliest", kafka.FirstOffsetOf(0), 0}, {"latest", kafka.LastOffsetOf(0), 10},
		{"ts+5000", kafka.TimeOffsetOf(0, time.UnixMilli(rt.BaseTS+5000)), 5}, {"after-last", kafka.TimeOffsetOf(0, time.UnixMilli(rt.BaseTS+60_000)), -1}} {
		resp, err := e.cl.ListOffsets(e.ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{e.a.Topic: {q.req}}})
		if err != nil {
			return rt.Failf("ListOffsets %s: %v", q.name, err)
		}
		po := resp.Topics[e.a.Topic]
		if len(po) != 1 {
			return rt.Failf("ListOffsets %s: %d partitions in response", q.name, len(po))
		}
		if po[0].Error != nil {
			return rt.Failf("ListOffsets %s: %v", q.name, po[0].Error)
		}
		var off int64
		switch q.name {
		case "earliest":
			off = po[0].FirstOffset
		case "latest":
			off = po[0].LastOffset
		default:
			off = -1
			for o := range po[0].Offsets {
				off = o
			}
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

func (e env) produceN(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("g%d", i))})
	}
	return e.produce(e.writer(compress.None), rs)
}

func (e env) groupReader() *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{Brokers: e.a.Brokers(), GroupID: e.a.Group(), Topic: e.a.Topic,
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20, HeartbeatInterval: time.Second,
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second, JoinGroupBackoff: 300 * time.Millisecond})
}

func (e env) groupCommitResume() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceN(20); err != nil {
		return rt.Failf("produce: %v", err)
	}
	r := e.groupReader()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	var last kafka.Message
	for i := 0; i < 10; i++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			r.Close()
			return rt.Failf("first consumer, record %d: %v", i, err)
		}
		last = m
	}
	if err := r.CommitMessages(ctx, last); err != nil {
		r.Close()
		return rt.Failf("commit: %v", err)
	}
	r.Close()
	r2 := e.groupReader()
	defer r2.Close()
	m, err := r2.FetchMessage(ctx)
	if err != nil {
		return rt.Failf("second consumer: %v", err)
	}
	if m.Offset != 10 {
		return rt.Failf("second consumer resumed at offset %d, want 10", m.Offset)
	}
	return rt.Pass("committed 10, new consumer resumed at offset 10", nil)
}

func (e env) describeListGroups() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceN(3); err != nil {
		return rt.Failf("produce: %v", err)
	}
	r := e.groupReader()
	defer r.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	if _, err := r.FetchMessage(ctx); err != nil {
		return rt.Failf("group consume: %v", err)
	}
	lg, err := e.cl.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil {
		return rt.Failf("ListGroups: %v", err)
	}
	if lg.Error != nil {
		return rt.Failf("ListGroups: %v", lg.Error)
	}
	found := false
	for _, g := range lg.Groups {
		if g.GroupID == e.a.Group() {
			found = true
		}
	}
	if !found {
		return rt.Failf("ListGroups does not list %s (%d groups)", e.a.Group(), len(lg.Groups))
	}
	dg, err := e.cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{e.a.Group()}})
	if err != nil {
		return rt.Failf("DescribeGroups: %v", err)
	}
	if len(dg.Groups) != 1 || dg.Groups[0].Error != nil {
		return rt.Failf("DescribeGroups: %+v", dg.Groups)
	}
	g := dg.Groups[0]
	if g.GroupState == "" || len(g.Members) == 0 {
		return rt.Failf("state %q, %d members", g.GroupState, len(g.Members))
	}
	return rt.Pass(fmt.Sprintf("listed; state %s, %d member(s)", g.GroupState, len(g.Members)), nil)
}

func (e env) describeConfigs() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	resp, err := e.cl.DescribeConfigs(e.ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: e.a.Topic}}})
	if err != nil {
		return rt.Failf("DescribeConfigs: %v", err)
	}
	if len(resp.Resources) != 1 {
		return rt.Failf("DescribeConfigs: %d resources", len(resp.Resources))
	}
	res := resp.Resources[0]
	if res.Error != nil {
		return rt.Failf("DescribeConfigs: %v", res.Error)
	}
	for _, c := range res.ConfigEntries {
		if c.ConfigName == "cleanup.policy" || c.ConfigName == "retention.ms" {
			return rt.Pass(fmt.Sprintf("%d configs, %s=%s", len(res.ConfigEntries), c.ConfigName, c.ConfigValue), nil)
		}
	}
	return rt.Failf("%d configs, no cleanup.policy or retention.ms", len(res.ConfigEntries))
}

func (e env) createPartitions() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	resp, err := e.cl.CreatePartitions(e.ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: e.a.Topic, Count: 3}}})
	if err != nil {
		return rt.Failf("CreatePartitions: %v", err)
	}
	if err := resp.Errors[e.a.Topic]; err != nil {
		return rt.Failf("CreatePartitions: %v", err)
	}
	if err := e.waitReady(3); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("1 -> 3 partitions", nil)
}

func (e env) deleteTopic() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	resp, err := e.cl.DeleteTopics(e.ctx, &kafka.DeleteTopicsRequest{Topics: []string{e.a.Topic}})
	if err != nil {
		return rt.Failf("DeleteTopics: %v", err)
	}
	if err := resp.Errors[e.a.Topic]; err != nil {
		return rt.Failf("DeleteTopics: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		md, err := e.cl.Metadata(e.ctx, &kafka.MetadataRequest{})
		if err == nil {
			found := false
			for _, t := range md.Topics {
				found = found || t.Name == e.a.Topic
			}
			if !found {
				return rt.Pass("deleted; metadata no longer lists it", nil)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return rt.Failf("topic still listed 15 s after DeleteTopics")
}

func (e env) maxMessageSize() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	w := func() *kafka.Writer {
		x := e.writer(compress.None)
		x.BatchBytes = 4 << 20
		x.MaxAttempts = 1
		return x
	}
	if err := e.produce(w(), []rt.Rec{{Value: make([]byte, 1_000_000)}}); err != nil {
		return rt.Failf("1_000_000-byte value rejected: %v", err)
	}
	err := e.produce(w(), []rt.Rec{{Value: make([]byte, 1_100_000)}})
	if err == nil {
		return rt.Fail("1_100_000-byte value accepted", map[string]any{"error": "none"})
	}
	name := err.Error()
	var we kafka.WriteErrors
	if errors.As(err, &we) && len(we) > 0 && we[0] != nil {
		name = we[0].Error()
		var ke kafka.Error
		if errors.As(we[0], &ke) {
			name = fmt.Sprintf("%d %s", int(ke), ke.Title())
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		name = "network error: " + ne.Error()
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
	if err := e.produce(e.writer(compress.None), rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	return rt.Pass("produced 20 cross records", nil)
}

func (e env) crossConsume() rt.Result {
	got, err := e.consume(1, 20, 0)
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	return rt.CrossResult(got, e.a.Arg("expect_from", ""))
}

// alterConfigs: IncrementalAlterConfigs SET retention.ms, DescribeConfigs: value and source.
func (e env) alterConfigs() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	ar, err := e.cl.IncrementalAlterConfigs(e.ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: e.a.Topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: rt.AlterRetentionMs, ConfigOperation: kafka.ConfigOperationSet}}}}})
	if err != nil {
		return rt.Failf("IncrementalAlterConfigs: %v", err)
	}
	for _, r := range ar.Resources {
		if r.Error != nil {
			return rt.Failf("IncrementalAlterConfigs %s: %v", r.ResourceName, r.Error)
		}
	}
	res, err := rt.AwaitAlteredRetention("IncrementalAlterConfigs", "DescribeConfigs", func() (string, string, error) {
		resp, err := e.cl.DescribeConfigs(e.ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: e.a.Topic}}})
		if err != nil {
			return "", "", fmt.Errorf("DescribeConfigs: %v", err)
		}
		if len(resp.Resources) != 1 || resp.Resources[0].Error != nil {
			return "", "", fmt.Errorf("DescribeConfigs: %d resources %+v", len(resp.Resources), resp.Resources)
		}
		for _, c := range resp.Resources[0].ConfigEntries {
			if c.ConfigName == "retention.ms" {
				return c.ConfigValue, rt.SourceName(c.ConfigSource), nil
			}
		}
		return "(absent)", "", nil
	})
	if err != nil {
		return rt.Failf("%v", err)
	}
	return res
}

// describeTopic: Metadata of a 3-partition topic: leader, replicas and ISR (rt.CheckReplicas).
func (e env) describeTopic() rt.Result {
	if err := e.ensureTopic(3); err != nil {
		return rt.Failf("%v", err)
	}
	md, err := e.cl.Metadata(e.ctx, &kafka.MetadataRequest{Topics: []string{e.a.Topic}})
	if err != nil {
		return rt.Failf("Metadata: %v", err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return rt.Failf("Metadata: %+v", md.Topics)
	}
	ps := md.Topics[0].Partitions
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	var parts []string
	for _, p := range ps {
		l := p.Leader.ID
		if p.Error != nil {
			return rt.Failf("partition %d: %v", p.ID, p.Error)
		}
		if err := rt.CheckReplicas(int32(l), brokerIDs(p.Replicas), brokerIDs(p.Isr), int(e.a.ReplicationFactor)); err != nil {
			return rt.Failf("partition %d: %v", p.ID, err)
		}
		parts = append(parts, fmt.Sprintf("p%d leader/replicas/isr %d", p.ID, l))
	}
	if len(parts) != 3 {
		return rt.Failf("%d partitions, want 3", len(parts))
	}
	return rt.Pass("Metadata: "+strings.Join(parts, ", "), nil)
}

func brokerIDs(bs []kafka.Broker) []int32 {
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = int32(b.ID)
	}
	return ids
}
