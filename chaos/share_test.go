package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shareLock is the acquisition lock the share runs give the broker
// (group.share.record.lock.duration.ms), shorter than the share session
// timeout (shareSession) so that a stopped member's records come back by
// their lock, not by its removal from the group.
const (
	shareLock    = 4 * time.Second
	shareSession = 10 * time.Second
)

// shareConfigs are the broker configs of the share runs, as name=value.
func shareConfigs(strata bool) []string {
	c := []string{
		"group.share.min.record.lock.duration.ms=1000",
		"group.share.record.lock.duration.ms=" + ms(shareLock),
		"group.share.min.session.timeout.ms=1000",
		"group.share.session.timeout.ms=" + ms(shareSession),
		"group.share.min.heartbeat.interval.ms=500",
		"group.share.heartbeat.interval.ms=1000",
		"group.share.delivery.count.limit=10",
	}
	if strata {
		c = append(c, "unstable.api.versions.enable=true")
	} else {
		c = append(c, "share.coordinator.state.topic.replication.factor=1", "share.coordinator.state.topic.min.isr=1")
	}
	return c
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func overrides(kv []string) []string {
	var out []string
	for _, c := range kv {
		out = append(out, "--override", c)
	}
	return out
}

// holderCmd runs this test binary as the holding member
// (TestShareHolderProcess).
func holderCmd(addr, group, topic string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestShareHolderProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), "STRATA_SHARE_HOLDER="+strings.Join([]string{addr, group, topic}, ","))
	cmd.Stderr = os.Stderr
	// A holder outliving a test killed by its timeout would hold forever.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// TestShareHolderProcess is not a test: run by holderCmd, it is the
// member process that holds what it acquires until it is killed.
func TestShareHolderProcess(t *testing.T) {
	env := os.Getenv("STRATA_SHARE_HOLDER")
	if env == "" {
		t.Skip("the holding member process of the share runs")
	}
	f := strings.Split(env, ",")
	if err := HoldShareRecords(context.Background(), f[0], f[1], f[2], os.Stdout); err != nil {
		t.Fatal(err)
	}
}

func shareTarget(t *testing.T, kafka bool) Target {
	t.Helper()
	if !kafka {
		target, err := NewStrata(buildStrata(t), t.TempDir(), overrides(shareConfigs(true))...)
		if err != nil {
			t.Fatal(err)
		}
		return target
	}
	if os.Getenv("STRATA_CHAOS_KAFKA") == "" {
		t.Skip("Apache Kafka control: set STRATA_CHAOS_KAFKA=1 to run it")
	}
	home, err := filepath.Abs(kafkaHome)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		t.Skipf("Apache Kafka control: %s not installed", home)
	}
	target, err := NewKafka(home, t.TempDir(), shareConfigs(false)...)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func runShare(t *testing.T, target Target, o ShareOptions) ShareReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := target.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer target.Kill()
	o.Target, o.Lock, o.Logger = target, shareLock, testLogger(t)
	o.Seed = uint64(envInt(t, "STRATA_CHAOS_SEED", 1))
	rep, err := RunShare(ctx, o)
	if err != nil {
		t.Fatalf("%v\n%s\n%s output:\n%s", err, rep.Summary(), target.Name(), target.LogTail(6000))
	}
	t.Logf("%s: %s", target.Name(), rep.Summary())
	for _, f := range rep.Faults {
		t.Logf("%s: %v", target.Name(), f)
		switch f.Signal {
		case syscall.SIGKILL:
			// The member's connections close with it: both brokers
			// release what its share session held then, not at the lock.
			if f.AfterSignal >= shareLock {
				t.Errorf("%s: a killed member's records came back %v after the kill, not on its disconnect (lock %v)", target.Name(), f.AfterSignal, shareLock)
			}
		case syscall.SIGSTOP:
			// Its connections stay open: the records come back when their
			// lock expires, not before and promptly after.
			if f.AfterAcquire < shareLock-100*time.Millisecond || f.AfterAcquire > shareLock+3*time.Second {
				t.Errorf("%s: a stopped member's records came back %v after their acquisition, want at the lock duration %v", target.Name(), f.AfterAcquire, shareLock)
			}
		}
	}
	if !rep.OK() {
		t.Errorf("anomalies:\n%s", strings.Join(rep.Anomalies, "\n"))
	}
	if rep.Released == 0 || rep.Redelivered == 0 {
		t.Errorf("no release confirmed (%d) or no record delivered again (%d)", rep.Released, rep.Redelivered)
	}
	return rep
}

