package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strata-io/strata/chaos"
)

// Config sizes a run.
type Config struct {
	StrataBin string
	KafkaHome string // compat-tests/.cache/kafka-4.4.0: every Kafka pass
	WorkDir   string // data dirs go under it; removed after each broker
	Brokers   []Kind
	Workloads map[string]bool // W1..W7, PERF, FAILOVER; empty means all

	W1Records     int64 // 100 B values
	W2Records     int64 // 1 KB values
	W3Records     int64
	W5Rate        int
	W5Duration    time.Duration
	W6Records     int64
	ShareRecords  int64 // SHARE records
	W7Bytes       int64 // data written before the kill -9
	FsyncRecords  int64 // W1 and W3 record count in fsync mode
	FsyncDisabled bool
	// SASLSSLDisabled skips the SASL_SSL pass (W1 and W4 over SASL_SSL).
	SASLSSLDisabled bool
	PinDisabled     bool // skip the pinned pass (W1, W4, W2 with one core each)
	PerfRecords     int64
	// The cluster pass (three brokers, RF=3): ClusterDisabled skips it,
	// SingleDisabled runs it alone (no default, fsync or pinned pass).
	ClusterDisabled  bool
	SingleDisabled   bool
	ClusterW1Records int64
	ClusterW3Records int64
	Failovers        int // SIGKILL failovers per cluster
	BatchBytes       int // wire generator batch size (default flag: 16 KiB, the Java producer's batch.size)
	// PprofOut, when set, starts Strata with --pprof and saves a CPU profile
	// of PprofSeconds taken while PprofWorkload (default W1) runs; the
	// workload should last longer.
	PprofOut      string
	PprofSeconds  int
	PprofWorkload string
	Keep          bool // keep the data dirs and broker logs under WorkDir
	// SessionFetches is the fetches SESSIONS sends each way (sessions.go).
	SessionFetches int
}

// Run is the full set of results.
type Run struct {
	Started time.Time
	// LoadBefore is /proc/loadavg before the run: other work on the machine.
	LoadBefore string
	Results    []*Result
	Perf       []PerfResult
	Errors     []string
	// Notes are things that went differently than planned but did not
	// fail a workload (a cluster workload measured a second time).
	Notes []string
}

// PerfResult is one kafka-producer-perf-test run.
type PerfResult struct {
	Broker        Kind
	Records       int64
	RecordsPerSec float64
	MBPerSec      float64
	AvgMs, P99Ms  float64
	Line          string
}

func (c *Config) want(w string) bool { return len(c.Workloads) == 0 || c.Workloads[w] }

