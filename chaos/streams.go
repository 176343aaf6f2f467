package chaos

// The Kafka Streams run (issue 16, "Kafka Streams word count with EOS v2:
// exact output after kill -9 of the broker mid-run"): the word count of
// testdata/streams/WordCount.java (a repartition topic, a RocksDB store and
// its changelog, processing.guarantee=exactly_once_v2) runs on a single
// broker while the harness SIGKILLs and restarts the broker a few times,
// every second time the application with it.
// The input is written before, by an idempotent acks=all producer, so what
// each word's count must end at is known. A read_committed reader of the
// output checks, as it goes, that each word's counts only rise and never
// pass their final value (a record processed twice would count twice), and
// the run ends once every word's last count is its final one.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// WordCountOptions configure a Streams run.
type WordCountOptions struct {
	Target Target
	// Streams is the installed Kafka Streams (compat-tests/scripts/install-streams.sh):
	// its libs/ and the compiled application's classes/.
	Streams       string
	GroupProtocol string // the application's group.protocol: classic or streams
	Lines         int    // input lines (default 10000), of 1-8 words each
	Kills         int    // broker kills while it runs (default 3)
	Down          time.Duration
	Seed          uint64
	Logger        *zap.Logger
}

// WordCountReport is what a Streams run saw.
type WordCountReport struct {
	Words, Lines  int
	Kills         int
	AppKills      int           // kills that took the application with the broker
	OutputRecords int           // committed output records read
	Took          time.Duration // from the application's start to the last final count
	Anomalies     []string
}

// OK says whether every word ended at its count and nothing was counted
// twice.
func (r WordCountReport) OK() bool { return len(r.Anomalies) == 0 }

func (r WordCountReport) Summary() string {
	return fmt.Sprintf("%d lines, %d words, %d broker kills (%d with the application), %d committed output records, %v, %d anomalies",
		r.Lines, r.Words, r.Kills, r.AppKills, r.OutputRecords, r.Took.Round(100*time.Millisecond), len(r.Anomalies))
}

