package main

import (
	"context"
	"crypto/rand"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
		waitAPIVersions(b, p)
		b.StopTimer()
		p.kill()
		b.StartTimer()
	}
}

// waitAPIVersions dials p until it answers an ApiVersions request.
func waitAPIVersions(b *testing.B, p *proc) {
	b.Helper()
	for {
		c, err := net.Dial("tcp", p.addr)
		if err == nil {
			rawRequest(b, c, kmsg.NewPtrApiVersionsRequest(), 3, 1)
			c.Close()
			return
		}
		select {
		case <-p.done:
			b.Fatalf("strata exited: %v\n%s", p.err, p.out.String())
		default:
		}
	}
}

// BenchmarkRestart is BenchmarkStartup on a log dir that already holds
// __consumer_offsets and __transaction_state (created by a first run's
// FindCoordinator requests, then a clean SIGTERM stop), so each start opens
// their 100 partitions and replays __transaction_state before serving.
// groups-loaded-ms is exec to the group coordinator answering OffsetFetch
// without COORDINATOR_LOAD_IN_PROGRESS (its replay runs in the background).
func BenchmarkRestart(b *testing.B) {
	if strataBin == "" {
		b.Skip("needs the binary; not built with -short")
	}
	dir := b.TempDir()
	port := freePort(b)
	p := launch(b, dir, port)
	waitAPIVersions(b, p)
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		b.Fatal(err)
	}
	for keyType := int8(0); keyType <= 1; keyType++ {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKeys = keyType, []string{"bench"}
		r := rawRequest(b, c, fc, 4, int32(keyType)).(*kmsg.FindCoordinatorResponse)
		if len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != 0 {
			b.Fatalf("find coordinator type %d: %+v", keyType, r.Coordinators)
		}
	}
	c.Close()
	if code := p.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		b.Fatalf("first run exited %d\n%s", code, p.out.String())
	}
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		if m, _ := filepath.Glob(filepath.Join(dir, topic+"-*")); len(m) != 50 {
			b.Fatalf("%s has %d partition dirs after the first run, want 50", topic, len(m))
		}
	}
	var loaded time.Duration
	for b.Loop() {
		start := time.Now()
		p := launch(b, dir, port)
		waitAPIVersions(b, p)
		b.StopTimer()
		waitGroupsLoaded(b, p)
		loaded += time.Since(start)
		if code := p.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
			b.Fatalf("exited %d\n%s", code, p.out.String())
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(loaded.Milliseconds())/float64(b.N), "groups-loaded-ms")
}

// waitGroupsLoaded polls OffsetFetch until the group coordinator has
// replayed __consumer_offsets.
func waitGroupsLoaded(b *testing.B, p *proc) {
	b.Helper()
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for i := int32(0); ; i++ {
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Group = "bench"
		r := rawRequest(b, c, of, 7, i).(*kmsg.OffsetFetchResponse)
		switch r.ErrorCode {
		case 0:
			return
		case kerr.CoordinatorLoadInProgress.Code:
			time.Sleep(time.Millisecond)
		default:
			b.Fatalf("offset fetch: %v", kerr.ErrorForCode(r.ErrorCode))
		}
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
