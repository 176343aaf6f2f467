// Command confluentgo is the compat runner for github.com/confluentinc/confluent-kafka-go/v2
// with its bundled librdkafka (CGO_ENABLED=1; version pinned in go.mod).
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/strata-io/strata/compat-tests/runners/rt"
)

func main() { rt.Main("confluent-kafka-go", run) }

type env struct {
	a   rt.Args
	ctx context.Context
}

func run(a rt.Args) rt.Result {
	ctx, cancel := context.WithTimeout(context.Background(), rt.Budget(a.Scenario))
	defer cancel()
	e := env{a, ctx}
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
		LogDirs:               rt.Skipping("confluent-kafka-go's AdminClient has no DescribeLogDirs"),
		DeleteRecords:         e.deleteRecords,
		ConsumerGroupsCLI:     rt.Skipping("kafka-cli only: checks the kafka-consumer-groups tool's output"),
		GroupConsumerProtocol: e.groupConsumerProtocol,
		CrossProduce:          e.crossProduce,
		CrossConsume:          e.crossConsume,
		FetchSessions:         e.fetchSessions,
	})
}

func (e env) conf(extra kafka.ConfigMap) *kafka.ConfigMap {
	c := kafka.ConfigMap{"bootstrap.servers": e.a.Bootstrap, "client.id": "compat-confluent-go", "broker.address.family": "v4"}
	for k, v := range e.a.Security().Librdkafka() {
		c[k] = v
	}
	for k, v := range extra {
		c[k] = v
	}
	return &c
}

func (e env) admin() (*kafka.AdminClient, error) { return kafka.NewAdminClient(e.conf(nil)) }

func (e env) ensureTopic(parts int) error {
	adm, err := e.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	res, err := adm.CreateTopics(e.ctx, []kafka.TopicSpecification{{Topic: e.a.Topic, NumPartitions: parts, ReplicationFactor: int(e.a.ReplicationFactor)}})
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	if c := res[0].Error.Code(); c != kafka.ErrNoError && c != kafka.ErrTopicAlreadyExists {
		return fmt.Errorf("CreateTopics: %v", res[0].Error)
	}
	return e.waitReady(adm, parts)
}

// waitReady waits until GetMetadata shows the topic with n partitions, each led by a listed broker
// that answers ListOffsets for it.
func (e env) waitReady(adm *kafka.AdminClient, n int) error {
	return rt.WaitReady(e.ctx, e.a.Topic, n, func(context.Context) (rt.TopicMeta, error) {
		md, err := adm.GetMetadata(&e.a.Topic, false, 5000)
		if err != nil {
			return rt.TopicMeta{}, err
		}
		t := md.Topics[e.a.Topic]
		if t.Error.Code() != kafka.ErrNoError {
			return rt.TopicMeta{}, t.Error
		}
		tm := rt.TopicMeta{Brokers: []int32{}, Leaders: make([]int32, len(t.Partitions))}
		for _, b := range md.Brokers {
			tm.Brokers = append(tm.Brokers, b.ID)
		}
		for i := range tm.Leaders {
			tm.Leaders[i] = -1
		}
		for _, p := range t.Partitions {
			if int(p.ID) < len(tm.Leaders) && p.Error.Code() == kafka.ErrNoError {
				tm.Leaders[p.ID] = p.Leader
			}
		}
		return tm, nil
	}, func(ctx context.Context) error {
		req := map[kafka.TopicPartition]kafka.OffsetSpec{}
		for p := 0; p < n; p++ {
			req[kafka.TopicPartition{Topic: &e.a.Topic, Partition: int32(p)}] = kafka.LatestOffsetSpec
		}
		res, err := adm.ListOffsets(ctx, req)
		if err != nil {
			return err
		}
		for tp, r := range res.ResultInfos {
			if r.Error.Code() != kafka.ErrNoError {
				return fmt.Errorf("ListOffsets partition %d: %v", tp.Partition, r.Error)
			}
		}
		return nil
	})
}

