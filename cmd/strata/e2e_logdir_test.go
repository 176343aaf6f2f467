package main

// End-to-end tests of what Strata does with its log dir when the operator or
// the disk gets it wrong: a second broker on the same dir, a partition
// directory Strata did not create, a full disk.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSecondBrokerOnLockedDirExits(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	a := startBroker(t, dir)
	cl := newClient(t, a.addr)
	createTopic(t, cl, "locked", 2)
	acked := produceAll(t, cl, "locked", 0, 600)

	b := launch(t, dir, freePort(t))
	if code := b.exitCode(30 * time.Second); code != 1 {
		t.Fatalf("second broker on a locked dir exited %d, want 1", code)
	}
	out := b.out.String()
	if !strings.Contains(out, "is in use by another broker") || !strings.Contains(out, dir) {
		t.Fatalf("second broker's output does not name the dir and the lock:\n%s", out)
	}
	for _, want := range []string{"opening log dir", "log dir is new", "partition"} {
		if strings.Contains(out, want) {
			t.Fatalf("second broker got as far as %q before refusing:\n%s", want, out)
		}
	}

	acked = append(acked, produceAll(t, cl, "locked", 600, 1100)...)
	cl.Close()
	if code := a.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("first broker exited %d", code)
	}
	a2 := a.restart()
	got := consumeAll(t, a2.addr, "locked", 1100)
	checkAcked(t, acked, got)
}

// writeForeignPartition puts a partition directory of another broker (a
// copied Kafka partition) into dir, and returns its files' contents.
func writeForeignPartition(t *testing.T, dir, name string) map[string][]byte {
	t.Helper()
	pdir := filepath.Join(dir, name)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"00000000000000000000.log":       []byte(strings.Repeat("records Kafka acknowledged ", 4096)),
		"00000000000000000000.index":     make([]byte, 64),
		"00000000000000000000.timeindex": make([]byte, 96),
		"leader-epoch-checkpoint":        []byte("0\n1\n0 0\n"),
		"partition.metadata":             []byte("version: 0\ntopic_id: 7kGgEv1ISlqzXq2pUnbdnQ\n"),
	}
	for f, data := range files {
		if err := os.WriteFile(filepath.Join(pdir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func TestForeignPartitionDirIsNeverTouched(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	files := writeForeignPartition(t, dir, "orders-0")
	b := startBroker(t, dir)

	// A producer that auto-creates the topic, and an explicit CreateTopics.
	cl := newClient(t, b.addr, kgo.RecordDeliveryTimeout(3*time.Second))
	ctx := timeoutCtx(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("new")}).FirstErr(); err == nil {
		t.Fatal("a record was produced to a topic over a foreign directory")
	}
	adm := kadm.NewClient(cl)
	for _, parts := range []int32{1, 4} {
		res, err := adm.CreateTopic(ctx, parts, 1, nil, "orders")
		if !errors.Is(err, kerr.InvalidTopicException) || !strings.Contains(res.ErrMessage, "orders-0") {
			t.Fatalf("CreateTopics orders (%d partitions): %v %q", parts, err, res.ErrMessage)
		}
	}
	if code := b.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("broker exited %d", code)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "orders-0"))
	if err != nil || len(ents) != len(files) {
		t.Fatalf("foreign directory has %d entries (%v), want %d", len(ents), err, len(files))
	}
	for f, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, "orders-0", f))
		if err != nil || string(got) != string(want) {
			t.Fatalf("foreign %s changed: %d bytes, want %d (%v)", f, len(got), len(want), err)
		}
	}
	if !regexp.MustCompile(`not Strata's.*orders-0`).MatchString(b.out.String()) {
		t.Fatal("no warning at start about the foreign directory")
	}
}

// kafkaToolsHome is kafkaHome as an absolute path: the Apache Kafka whose
// tools the e2e tests run.
func kafkaToolsHome(t testing.TB) string {
	t.Helper()
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	return home
}

// installedKafkaTools is kafkaToolsHome, the test skipped when java or
// Kafka's jars are not installed.
func installedKafkaTools(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	home := kafkaToolsHome(t)
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skip("Kafka's jars are not cached; run compat-tests/scripts/install-kafka.sh")
	}
	return home
}

// runKafkaTool runs Kafka's tool class from home, stdin fed to it, and
// returns what it wrote and how it exited; one running past 2 minutes
// fails the test.
func runKafkaTool(t testing.TB, home, stdin, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"-Xmx256m", "-Dlog4j2.configurationFile=" + filepath.Join(home, "tools-log4j2.properties"),
		"-cp", filepath.Join(home, "libs") + "/*", class}, args...)
	cmd := exec.CommandContext(ctx, "java", argv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		t.Fatalf("%s timed out\nstdout:\n%s\nstderr:\n%s", class, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), err
}

// kafkaTool runs one of Apache Kafka's command-line tools and requires
// it to succeed, returning all it wrote.
func kafkaTool(t *testing.T, class string, args ...string) string {
	t.Helper()
	home := kafkaToolsHome(t)
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Fatalf("Apache Kafka's tools are not installed in %s (make test installs them; or run compat-tests/scripts/install-kafka.sh): %v", home, err)
	}
	stdout, stderr, err := runKafkaTool(t, home, "", class, args...)
	if err != nil {
		t.Fatalf("%s %v: %v\n%s%s", class, args, err, stdout, stderr)
	}
	return stdout + stderr
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory (root only).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs (make test runs as root in CI)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillUntilStorageError produces 1 KiB records, 50 per request, until the
// broker answers KAFKA_STORAGE_ERROR, and returns the acknowledged ones.
func fillUntilStorageError(t *testing.T, cl *kgo.Client, topic string) []*kgo.Record {
	t.Helper()
	ctx := timeoutCtx(t, 2*time.Minute)
	var acked []*kgo.Record
	for i := 0; ; i++ {
		recs := make([]*kgo.Record, 50)
		for j := range recs {
			recs[j] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%06d-%02d-%01000d", topic, i, j, 0)}
		}
		results := cl.ProduceSync(ctx, recs...)
		for _, r := range results {
			if r.Err == nil {
				acked = append(acked, r.Record)
			}
		}
		if err := results.FirstErr(); err != nil {
			if !errors.Is(err, kerr.KafkaStorageError) {
				t.Fatalf("after %d records, produce failed with %v, want KAFKA_STORAGE_ERROR", len(acked), err)
			}
			return acked
		}
		if i > 10000 {
			t.Fatal("the disk never filled")
		}
	}
}

