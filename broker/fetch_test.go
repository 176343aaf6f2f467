package broker

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func produceSync(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func TestProduceThenConsumeInOrder(t *testing.T) {
	b := startBroker(t, nil)
	producer := newClient(t, b, kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	var recs []*kgo.Record
	for i := 0; i < 500; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	produceSync(t, producer, recs...)

	consumer := newClient(t, b, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < len(recs) {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(got), err)
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
}

// fetchOnce sends one raw Fetch for partition 0 of topic at offset.
func fetchOnce(t *testing.T, cl *kgo.Client, topic string, offset int64, maxWait, maxBytes, partitionMaxBytes int32) *kmsg.FetchResponseTopicPartition {
	t.Helper()
	p, err := fetchRaw(cl, topic, offset, maxWait, maxBytes, partitionMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fetchRaw(cl *kgo.Client, topic string, offset int64, maxWait, maxBytes, partitionMaxBytes int32) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, 1, maxBytes
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &topic
	meta.Topics = []kmsg.MetadataRequestTopic{mt}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	metaResp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	// kgo sends the highest version both sides serve, which names topics
	// by id from v13, so give both the name and the id.
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, metaResp.Topics[0].TopicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, partitionMaxBytes
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	return &resp.Topics[0].Partitions[0], nil
}

func TestFetchSendsFirstBatchEvenWhenOverLimits(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("big"), kgo.AllowAutoTopicCreation())
	value := make([]byte, 10_000)
	rand.Read(value) // incompressible: the batch stays over the limits
	produceSync(t, cl, &kgo.Record{Value: value})
	p := fetchOnce(t, cl, "big", 0, 0, 100, 100)
	if p.ErrorCode != 0 {
		t.Fatalf("error %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if len(p.RecordBatches) < 10_000 {
		t.Fatalf("got %d bytes, want the whole first batch", len(p.RecordBatches))
	}
}

func TestFetchLongPollWakesOnProduce(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("poll"), kgo.AllowAutoTopicCreation())
	produceSync(t, cl, &kgo.Record{Value: []byte("first")})
	got := make(chan *kmsg.FetchResponseTopicPartition, 1)
	go func() {
		p, err := fetchRaw(cl, "poll", 1, 60_000, 1<<20, 1<<20)
		if err != nil {
			p = &kmsg.FetchResponseTopicPartition{ErrorCode: -1}
		}
		got <- p
	}()
	// The fetch is parked; whichever of it and the produce runs first, the
	// answer must carry the second record long before max_wait_ms.
	produceSync(t, cl, &kgo.Record{Value: []byte("second")})
	select {
	case p := <-got:
		if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 2 {
			t.Fatalf("error %d, %d bytes, high watermark %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
		}
	case <-time.After(50 * time.Second):
		t.Fatal("long poll was not woken by the produce")
	}
}

func TestFetchOutOfRange(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("oor"), kgo.AllowAutoTopicCreation())
	produceSync(t, cl, &kgo.Record{Value: []byte("x")})
	p := fetchOnce(t, cl, "oor", 5, 0, 1<<20, 1<<20)
	if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 1 {
		t.Fatalf("error %d high watermark %d, want OFFSET_OUT_OF_RANGE and 1", p.ErrorCode, p.HighWatermark)
	}
}