func (e env) metadata() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer adm.Close()
	md, err := adm.GetMetadata(nil, true, 10000)
	if err != nil {
		return rt.Failf("GetMetadata: %v", err)
	}
	if len(md.Brokers) == 0 || md.Brokers[0].Host == "" || md.Brokers[0].Port == 0 {
		return rt.Failf("no broker with host/port")
	}
	if _, ok := md.Topics[e.a.Topic]; !ok {
		return rt.Failf("topic %s not listed", e.a.Topic)
	}
	return rt.Pass(fmt.Sprintf("%d broker(s), first %s:%d, %d topics", len(md.Brokers), md.Brokers[0].Host, md.Brokers[0].Port, len(md.Topics)), nil)
}

func (e env) createTopic() rt.Result {
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer adm.Close()
	res, err := adm.CreateTopics(e.ctx, []kafka.TopicSpecification{{Topic: e.a.Topic, NumPartitions: 3, ReplicationFactor: int(e.a.ReplicationFactor)}})
	if err != nil {
		return rt.Failf("CreateTopics: %v", err)
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		return rt.Failf("CreateTopics: %v", res[0].Error)
	}
	if err := e.waitReady(adm, 3); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("created with 3 partitions, described 3", nil)
}

func (e env) produce(extra kafka.ConfigMap, rs []rt.Rec) error {
	cfg := kafka.ConfigMap{"acks": "all", "linger.ms": 5, "message.timeout.ms": 20000}
	for k, v := range extra {
		cfg[k] = v
	}
	p, err := kafka.NewProducer(e.conf(cfg))
	if err != nil {
		return err
	}
	defer p.Close()
	dr := make(chan kafka.Event, len(rs))
	for _, r := range rs {
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &e.a.Topic, Partition: kafka.PartitionAny}, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: string(h[0]), Value: h[1]})
		}
		if r.Timestamp != 0 {
			m.Timestamp = time.UnixMilli(r.Timestamp)
		}
		if err := p.Produce(m, dr); err != nil {
			return fmt.Errorf("Produce: %w", err)
		}
	}
	var firstErr error
	for range rs {
		select {
		case ev := <-dr:
			if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil && firstErr == nil {
				firstErr = m.TopicPartition.Error
			}
		case <-time.After(25 * time.Second):
			return errors.New("no delivery report within 25s")
		}
	}
	return firstErr
}

func fromMsg(m *kafka.Message) rt.Rec {
	r := rt.Rec{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset), Key: m.Key, Value: m.Value, Timestamp: m.Timestamp.UnixMilli()}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, [2][]byte{[]byte(h.Key), h.Value})
	}
	return r
}

