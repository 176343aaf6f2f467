package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var workloadDesc = map[string]string{
	"W1":     "1 producer, 100 B values, 6 partitions, acks=all idempotent (wire generator, 16 KiB batches)",
	"W1/kgo": "W1 with a kgo.Client producer (linger 5 ms): client-bound, for reference",
	"W2":     "1 producer, 1 KB values, 6 partitions, acks=all idempotent (wire generator, 16 KiB batches)",
	"W2/kgo": "W2 with a kgo.Client producer (linger 5 ms): client-bound, for reference",
	"W3":     "50 producers, keyed 100 B values, small batches: 1 KiB (7 records) per partition per request (wire generator)",
	"W3/kgo": "W3 with 50 kgo.Client producers, no linger, 64 records buffered each: client-bound, for reference",
	"W4":     "1 consumer reading W1's data from the start to the high watermark (wire generator)",
	"W4/kgo": "W4 with a kgo.Client consumer: client-bound, for reference",
	"W5":     "end-to-end latency, 100 B values at a fixed rate",
	"W6":     "1 producer, 100 B values, 1,000 partitions",
	"W7":     "start to first produce answered; recovery after kill -9",
	"SHARE":  "3 kgo.ShareGroup members of one share group (KIP-932) reading and accepting records produced before, 100 B values, 6 partitions: first delivery to last (joining not timed)",
}

// Machine describes the host.
func Machine() string {
	var b strings.Builder
	cpu := "unknown"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	mem := statusLine("/proc/meminfo", "MemTotal:")
	java, _ := exec.Command("java", "-version").CombinedOutput()
	jl, _, _ := strings.Cut(string(java), "\n")
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	fmt.Fprintf(&b, "- CPUs (`nproc`): %d\n", runtime.NumCPU())
	fmt.Fprintf(&b, "- CPU model: %s\n", cpu)
	fmt.Fprintf(&b, "- Memory: %s\n", mem)
	fmt.Fprintf(&b, "- Linux %s\n", strings.TrimSpace(string(kernel)))
	fmt.Fprintf(&b, "- Go: %s (Strata built with CGO_ENABLED=0 -trimpath)\n", runtime.Version())
	fmt.Fprintf(&b, "- Java: %s; Kafka 4.4.0 (KRaft combined mode), JVM options as kafka-server-start.sh: `%s`\n", strings.TrimSpace(jl), strings.Join(KafkaJVM, " "))
	return b.String()
}

func statusLine(path, key string) string {
	data, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, key) {
			return strings.TrimSpace(strings.TrimPrefix(l, key))
		}
	}
	return "unknown"
}

