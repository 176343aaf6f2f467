package main

import (
	"context"
	"crypto/rand"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkStartup measures exec to the first ApiVersions answer of the real
// binary on an empty log dir (the listener is bound before the log dir is
// opened, so an accepted connection alone would not prove readiness).
func BenchmarkStartup(b *testing.B) {
	if strataBin == "" {
		b.Skip("needs the binary; not built with -short")
	}
	for b.Loop() {
		p := launch(b, b.TempDir(), freePort(b))
		for {
			c, err := net.Dial("tcp", p.addr)
			if err == nil {
				rawRequest(b, c, kmsg.NewPtrApiVersionsRequest(), 3, 1)
				c.Close()
				break
			}
		}
		b.StopTimer()
		p.kill()
		b.StartTimer()
	}
}

// BenchmarkMillionRecords produces 1,000,000 records of 100 random bytes with
// franz-go's default producer (acks=all, idempotent) to a 3-partition topic
// of the real binary, consumes them back, and reports records/s both ways
// and the broker's peak RSS. Run it with -benchtime=1x.
func BenchmarkMillionRecords(b *testing.B) {
	if strataBin == "" {
		b.Skip("needs the binary; not built with -short")
	}
	const n = 1_000_000
	for b.Loop() {
		b.StopTimer()
		p := startBroker(b, "")
		cl := newClient(b, p.addr, kgo.DefaultProduceTopic("bench"), kgo.ProducerLinger(5*time.Millisecond),
			kgo.MaxBufferedRecords(200_000))
		createTopic(b, cl, "bench", 3)
		// Random values, so the default compression cannot shrink them.
		values := make([]byte, 100*n)
		rand.Read(values)
		ctx := context.Background()
		errs := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		for i := 0; i < n; i++ {
			cl.Produce(ctx, &kgo.Record{Value: values[100*i : 100*(i+1)]}, func(_ *kgo.Record, err error) {
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
		produced := time.Since(start)
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		consumer := newClient(b, p.addr, kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		start = time.Now()
		for got := 0; got < n; {
			fs := consumer.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				b.Fatal(err)
			}
			got += fs.NumRecords()
		}
		consumed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(n/produced.Seconds(), "produce-records/s")
		b.ReportMetric(n/consumed.Seconds(), "consume-records/s")
		b.ReportMetric(float64(p.peakRSSKiB())/1024, "peak-RSS-MiB")
		consumer.Close()
		cl.Close()
		p.kill()
		b.StartTimer()
	}
}