// consume assigns every partition from the beginning (no group) and reads n records.
func (e env) consume(parts, n int, extra time.Duration, cfg kafka.ConfigMap) ([]rt.Rec, error) {
	base := kafka.ConfigMap{"group.id": "unused-" + e.a.Topic, "enable.auto.commit": false, "auto.offset.reset": "earliest"}
	for k, v := range cfg {
		base[k] = v
	}
	c, err := kafka.NewConsumer(e.conf(base))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := 0; p < parts; p++ {
		tps = append(tps, kafka.TopicPartition{Topic: &e.a.Topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		return nil, fmt.Errorf("Assign: %w", err)
	}
	return poll(c, n, extra)
}

func poll(c *kafka.Consumer, n int, extra time.Duration) ([]rt.Rec, error) {
	var out []rt.Rec
	var lastErr error
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		ev := c.Poll(200)
		switch m := ev.(type) {
		case *kafka.Message:
			if m.TopicPartition.Error != nil {
				lastErr = m.TopicPartition.Error
				continue
			}
			out = append(out, fromMsg(m))
		case kafka.Error:
			lastErr = m
		}
	}
	if len(out) < n {
		return out, fmt.Errorf("consumed %d of %d before the deadline (last error: %v)", len(out), n, lastErr)
	}
	end := time.Now().Add(extra)
	for time.Now().Before(end) {
		if m, ok := c.Poll(100).(*kafka.Message); ok && m.TopicPartition.Error == nil {
			out = append(out, fromMsg(m))
		}
	}
	return out, nil
}

func (e env) produceConsume(c string) rt.Result {
	if err := e.ensureTopic(3); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produce(kafka.ConfigMap{"compression.codec": c, "partitioner": "murmur2_random"}, rt.ProduceSet()); err != nil {
		return rt.Failf("produce (%s): %v", c, err)
	}
	got, err := e.consume(3, 40, 500*time.Millisecond, nil)
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
	if err := e.produce(nil, rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	got, err := e.consume(1, 5, 300*time.Millisecond, nil)
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
	if err := e.produce(nil, rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer adm.Close()
	var got, bad []string
	tp := kafka.TopicPartition{Topic: &e.a.Topic, Partition: 0}
	for _, q := range []struct {
		name string
		spec kafka.OffsetSpec
		want int64
	}{{"earliest", kafka.EarliestOffsetSpec, 0}, {"latest", kafka.LatestOffsetSpec, 10}, {"ts+5000", kafka.NewOffsetSpecForTimestamp(rt.BaseTS + 5000), 5}, {"after-last", kafka.NewOffsetSpecForTimestamp(rt.BaseTS + 60_000), -1}} {
		res, err := adm.ListOffsets(e.ctx, map[kafka.TopicPartition]kafka.OffsetSpec{tp: q.spec})
		if err != nil {
			return rt.Failf("ListOffsets %s: %v", q.name, err)
		}
		var off int64 = -999
		for _, r := range res.ResultInfos {
			if r.Error.Code() != kafka.ErrNoError {
				return rt.Failf("ListOffsets %s: %v", q.name, r.Error)
			}
			off = int64(r.Offset)
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
	var rs []rt.Rec
	for i := 0; i < 100; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("i%d", i)), Value: []byte(fmt.Sprintf("idem-%d", i))})
	}
	if err := e.produce(kafka.ConfigMap{"enable.idempotence": true}, rs); err != nil {
		return rt.Failf("idempotent produce: %v", err)
	}
	got, err := e.consume(3, 100, 500*time.Millisecond, nil)
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
	return rt.Pass("100 records, no duplicates (enable.idempotence)", nil)
}

func (e env) produceN(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("g%d", i))})
	}
	return e.produce(nil, rs)
}

