package main

// End-to-end tests of the command line: Kafka's own server.properties, and what
// the binary says about itself.

import (
	"bytes"
	"debug/buildinfo"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaStockFileServesClients starts the binary on Apache Kafka 4.1's
// config/server.properties, with only its ports (9092, 9093) and log.dirs
// changed so tests can run side by side, and produces and consumes over TCP.
func TestKafkaStockFileServesClients(t *testing.T) {
	e2e(t)
	stock, err := os.ReadFile(kafkaStockProperties)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port, controllerPort := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	text := strings.NewReplacer(":9092", ":"+port, ":9093", ":"+controllerPort,
		"log.dirs=/tmp/kraft-combined-logs", "log.dirs="+dir).Replace(string(stock))
	file := filepath.Join(t.TempDir(), "server.properties")
	writeFile(t, file, text)

	b := launchArgs(t, dir, net.JoinHostPort("127.0.0.1", port), "--config", file)
	b.waitReady(30 * time.Second)
	b.waitLog(regexp.MustCompile(`controller listener is validated but not served.*CONTROLLER://:`+controllerPort), 5*time.Second)
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", controllerPort), time.Second); err == nil {
		c.Close()
		t.Errorf("something accepts on the controller port %s; strata must not serve it", controllerPort)
	}

	cl := newClient(t, b.addr)
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || meta.Brokers[0].NodeID != 1 || meta.Brokers[0].Host != "localhost" ||
		strconv.Itoa(int(meta.Brokers[0].Port)) != port {
		t.Fatalf("metadata brokers %+v, want node 1 at localhost:%s (the PLAINTEXT entry of advertised.listeners)", meta.Brokers, port)
	}
	const topic = "stock-config"
	createTopic(t, cl, topic, 1)
	acked := produceAll(t, cl, topic, 0, 200)
	consumed := consumeAll(t, b.addr, topic, 200)
	checkAcked(t, acked, consumed)
}

// versionLine is what --version prints.
var versionLine = regexp.MustCompile(`^strata (\S+) \(commit (\S+?)(?:, (\S+))?, (go\S+) (\S+)\)\n$`)

// runVersion runs bin with args and returns what it printed, requiring exit 0
// and nothing on stderr.
func runVersion(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("%s %q: %v, stderr %q", bin, args, err, stderr.String())
	}
	return stdout.String()
}

// TestVersion: --version and the version command print the build the Go
// toolchain recorded in the binary (read back here with debug/buildinfo), and a
// make build's -X version and commit.
func TestVersion(t *testing.T) {
	e2e(t)
	out := runVersion(t, strataBin, "--version")
	if again := runVersion(t, strataBin, "version"); again != out {
		t.Errorf("strata version printed %q, --version %q", again, out)
	}
	m := versionLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("--version printed %q, want strata VERSION (commit C[, TIME], GO OS/ARCH)", out)
	}
	info, err := buildinfo.ReadFile(strataBin)
	if err != nil {
		t.Fatal(err)
	}
	wantVersion, wantCommit, wantTime := "dev", "unknown", ""
	if v := info.Main.Version; v != "" && v != "(devel)" {
		wantVersion = v
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			wantCommit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "vcs.time":
			wantTime = s.Value
		}
	}
	if modified {
		wantCommit += "-dirty"
	}
	if m[1] != wantVersion || m[2] != wantCommit || m[3] != wantTime || m[4] != info.GoVersion || m[5] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("--version printed %q; want version %s, commit %s, time %q, %s %s/%s (from the binary's build info)",
			out, wantVersion, wantCommit, wantTime, info.GoVersion, runtime.GOOS, runtime.GOARCH)
	}

	// make build's flags, without a vcs stamp.
	stamped := filepath.Join(t.TempDir(), "strata")
	const rev = "0123456789abcdef0123456789abcdef01234567"
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X main.version=v9.9.9-test -X main.commit="+rev, "-o", stamped, ".")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	want := "strata v9.9.9-test (commit " + rev + ", " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	if got := runVersion(t, stamped, "--version"); got != want {
		t.Errorf("-X build printed %q, want %q", got, want)
	}
}
