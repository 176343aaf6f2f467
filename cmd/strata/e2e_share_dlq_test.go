package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareDLQRun consumes topic src as share group group: "ok" accepted,
// "bad" rejected, "poison" released until the delivery count limit (2),
// until all three are done with.
func shareDLQRun(t *testing.T, ctx context.Context, addr, group string) {
	t.Helper()
	c := newClient(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics("src"), kgo.ClientID(group))
	defer c.Close()
	done := map[string]bool{}
	for len(done) < 3 {
		if ctx.Err() != nil {
			t.Fatalf("%s: only %v done before the deadline", group, done)
		}
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			switch v := string(r.Value); v {
			case "ok":
				r.Ack(kgo.AckAccept)
				done[v] = true
			case "bad":
				r.Ack(kgo.AckReject)
				done[v] = true
			case "poison":
				r.Ack(kgo.AckRelease)
				if r.DeliveryCount() >= 2 {
					done[v] = true
				}
			}
		})
		c.MarkAcks(kgo.AckAccept)
	}
	if err := c.FlushAcks(ctx); err != nil {
		t.Fatalf("%s: flush acks: %v", group, err)
	}
}

// readDeadLetters reads n records of topic from its start.
func readDeadLetters(t *testing.T, ctx context.Context, addr, topic string, n int) []string {
	t.Helper()
	rd := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer rd.Close()
	var out []string
	for len(out) < n {
		if ctx.Err() != nil {
			t.Fatalf("%s: %d dead letters before the deadline: %v", topic, len(out), out)
		}
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, fmt.Sprintf("%s=%q", h.Key, h.Value))
			}
			key, value := "null", "null"
			if r.Key != nil {
				key = fmt.Sprintf("%q", r.Key)
			}
			if r.Value != nil {
				value = fmt.Sprintf("%q", r.Value)
			}
			out = append(out, fmt.Sprintf("%s/%d@%d key=%s value=%s headers=[%s]", r.Topic, r.Partition, r.Offset, key, value, strings.Join(hs, " ")))
		})
	}
	return out
}

