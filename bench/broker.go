// Package bench runs the same franz-go workloads against Strata and the
// reference Apache Kafka, one broker after the other on this machine, and
// writes BENCHMARKS.md and PNG charts from the measurements.
//
// The brokers are launched with the chaos package's targets (the real strata
// binary; Kafka 4.4.0 in KRaft combined mode from
// compat-tests/.cache/kafka-4.4.0), and the three-broker clusters with its
// cluster launcher from the same jars.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strata-io/strata/chaos"
)

// KafkaJVM is what kafka-server-start.sh passes by default
// (KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS).
var KafkaJVM = []string{"-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"}

// Broker is one broker under test.
type Broker interface {
	chaos.Target
	Pid() int
}

// deployment is what a workload runs against: one broker, or a cluster.
type deployment interface {
	Name() string        // the Kind
	Bootstrap() []string // every broker's client address
	Pids() []int         // every broker's process
	Replication() int16  // replication factor of the topics the workloads create
	// Security is how clients connect: nil for PLAINTEXT.
	Security() *clientSecurity
}

// single is one broker as a deployment: topics have one replica. With a
// secure listener, clients connect there.
type single struct {
	Broker
	secure *secureListener
}

func (s single) Bootstrap() []string {
	if s.secure != nil {
		return []string{s.secure.addr}
	}
	return []string{s.Addr()}
}

func (s single) Security() *clientSecurity {
	if s.secure != nil {
		return s.secure.client
	}
	return nil
}

func (s single) Pids() []int        { return []int{s.Pid()} }
func (s single) Replication() int16 { return 1 }

// Kind names a broker implementation.
type Kind string

const (
	Strata Kind = "strata"
	Kafka  Kind = "kafka"
)

// Mode is a durability setting shared by both brokers.
type Mode string

const (
	Default Mode = "default"  // no fsync on the produce path (both brokers' default)
	Fsync   Mode = "fsync"    // log.flush.interval.messages=1
	Pinned  Mode = "pinned"   // default flush, broker on CPU 1 and load generator on CPU 0
	Cluster Mode = "cluster"  // three brokers, RF=3, min.insync.replicas=2, default flush
	SASLSSL Mode = "sasl_ssl" // default flush, clients on a SASL_SSL listener with SASL/PLAIN (secure.go)
)

// newBroker prepares (does not start) a broker of kind k with its data
// under dir.
// pprofAddr, for Strata only, is where it serves net/http/pprof.
func newBroker(k Kind, mode Mode, strataBin, kafkaHome, dir, pprofAddr string) (Broker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch k {
	case Strata:
		var extra []string
		if mode == Fsync {
			extra = append(extra, "--override", "log.flush.interval.messages=1")
		}
		if pprofAddr != "" {
			extra = append(extra, "--pprof", pprofAddr)
		}
		// Share groups (SHARE) are served only with the unstable keys.
		extra = append(extra, "--override", "unstable.api.versions.enable=true")
		return chaos.NewStrata(strataBin, dir, extra...)
	case Kafka:
		// __share_group_state on one broker (SHARE).
		extra := []string{"share.coordinator.state.topic.replication.factor=1", "share.coordinator.state.topic.min.isr=1"}
		if mode == Fsync {
			extra = append(extra, "log.flush.interval.messages=1")
		}
		t, err := chaos.NewKafka(kafkaHome, dir, extra...)
		if err != nil {
			return nil, err
		}
		t.JVM = KafkaJVM
		return t, nil
	}
	return nil, fmt.Errorf("unknown broker %q", k)
}

// stop sends SIGTERM and waits up to 30 s for a clean exit, then SIGKILL.
func stop(b Broker) error {
	pid := b.Pid()
	if pid == 0 {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return b.Kill()
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

// cpuSeconds is utime+stime of pid (all its threads) in seconds.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// peakRSS is VmHWM of pid in bytes.
func peakRSS(pid int) int64 {
	return statusKB(pid, "VmHWM:") * 1024
}

func statusKB(pid int, key string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), key) {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 {
				n, _ := strconv.ParseInt(fs[1], 10, 64)
				return n
			}
		}
	}
	return 0
}

// resetPeakRSS sets VmHWM back to the current RSS (clear_refs 5), so the
// next peakRSS covers one workload only.
func resetPeakRSS(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// usage brackets one workload: CPU seconds and peak RSS of the brokers,
// summed over a cluster's nodes.
type usage struct {
	pids []int
	cpu0 float64
}

func startUsage(d deployment) usage {
	u := usage{pids: d.Pids()}
	for _, pid := range u.pids {
		resetPeakRSS(pid)
		c, _ := cpuSeconds(pid)
		u.cpu0 += c
	}
	return u
}

func (u usage) finish(r *Result) {
	cpu := 0.0
	r.PeakRSS = 0
	for _, pid := range u.pids {
		c, _ := cpuSeconds(pid)
		cpu += c
		r.PeakRSS += peakRSS(pid)
	}
	r.CPUSeconds = cpu - u.cpu0
}

func startBroker(ctx context.Context, b Broker) error {
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return b.Start(sctx)
}