var wordCountVocabulary = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
	november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu kafka strata broker topic
	partition replica leader follower offset segment index record batch commit abort fence epoch producer consumer group`)

// RunWordCount runs the word count on o.Target under kills.
func RunWordCount(ctx context.Context, o WordCountOptions) (WordCountReport, error) {
	if o.Lines == 0 {
		o.Lines = 10000
	}
	if o.Kills == 0 {
		o.Kills = 3
	}
	if o.Down == 0 {
		o.Down = time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	rep := WordCountReport{Lines: o.Lines}
	input, output := "wc-input", "wc-output"
	addr := o.Target.Addr()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return rep, err
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopics(ctx, 3, 1, nil, input, output); err != nil {
		return rep, fmt.Errorf("create the topics: %w", err)
	}
	want, err := produceLines(ctx, addr, input, o.Lines, o.Seed)
	if err != nil {
		return rep, err
	}
	rep.Words = len(want)

	stateDir, err := os.MkdirTemp("", "strata-streams-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(stateDir)
	var appOut bytes.Buffer
	var appMu sync.Mutex
	var app *exec.Cmd
	startApp := func() error {
		app = exec.CommandContext(ctx, "java", "-Xmx384m", "-cp", filepath.Join(o.Streams, "libs")+"/*:"+filepath.Join(o.Streams, "classes"),
			"WordCount", addr, input, output, "wordcount-"+o.GroupProtocol, stateDir, o.GroupProtocol, "1")
		app.Stdout = lockedWriter{&appMu, &appOut}
		app.Stderr = app.Stdout
		if err := app.Start(); err != nil {
			return fmt.Errorf("start the word count: %w", err)
		}
		return nil
	}
	stopApp := func() {
		_ = app.Process.Kill()
		_ = app.Wait()
	}
	start := time.Now()
	if err := startApp(); err != nil {
		return rep, err
	}
	defer func() { stopApp() }()
	appTail := func() string {
		appMu.Lock()
		defer appMu.Unlock()
		return tailOf(appOut.String(), 6000)
	}

	reader, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(output), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return rep, err
	}
	defer reader.Close()
	counts := newWordCounts(want)
	read := func(wait time.Duration) error {
		pctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		fs := reader.PollFetches(pctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fs.EachRecord(func(r *kgo.Record) {
			rep.OutputRecords++
			counts.see(string(r.Key), r.Value)
		})
		rep.Anomalies = counts.anomalies
		return nil
	}

	// The kills: each once the output has moved since the last one, so
	// each falls mid-run.
	rng := rand.New(rand.NewPCG(o.Seed, 16))
	for rep.Kills < o.Kills && !counts.complete() {
		seen := rep.OutputRecords
		for rep.OutputRecords == seen && !counts.complete() {
			if err := read(2 * time.Second); err != nil {
				return rep, fmt.Errorf("%w\nword count output:\n%s", err, appTail())
			}
		}
		if counts.complete() {
			break
		}
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		// Every second kill takes the application with the broker, so that
		// it starts again from its last commit, its store restored from
		// the changelog and the transaction it had open aborted.
		withApp := rep.Kills%2 == 1
		o.Logger.Info("killing the broker", zap.Int("kill", rep.Kills+1), zap.Bool("application too", withApp), zap.Int("output", rep.OutputRecords))
		if withApp {
			stopApp()
			rep.AppKills++
		}
		if err := o.Target.Kill(); err != nil {
			return rep, err
		}
		rep.Kills++
		time.Sleep(o.Down)
		if err := o.Target.Start(ctx); err != nil {
			return rep, fmt.Errorf("restart after kill %d: %w", rep.Kills, err)
		}
		if withApp {
			if err := startApp(); err != nil {
				return rep, err
			}
		}
	}
	for !counts.complete() {
		if err := read(2 * time.Second); err != nil {
			missing := counts.missing()
			return rep, fmt.Errorf("%w: %d of %d words not at their count (%s)\nword count output:\n%s", err, len(missing), len(want),
				strings.Join(missing, ", "), appTail())
		}
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// produceLines writes n seeded lines to topic and returns each word's
// count.
func produceLines(ctx context.Context, addr, topic string, n int, seed uint64) (map[string]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(seed, 61))
	want := map[string]int64{}
	records := make([]*kgo.Record, 0, n)
	for i := range n {
		words := make([]string, 1+rng.IntN(8))
		for j := range words {
			words[j] = wordCountVocabulary[rng.IntN(len(wordCountVocabulary))]
			want[words[j]]++
		}
		records = append(records, &kgo.Record{Key: fmt.Appendf(nil, "line-%d", i), Value: []byte(strings.Join(words, " "))})
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return nil, fmt.Errorf("produce the input: %w", err)
	}
	return want, nil
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

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// wordCounts checks the word count's output as it is read: each word's
// counts only rise and never pass the word's final count (a record counted
// twice), and tells when every word has reached it.
type wordCounts struct {
	want, last map[string]int64
	done       int
	anomalies  []string
}

func newWordCounts(want map[string]int64) *wordCounts {
	return &wordCounts{want: want, last: map[string]int64{}}
}

// see takes one output record: a word and its count, a big-endian long.
func (c *wordCounts) see(w string, value []byte) {
	if len(value) != 8 {
		c.anomalies = append(c.anomalies, fmt.Sprintf("%q: a %d-byte count", w, len(value)))
		return
	}
	n := int64(0)
	for _, b := range value {
		n = n<<8 | int64(b)
	}
	final, ok := c.want[w]
	switch {
	case !ok:
		c.anomalies = append(c.anomalies, fmt.Sprintf("%q: a word the input does not have", w))
		return
	case n <= c.last[w]:
		c.anomalies = append(c.anomalies, fmt.Sprintf("%q: count %d after %d", w, n, c.last[w]))
	case n > final:
		c.anomalies = append(c.anomalies, fmt.Sprintf("%q: count %d past its final %d (counted twice)", w, n, final))
	}
	if n == final && c.last[w] != final {
		c.done++
	}
	c.last[w] = max(c.last[w], n)
}

func (c *wordCounts) complete() bool { return c.done == len(c.want) }

// missing lists the words not at their final count, as word last/final.
func (c *wordCounts) missing() []string {
	var out []string
	for w, n := range c.want {
		if c.last[w] != n {
			out = append(out, fmt.Sprintf("%s %d/%d", w, c.last[w], n))
		}
	}
	return out
}