func (e env) groupConsumer() (*kafka.Consumer, error) {
	c, err := kafka.NewConsumer(e.conf(kafka.ConfigMap{"group.id": e.a.Group(), "enable.auto.commit": false, "auto.offset.reset": "earliest",
		"session.timeout.ms": 10000}))
	if err != nil {
		return nil, err
	}
	if err := c.Subscribe(e.a.Topic, nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (e env) groupCommitResume() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceN(20); err != nil {
		return rt.Failf("produce: %v", err)
	}
	c, err := e.groupConsumer()
	if err != nil {
		return rt.Failf("consumer: %v", err)
	}
	if _, err := poll(c, 10, 0); err != nil {
		c.Close()
		return rt.Failf("first consumer: %v", err)
	}
	if _, err := c.CommitOffsets([]kafka.TopicPartition{{Topic: &e.a.Topic, Partition: 0, Offset: 10}}); err != nil {
		c.Close()
		return rt.Failf("commit: %v", err)
	}
	c.Close()
	c2, err := e.groupConsumer()
	if err != nil {
		return rt.Failf("consumer: %v", err)
	}
	defer c2.Close()
	got, err := poll(c2, 1, 0)
	if err != nil {
		return rt.Failf("second consumer: %v", err)
	}
	if got[0].Offset != 10 {
		return rt.Failf("second consumer resumed at offset %d, want 10", got[0].Offset)
	}
	return rt.Pass("committed 10, new consumer resumed at offset 10", nil)
}

func (e env) transactions() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	p, err := kafka.NewProducer(e.conf(kafka.ConfigMap{"transactional.id": "tx-" + e.a.Topic, "acks": "all"}))
	if err != nil {
		return rt.Failf("producer: %v", err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		return rt.Failf("InitTransactions: %v", err)
	}
	for round, commit := range []bool{true, false} {
		if err := p.BeginTransaction(); err != nil {
			return rt.Failf("BeginTransaction %d: %v", round, err)
		}
		for i := 0; i < 5; i++ {
			if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &e.a.Topic, Partition: 0}, Value: []byte(fmt.Sprintf("txn%d-%d", round, i))}, nil); err != nil {
				return rt.Failf("produce in txn %d: %v", round, err)
			}
		}
		if commit {
			err = p.CommitTransaction(ctx)
		} else {
			p.Flush(5000)
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			return rt.Failf("end txn %d (commit=%v): %v", round, commit, err)
		}
	}
	got, err := e.consume(1, 5, 1500*time.Millisecond, kafka.ConfigMap{"isolation.level": "read_committed"})
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
	c, err := e.groupConsumer()
	if err != nil {
		return rt.Failf("consumer: %v", err)
	}
	defer c.Close()
	if _, err := poll(c, 1, 0); err != nil {
		return rt.Failf("group consume: %v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer adm.Close()
	lg, err := adm.ListConsumerGroups(e.ctx)
	if err != nil {
		return rt.Failf("ListConsumerGroups: %v", err)
	}
	found := false
	for _, g := range lg.Valid {
		found = found || g.GroupID == e.a.Group()
	}
	if !found {
		return rt.Failf("ListConsumerGroups does not list %s (%d groups, errors %v)", e.a.Group(), len(lg.Valid), lg.Errors)
	}
	dg, err := adm.DescribeConsumerGroups(e.ctx, []string{e.a.Group()})
	if err != nil {
		return rt.Failf("DescribeConsumerGroups: %v", err)
	}
	g := dg.ConsumerGroupDescriptions[0]
	if g.Error.Code() != kafka.ErrNoError {
		return rt.Failf("DescribeConsumerGroups: %v", g.Error)
	}
	if len(g.Members) == 0 {
		return rt.Failf("state %s, 0 members", g.State)
	}
	return rt.Pass(fmt.Sprintf("listed; state %s, %d member(s)", g.State, len(g.Members)), nil)
}

func (e env) describeConfigs() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer adm.Close()
	res, err := adm.DescribeConfigs(e.ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: e.a.Topic}})
	if err != nil {
		return rt.Failf("DescribeConfigs: %v", err)
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		return rt.Failf("DescribeConfigs: %v", res[0].Error)
	}
	for _, k := range []string{"cleanup.policy", "retention.ms"} {
		if c, ok := res[0].Config[k]; ok {
			return rt.Pass(fmt.Sprintf("%d configs, %s=%s", len(res[0].Config), k, c.Value), nil)
		}
	}
	return rt.Failf("%d configs, no cleanup.policy or retention.ms", len(res[0].Config))
}

