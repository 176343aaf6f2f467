package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceFranz produces b.N records of 100 bytes with franz-go's
// default producer (acks=all, idempotent) over loopback and reports
// records/s.
func BenchmarkProduceFranz(b *testing.B) {
	br := startBroker(b, nil)
	cl := newClient(b, br, kgo.DefaultProduceTopic("bench"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(100_000))
	value := make([]byte, 100)
	ctx := context.Background()
	produceSync(b, cl, &kgo.Record{Value: value})
	b.SetBytes(100)
	b.ResetTimer()
	errs := make(chan error, 1)
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkConsumeFranz reads b.N records of 100 bytes, produced before the
// timer starts, with a franz-go direct consumer and reports records/s.
func BenchmarkConsumeFranz(b *testing.B) {
	br := startBroker(b, nil)
	cl := newClient(b, br, kgo.DefaultProduceTopic("bench"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(100_000))
	value := make([]byte, 100)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	consumer := newClient(b, br, kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	b.SetBytes(100)
	b.ResetTimer()
	for n := 0; n < b.N; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		n += fs.NumRecords()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
