package bench

// SESSIONS: what fetch sessions (KIP-227) save a consumer of many
// partitions. One consumer of a 1,000-partition topic, caught up (every
// fetch offset at the high watermark), sends Fetch requests back to back
// (max_wait_ms 0, min_bytes 0), first each a full fetch without a session
// (session epoch -1, as kgo.DisableFetchSessions does), then in one
// session: a full fetch (epoch 0) and incremental fetches naming nothing,
// which are answered nothing. The broker's CPU per fetch is its process's
// utime+stime over the fetches (/proc/<pid>/stat) divided by their number.
// Both brokers run on their own here, Apache Kafka from the 4.4.0 install.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sessions is the mode of the SESSIONS workload's results.
const Sessions Mode = "sessions"

const sessionPartitions = 1000

// onlySessions reports whether SESSIONS is the one workload selected, so
// the other single-broker passes start no broker for nothing.
func (c *Config) onlySessions() bool {
	return len(c.Workloads) == 1 && c.Workloads["SESSIONS"]
}

// runSessions measures SESSIONS on a fresh broker of kind k.
func (c *Config) runSessions(ctx context.Context, run *Run, k Kind) error {
	dir := filepath.Join(c.WorkDir, fmt.Sprintf("%s-%s", k, Sessions))
	_ = os.RemoveAll(dir)
	if !c.Keep {
		defer os.RemoveAll(dir)
	}
	home := c.KafkaHome
	b, err := newBroker(k, Default, c.StrataBin, home, dir, "")
	if err != nil {
		return err
	}
	defer b.Kill()
	fmt.Printf("== %s (%s): starting at %s\n", k, Sessions, b.Addr())
	if err := startBroker(ctx, b); err != nil {
		return err
	}
	d := single{Broker: b}
	add := run.adder(Sessions)
	off, on, err := measureSessions(ctx, d, c.SessionFetches)
	if err := add(off, err); err != nil {
		return err
	}
	if err := add(on, nil); err != nil {
		return err
	}
	return stop(b)
}

// measureSessions runs the fetches without and then with a session.
func measureSessions(ctx context.Context, d deployment, fetches int) (off, on *Result, err error) {
	if err := createTopic(ctx, d, "sessions", sessionPartitions, nil); err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.Bootstrap()...), kgo.DefaultProduceTopic("sessions"), kgo.ProducerLinger(0))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, 10*sessionPartitions)
	for i := range cap(recs) {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("session bench record")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, nil, fmt.Errorf("produce: %w", err)
	}
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "sessions")
	if err != nil {
		return nil, nil, err
	}
	meta, err := adm.Metadata(ctx, "sessions")
	if err != nil {
		return nil, nil, err
	}
	broker := cl.Broker(int(meta.Brokers[0].NodeID))
	full := kmsg.NewPtrFetchRequest()
	full.MaxWaitMillis, full.MinBytes, full.MaxBytes = 0, 0, 50<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "sessions", meta.Topics["sessions"].ID
	ends.Each(func(o kadm.ListedOffset) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = o.Partition, o.Offset, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	})
	full.Topics = []kmsg.FetchRequestTopic{rt}

	fetch := func(req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
		resp, err := broker.Request(ctx, req)
		if err != nil {
			return nil, err
		}
		fr := resp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			return nil, fmt.Errorf("fetch in session %d epoch %d: %w", req.SessionID, req.SessionEpoch, err)
		}
		return fr, nil
	}
	run := func(name string, session bool) (*Result, error) {
		var id, epoch int32
		answered := 0
		step := func() error {
			req := full
			if session {
				req = kmsg.NewPtrFetchRequest()
				*req = *full
				req.SessionID, req.SessionEpoch = id, epoch
				if epoch > 0 {
					req.Topics = nil
				}
			} else {
				req.SessionEpoch = -1
			}
			resp, err := fetch(req)
			if err != nil {
				return err
			}
			if session {
				if resp.SessionID == 0 {
					return fmt.Errorf("the broker opened no fetch session")
				}
				id, epoch = resp.SessionID, epoch+1
			}
			for _, t := range resp.Topics {
				answered += len(t.Partitions)
			}
			return nil
		}
		for range fetches / 10 { // warm up
			if err := step(); err != nil {
				return nil, err
			}
		}
		answered = 0
		u := startUsage(d)
		t0 := time.Now()
		for range fetches {
			if err := step(); err != nil {
				return nil, err
			}
		}
		r := &Result{Workload: name, Broker: Kind(d.Name()), Records: int64(fetches), Seconds: time.Since(t0).Seconds()}
		u.finish(r)
		r.Millis = map[string]float64{"partitions_per_response": float64(answered) / float64(fetches)}
		return r, nil
	}
	if off, err = run("SESSIONS/off", false); err != nil {
		return nil, nil, err
	}
	on, err = run("SESSIONS/on", true)
	return off, on, err
}

// sessionsMarkdown is the SESSIONS section of the report.
func (run *Run) sessionsMarkdown() string {
	if !run.hasMode(Sessions) {
		return ""
	}
	var b strings.Builder
	b.WriteString("## SESSIONS: a 1,000-partition consumer with and without fetch sessions (KIP-227)\n\n")
	b.WriteString("One caught-up consumer of a 1,000-partition topic sends Fetch requests back to back (max_wait_ms 0): " +
		"without a session every request names and every answer lists all 1,000 partitions; in a session the " +
		"incremental requests name none and are answered only what changed (nothing). CPU per fetch is the broker " +
		"process's utime+stime over the fetches divided by their number; Apache Kafka is 4.4.0.\n\n")
	b.WriteString("| broker | sessions | fetches | fetches/s | partitions per answer | broker CPU s | broker CPU µs per fetch |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, k := range []Kind{Strata, Kafka} {
		for _, w := range []string{"SESSIONS/off", "SESSIONS/on"} {
			r := run.find(w, k, Sessions)
			if r == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.0f | %.2f | %.0f |\n", k, strings.TrimPrefix(w, "SESSIONS/"), r.Records,
				r.RecordsPerSec(), r.Millis["partitions_per_response"], r.CPUSeconds, r.CPUSeconds/float64(r.Records)*1e6)
		}
	}
	b.WriteString("\n")
	return b.String()
}
