// Command kstreams is the compat runner of Kafka Streams 4.4.0 (its jars, RocksDB's among
// them, installed by scripts/install-streams.sh into .cache/streams-4.4.0, with the word count
// of chaos/testdata/streams/WordCount.java compiled beside them; the chaos Streams run uses the
// same application). It runs only streams_wordcount_classic and streams_wordcount_streams: the
// word count (a repartition topic, the RocksDB store rt.WordCountStore and its changelog,
// processing.guarantee=exactly_once_v2, no record cache) with group.protocol classic or streams.
// The runner writes rt.WordCountLines to the input topic with franz-go, starts the application,
// reads its output read_committed until every word is at its count, and checks that
//   - the output holds exactly one record per word read, word w's counts 1, 2, ..., N(w) in
//     order (a count processed twice or lost fails);
//   - the store's changelog, read read_committed, ends at N(w) for every word;
//   - ListGroups lists the application's group with the protocol's type, classic or streams.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// streamsHome is the installed Kafka Streams, relative to compat-tests/, where the
// orchestrator runs its runners.
const streamsHome = ".cache/streams-4.4.0"

func main() { rt.Main("kafka-streams", run) }

func run(a rt.Args) rt.Result {
	protocol, ok := strings.CutPrefix(a.Scenario, "streams_wordcount_")
	if !ok {
		return rt.Skip("the kafka-streams runner runs only the streams_wordcount scenarios")
	}
	ctx, cancel := context.WithTimeout(context.Background(), rt.Budget(a.Scenario))
	defer cancel()
	w := &wordCount{a: a, protocol: protocol, app: a.Group(), output: a.Topic + "-out"}
	res := w.run(ctx)
	if res.Result != "pass" {
		res.Detail += " | application: " + w.appTail()
	}
	return res
}

type wordCount struct {
	a                rt.Args
	protocol         string
	app, output      string // application id (its group) and output topic
	want             map[string]int64
	words, lines     int
	appMu            sync.Mutex
	appOut           bytes.Buffer
	cmd              *exec.Cmd
	outputRecords    int
	groupType, state string
}

func (w *wordCount) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.a.Brokers()...), kgo.RetryTimeout(15 * time.Second)}, opts...)...)
}

func (w *wordCount) run(ctx context.Context) rt.Result {
	start := time.Now()
	cl, err := w.client()
	if err != nil {
		return rt.Failf("client: %v", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	n := rt.Partitions(w.a.Scenario)
	for _, t := range []string{w.a.Topic, w.output} {
		r, err := adm.CreateTopic(ctx, n, w.a.ReplicationFactor, nil, t)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			return rt.Failf("create topic %s: %v", t, err)
		}
		if err := rt.WaitReadyKadm(ctx, adm, t, int(n)); err != nil {
			return rt.Failf("topic %s not ready: %v", t, err)
		}
	}
	if err := w.produce(ctx); err != nil {
		return rt.Failf("produce the input: %v", err)
	}
	stop, err := w.start()
	if err != nil {
		return rt.Failf("start the word count: %v", err)
	}
	defer stop()
	if err := w.readOutput(ctx); err != nil {
		return rt.Failf("output: %v", err)
	}
	if err := w.readChangelog(ctx); err != nil {
		return rt.Failf("changelog: %v", err)
	}
	if err := w.listGroup(ctx, adm); err != nil {
		return rt.Failf("ListGroups: %v", err)
	}
	return rt.Pass(fmt.Sprintf("group.protocol=%s, exactly_once_v2: %d lines, %d words counted in %d committed output records, each word's counts 1..N in order; the %s store's changelog ends at every count; ListGroups lists the group as %s (%s); %.1fs",
		w.protocol, w.lines, len(w.want), w.outputRecords, rt.WordCountStore, w.groupType, w.state, time.Since(start).Seconds()),
		map[string]any{"output_records": w.outputRecords, "words": len(w.want), "group_type": w.groupType})
}

// produce writes the input lines, keyed line-<i>, and counts their words.
func (w *wordCount) produce(ctx context.Context) error {
	cl, err := w.client(kgo.DefaultProduceTopic(w.a.Topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer cl.Close()
	w.want = map[string]int64{}
	var recs []*kgo.Record
	for i, line := range rt.WordCountLines() {
		for _, word := range strings.Fields(line) {
			w.want[word]++
			w.words++
		}
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "line-%d", i), Value: []byte(line)})
	}
	w.lines = len(recs)
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// start runs the application with its own state directory; stop closes it
// (SIGTERM runs its shutdown hook, KafkaStreams.close) and removes the directory.
func (w *wordCount) start() (stop func(), err error) {
	state, err := os.MkdirTemp("", "compat-streams-")
	if err != nil {
		return nil, err
	}
	cp := filepath.Join(streamsHome, "libs") + "/*:" + filepath.Join(streamsHome, "classes")
	w.cmd = exec.Command("java", "-Xmx256m", "-cp", cp, "WordCount", w.a.Bootstrap, w.a.Topic, w.output, w.app, state,
		w.protocol, strconv.Itoa(int(w.a.ReplicationFactor)))
	w.cmd.Stdout = lockedWriter{&w.appMu, &w.appOut}
	w.cmd.Stderr = w.cmd.Stdout
	if err := w.cmd.Start(); err != nil {
		os.RemoveAll(state)
		return nil, err
	}
	exited := make(chan struct{})
	go func() { w.cmd.Wait(); close(exited) }()
	return func() {
		w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			w.cmd.Process.Kill()
			<-exited
		}
		os.RemoveAll(state)
	}, nil
}