func (e env) createPartitions() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer adm.Close()
	res, err := adm.CreatePartitions(e.ctx, []kafka.PartitionsSpecification{{Topic: e.a.Topic, IncreaseTo: 3}})
	if err != nil {
		return rt.Failf("CreatePartitions: %v", err)
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		return rt.Failf("CreatePartitions: %v", res[0].Error)
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
		return rt.Failf("%v", err)
	}
	defer adm.Close()
	res, err := adm.DeleteTopics(e.ctx, []string{e.a.Topic})
	if err != nil {
		return rt.Failf("DeleteTopics: %v", err)
	}
	if res[0].Error.Code() != kafka.ErrNoError {
		return rt.Failf("DeleteTopics: %v", res[0].Error)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		md, err := adm.GetMetadata(nil, true, 5000)
		if err == nil {
			if _, ok := md.Topics[e.a.Topic]; !ok {
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
	cfg := kafka.ConfigMap{"message.max.bytes": 4 << 20, "compression.codec": "none", "retries": 0}
	if err := e.produce(cfg, []rt.Rec{{Value: make([]byte, 1_000_000)}}); err != nil {
		return rt.Failf("1_000_000-byte value rejected: %v", err)
	}
	err := e.produce(cfg, []rt.Rec{{Value: make([]byte, 1_100_000)}})
	if err == nil {
		return rt.Fail("1_100_000-byte value accepted", map[string]any{"error": "none"})
	}
	name := err.Error()
	var ke kafka.Error
	if errors.As(err, &ke) {
		name = ke.Code().String()
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
	if err := e.produce(kafka.ConfigMap{"compression.codec": "none"}, rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	return rt.Pass("produced 20 cross records", nil)
}

func (e env) crossConsume() rt.Result {
	got, err := e.consume(1, 20, 300*time.Millisecond, nil)
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
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	ar, err := adm.IncrementalAlterConfigs(e.ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: e.a.Topic,
		Config: []kafka.ConfigEntry{{Name: "retention.ms", Value: rt.AlterRetentionMs, IncrementalOperation: kafka.AlterConfigOpTypeSet}}}})
	if err != nil {
		return rt.Failf("IncrementalAlterConfigs: %v", err)
	}
	for _, r := range ar {
		if r.Error.Code() != kafka.ErrNoError {
			return rt.Failf("IncrementalAlterConfigs %s: %v", r.Name, r.Error)
		}
	}
	res, err := rt.AwaitAlteredRetention("IncrementalAlterConfigs", "DescribeConfigs", func() (string, string, error) {
		dr, err := adm.DescribeConfigs(e.ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: e.a.Topic}})
		if err != nil {
			return "", "", fmt.Errorf("DescribeConfigs: %v", err)
		}
		if len(dr) != 1 || dr[0].Error.Code() != kafka.ErrNoError {
			return "", "", fmt.Errorf("DescribeConfigs: %+v", dr)
		}
		if c, ok := dr[0].Config["retention.ms"]; ok {
			return c.Value, c.Source.String(), nil
		}
		return "(absent)", "", nil
	})
	if err != nil {
		return rt.Failf("%v", err)
	}
	return res
}

// describeTopic: DescribeTopics of a 3-partition topic: topic ID, leader, replicas and ISR (rt.CheckReplicas).
func (e env) describeTopic() rt.Result {
	if err := e.ensureTopic(3); err != nil {
		return rt.Failf("%v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	res, err := adm.DescribeTopics(e.ctx, kafka.NewTopicCollectionOfTopicNames([]string{e.a.Topic}))
	if err != nil {
		return rt.Failf("DescribeTopics: %v", err)
	}
	if len(res.TopicDescriptions) != 1 || res.TopicDescriptions[0].Error.Code() != kafka.ErrNoError {
		return rt.Failf("DescribeTopics: %+v", res.TopicDescriptions)
	}
	td := res.TopicDescriptions[0]
	var parts []string
	for _, p := range td.Partitions {
		if p.Leader == nil {
			return rt.Failf("partition %d: no leader", p.Partition)
		}
		l := p.Leader.ID
		if err := rt.CheckReplicas(int32(l), nodeIDs(p.Replicas), nodeIDs(p.Isr), int(e.a.ReplicationFactor)); err != nil {
			return rt.Failf("partition %d: %v", p.Partition, err)
		}
		parts = append(parts, fmt.Sprintf("p%d leader/replicas/isr %d", p.Partition, l))
	}
	if len(parts) != 3 {
		return rt.Failf("%d partitions, want 3", len(parts))
	}
	return rt.Pass(fmt.Sprintf("DescribeTopics: topic ID %s; %s", td.TopicID, strings.Join(parts, ", ")), nil)
}

// deleteRecords: produce 10, DeleteRecords before 5: low watermark 5; ListOffsets earliest 5.
func (e env) deleteRecords() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	var rs []rt.Rec
	for i := 0; i < rt.DeleteRecordsProduce; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("r%d", i))})
	}
	if err := e.produce(nil, rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	adm, err := e.admin()
	if err != nil {
		return rt.Failf("admin: %v", err)
	}
	defer adm.Close()
	dr, err := adm.DeleteRecords(e.ctx, []kafka.TopicPartition{{Topic: &e.a.Topic, Partition: 0, Offset: kafka.Offset(rt.DeleteRecordsBefore)}})
	if err != nil {
		return rt.Failf("DeleteRecords: %v", err)
	}
	if len(dr.DeleteRecordsResults) != 1 {
		return rt.Failf("DeleteRecords: %d results", len(dr.DeleteRecordsResults))
	}
	r := dr.DeleteRecordsResults[0]
	if r.TopicPartition.Error != nil || r.DeletedRecords == nil {
		return rt.Failf("DeleteRecords: %v", r.TopicPartition.Error)
	}
	tp := kafka.TopicPartition{Topic: &e.a.Topic, Partition: 0}
	lo, err := adm.ListOffsets(e.ctx, map[kafka.TopicPartition]kafka.OffsetSpec{tp: kafka.EarliestOffsetSpec})
	if err != nil {
		return rt.Failf("ListOffsets(earliest): %v", err)
	}
	var earliest kafka.Offset = -1
	for _, ri := range lo.ResultInfos {
		if ri.Error.Code() != kafka.ErrNoError {
			return rt.Failf("ListOffsets(earliest): %v", ri.Error)
		}
		earliest = ri.Offset
	}
	lw := r.DeletedRecords.LowWatermark
	if lw != kafka.Offset(rt.DeleteRecordsBefore) || earliest != kafka.Offset(rt.DeleteRecordsBefore) {
		return rt.Failf("DeleteRecords before %d: low watermark %d, earliest offset %d (want %d, %d)", rt.DeleteRecordsBefore, lw, earliest, rt.DeleteRecordsBefore, rt.DeleteRecordsBefore)
	}
	return rt.Pass(fmt.Sprintf("DeleteRecords before %d: low watermark %d; earliest offset %d", rt.DeleteRecordsBefore, lw, earliest), nil)
}

