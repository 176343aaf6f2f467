// Command strata-bench builds strata from the tree, runs the bench
// workloads against it and against the reference Apache Kafka (installed by
// compat-tests/scripts/install-kafka.sh: 4.4.0, for the single-broker and
// the three-broker cluster passes), one after the other, and writes BENCHMARKS.md, bench/report/*.png, results.json and
// cluster.json.
//
//	go run ./bench/cmd/strata-bench            # full run (make bench)
//	go run ./bench/cmd/strata-bench -quick     # tiny counts, a smoke test
//	go run ./bench/cmd/strata-bench -cluster-only   # the three-broker pass alone; rewrites its section of BENCHMARKS.md
//	go run ./bench/cmd/strata-bench -redraw bench/report/results.json   # throughput.png from saved results
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/strata-io/strata/bench"
)

func main() {
	var (
		repo      = flag.String("repo", ".", "repository root (holds go.mod)")
		brokers   = flag.String("brokers", "strata,kafka", "brokers to run, in order")
		workloads = flag.String("workloads", "", "comma-separated subset of W1..W7,SHARE,PERF,SESSIONS,FAILOVER (default all; the cluster pass runs W1, W3, W5, FAILOVER)")
		quick     = flag.Bool("quick", false, "tiny record counts: a smoke test, not a measurement")
		noFsync   = flag.Bool("no-fsync", false, "skip the fsync-on-every-produce pass")
		noSecure  = flag.Bool("no-sasl-ssl", false, "skip the SASL_SSL pass (W1 and W4 with clients on a SASL_SSL listener, SASL/PLAIN over TLS)")
		noPin     = flag.Bool("no-pinned", false, "skip the pinned pass (broker on CPU 1, load generator on CPU 0: W1, W4, W2)")
		noCluster = flag.Bool("no-cluster", false, "skip the cluster pass (three brokers of each kind, RF=3, acks=all: W1, W3, W5 and the failover)")
		onlyClust = flag.Bool("cluster-only", false, "run the cluster pass alone; with -out, rewrite only its section of the report")
		cw1       = flag.Int64("cluster-w1", 2_000_000, "W1 records in the cluster pass")
		cw3       = flag.Int64("cluster-w3", 500_000, "W3 records in the cluster pass")
		failovers = flag.Int("failovers", 3, "SIGKILL failovers per cluster in the cluster pass")
		out       = flag.String("out", "BENCHMARKS.md", "report file (relative to -repo); empty prints it (the default with -quick)")
		reportDir = flag.String("report-dir", "", "charts and results.json (relative to -repo); default bench/report with -out BENCHMARKS.md, else .cache/bench/report")
		w1        = flag.Int64("w1", 10_000_000, "W1 (and W4) records")
		w2        = flag.Int64("w2", 2_000_000, "W2 records")
		w3        = flag.Int64("w3", 1_000_000, "W3 records")
		w5dur     = flag.Duration("w5-duration", 20*time.Second, "W5 duration")
		w5rate    = flag.Int("w5-rate", 50_000, "W5 records/s")
		w6        = flag.Int64("w6", 1_000_000, "W6 records")
		shareN    = flag.Int64("share", 1_000_000, "SHARE records")
		w7        = flag.Int64("w7-bytes", 1_000_000_000, "W7 bytes written before kill -9")
		fsyncN    = flag.Int64("fsync-records", 200_000, "W1 and W3 records in the fsync pass (W5 runs as in the default pass)")
		perfN     = flag.Int64("perf-records", 1_000_000, "kafka-producer-perf-test records")
		sessN     = flag.Int("session-fetches", 3000, "SESSIONS fetches with and without a fetch session")
		batch     = flag.Int("batch-bytes", 16384, "record batch size of the wire generator (W1, W2); 16 KiB is the Java producer's default batch.size")
		notes     = flag.String("notes", "bench/notes.md", "markdown appended to the report when the file exists (relative to -repo)")
		keep      = flag.Bool("keep", false, "keep the brokers' data dirs and logs under .cache/bench")
		strataBin = flag.String("strata-bin", "", "use this strata binary instead of building one from the tree")
		pprofOut  = flag.String("pprof", "", "save a CPU profile of strata under -pprof-workload to this file (strata --pprof)")
		pprofSecs = flag.Int("pprof-seconds", 5, "length of that profile; the workload must run longer")
		pprofW    = flag.String("pprof-workload", "W1", "the workload -pprof profiles")
		redraw    = flag.String("redraw", "", "run nothing: redraw throughput.png beside this results.json from its figures (relative to -repo; the latency CDF needs the raw latencies, which it does not keep)")
	)
	flag.Parse()
	root, err := filepath.Abs(*repo)
	check(err)
	if *redraw != "" {
		path := *redraw
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		run, err := bench.ReadRun(path)
		check(err)
		chart := filepath.Join(filepath.Dir(path), "throughput.png")
		check(run.ThroughputChart(chart))
		fmt.Printf("wrote %s from %s\n", chart, path)
		return
	}
	cfg := bench.Config{
		KafkaHome:       filepath.Join(root, "compat-tests", ".cache", "kafka-4.4.0"),
		ClusterDisabled: *noCluster, SingleDisabled: *onlyClust, ClusterW1Records: *cw1, ClusterW3Records: *cw3, Failovers: *failovers,
		WorkDir:   filepath.Join(root, ".cache", "bench"),
		W1Records: *w1, W2Records: *w2, W3Records: *w3, W5Rate: *w5rate, W5Duration: *w5dur,
		W6Records: *w6, ShareRecords: *shareN, W7Bytes: *w7, FsyncRecords: *fsyncN, FsyncDisabled: *noFsync, SASLSSLDisabled: *noSecure, PinDisabled: *noPin, PerfRecords: *perfN, BatchBytes: *batch,
		SessionFetches: *sessN, Workloads: map[string]bool{}, PprofOut: *pprofOut, PprofSeconds: *pprofSecs, PprofWorkload: *pprofW, Keep: *keep,
	}
	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if *quick && !outSet {
		// A smoke test must not replace the committed report.
		*out = ""
	}
	if *quick {
		cfg.W1Records, cfg.W2Records, cfg.W3Records, cfg.W6Records, cfg.ShareRecords = 20_000, 5_000, 5_000, 5_000, 5_000
		cfg.W5Rate, cfg.W5Duration, cfg.W7Bytes, cfg.FsyncRecords, cfg.PerfRecords = 5_000, 3*time.Second, 30_000_000, 2_000, 20_000
		cfg.ClusterW1Records, cfg.ClusterW3Records, cfg.Failovers = 20_000, 5_000, 1
	}
	for _, b := range strings.Split(*brokers, ",") {
		cfg.Brokers = append(cfg.Brokers, bench.Kind(strings.TrimSpace(b)))
	}
	for _, w := range strings.Split(*workloads, ",") {
		if w = strings.TrimSpace(strings.ToUpper(w)); w != "" {
			cfg.Workloads[w] = true
		}
	}
	check(os.MkdirAll(cfg.WorkDir, 0o755))
	cfg.StrataBin = *strataBin
	if cfg.StrataBin == "" {
		cfg.StrataBin = filepath.Join(cfg.WorkDir, "strata")
		fmt.Println("building strata (CGO_ENABLED=0 -trimpath)")
		build := exec.Command("go", "build", "-trimpath", "-o", cfg.StrataBin, "./cmd/strata")
		build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		check(build.Run())
	}
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average before the run: %s", la)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	run := bench.Execute(ctx, cfg)

	// Only the report run (BENCHMARKS.md) writes bench/report; smoke and
	// profiling runs leave it alone.
	rdir := *reportDir
	if rdir == "" {
		rdir = filepath.Join(".cache", "bench", "report")
		if *out == "BENCHMARKS.md" {
			rdir = filepath.Join("bench", "report")
		}
	}
	if !filepath.IsAbs(rdir) {
		rdir = filepath.Join(root, rdir)
	}
	check(os.MkdirAll(rdir, 0o755))
	if !cfg.SingleDisabled {
		check(run.Charts(rdir))
		check(run.WriteJSON(filepath.Join(rdir, "results.json"), bench.Default, bench.Fsync, bench.Pinned))
	}
	if !cfg.ClusterDisabled {
		check(run.WriteJSON(filepath.Join(rdir, "cluster.json"), bench.Cluster))
	}
	args := "go run ./bench/cmd/strata-bench " + strings.Join(os.Args[1:], " ")
	var md string
	if cfg.SingleDisabled {
		md = run.ClusterMarkdown(args)
	} else {
		md = run.Markdown("make bench   # = "+args, "")
		if extra, err := os.ReadFile(filepath.Join(root, *notes)); err == nil {
			md += string(extra)
		}
	}
	if *out != "" {
		path := *out
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if cfg.SingleDisabled {
			// Keep the single-broker passes' report; replace the cluster's section.
			doc, err := os.ReadFile(path)
			if err != nil && !os.IsNotExist(err) {
				check(err)
			}
			md = bench.SpliceSection(string(doc), md)
		}
		check(os.WriteFile(path, []byte(md), 0o644))
		fmt.Printf("wrote %s and %s\n", path, rdir)
	} else {
		fmt.Print(md)
	}
	if len(run.Errors) > 0 {
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata-bench:", err)
		os.Exit(1)
	}
}