// runShareDLQ is the dead-letter scenario on one broker: four share
// groups read the same three records; g-none has no dead-letter topic,
// g-off names dlq.off, which does not allow it
// (errors.deadletterqueue.group.enable unset), g-pre names nodlq, which
// allows it but lacks errors.deadletterqueue.topic.name.prefix, g-auto names dlq.auto,
// which errors.deadletterqueue.auto.create.topics.enable creates, g-dlq
// names dlq.one with errors.deadletterqueue.copy.record.enable. It
// returns what dlq.one and dlq.auto hold once their two dead letters
// arrived, then dlq.auto's configs and the topics, and how many records
// dlq.off and nodlq hold.
func runShareDLQ(t *testing.T, addr string) (one []string, off int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	for topic, cfg := range map[string]map[string]*string{
		"src":     nil,
		"dlq.one": {"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")},
		"dlq.off": nil,
		"nodlq":   {"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")},
	} {
		if r, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	groups := map[string]map[string]string{
		"g-none": {},
		"g-off":  {"errors.deadletterqueue.topic.name": "dlq.off"},
		"g-pre":  {"errors.deadletterqueue.topic.name": "nodlq"},
		"g-auto": {"errors.deadletterqueue.topic.name": "dlq.auto"},
		"g-dlq":  {"errors.deadletterqueue.topic.name": "dlq.one", "errors.deadletterqueue.copy.record.enable": "true"},
	}
	if r, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "errors.deadletterqueue.auto.create.topics.enable", Value: kmsg.StringPtr("true")}}); err != nil || r[0].Err != nil {
		t.Fatalf("errors.deadletterqueue.auto.create.topics.enable=true: %v %v", err, r)
	}
	for g, cfg := range groups {
		cfg["share.auto.offset.reset"], cfg["share.delivery.count.limit"] = "earliest", "2"
		alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
		for k, v := range cfg {
			res.Configs = append(res.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: k, Value: kmsg.StringPtr(v)})
		}
		alter.Resources = append(alter.Resources, res)
		if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.Resources[0].ErrorCode != 0 {
			t.Fatalf("configs of %s: %v %+v", g, err, ar)
		}
	}
	var recs []*kgo.Record
	for _, v := range []string{"ok", "bad", "poison"} {
		recs = append(recs, &kgo.Record{Topic: "src", Key: []byte("key-" + v), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "original", Value: []byte(v)}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The groups without a working dead-letter topic go first: by the
	// time g-dlq's dead letters are written, theirs would have been.
	for _, g := range []string{"g-none", "g-off", "g-pre", "g-auto", "g-dlq"} {
		shareDLQRun(t, ctx, addr, g)
	}
	one = readDeadLetters(t, ctx, addr, "dlq.auto", 2)
	one = append(one, readDeadLetters(t, ctx, addr, "dlq.one", 2)...)
	rc, err := adm.DescribeTopicConfigs(ctx, "dlq.auto")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if c.Key == "errors.deadletterqueue.group.enable" || c.Key == "message.timestamp.type" {
			one = append(one, fmt.Sprintf("dlq.auto %s=%s (%s)", c.Key, c.MaybeValue(), c.Source))
		}
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one = append(one, fmt.Sprintf("topics %v partitions of dlq.auto %d", topics.Names(), len(topics["dlq.auto"].Partitions)))
	ends, err := adm.ListEndOffsets(ctx, "dlq.off", "dlq.one", "nodlq")
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := ends.Lookup("dlq.one", 0); e.Offset != 2 {
		t.Errorf("dlq.one ends at %d, want 2: a dead letter too many", e.Offset)
	}
	e, _ := ends.Lookup("dlq.off", 0)
	n, _ := ends.Lookup("nodlq", 0)
	return one, e.Offset + n.Offset
}

// TestShareGroupDeadLetterAsKafka44 runs the scenario on Strata and on
// Kafka 4.4.0 and compares the dead letters: the rejected record and the
// poison one, released at the delivery count limit, each with Kafka's
// __dlq.errors.* headers, in that order, with its key and value copied
// (dlq.one) or none (dlq.auto, created with Kafka's two configs); the
// group without a dead-letter topic, the one whose topic does not allow
// it and the one whose topic lacks the "dlq." prefix write nothing
// (dlq.off and nodlq stay empty, no other topic appears).
func TestShareGroupDeadLetterAsKafka44(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "unstable.api.versions.enable=true")
	strata, strataOff := runShareDLQ(t, p.addr)
	want := []string{
		`dlq.auto/0@0 key=null value=null headers=[__dlq.errors.topic="src" __dlq.errors.partition="0" __dlq.errors.offset="1" __dlq.errors.group="g-auto" __dlq.errors.delivery.count="1" __dlq.errors.message="Offset rejected by client."]`,
		`dlq.auto/0@1 key=null value=null headers=[__dlq.errors.topic="src" __dlq.errors.partition="0" __dlq.errors.offset="2" __dlq.errors.group="g-auto" __dlq.errors.delivery.count="2" __dlq.errors.message="Offset delivery count exceeded the threshold."]`,
		`dlq.one/0@0 key="key-bad" value="bad" headers=[__dlq.errors.topic="src" __dlq.errors.partition="0" __dlq.errors.offset="1" __dlq.errors.group="g-dlq" __dlq.errors.delivery.count="1" __dlq.errors.message="Offset rejected by client."]`,
		`dlq.one/0@1 key="key-poison" value="poison" headers=[__dlq.errors.topic="src" __dlq.errors.partition="0" __dlq.errors.offset="2" __dlq.errors.group="g-dlq" __dlq.errors.delivery.count="2" __dlq.errors.message="Offset delivery count exceeded the threshold."]`,
		`dlq.auto errors.deadletterqueue.group.enable=true (DYNAMIC_TOPIC_CONFIG)`,
		`dlq.auto message.timestamp.type=CreateTime (DYNAMIC_TOPIC_CONFIG)`,
		`topics [dlq.auto dlq.off dlq.one nodlq src] partitions of dlq.auto 1`,
	}
	if strings.Join(strata, "\n") != strings.Join(want, "\n") || strataOff != 0 {
		t.Fatalf("strata: dlq.one\n%s\nwant\n%s\ndlq.off and nodlq hold %d, want 0", strings.Join(strata, "\n"), strings.Join(want, "\n"), strataOff)
	}
	kafkaAddr := shareKafka44(t)
	kafka, kafkaOff := runShareDLQ(t, kafkaAddr)
	if strings.Join(kafka, "\n") != strings.Join(strata, "\n") || kafkaOff != strataOff {
		t.Errorf("dlq.one differs:\nkafka\n%s\nstrata\n%s\ndlq.off and nodlq hold %d on kafka, %d on strata", strings.Join(kafka, "\n"), strings.Join(strata, "\n"), kafkaOff, strataOff)
	}
}