func (run *Run) find(w string, k Kind, m Mode) *Result {
	for _, r := range run.Results {
		if r.Workload == w && r.Broker == k && r.Mode == m {
			return r
		}
	}
	return nil
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// Markdown renders the results table.
func (run *Run) Markdown(command, preface string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks: Strata and Apache Kafka on the same machine\n\n")
	b.WriteString(preface)
	fmt.Fprintf(&b, "Measured %s (UTC). Rerun with:\n\n```sh\n%s\n```\n\n", run.Started.UTC().Format("2006-01-02 15:04"), command)
	fmt.Fprintf(&b, "## Machine\n\n%s\n", Machine())
	fmt.Fprintf(&b, "## Workloads\n\n")
	for _, w := range []string{"W1", "W1/kgo", "W2", "W2/kgo", "W3", "W3/kgo", "W4", "W4/kgo", "W5", "W6", "W7", "SHARE"} {
		fmt.Fprintf(&b, "- **%s** %s\n", w, workloadDesc[w])
	}
	b.WriteString("\nRates are records/s and MB/s of record values (10^6 bytes); CPU is the broker process's " +
		"utime+stime during the workload (/proc/<pid>/stat); peak RSS is its VmHWM, reset with " +
		"/proc/<pid>/clear_refs before each workload. Latency for produce workloads is produce call to " +
		"acknowledgement in the client (one record in 16 is timed; for the wire generator, each request from its write to its " +
		"acknowledgement), for W5 produce call to consume (every record). Ratio rows are Strata ÷ Kafka: above 1 is better for " +
		"records/s, below 1 is better for latency, CPU and RSS.\n\n" +
		"The load generator runs in the harness process on the same two cores as the broker, for both brokers alike (the pinned pass splits them). " +
		"W1, W2, W3 and W4 use the wire generator (`bench/wire.go`): franz-go's kmsg on one TCP connection per client. " +
		"Its producers are idempotent and acks=all, with five requests in flight; each request carries one batch per " +
		"partition, 16 KiB (the Java producer's default batch.size) for W1 and W2 and 1 KiB for W3's 50 producers, and " +
		"every batch has its own sequence, timestamps and CRC-32C. Its consumer keeps one Fetch in flight (1 MiB per " +
		"partition, 50 MiB per response), checks every batch's CRC and counts records from the batch headers. It " +
		"spends a small fraction of a kgo.Client's CPU per record, so records/s shows what the broker can take. The " +
		"/kgo rows run the same workloads with kgo.Client: there the client needs most of the machine and sets the " +
		"pace for both brokers, so their ratios are smaller.\n\n")
	for _, m := range []Mode{Default, Fsync, SASLSSL, Pinned} {
		any := false
		for _, r := range run.Results {
			if r.Mode == m && r.Workload != "W7" {
				any = true
			}
		}
		if !any {
			continue
		}
		title := "default flush (no fsync on produce)"
		switch m {
		case Fsync:
			title = "fsync on every produce (log.flush.interval.messages=1)"
		case Pinned:
			title = "one core each: broker pinned to CPU 1, load generator to CPU 0 (default flush)"
		case SASLSSL:
			title = "clients over SASL_SSL (SASL/PLAIN over TLS 1.3, default flush)"
		}
		fmt.Fprintf(&b, "## Throughput and latency, %s\n\n", title)
		b.WriteString(run.table(m, []string{"W1", "W1/kgo", "W4", "W4/kgo", "W2", "W2/kgo", "W3", "W3/kgo", "W5", "W6", "SHARE"}))
		b.WriteString("\n")
		if m == Default {
			b.WriteString(run.perfSection())
		}
		if m == SASLSSL {
			b.WriteString(run.securityCost())
		}
	}
	s7, k7 := run.find("W7", Strata, Default), run.find("W7", Kafka, Default)
	if s7 != nil || k7 != nil {
		b.WriteString("## W7: start-up and recovery\n\n")
		b.WriteString("| broker | start to first produce ms | data before kill -9 | recovery: restart to first produce ms | CPU s to first produce after kill | peak RSS MiB |\n")
		b.WriteString("| --- | ---: | --- | ---: | ---: | ---: |\n")
		for _, r := range []*Result{s7, k7} {
			if r != nil {
				fmt.Fprintf(&b, "| %s | %.1f | %s | %.1f | %.2f | %.0f |\n", r.Broker, r.Millis["start"], r.Note, r.Millis["recovery"], r.CPUSeconds, mib(r.PeakRSS))
			}
		}
		if s7 != nil && k7 != nil {
			fmt.Fprintf(&b, "| **ratio** | **%s** | | **%s** | %s | %s |\n", ratio(s7.Millis["start"], k7.Millis["start"]),
				ratio(s7.Millis["recovery"], k7.Millis["recovery"]), ratio(s7.CPUSeconds, k7.CPUSeconds), ratio(float64(s7.PeakRSS), float64(k7.PeakRSS)))
		}
		b.WriteString("\n")
	}
	b.WriteString(run.sessionsMarkdown())
	if run.hasMode(Cluster) {
		b.WriteString(run.ClusterMarkdown(""))
	}
	b.WriteString(run.targets())
	if len(run.Errors) > 0 {
		b.WriteString("## Errors during the run\n\n")
		for _, e := range run.Errors {
			fmt.Fprintf(&b, "- `%s`\n", strings.ReplaceAll(e, "\n", " "))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Charts\n\n![throughput](bench/report/throughput.png)\n\n![W5 latency CDF](bench/report/latency-cdf.png)\n\n")
	return b.String()
}

// table is the throughput and latency table of workloads in mode m: Strata,
// Kafka and their ratio for each workload either ran.
func (run *Run) table(m Mode, workloads []string) string {
	var b strings.Builder
	b.WriteString("| workload | broker | records | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | CPU s | peak RSS MiB |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, w := range workloads {
		s, k := run.find(w, Strata, m), run.find(w, Kafka, m)
		for _, r := range []*Result{s, k} {
			if r == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.1f | %s | %s | %s | %.2f | %.0f |\n", w, r.Broker, r.Records,
				r.RecordsPerSec(), r.MBPerSec(), q(r, 0.5), q(r, 0.99), q(r, 0.999), r.CPUSeconds, mib(r.PeakRSS))
		}
		if s != nil && k != nil {
			fmt.Fprintf(&b, "| %s | **ratio** | | **%s** | | %s | %s | %s | %s | %s |\n", w,
				ratio(s.RecordsPerSec(), k.RecordsPerSec()), ratioQ(s, k, 0.5), ratioQ(s, k, 0.99), ratioQ(s, k, 0.999),
				ratio(s.CPUSeconds, k.CPUSeconds), ratio(float64(s.PeakRSS), float64(k.PeakRSS)))
		}
	}
	return b.String()
}

func (run *Run) hasMode(m Mode) bool {
	return slices.ContainsFunc(run.Results, func(r *Result) bool { return r.Mode == m })
}

// perfSection is the stock-tool cross-check, shown under the default-flush
// table it checks.
func (run *Run) perfSection() string {
	if len(run.Perf) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Cross-check: kafka-producer-perf-test (W1's shape)\n\n")
	b.WriteString("`org.apache.kafka.tools.ProducerPerformance` from the cached Kafka 4.4.0 jars, 100 B records, " +
		"6 partitions, `acks=all enable.idempotence=true linger.ms=5`, `--throughput -1`.\n\n")
	b.WriteString("| broker | records | records/s | MB/s | avg ms | p99 ms |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	var sp, kp *PerfResult
	for i := range run.Perf {
		p := &run.Perf[i]
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.2f | %.1f | %.0f |\n", p.Broker, p.Records, p.RecordsPerSec, p.MBPerSec, p.AvgMs, p.P99Ms)
		if p.Broker == Strata {
			sp = p
		} else {
			kp = p
		}
	}
	if sp == nil || kp == nil {
		b.WriteString("\n")
		return b.String()
	}
	fmt.Fprintf(&b, "| **ratio** | | **%s** | | | |\n\n", ratio(sp.RecordsPerSec, kp.RecordsPerSec))
	fmt.Fprintf(&b, "The Java producer is the limit on both brokers: it sends %.2f M records/s to Strata and %.2f M to Kafka",
		sp.RecordsPerSec/1e6, kp.RecordsPerSec/1e6)
	if s, k := run.find("W1", Strata, Default), run.find("W1", Kafka, Default); s != nil && k != nil {
		fmt.Fprintf(&b, ", where W1's wire generator above gets %.2f M and %.2f M", s.RecordsPerSec()/1e6, k.RecordsPerSec()/1e6)
	}
	b.WriteString(". So this run cannot show a difference between the brokers; it shows that a stock client " +
		"runs at its own full speed against Strata.\n\n")
	return b.String()
}

func q(r *Result, p float64) string {
	if len(r.Latencies) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", r.Quantile(p))
}

func ratioQ(s, k *Result, p float64) string {
	if len(s.Latencies) == 0 || len(k.Latencies) == 0 {
		return ""
	}
	return ratio(s.Quantile(p), k.Quantile(p))
}

// WriteJSON saves the results of modes (every mode when none is named)
// without the raw latencies, with percentiles; the perf-test rows go with
// the default mode's.
func (run *Run) WriteJSON(path string, modes ...Mode) error {
	type row struct {
		Result
		RecordsPerSec float64
		MBPerSec      float64
		P50, P99      float64
		P999          float64 `json:"P99_9"`
	}
	rows := []row{}
	for _, r := range run.Results {
		if len(modes) > 0 && !slices.Contains(modes, r.Mode) {
			continue
		}
		c := *r
		c.Latencies = nil // the percentiles below summarise them
		rows = append(rows, row{Result: c, RecordsPerSec: r.RecordsPerSec(), MBPerSec: r.MBPerSec(), P50: r.Quantile(0.5), P99: r.Quantile(0.99), P999: r.Quantile(0.999)})
	}
	perf := run.Perf
	if len(modes) > 0 && !slices.Contains(modes, Default) {
		perf = nil
	}
	data, err := json.MarshalIndent(map[string]any{"started": run.Started.UTC().Format(time.RFC3339), "load_before": run.LoadBefore,
		"results": rows, "perf": perf, "errors": run.Errors, "notes": run.Notes}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

var colors = map[Kind]color.Color{
	Strata: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255},
	Kafka:  color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255},
}

// Charts draws throughput.png (MB/s per workload and mode) and
// latency-cdf.png (W5) into dir.
func (run *Run) Charts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := run.ThroughputChart(filepath.Join(dir, "throughput.png")); err != nil {
		return err
	}
	return run.latencyChart(filepath.Join(dir, "latency-cdf.png"))
}

// ReadRun loads a results.json written by WriteJSON, to redraw its
// throughput chart. The file keeps latency percentiles, not latencies, so the
// latency CDF cannot be redrawn from it.
func ReadRun(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var saved struct {
		Started time.Time
		Results []*Result
		Perf    []PerfResult
		Errors  []string
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Run{Started: saved.Started, Results: saved.Results, Perf: saved.Perf, Errors: saved.Errors}, nil
}

// barScale is a log scale on which a bar's base (0) sits on the axis
// minimum: plot.LogScale cannot place 0.
type barScale struct{}

func (barScale) Normalize(min, max, x float64) float64 {
	return plot.LogScale{}.Normalize(min, max, math.Max(x, min))
}

// mbLabel is a bar's value label: three significant figures at most.
func mbLabel(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// ThroughputChart draws MB/s per workload and mode, Strata beside Kafka, on
// a log scale (the rates span three decades) with each bar's value on it.
func (run *Run) ThroughputChart(path string) error {
	var labels []string
	vals := map[Kind]plotter.Values{}
	for _, m := range []Mode{Default, Fsync, SASLSSL, Pinned} {
		for _, w := range []string{"W1", "W2", "W3", "W4", "W6"} {
			s, k := run.find(w, Strata, m), run.find(w, Kafka, m)
			if s == nil && k == nil {
				continue
			}
			l := w
			if m != Default {
				l += " " + string(m)
			}
			labels = append(labels, l)
			for _, pair := range []struct {
				k Kind
				r *Result
			}{{Strata, s}, {Kafka, k}} {
				v := 0.0
				if pair.r != nil {
					v = pair.r.MBPerSec()
				}
				vals[pair.k] = append(vals[pair.k], v)
			}
		}
	}
	if len(labels) == 0 {
		return nil
	}
	lo, hi := math.Inf(1), 0.0
	for _, vs := range vals {
		for _, v := range vs {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "Throughput (record values, MB/s, log scale; higher is better)"
	p.Y.Label.Text = "MB/s"
	p.Y.Scale = barScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0
	p.Add(grid)
	w := vg.Points(20)
	for i, k := range []Kind{Strata, Kafka} {
		bars, err := plotter.NewBarChart(vals[k], w)
		if err != nil {
			return err
		}
		bars.Color = colors[k]
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(2*i-1) * w / 2
		p.Add(bars)
		p.Legend.Add(string(k), bars)

		var xys plotter.XYs
		var text []string
		for x, v := range vals[k] {
			if v > 0 {
				xys = append(xys, plotter.XY{X: float64(x), Y: v})
				text = append(text, mbLabel(v))
			}
		}
		values, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: text})
		if err != nil {
			return err
		}
		for j := range values.TextStyle {
			values.TextStyle[j].Font.Size = vg.Points(8)
			values.TextStyle[j].XAlign = draw.XCenter
		}
		values.Offset = vg.Point{X: bars.Offset, Y: vg.Points(2)}
		p.Add(values)
	}
	// Whole decades around the data, with at least 2x above the tallest bar
	// for its label and the legend (top left).
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(2*hi)))
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(labels...)
	return p.Save(vg.Length(40+24*len(labels))*vg.Millimeter, 110*vg.Millimeter, path)
}

// latencyChart draws the W5 produce-to-consume latency CDF of each broker
// and mode that has latencies.
func (run *Run) latencyChart(path string) error {
	p := plot.New()
	p.Title.Text = "W5 end-to-end latency CDF (produce to consume)"
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "fraction of records"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	drawn := false
	for _, m := range []Mode{Default, Fsync} {
		for _, k := range []Kind{Strata, Kafka} {
			r := run.find("W5", k, m)
			if r == nil || len(r.Latencies) == 0 {
				continue
			}
			const n = 500
			pts := make(plotter.XYs, 0, n+1)
			for i := 0; i <= n; i++ {
				// Linear to 0.9, then denser towards the tail (up to 0.9999).
				f := float64(i) / n
				if i > n*9/10 {
					f = 1 - 0.1*math.Pow(10, -3*float64(i-n*9/10)/float64(n/10))
				}
				x := r.Quantile(f)
				if x <= 0 {
					x = 0.001
				}
				pts = append(pts, plotter.XY{X: x, Y: f})
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			line.Color = colors[k]
			line.Width = vg.Points(1.5)
			if m == Fsync {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("%s (%s)", k, m), line)
			drawn = true
		}
	}
	if !drawn {
		return nil
	}
	p.Legend.Left, p.Legend.Top = true, true
	p.Add(plotter.NewGrid())
	return p.Save(160*vg.Millimeter, 100*vg.Millimeter, path)
}

// targets checks issue 7's goals against the default-flush results (and
// the pinned pass's, which is default flush with one core each).
func (run *Run) targets() string {
	var b strings.Builder
	b.WriteString("## Targets (default flush)\n\n| target | measured | |\n| --- | --- | --- |\n")
	row := func(target, measured string, met bool) {
		verdict := "**missed**"
		if met {
			verdict = "met"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", target, measured, verdict)
	}
	for _, w := range []string{"W1", "W2", "W3", "W4"} {
		s, k := run.find(w, Strata, Default), run.find(w, Kafka, Default)
		if s == nil || k == nil {
			continue
		}
		x := s.RecordsPerSec() / k.RecordsPerSec()
		row(w+" throughput ≥ 2x Kafka", fmt.Sprintf("%.2fx (%.0f vs %.0f records/s)", x, s.RecordsPerSec(), k.RecordsPerSec()), x >= 2)
	}
	for _, w := range []string{"W1", "W2", "W4"} {
		s, k := run.find(w, Strata, Pinned), run.find(w, Kafka, Pinned)
		if s == nil || k == nil {
			continue
		}
		x := s.RecordsPerSec() / k.RecordsPerSec()
		row(w+" throughput ≥ 2x Kafka, one core each (pinned)", fmt.Sprintf("%.2fx (%.0f vs %.0f records/s)", x, s.RecordsPerSec(), k.RecordsPerSec()), x >= 2)
	}
	for _, w := range []string{"W1/kgo", "W2/kgo", "W3/kgo", "W4/kgo"} {
		s, k := run.find(w, Strata, Default), run.find(w, Kafka, Default)
		if s == nil || k == nil {
			continue
		}
		fmt.Fprintf(&b, "| (reference) %s, client-bound | %.2fx (%.0f vs %.0f records/s) | – |\n", w, s.RecordsPerSec()/k.RecordsPerSec(), s.RecordsPerSec(), k.RecordsPerSec())
	}
	if s, k := run.find("W5", Strata, Default), run.find("W5", Kafka, Default); s != nil && k != nil && k.Quantile(0.99) > 0 {
		x := s.Quantile(0.99) / k.Quantile(0.99)
		row("W5 p99 ≤ 1/3 of Kafka's", fmt.Sprintf("%.2f ms vs %.2f ms (%.2fx)", s.Quantile(0.99), k.Quantile(0.99), x), x <= 1.0/3)
	}
	worst, worstW := 0.0, ""
	for _, w := range []string{"W1", "W1/kgo", "W2", "W2/kgo", "W3", "W3/kgo", "W4", "W4/kgo", "W5", "W6", "W7"} {
		s, k := run.find(w, Strata, Default), run.find(w, Kafka, Default)
		if s == nil || k == nil || k.PeakRSS == 0 {
			continue
		}
		if x := float64(s.PeakRSS) / float64(k.PeakRSS); x > worst {
			worst, worstW = x, fmt.Sprintf("%s: %.0f MiB vs %.0f MiB", w, mib(s.PeakRSS), mib(k.PeakRSS))
		}
	}
	if worstW != "" {
		row("peak RSS ≤ 1/10 of Kafka's (worst workload)", fmt.Sprintf("%.3fx (%s)", worst, worstW), worst <= 0.1)
	}
	if s := run.find("W7", Strata, Default); s != nil {
		row("start-up < 50 ms (exec to first produce answered)", fmt.Sprintf("%.1f ms", s.Millis["start"]), s.Millis["start"] < 50)
		row("recovery < 1 s (kill -9 with ~1 GB, restart to first produce answered)", fmt.Sprintf("%.1f ms (%s)", s.Millis["recovery"], s.Note), s.Millis["recovery"] < 1000)
	}
	b.WriteString("\n")
	return b.String()
}
