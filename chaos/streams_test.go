package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// streamsHome is the Kafka Streams installed by
// compat-tests/scripts/install-streams.sh, installed here if it is not yet.
func streamsHome(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("Kafka Streams run: java not installed")
	}
	cmd := exec.Command("bash", "../compat-tests/scripts/install-streams.sh")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install Kafka Streams: %v\n%s", err, out)
	}
	home, err := filepath.Abs("../compat-tests/.cache/streams-4.4.0")
	if err != nil {
		t.Fatal(err)
	}
	return home
}

func runWordCount(t *testing.T, target Target, protocol string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := target.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer target.Kill()
	rep, err := RunWordCount(ctx, WordCountOptions{Target: target, Streams: streamsHome(t), GroupProtocol: protocol,
		Kills: envInt(t, "STRATA_STREAMS_KILLS", 3), Seed: uint64(envInt(t, "STRATA_CHAOS_SEED", 1)), Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("%v\n%s output:\n%s", err, target.Name(), target.LogTail(6000))
	}
	t.Logf("%s: %s", target.Name(), rep.Summary())
	if !rep.OK() || rep.Kills == 0 {
		t.Errorf("anomalies (or no kill):\n%v", rep.Anomalies)
	}
}

// TestStrataStreamsWordCount runs Kafka Streams 4.4's word count with
// exactly_once_v2 (group.protocol=classic) on strata, SIGKILLed and
// restarted mid-run (STRATA_STREAMS_KILLS times, 3 by default), and checks
// every word's count ends exact and none is ever counted twice.
func TestStrataStreamsWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("Kafka Streams run; skipped with -short")
	}
	target, err := NewStrata(buildStrata(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runWordCount(t, target, "classic")
}

// TestStrataStreamsGroupWordCount is TestStrataStreamsWordCount with
// group.protocol=streams (KIP-1071): the tasks come from strata's streams
// group coordinator, which also creates the repartition and changelog
// topics.
func TestStrataStreamsGroupWordCount(t *testing.T) {
	if testing.Short() {
		t.Skip("Kafka Streams run; skipped with -short")
	}
	target, err := NewStrata(buildStrata(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runWordCount(t, target, "streams")
}

// TestKafkaStreamsWordCount is the same run on Apache Kafka 4.4.0, with
// STRATA_CHAOS_KAFKA=1.
func TestKafkaStreamsWordCount(t *testing.T) {
	kafkaWordCount(t, "classic")
}

// TestKafkaStreamsGroupWordCount is TestStrataStreamsGroupWordCount on
// Apache Kafka 4.4.0, with STRATA_CHAOS_KAFKA=1.
func TestKafkaStreamsGroupWordCount(t *testing.T) {
	kafkaWordCount(t, "streams")
}

func kafkaWordCount(t *testing.T, protocol string) {
	t.Helper()
	if os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("Apache Kafka control: set STRATA_CHAOS_KAFKA=1 to run it")
	}
	home, err := filepath.Abs("../compat-tests/.cache/kafka-4.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skipf("Apache Kafka control: %s not installed; run KAFKA_VERSION=4.4.0 compat-tests/scripts/install-kafka.sh", home)
	}
	target, err := NewKafka(home, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runWordCount(t, target, protocol)
}

// TestWordCountsCheck feeds the word count's checker the output a broken
// broker or application would give: a count repeated (output of an aborted
// transaction read), one past the final count (a record counted twice),
// an unknown word; and the output of a good run.
func TestWordCountsCheck(t *testing.T) {
	long := func(n int64) []byte { return []byte{0, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }
	for _, tc := range []struct {
		name      string
		words     []string
		counts    []int64
		anomalies int
		complete  bool
	}{
		{"exact", []string{"a", "b", "a", "a", "b"}, []int64{1, 1, 2, 3, 2}, 0, true},
		{"an aborted count read", []string{"a", "a", "a", "a", "b", "b"}, []int64{1, 2, 2, 3, 1, 2}, 1, true},
		{"counted twice", []string{"a", "a", "a", "a", "b", "b"}, []int64{1, 2, 3, 4, 1, 2}, 1, true},
		{"an unknown word", []string{"a", "a", "a", "c", "b", "b"}, []int64{1, 2, 3, 1, 1, 2}, 1, true},
		{"not done", []string{"a", "b"}, []int64{1, 2}, 0, false},
	} {
		c := newWordCounts(map[string]int64{"a": 3, "b": 2})
		for i, w := range tc.words {
			c.see(w, long(tc.counts[i]))
		}
		if len(c.anomalies) != tc.anomalies || c.complete() != tc.complete {
			t.Errorf("%s: anomalies %v, complete %v; want %d anomalies, complete %v", tc.name, c.anomalies, c.complete(), tc.anomalies, tc.complete)
		}
	}
}