// Execute runs every selected workload on every broker, one pass (mode)
// after the other: default, fsync, pinned, then the cluster.
func Execute(ctx context.Context, c Config) *Run {
	run := &Run{Started: time.Now(), LoadBefore: loadAverage()}
	var modes []Mode
	if !c.SingleDisabled && !c.onlySessions() {
		modes = append(modes, Default)
		if !c.FsyncDisabled {
			modes = append(modes, Fsync)
		}
		if !c.SASLSSLDisabled {
			modes = append(modes, SASLSSL)
		}
		if !c.PinDisabled {
			if canPin() {
				modes = append(modes, Pinned)
			} else {
				run.Errors = append(run.Errors, "pinned pass skipped: it needs 2 CPUs")
			}
		}
	}
	if !c.ClusterDisabled {
		modes = append(modes, Cluster)
	}
	for _, mode := range modes {
		for _, k := range c.Brokers {
			t0 := time.Now()
			var err error
			if mode == Cluster {
				err = c.runCluster(ctx, run, k)
			} else {
				err = c.runBroker(ctx, run, k, mode)
			}
			fmt.Printf("== %s (%s): %s\n", k, mode, time.Since(t0).Round(time.Second))
			if err != nil {
				msg := fmt.Sprintf("%s %s: %v", k, mode, err)
				fmt.Println("ERROR", msg)
				run.Errors = append(run.Errors, msg)
			}
		}
	}
	if !c.SingleDisabled && c.want("SESSIONS") {
		for _, k := range c.Brokers {
			if err := c.runSessions(ctx, run, k); err != nil {
				msg := fmt.Sprintf("%s %s: %v", k, Sessions, err)
				fmt.Println("ERROR", msg)
				run.Errors = append(run.Errors, msg)
			}
		}
	}
	fmt.Printf("== all passes: %s\n", time.Since(run.Started).Round(time.Second))
	return run
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

// adder records a workload's result in mode and prints it, and passes its
// error on; a result that comes with an error (a failover whose history
// check failed) is recorded too.
func (run *Run) adder(mode Mode) func(*Result, error) error {
	return func(r *Result, err error) error {
		if r == nil {
			return err
		}
		r.Mode = mode
		run.Results = append(run.Results, r)
		fmt.Printf("   %s %s %s: %.0f records/s, %.1f MB/s, %.2f CPU s, peak RSS %.0f MiB%s\n",
			r.Workload, r.Broker, mode, r.RecordsPerSec(), r.MBPerSec(), r.CPUSeconds, float64(r.PeakRSS)/(1<<20), latSummary(r))
		return err
	}
}

func (c *Config) runBroker(ctx context.Context, run *Run, k Kind, mode Mode) error {
	dir := filepath.Join(c.WorkDir, fmt.Sprintf("%s-%s", k, mode))
	_ = os.RemoveAll(dir)
	if !c.Keep {
		defer os.RemoveAll(dir)
	}
	var pprofAddr string
	if k == Strata && mode == Default && c.PprofOut != "" {
		port, err := chaos.FreePort()
		if err != nil {
			return err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	b, err := newBroker(k, mode, c.StrataBin, c.KafkaHome, dir, pprofAddr)
	if err != nil {
		return err
	}
	defer b.Kill()
	d := single{Broker: b}
	if mode == SASLSSL {
		if d.secure, err = newSecureListener(filepath.Join(dir, "tls")); err != nil {
			return err
		}
		if err := addSecureListener(b, d.secure); err != nil {
			return err
		}
	}
	fmt.Printf("== %s (%s): starting at %s\n", k, mode, b.Addr())
	if err := startBroker(ctx, b); err != nil {
		return err
	}
	add := run.adder(mode)
	label := func(w string) string {
		if pprofAddr != "" && w == c.PprofWorkload {
			go func() {
				if err := c.fetchProfile(ctx, pprofAddr); err != nil {
					fmt.Println("ERROR", err)
					return
				}
				fmt.Printf("   wrote the CPU profile of strata under %s to %s\n", w, c.PprofOut)
			}()
		}
		return fmt.Sprintf("%s %s %s", w, k, mode)
	}
	if mode == Pinned {
		if err := pinProcess(b.Pid(), brokerCPU); err != nil {
			return err
		}
		if err := pinProcess(os.Getpid(), generatorCPU); err != nil {
			return err
		}
		defer pinProcess(os.Getpid())
		if err := c.runWire(ctx, d, add, label, false); err != nil {
			return err
		}
		return stop(b)
	}
	if mode == SASLSSL {
		if err := c.runSecure(ctx, d, add, label); err != nil {
			return err
		}
		return stop(b)
	}
	if mode == Fsync {
		if c.want("W1") {
			if err := add(runProduceWire(ctx, d, ProduceSpec{Name: "W1", Topic: "w1", Partitions: 6, Records: c.FsyncRecords, ValueSize: 100, BatchBytes: c.BatchBytes}, label("W1"))); err != nil {
				return err
			}
		}
		if c.want("W3") {
			if err := add(runProduceWire(ctx, d, w3Spec(c.FsyncRecords), label("W3"))); err != nil {
				return err
			}
		}
		if c.want("W5") {
			if err := add(runLatency(ctx, d, "W5", "w5", c.W5Rate, c.W5Duration, 100, label("W5"))); err != nil {
				return err
			}
		}
		return stop(b)
	}
	if err := c.runWire(ctx, d, add, label, true); err != nil {
		return err
	}
	if c.want("W3") {
		if err := add(runProduceWire(ctx, d, w3Spec(c.W3Records), label("W3"))); err != nil {
			return err
		}
		if err := add(runProduce(ctx, d, ProduceSpec{Name: "W3/kgo", Topic: "w3kgo", Partitions: 6, Records: c.W3Records, ValueSize: 100, Producers: 50, Keys: true, MaxBuf: 64}, label("W3/kgo"))); err != nil {
			return err
		}
	}
	if c.want("W5") {
		if err := add(runLatency(ctx, d, "W5", "w5", c.W5Rate, c.W5Duration, 100, label("W5"))); err != nil {
			return err
		}
	}
	if c.want("W6") {
		if err := add(runProduce(ctx, d, ProduceSpec{Name: "W6", Topic: "w6", Partitions: 1000, Records: c.W6Records, ValueSize: 100, Linger: 5 * time.Millisecond}, label("W6"))); err != nil {
			return err
		}
	}
	if c.want("SHARE") {
		if err := add(runShare(ctx, d, c.ShareRecords, label("SHARE"))); err != nil {
			return err
		}
	}
	if c.want("PERF") {
		p, err := c.perfTest(ctx, b, k)
		if err != nil {
			return err
		}
		run.Perf = append(run.Perf, p)
		fmt.Printf("   kafka-producer-perf-test %s: %s\n", k, p.Line)
	}
	if err := stop(b); err != nil {
		return err
	}
	if c.want("W7") {
		// A fresh broker, so recovery covers W7's data only.
		wdir := dir + "-w7"
		_ = os.RemoveAll(wdir)
		if !c.Keep {
			defer os.RemoveAll(wdir)
		}
		b7, err := newBroker(k, mode, c.StrataBin, c.KafkaHome, wdir, "")
		if err != nil {
			return err
		}
		defer b7.Kill()
		if err := startBroker(ctx, b7); err != nil {
			return err
		}
		r, err := c.startupRecovery(ctx, b7, k)
		if err := add(r, err); err != nil {
			return err
		}
		return stop(b7)
	}
	return nil
}

// runWire runs W1, W4 on W1's data, and W2 on the wire generator, and with
// withKgo also their /kgo reference runs, in the order the report lists them.
func (c *Config) runWire(ctx context.Context, d deployment, add func(*Result, error) error, label func(string) string, withKgo bool) error {
	if c.want("W1") {
		if err := add(runProduceWire(ctx, d, ProduceSpec{Name: "W1", Topic: "w1", Partitions: 6, Records: c.W1Records, ValueSize: 100, BatchBytes: c.BatchBytes}, label("W1"))); err != nil {
			return err
		}
		if c.want("W4") {
			if err := add(runConsumeWire(ctx, d, "W4", "w1", 6, c.W1Records, 100, label("W4"))); err != nil {
				return err
			}
			if withKgo {
				if err := add(runConsume(ctx, d, "W4/kgo", "w1", c.W1Records, label("W4/kgo"))); err != nil {
					return err
				}
			}
		}
		if withKgo {
			if err := add(runProduce(ctx, d, ProduceSpec{Name: "W1/kgo", Topic: "w1kgo", Partitions: 6, Records: c.W1Records, ValueSize: 100, Linger: 5 * time.Millisecond}, label("W1/kgo"))); err != nil {
				return err
			}
		}
	}
	if c.want("W2") {
		if err := add(runProduceWire(ctx, d, ProduceSpec{Name: "W2", Topic: "w2", Partitions: 6, Records: c.W2Records, ValueSize: 1000, BatchBytes: c.BatchBytes}, label("W2"))); err != nil {
			return err
		}
		if withKgo {
			if err := add(runProduce(ctx, d, ProduceSpec{Name: "W2/kgo", Topic: "w2kgo", Partitions: 6, Records: c.W2Records, ValueSize: 1000, Linger: 5 * time.Millisecond}, label("W2/kgo"))); err != nil {
				return err
			}
		}
	}
	return nil
}

// runSecure is the SASL_SSL pass: W1 and W4, each with the wire
// generator and with kgo.
func (c *Config) runSecure(ctx context.Context, d deployment, add func(*Result, error) error, label func(string) string) error {
	if !c.want("W1") {
		return nil
	}
	if err := add(runProduceWire(ctx, d, ProduceSpec{Name: "W1", Topic: "w1", Partitions: 6, Records: c.W1Records, ValueSize: 100, BatchBytes: c.BatchBytes}, label("W1"))); err != nil {
		return err
	}
	if c.want("W4") {
		if err := add(runConsumeWire(ctx, d, "W4", "w1", 6, c.W1Records, 100, label("W4"))); err != nil {
			return err
		}
		if err := add(runConsume(ctx, d, "W4/kgo", "w1", c.W1Records, label("W4/kgo"))); err != nil {
			return err
		}
	}
	return add(runProduce(ctx, d, ProduceSpec{Name: "W1/kgo", Topic: "w1kgo", Partitions: 6, Records: c.W1Records, ValueSize: 100, Linger: 5 * time.Millisecond}, label("W1/kgo")))
}

// w3Spec is W3: 50 producers of keyed records in small batches, 1 KiB (7
// records) per partition per request, as a producer without linger sends
// what accumulated while its previous requests were in flight.
func w3Spec(records int64) ProduceSpec {
	return ProduceSpec{Name: "W3", Topic: "w3", Partitions: 6, Records: records, ValueSize: 100, Producers: 50, Keys: true, BatchBytes: 1024}
}

func latSummary(r *Result) string {
	if len(r.Latencies) == 0 {
		if len(r.Millis) > 0 {
			return fmt.Sprintf(", %v ms", r.Millis)
		}
		return ""
	}
	return fmt.Sprintf(", latency p50 %.2f ms p99 %.2f ms p99.9 %.2f ms", r.Quantile(0.5), r.Quantile(0.99), r.Quantile(0.999))
}

// startupRecovery is W7: a clean restart timed to the first acknowledged
// produce, then ~W7Bytes in 10 MB segments, kill -9, and the restart timed
// the same way (log recovery included).
func (c *Config) startupRecovery(ctx context.Context, b Broker, k Kind) (*Result, error) {
	r := &Result{Workload: "W7", Broker: k, Millis: map[string]float64{}}
	if err := createTopic(ctx, single{Broker: b}, "w7start", 1, nil); err != nil {
		return nil, err
	}
	if err := stop(b); err != nil {
		return nil, err
	}
	fmt.Printf("   W7 %s: timing a clean start\n", k)
	d, err := timedStart(ctx, b, "w7start")
	if err != nil {
		return nil, fmt.Errorf("W7 start: %w", err)
	}
	r.Millis["start"] = float64(d.Microseconds()) / 1000
	seg := "10485760"
	n := c.W7Bytes / 1000
	pr, err := runProduce(ctx, single{Broker: b}, ProduceSpec{Name: "W7 fill", Topic: "w7", Partitions: 1, Records: n, ValueSize: 1000,
		Linger: 5 * time.Millisecond, Configs: map[string]*string{"segment.bytes": &seg}}, fmt.Sprintf("W7 fill %s", k))
	if err != nil {
		return nil, err
	}
	r.Records, r.Bytes, r.Seconds = pr.Records, pr.Bytes, pr.Seconds
	r.Note = fmt.Sprintf("%d MB in %d segments", pr.Bytes/1e6, countSegments(c.WorkDir, k))
	if err := b.Kill(); err != nil {
		return nil, err
	}
	fmt.Printf("   W7 %s: killed with %s; timing the recovery\n", k, r.Note)
	d, err = timedStart(ctx, b, "w7")
	if err != nil {
		return nil, fmt.Errorf("W7 recovery: %w", err)
	}
	r.Millis["recovery"] = float64(d.Microseconds()) / 1000
	r.PeakRSS = peakRSS(b.Pid())
	r.CPUSeconds, _ = cpuSeconds(b.Pid())
	return r, nil
}

func countSegments(workDir string, k Kind) int {
	m, _ := filepath.Glob(filepath.Join(workDir, string(k)+"-*-w7", "data", "w7-0", "*.log"))
	return len(m)
}

var perfLine = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, \d+ ms 50th, \d+ ms 95th, (\d+) ms 99th`)

// perfTest runs org.apache.kafka.tools.ProducerPerformance (the class
// behind kafka-producer-perf-test.sh) with W1's shape against b.
func (c *Config) perfTest(ctx context.Context, b Broker, k Kind) (PerfResult, error) {
	if err := createTopic(ctx, single{Broker: b}, "perf", 6, nil); err != nil {
		return PerfResult{}, err
	}
	args := []string{"-Xmx512m", "-Dlog4j2.configurationFile=" + filepath.Join(c.KafkaHome, "tools-log4j2.properties"),
		"-cp", filepath.Join(c.KafkaHome, "libs", "*"), "org.apache.kafka.tools.ProducerPerformance",
		"--topic", "perf", "--num-records", strconv.FormatInt(c.PerfRecords, 10), "--record-size", "100",
		"--throughput", "-1", "--producer-props", "bootstrap.servers=" + b.Addr(), "acks=all",
		"enable.idempotence=true", "linger.ms=5", "compression.type=none"}
	fmt.Printf("   kafka-producer-perf-test against %s: %d records of 100 B\n", k, c.PerfRecords)
	cmd := exec.CommandContext(ctx, "java", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return PerfResult{}, fmt.Errorf("producer perf test: %w\n%s", err, tail(out))
	}
	m := perfLine.FindStringSubmatch(string(out))
	if m == nil {
		return PerfResult{}, fmt.Errorf("producer perf test: no summary line in\n%s", tail(out))
	}
	p := PerfResult{Broker: k, Line: strings.TrimSpace(m[0])}
	p.Records, _ = strconv.ParseInt(m[1], 10, 64)
	p.RecordsPerSec, _ = strconv.ParseFloat(m[2], 64)
	p.MBPerSec, _ = strconv.ParseFloat(m[3], 64)
	p.AvgMs, _ = strconv.ParseFloat(m[4], 64)
	p.P99Ms, _ = strconv.ParseFloat(m[6], 64)
	return p, nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// fetchProfile saves a CPU profile of PprofSeconds from Strata's --pprof
// listener to PprofOut.
func (c *Config) fetchProfile(ctx context.Context, addr string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, c.PprofSeconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(c.PprofOut)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