// groupConsumerProtocol: group_commit_resume with group.protocol=consumer (KIP-848); the
// classic-only settings (session.timeout.ms, ...) stay unset, as librdkafka requires.
func (e env) groupConsumerProtocol() rt.Result {
	if err := e.ensureTopic(1); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceN(20); err != nil {
		return rt.Failf("produce: %v", err)
	}
	newConsumer := func() (*kafka.Consumer, error) {
		c, err := kafka.NewConsumer(e.conf(kafka.ConfigMap{"group.id": e.a.Group(), "group.protocol": "consumer",
			"enable.auto.commit": false, "auto.offset.reset": "earliest"}))
		if err != nil {
			return nil, err
		}
		if err := c.Subscribe(e.a.Topic, nil); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	c, err := newConsumer()
	if err != nil {
		return rt.Failf("consumer (group.protocol=consumer): %v", err)
	}
	if _, err := poll(c, 10, 0); err != nil {
		c.Close()
		return rt.Failf("first consumer (group.protocol=consumer): %v", err)
	}
	if _, err := c.CommitOffsets([]kafka.TopicPartition{{Topic: &e.a.Topic, Partition: 0, Offset: 10}}); err != nil {
		c.Close()
		return rt.Failf("commit: %v", err)
	}
	gtype := "(not listed)"
	if adm, err := e.admin(); err == nil {
		if lg, err := adm.ListConsumerGroups(e.ctx); err == nil {
			for _, g := range lg.Valid {
				if g.GroupID == e.a.Group() {
					gtype = g.Type.String()
				}
			}
		} else {
			gtype = "ListConsumerGroups: " + err.Error()
		}
		adm.Close()
	}
	c.Close()
	if gtype != kafka.ConsumerGroupTypeConsumer.String() {
		return rt.Failf("ListConsumerGroups reports group type %s, want %s", gtype, kafka.ConsumerGroupTypeConsumer)
	}
	c2, err := newConsumer()
	if err != nil {
		return rt.Failf("consumer: %v", err)
	}
	defer c2.Close()
	got, err := poll(c2, 1, 0)
	if err != nil {
		return rt.Failf("second consumer (group.protocol=consumer): %v", err)
	}
	if got[0].Offset != 10 {
		return rt.Failf("second consumer resumed at offset %d, want 10", got[0].Offset)
	}
	return rt.Pass("group.protocol=consumer (group type "+gtype+"): committed 10, new consumer resumed at offset 10", nil)
}

func nodeIDs(ns []kafka.Node) []int32 {
	ids := make([]int32, len(ns))
	for i, n := range ns {
		ids[i] = int32(n.ID)
	}
	return ids
}
