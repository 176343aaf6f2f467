package broker

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRetentionRunsOnTheBrokersClock gives the broker a fake clock, has a
// real producer write two records to a topic with retention.ms of an hour,
// and checks a real admin client sees the log start offset move past them
// once the fake clock is advanced past the retention: the real clock moves
// by seconds at most, so only retention reading Config.Clock deletes them.
func TestRetentionRunsOnTheBrokersClock(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	b := startBroker(t, func(c *Config) { c.Clock = clock })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, b))
	retention := "3600000"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &retention}, "clocked"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b, kgo.ProducerLinger(0))
	for _, v := range []string{"a", "b"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "clocked", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	start := func() int64 {
		t.Helper()
		offs, err := adm.ListStartOffsets(ctx, "clocked")
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offs.Lookup("clocked", 0)
		if !ok || o.Err != nil {
			t.Fatalf("start offset: %+v", o)
		}
		return o.Offset
	}
	if got := start(); got != 0 {
		t.Fatalf("start offset %d before any time passed", got)
	}
	clock.Advance(70 * time.Minute) // past retention.ms and log.retention.check.interval.ms (5 min)
	deadline := time.Now().Add(10 * time.Second)
	for start() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("start offset %d 10 s after the broker's clock passed retention.ms, want 2", start())
		}
		clock.Advance(time.Second) // the retention loop's timers and tickers are on the fake clock too
		time.Sleep(10 * time.Millisecond)
	}
}
