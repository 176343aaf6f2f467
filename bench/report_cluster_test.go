package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// clusterRun is a run with a single-broker W1 and the cluster pass: W1 for
// both brokers, and three failovers for Strata and two for Kafka.
func clusterRun() *Run {
	run := &Run{Started: time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC), LoadBefore: "5.10 4.00 3.20"}
	run.Results = append(run.Results,
		&Result{Workload: "W1", Broker: Strata, Mode: Default, Records: 1000, Seconds: 1},
		&Result{Workload: "W1", Broker: Strata, Mode: Cluster, Records: 3000, Bytes: 300_000, Seconds: 1, Latencies: []int64{1e6, 2e6}},
		&Result{Workload: "W1", Broker: Kafka, Mode: Cluster, Records: 1000, Bytes: 100_000, Seconds: 1, Latencies: []int64{4e6, 8e6}},
	)
	for i, p := range []float64{900, 300, 500} {
		run.Results = append(run.Results, &Result{Workload: Failover, Broker: Strata, Mode: Cluster, Records: 100, ControllerKilled: i == 0,
			Millis: map[string]float64{"pause": p, "leader": float64(100 * (i + 1))}})
	}
	for _, p := range []float64{3000, 5000} {
		run.Results = append(run.Results, &Result{Workload: Failover, Broker: Kafka, Mode: Cluster, Records: 50, Lost: 1,
			Millis: map[string]float64{"pause": p, "leader": 2000}})
	}
	return run
}

func TestFailoverStats(t *testing.T) {
	run := clusterRun()
	s := run.failovers(Strata)
	if s.Runs != 3 || s.MedianPause != 500 || s.MaxPause != 900 || s.MedianLeader != 200 || s.Acked != 300 || s.Lost != 0 {
		t.Errorf("strata: %+v; want 3 runs, median 500, max 900, leader 200, acked 300, lost 0", s)
	}
	if !slices.Equal(s.Pauses, []float64{900, 300, 500}) {
		t.Errorf("strata pauses %v, want them in run order", s.Pauses)
	}
	k := run.failovers(Kafka)
	if k.Runs != 2 || k.MedianPause != 4000 || k.MaxPause != 5000 || k.Lost != 2 {
		t.Errorf("kafka: %+v; want 2 runs, median 4000 (the mean of the middle two), max 5000, lost 2", k)
	}
	if none := run.failovers("other"); none.Runs != 0 || none.MedianPause != 0 || none.MaxPause != 0 {
		t.Errorf("a broker without failovers: %+v", none)
	}
}

// TestClusterMarkdown checks the section says all brokers share the
// machine, that this one was busy, and carries the cluster rows (not the
// single-broker one) with their ratios, and the failover figures.
func TestClusterMarkdown(t *testing.T) {
	md := clusterRun().ClusterMarkdown("go run ./bench/cmd/strata-bench -cluster-only")
	for _, want := range []string{
		clusterHeading + "\n",
		"**All six brokers share one machine**",
		"The load average was 5.10 / 4.00 / 3.20 (1, 5 and 15 minutes) on",
		"other work was running on the machine",
		"Measured 2026-12-01 18:00 (UTC) with `go run ./bench/cmd/strata-bench -cluster-only`.",
		"| W1 | strata | 3000 | 3000 | 0.3 | 2.00 | 2.00 | 2.00 |",
		"| W1 | kafka | 1000 | 1000 | 0.1 | 8.00 | 8.00 | 8.00 |",
		"| W1 | **ratio** | | **3.00x** | | 0.25x |",
		"| strata | 3 | 500 | 900 | 900 (controller), 300, 500 | 200 | 300 | 0 | 0 |",
		"| kafka | 2 | 4000 | 5000 | 3000, 5000 | 2000 | 100 | 2 | 0 |",
		"| **ratio** | | **0.12x** | 0.18x | | 0.10x |",
		"Strata's longest pause under 1s in every run: met (max 900 ms)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("section lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Errors during this pass") {
		t.Errorf("a pass without errors lists some:\n%s", md)
	}
	run := clusterRun()
	run.Errors = []string{"kafka cluster: W3: NOT_LEADER_FOR_PARTITION\nlog tail", "strata default: other"}
	run.Notes = []string{"W1 kafka cluster: measured again"}
	if md := run.ClusterMarkdown(""); !strings.Contains(md, "Errors during this pass:\n\n- `kafka cluster: W3: NOT_LEADER_FOR_PARTITION`\n\n") ||
		strings.Contains(md, "log tail") || strings.Contains(md, "strata default") ||
		!strings.Contains(md, "Notes on this pass:\n\n- W1 kafka cluster: measured again\n") {
		t.Errorf("the pass's errors, first lines only:\n%s", md)
	}
	if strings.Contains(md, "| W1 | strata | 1000 |") {
		t.Errorf("the single-broker W1 row is in the cluster section:\n%s", md)
	}
	run = clusterRun()
	run.LoadBefore = "0.20 0.10 0.05"
	if md := run.ClusterMarkdown(""); strings.Contains(md, "other work") || strings.Contains(md, "Measured") ||
		!strings.Contains(md, "The load average was 0.20 / 0.10 / 0.05") {
		t.Errorf("a quiet machine, no command:\n%s", md)
	}
	if full := clusterRun().Markdown("make bench", ""); !strings.Contains(full, clusterHeading) ||
		strings.Index(full, clusterHeading) > strings.Index(full, "## Targets") {
		t.Errorf("the full report lacks the cluster section before the targets")
	}
}