// TestStrataShareMemberFaults: three members of one share group read
// STRATA_SHARE_RECORDS records (100,000 by default) of a 3-partition
// topic, every tenth released once; a member process holding acquired
// records is SIGKILLed, another SIGSTOPped, and what each held must be
// accepted by the others. Each record accepted exactly once.
func TestStrataShareMemberFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("share group process-fault run; skipped with -short")
	}
	n := envInt(t, "STRATA_SHARE_RECORDS", 100000)
	runShare(t, shareTarget(t, false), ShareOptions{Records: n, Holder: holderCmd, Rate: n / 15})
}

// TestKafkaShareMemberFaults is TestStrataShareMemberFaults on Apache
// Kafka 4.4.0, with STRATA_CHAOS_KAFKA=1.
func TestKafkaShareMemberFaults(t *testing.T) {
	n := envInt(t, "STRATA_SHARE_RECORDS", 100000)
	runShare(t, shareTarget(t, true), ShareOptions{Records: n, Holder: holderCmd, Rate: n / 15})
}

// TestStrataShareBrokerKills: the same three members while the broker is
// SIGKILLed STRATA_SHARE_KILLS times (3 by default) and restarted on its
// data directory: no record whose acceptance the broker confirmed is
// delivered again, and every record ends accepted.
func TestStrataShareBrokerKills(t *testing.T) {
	if testing.Short() {
		t.Skip("share group broker-kill run; skipped with -short")
	}
	runShare(t, shareTarget(t, false), ShareOptions{Records: envInt(t, "STRATA_SHARE_RECORDS", 100000),
		BrokerKills: envInt(t, "STRATA_SHARE_KILLS", 3)})
}

// TestKafkaShareBrokerKills is TestStrataShareBrokerKills on Apache Kafka
// 4.4.0, with STRATA_CHAOS_KAFKA=1. Kafka 4.4.0 fails it (two runs of two,
// seed 1, 3 kills): after the last restart about 1,000 records of one
// partition, each at an offset divisible by ten and so released once, are
// never delivered again and the run stalls; Strata passes.
func TestKafkaShareBrokerKills(t *testing.T) {
	runShare(t, shareTarget(t, true), ShareOptions{Records: envInt(t, "STRATA_SHARE_RECORDS", 100000),
		BrokerKills: envInt(t, "STRATA_SHARE_KILLS", 3)})
}

// TestShareLedgerCheck feeds the share ledger what a broken broker would
// give: a record delivered again after its acceptance was confirmed, an
// acceptance confirmed twice, a record never written; and a good history.
func TestShareLedgerCheck(t *testing.T) {
	p0, p1 := Pos{0, 0}, Pos{0, 1}
	for _, tc := range []struct {
		name      string
		run       func(l *shareLedger)
		anomalies int
		accepted  int
	}{
		{"good", func(l *shareLedger) {
			if t0, _ := l.deliver(shareDelivery{p0, 1}); t0 != shareRelease {
				t.Errorf("offset 0 on its first delivery: ack type %d, want a release", t0)
			}
			l.confirm(map[Pos]int8{p0: shareRelease})
			l.deliver(shareDelivery{p0, 2})
			l.deliver(shareDelivery{p1, 1})
			l.confirm(map[Pos]int8{p0: shareAccept, p1: shareAccept})
		}, 0, 2},
		{"delivered after confirmed", func(l *shareLedger) {
			l.deliver(shareDelivery{p1, 1})
			l.confirm(map[Pos]int8{p1: shareAccept})
			if _, ok := l.deliver(shareDelivery{p1, 2}); ok {
				t.Error("a delivery after the confirmed acceptance counted")
			}
		}, 1, 1},
		{"confirmed twice", func(l *shareLedger) {
			l.deliver(shareDelivery{p1, 1})
			l.confirm(map[Pos]int8{p1: shareAccept})
			l.confirm(map[Pos]int8{p1: shareAccept})
		}, 1, 1},
		{"never written", func(l *shareLedger) { l.deliver(shareDelivery{Pos{1, 0}, 1}) }, 1, 0},
	} {
		var rep ShareReport
		l := &shareLedger{recs: map[Pos]*shareRecord{p0: {}, p1: {}}, rep: &rep, watch: map[Pos]bool{}}
		tc.run(l)
		if len(rep.Anomalies) != tc.anomalies || l.accepted != tc.accepted {
			t.Errorf("%s: anomalies %v, %d accepted; want %d anomalies, %d accepted", tc.name, rep.Anomalies, l.accepted, tc.anomalies, tc.accepted)
		}
	}
}
