package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// Environment knobs:
//
//	STRATA_KILLS=200        kill cycles (default 20, what CI runs)
//	STRATA_CHAOS_SEED=7     seed of the kill schedule (default 1)
//	STRATA_CHAOS_KAFKA=1    also run the Apache Kafka control (needs compat-tests/.cache/kafka)
func envInt(t *testing.T, key string, def int) int {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative whole number", key, v)
	}
	return n
}

// buildStrata builds cmd/strata into a temporary directory.
func buildStrata(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "strata")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/strata")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build strata: %v\n%s", err, out)
	}
	return bin
}

func testLogger(t *testing.T) *zap.Logger {
	return zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
}

func runChaos(t *testing.T, target Target, kills int) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*30*time.Second+5*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := Run(ctx, Options{
		Target: target,
		Kills:  kills,
		Seed:   uint64(envInt(t, "STRATA_CHAOS_SEED", 1)),
		Group:  "chaos",
		Logger: testLogger(t),
	})
	if err != nil {
		t.Fatalf("%v\n%s output:\n%s", err, target.Name(), target.LogTail(8000))
	}
	t.Logf("%s (%v)", rep.Summary(), time.Since(start).Round(time.Second))
	if rep.KillCycles != kills {
		t.Errorf("ran %d kill cycles, want %d", rep.KillCycles, kills)
	}
	if rep.Acked == 0 || rep.Polled == 0 {
		t.Errorf("nothing acknowledged (%d) or polled (%d): the workload did not run", rep.Acked, rep.Polled)
	}
	if !rep.OK() {
		t.Errorf("anomalies found:\n%s\n%s output:\n%s", rep.Summary(), target.Name(), target.LogTail(8000))
	}
	return rep
}

// TestStrataKills is the process-kill test: strata under an idempotent
// acks=all producer and a group consumer, SIGKILLed STRATA_KILLS times (20 by
// default) at seeded random intervals of 0.5-5 s and restarted on the same
// data directory each time.
func TestStrataKills(t *testing.T) {
	if testing.Short() {
		t.Skip("process-kill test; skipped with -short")
	}
	dir := t.TempDir()
	target, err := NewStrata(buildStrata(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	runChaos(t, target, envInt(t, "STRATA_KILLS", 20))
}

// TestKafkaKills runs the same workload against Apache Kafka 4.4.0 as a
// control, when STRATA_CHAOS_KAFKA=1 and compat-tests has installed it.
func TestKafkaKills(t *testing.T) {
	if os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("Apache Kafka control: set STRATA_CHAOS_KAFKA=1 to run it")
	}
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skipf("Apache Kafka control: %s not installed; run compat-tests/scripts/install-kafka.sh", home)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("Apache Kafka control: java not installed")
	}
	target, err := NewKafka(home, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runChaos(t, target, envInt(t, "STRATA_KILLS", 20))
}

// TestStrataPowerLoss runs the kill workload with every kill turned into a
// power loss (PowerLossTarget: ext4 on a loop device, the disk replaced by a
// copy of what the block device held). With log.flush.interval.messages=1
// every acknowledged record must survive; without it (the default, as in
// Kafka) the run shows what an unsynced window loses and is only reported.
// Needs root, losetup and mkfs.ext4: set STRATA_CHAOS_POWERLOSS=1.
func TestStrataPowerLoss(t *testing.T) {
	if os.Getenv("STRATA_CHAOS_POWERLOSS") == "" {
		t.Skip("power-loss run: set STRATA_CHAOS_POWERLOSS=1 (needs root, losetup, mkfs.ext4)")
	}
	bin := buildStrata(t)
	for _, tc := range []struct {
		name     string
		args     []string
		mustPass bool
	}{
		{"flush.messages=1", []string{"--override", "log.flush.interval.messages=1"}, true},
		{"default flush", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, err := NewPowerLoss(bin, t.TempDir(), tc.args...)
			if err != nil {
				t.Skipf("power-loss run: %v", err)
			}
			defer target.Close()
			kills := envInt(t, "STRATA_KILLS", 20)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*30*time.Second+5*time.Minute)
			defer cancel()
			rep, err := Run(ctx, Options{Target: target, Kills: kills, Seed: uint64(envInt(t, "STRATA_CHAOS_SEED", 1)),
				Group: "chaos", Logger: testLogger(t)})
			if err != nil {
				t.Fatalf("%v\noutput:\n%s", err, target.LogTail(8000))
			}
			t.Logf("%s", rep.Summary())
			if tc.mustPass && !rep.OK() {
				t.Errorf("acknowledged records lost although every append was fsynced:\n%s\noutput:\n%s", rep.Summary(), target.LogTail(8000))
			}
		})
	}
}
