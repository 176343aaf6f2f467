package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestKafkaCLIWrapper runs Kafka's TopicCommand through scripts/kafka-cli.sh,
// when compat-tests/scripts/install-kafka.sh has cached the jars (the test
// does not download them), and checks stdout is the tool's output alone.
func TestKafkaCLIWrapper(t *testing.T) {
	e2e(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "compat-tests/.cache/kafka-4.4.0/VERSION")); err != nil {
		t.Skip("Kafka's jars are not cached; run compat-tests/scripts/install-kafka.sh")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	b := startBroker(t, "")
	createTopic(t, newClient(t, b.addr), "cli-listed", 2)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts/kafka-cli.sh"), "topics", "--bootstrap-server", b.addr, "--list")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafka-cli.sh topics --list: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if got := stdout.String(); got != "cli-listed\n" {
		t.Fatalf("kafka-cli.sh topics --list printed %q, want %q\nstderr:\n%s", got, "cli-listed\n", stderr.String())
	}
}