func (w *wordCount) appTail() string {
	w.appMu.Lock()
	defer w.appMu.Unlock()
	s := strings.TrimSpace(w.appOut.String())
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	return strings.ReplaceAll(s, "\n", " / ")
}

// readOutput reads the output read_committed until every word is at its
// count: word w's records must be its counts 1, 2, ... in order.
func (w *wordCount) readOutput(ctx context.Context) error {
	cl, err := w.client(kgo.ConsumeTopics(w.output), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	last := map[string]int64{}
	done := 0
	var bad []string
	for done < len(w.want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d words at their count after %d records (%s)", done, len(w.want), w.outputRecords, missing(w.want, last))
		}
		fs.EachRecord(func(r *kgo.Record) {
			w.outputRecords++
			word := string(r.Key)
			if len(r.Value) != 8 {
				bad = append(bad, fmt.Sprintf("%q: a %d-byte count", word, len(r.Value)))
				return
			}
			c := int64(binary.BigEndian.Uint64(r.Value))
			final, ok := w.want[word]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%q: not an input word", word))
			case c != last[word]+1:
				bad = append(bad, fmt.Sprintf("%q: count %d after %d", word, c, last[word]))
			}
			if c == final && last[word] != final {
				done++
			}
			last[word] = max(last[word], c)
		})
		if len(bad) > 0 {
			return errors.New(strings.Join(bad[:min(len(bad), 5)], "; "))
		}
	}
	if w.outputRecords != w.words {
		return fmt.Errorf("%d records for %d words read", w.outputRecords, w.words)
	}
	return nil
}

// readChangelog reads the store's changelog read_committed until every word's
// last value is its count (a big-endian long: the timestamped store keeps its
// timestamp in the record's).
func (w *wordCount) readChangelog(ctx context.Context) error {
	topic := w.app + "-" + rt.WordCountStore + "-changelog"
	cl, err := w.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	last := map[string]int64{}
	for !atCounts(w.want, last) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("%s does not end at the counts (%s)", topic, missing(w.want, last))
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != 8 {
				bad = fmt.Errorf("%s: %q: a %d-byte count", topic, r.Key, len(r.Value))
				return
			}
			last[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}

// listGroup finds the application's group in ListGroups, of the protocol's type.
func (w *wordCount) listGroup(ctx context.Context, adm *kadm.Client) error {
	gs, err := adm.ListGroups(ctx)
	if err != nil {
		return err
	}
	g, ok := gs[w.app]
	if !ok {
		return fmt.Errorf("group %s not listed (%v)", w.app, slices.Sorted(maps.Keys(gs)))
	}
	w.groupType, w.state = g.GroupType, g.State
	if g.GroupType != w.protocol {
		return fmt.Errorf("group %s listed of type %q, not %q", w.app, g.GroupType, w.protocol)
	}
	return nil
}

// atCounts says whether got has every word of want at its count.
func atCounts(want, got map[string]int64) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// missing lists the words not at their count, as word got/want.
func missing(want, got map[string]int64) string {
	var out []string
	for k, v := range want {
		if got[k] != v {
			out = append(out, fmt.Sprintf("%s %d/%d", k, got[k], v))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