func TestBusyMachine(t *testing.T) {
	for _, c := range []struct {
		load string
		busy bool
	}{{"0.90 1 1", false}, {"1.01 0 0", true}, {"", false}, {"x", false}} {
		if _, busy := busyMachine(c.load, 2); busy != c.busy {
			t.Errorf("load %q on 2 CPUs: busy %v, want %v", c.load, busy, c.busy)
		}
	}
}

func TestSpliceSection(t *testing.T) {
	const head = "# Benchmarks\n\n## Machine\n\nm\n\n"
	const tail = "## Targets (default flush)\n\nt\n\n## Charts\n\nc\n"
	section := clusterHeading + "\n\nnew figures\n\n"
	// No cluster section yet: it goes before the targets.
	got := SpliceSection(head+tail, section)
	if got != head+section+tail {
		t.Errorf("inserted:\n%s", got)
	}
	// Replacing it keeps everything around it, and is idempotent.
	old := head + clusterHeading + "\n\nold figures\n\n### Failover\n\nold\n\n" + tail
	got = SpliceSection(old, section)
	if got != head+section+tail {
		t.Errorf("replaced:\n%s", got)
	}
	if again := SpliceSection(got, section); again != got {
		t.Errorf("a second splice changed the report:\n%s", again)
	}
	// The section last in the report, and a report without targets or charts.
	if got := SpliceSection(head+clusterHeading+"\n\nold\n", section); got != head+section {
		t.Errorf("replaced at the end:\n%s", got)
	}
	if got := SpliceSection("# B\n", section); got != "# B\n\n"+section {
		t.Errorf("appended:\n%q", got)
	}
	if got := SpliceSection("", section); got != section {
		t.Errorf("into an empty report:\n%q", got)
	}
}

// TestWriteJSONModes checks the cluster rows go to their own file and the
// single-broker file keeps the perf-test rows.
func TestWriteJSONModes(t *testing.T) {
	run := clusterRun()
	run.Perf = []PerfResult{{Broker: Strata}}
	dir := t.TempDir()
	single, cluster := filepath.Join(dir, "results.json"), filepath.Join(dir, "cluster.json")
	if err := run.WriteJSON(single, Default, Fsync, Pinned); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteJSON(cluster, Cluster); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path        string
		rows, perfs int
	}{{single, 1, 1}, {cluster, 7, 0}} {
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		var saved struct {
			Results []Result
			Perf    []PerfResult
		}
		if err := json.Unmarshal(data, &saved); err != nil {
			t.Fatal(err)
		}
		if len(saved.Results) != c.rows || len(saved.Perf) != c.perfs {
			t.Errorf("%s: %d results, %d perf rows; want %d, %d", filepath.Base(c.path), len(saved.Results), len(saved.Perf), c.rows, c.perfs)
		}
	}
}