func TestDiskFullRecoversWithoutRestart(t *testing.T) {
	e2e(t)
	dir := mountTmpfs(t, "6m")
	b := startBroker(t, dir, "--override", "metrics.listener=http://127.0.0.1:0",
		"--override", "log.segment.bytes=524288", "--override", "log.index.size.max.bytes=65536",
		"--override", "log.segment.delete.delay.ms=500")
	line := b.waitLog(regexp.MustCompile(`\tserving metrics\t`), 10*time.Second)
	url := regexp.MustCompile(`"healthz": "(http://[^"]+)"`).FindStringSubmatch(line)[1]
	waitFor(t, "/healthz 200 at start", 10*time.Second, func() bool { code, _ := httpGet(t, url); return code == http.StatusOK })

	cl := newClient(t, b.addr, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "full", 1)
	acked := fillUntilStorageError(t, cl, "full")
	t.Logf("%d records acknowledged before the disk filled", len(acked))

	code, body := httpGet(t, url)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "full-0") {
		t.Fatalf("/healthz on a full disk: %d %q", code, body)
	}
	_, metrics := httpGet(t, strings.TrimSuffix(url, "/healthz")+"/metrics")
	if !strings.Contains(metrics, `strata_partition_offline{partition="0",topic="full"} 1`) {
		t.Fatal("/metrics does not report full-0 offline")
	}

	// The operator frees space with Kafka's own tool.
	offsets := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(offsets, []byte(`{"version":1,"partitions":[{"topic":"full","partition":0,"offset":-1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := kafkaTool(t, "org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", b.addr, "--offset-json-file", offsets)
	m := regexp.MustCompile(`partition: full-0\s+low_watermark: (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("kafka-delete-records did not delete:\n%s", out)
	}
	t.Logf("kafka-delete-records: low watermark %s", m[1])

	// Space comes back after file.delete.delay.ms; the partition revives.
	waitFor(t, "/healthz 200 after freeing space", 30*time.Second, func() bool { code, _ := httpGet(t, url); return code == http.StatusOK })
	ctx := timeoutCtx(t, 30*time.Second)
	r := &kgo.Record{Topic: "full", Value: []byte("after")}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce after the partition revived: %v", err)
	}
	if want := acked[len(acked)-1].Offset + 1; r.Offset != want {
		t.Fatalf("record after revival at offset %d, want %d", r.Offset, want)
	}
	if !strings.Contains(b.out.String(), "partition log revived") {
		t.Fatal("no revival logged")
	}

	// Fill again and stop while the partition is offline: a clean exit;
	// the restart on a bigger disk keeps every acknowledged record.
	more := fillUntilStorageError(t, cl, "full")
	cl.Close()
	if code := b.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("SIGTERM with an offline partition: exit %d\n%s", code, tail(b.out.String(), 4096))
	}
	if out, err := exec.Command("mount", "-o", "remount,size=32m", dir).CombinedOutput(); err != nil {
		t.Fatalf("grow tmpfs: %v: %s", err, out)
	}
	b2 := b.restart("--override", "log.segment.bytes=524288", "--override", "log.index.size.max.bytes=65536")
	kept := append(append([]*kgo.Record{r}, more...), acked...)
	var low int64
	cl2 := newClient(t, b2.addr)
	offs, err := kadm.NewClient(cl2).ListStartOffsets(context.Background(), "full")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("full", 0); ok {
		low = o.Offset
	}
	var wanted []*kgo.Record
	for _, k := range kept {
		if k.Offset >= low {
			wanted = append(wanted, k)
		}
	}
	consumed := consumeAll(t, b2.addr, "full", len(wanted))
	checkAcked(t, wanted, consumed)
}

// TestRecoveryDropsAreCounted tears the tail of a segment while the broker
// is down and checks the restart logs and counts exactly what recovery cut.
func TestRecoveryDropsAreCounted(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	b := startBroker(t, dir)
	cl := newClient(t, b.addr)
	createTopic(t, cl, "torn", 1)
	acked := produceAll(t, cl, "torn", 0, 50)
	cl.Close()
	b.kill()
	seg := filepath.Join(dir, "torn-0", "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 777) // a batch header promising more than follows
	garbage[11] = 0xff
	if _, err := f.Write(garbage); err != nil {
		t.Fatal(err)
	}
	f.Close()

	b2 := b.restart("--override", "metrics.listener=http://127.0.0.1:0")
	b2.waitLog(regexp.MustCompile(`log dir recovered after an unclean shutdown.*"bytesDropped": 777`), 10*time.Second)
	line := b2.waitLog(regexp.MustCompile(`\tserving metrics\t`), 10*time.Second)
	url := regexp.MustCompile(`"metrics": "(http://[^"]+)"`).FindStringSubmatch(line)[1]
	_, body := httpGet(t, url)
	for _, want := range []string{"strata_recovery_bytes_dropped_total 777", "strata_recovery_segments_checked_total 1"} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
	checkAcked(t, acked, consumeAll(t, b2.addr, "torn", 50))
}
