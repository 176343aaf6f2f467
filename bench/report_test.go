package bench

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestRedrawFromResultsJSON loads the committed results.json as -redraw
// does: every row must come back with the rate it was saved with, and the
// throughput chart must draw from it (bars start at the foot of a log axis).
func TestRedrawFromResultsJSON(t *testing.T) {
	const path = "report/results.json"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Results []struct {
			Workload, Broker, Mode string
			MBPerSec               float64
		}
	}
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRun(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) != len(saved.Results) || len(run.Results) == 0 {
		t.Fatalf("%d results read, %d saved", len(run.Results), len(saved.Results))
	}
	for i, r := range run.Results {
		s := saved.Results[i]
		if r.Workload != s.Workload || string(r.Broker) != s.Broker || string(r.Mode) != s.Mode || r.MBPerSec() != s.MBPerSec {
			t.Errorf("result %d read as %s %s %s %.3f MB/s, saved as %s %s %s %.3f MB/s",
				i, r.Workload, r.Broker, r.Mode, r.MBPerSec(), s.Workload, s.Broker, s.Mode, s.MBPerSec)
		}
	}
	if run.Started.IsZero() || len(run.Perf) != 2 {
		t.Errorf("started %v, %d perf rows: want the saved ones", run.Started, len(run.Perf))
	}

	chart := filepath.Join(t.TempDir(), "throughput.png")
	if err := run.ThroughputChart(chart); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(chart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width < 1000 {
		t.Fatalf("chart: %+v, %v", cfg, err)
	}
}
