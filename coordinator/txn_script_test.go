package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// TestTxnScripts runs the scripts under testdata/txn against the
// transaction coordinator's driver and state machines on real logs, with
// a fake clock and no ticker: each step prints the records appended to
// __transaction_state (read back from its log), the markers written and
// the answer. Rewrite with -rewrite after a deliberate change, then read
// the diff.
func TestTxnScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/txn", func(t *testing.T, path string) {
		h := newTxnHarness(t)
		datadriven.RunTest(t, path, h.step)
	})
}

// txnHarness is one script's coordinator: 2 partitions of
// __transaction_state, transaction.max.timeout.ms 15m, the abort check
// every 10s, ids expiring after 1h idle, checked every 10m.
type txnHarness struct {
	t       *testing.T
	clock   *clockwork.FakeClock
	base    time.Time
	logs    *storage.Manager
	groups  *Groups
	txns    *Txns
	markers *scriptMarkers
	seen    map[int32]int64 // next offset to print per partition of __transaction_state
	held    map[int32]*txnShard
	out     strings.Builder // the step's output
}

// scriptMarkers prints the markers written, after the records appended
// before them (so the output keeps their order), and fails the next
// writes when told to.
type scriptMarkers struct {
	next   MarkerWriter
	h      *txnHarness
	fail   int
	resign int32 // a partition of __transaction_state to resign while the next markers are written, or -1
}

func (w *scriptMarkers) WriteMarkers(ctx context.Context, markers []TxnMarker) []error {
	w.h.printRecords()
	if w.resign >= 0 {
		w.h.txns.OnResigned(w.resign)
		fmt.Fprintf(&w.h.out, "resigned %s-%d\n", TxnStateTopic, w.resign)
		w.resign = -1
	}
	if w.fail > 0 {
		w.fail--
		errs := make([]error, len(markers))
		for i := range errs {
			errs[i] = errors.New("injected marker failure")
		}
		fmt.Fprintf(&w.h.out, "markers failed\n")
		return errs
	}
	for _, mk := range markers {
		fmt.Fprintf(&w.h.out, "marker %s-%d pid=%d epoch=%d %s coordinator-epoch=%d", mk.Topic, mk.Partition,
			mk.ProducerID, mk.ProducerEpoch, map[bool]string{true: "commit", false: "abort"}[mk.Commit], mk.CoordinatorEpoch)
		if mk.TransactionVersion > 0 {
			fmt.Fprintf(&w.h.out, " tv=%d", mk.TransactionVersion)
		}
		w.h.out.WriteString("\n")
	}
	return w.next.WriteMarkers(ctx, markers)
}

func newTxnHarness(t *testing.T) *txnHarness {
	dir := t.TempDir()
	base := time.UnixMilli(1_700_000_000_000)
	clock := clockwork.NewFakeClockAt(base)
	logs, err := storage.OpenManager(vfs.Default, dir, storage.DefaultConfig(), storage.ManagerOptions{NodeID: 1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	pids, err := OpenProducerIDs(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	replicas := replicasOf(t, logs)
	gcfg := DefaultGroupConfig()
	gcfg.OffsetsTopicPartitions = 1
	var e testElection
	groups, err := OpenGroups(logs, replicas, e.create(logs), gcfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(groups.Close)
	c := newTxns(logs, replicas, e.create(logs), pids, groups, TxnConfig{StateLogPartitions: 2, AbortCheckInterval: 10 * time.Second,
		IDExpiration: time.Hour, IDExpirationChecker: 10 * time.Minute, Clock: clock}, zap.NewNop())
	t.Cleanup(c.Close)
	e.groups, e.txns = groups, c
	h := &txnHarness{t: t, clock: clock, base: base, logs: logs, groups: groups, txns: c,
		seen: map[int32]int64{}, held: map[int32]*txnShard{}}
	h.markers = &scriptMarkers{next: c.markers, h: h, resign: -1}
	c.markers = h.markers
	return h
}

func (h *txnHarness) step(t *testing.T, d *datadriven.TestData) string {
	h.t = t
	h.out.Reset()
	res := h.do(t, d)
	h.printRecords()
	if res != "" {
		fmt.Fprintf(&h.out, "-> %s\n", res)
	}
	return h.out.String()
}

func (h *txnHarness) do(t *testing.T, d *datadriven.TestData) string {
	var (
		id          string
		pid         int64 = -1
		epoch       int16 = -1
		timeout           = time.Minute
		part        int32
		commit      bool
		parts       []TxnPartition
		group, name string
		count       = 1
		coordEpoch  int32
		tv          int16
	)
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		switch a.Key {
		case "id":
			id = v
		case "pid":
			pid = mustInt(t, v)
		case "epoch":
			epoch = int16(mustInt(t, v))
		case "timeout":
			timeout = mustDuration(t, v)
		case "partition":
			part = int32(mustInt(t, v))
		case "commit":
			commit = true
		case "abort":
			commit = false
		case "group":
			group = v
		case "name":
			name = v
		case "coordinator-epoch":
			coordEpoch = int32(mustInt(t, v))
		case "count":
			count = int(mustInt(t, v))
		case "tv":
			tv = int16(mustInt(t, v))
		case "parts":
			for _, tp := range a.Vals {
				i := strings.LastIndexByte(tp, '-')
				parts = append(parts, TxnPartition{Topic: tp[:i], Partition: int32(mustInt(t, tp[i+1:]))})
			}
		}
	}
	switch d.Cmd {
	case "create-topic":
		if _, err := h.logs.CreateTopic(name, int32(count), nil, false); err != nil {
			t.Fatal(err)
		}
		return ""
	case "init-producer-id":
		r := h.txns.InitProducerID(id, int32(timeout.Milliseconds()), pid, epoch)
		if r.Err != nil {
			return txnErrName(r.Err)
		}
		return fmt.Sprintf("pid=%d epoch=%d", r.ProducerID, r.Epoch)
	case "add-partitions":
		h.txns.AddPartitions(id, pid, epoch, parts, tv)
		var s []string
		for _, p := range parts {
			s = append(s, fmt.Sprintf("%s-%d: %s", p.Topic, p.Partition, txnErrName(p.Err)))
		}
		return strings.Join(s, ", ")
	case "add-offsets":
		return txnErrName(h.txns.AddOffsets(id, pid, epoch, group))
	case "end-txn":
		r := h.txns.EndTxn(id, pid, epoch, commit, tv)
		if r.Err != nil || tv < 2 {
			return txnErrName(r.Err)
		}
		return fmt.Sprintf("OK pid=%d epoch=%d", r.ProducerID, r.Epoch)
	case "force-epoch":
		// Test-only: jump id's epoch (as if after that many transactions).
		sh, _ := h.txns.shardFor(id)
		sh.mu.Lock()
		sh.sm.txns[id].epoch = epoch
		sh.mu.Unlock()
		return ""

	case "verify":
		return txnErrName(h.txns.VerifyPartition(id, pid, epoch, parts[0].Topic, parts[0].Partition))
	case "describe":
		st := h.txns.DescribeTransaction(id)
		if st.ErrorCode != 0 {
			return kerr.ErrorForCode(st.ErrorCode).(*kerr.Error).Message
		}
		var tps []string
		for _, tp := range st.Topics {
			for _, p := range tp.Partitions {
				tps = append(tps, fmt.Sprintf("%s-%d", tp.Topic, p))
			}
		}
		return fmt.Sprintf("state=%s pid=%d epoch=%d timeout=%s start=%s partitions=[%s]", st.State, st.ProducerID,
			st.ProducerEpoch, time.Duration(st.TimeoutMillis)*time.Millisecond, h.since(st.StartTimestamp), strings.Join(tps, " "))
	case "tick":
		h.clock.Advance(mustDuration(t, d.CmdArgs[0].Key))
		h.txns.tick()
		return fmt.Sprintf("now=%s", h.clock.Since(h.base))
	case "config":
		// Before the first request: the partitions take it when elected.
		if v, ok := d.Arg("id-expiration"); ok {
			h.txns.cfg.IDExpiration = mustDuration(t, v.Vals[0])
		}
		if v, ok := d.Arg("transaction-version"); ok {
			level := int16(mustInt(t, v.Vals[0]))
			h.txns.cfg.TransactionVersion = func() int16 { return level }
		}
		return ""
	case "resign-on-markers":
		h.markers.resign = part
		return ""
	case "fail-markers":
		h.markers.fail = count
		return ""
	case "elect":
		if err := h.txns.Ensure(); err != nil {
			t.Fatal(err)
		}
		if !d.HasArg("hold") {
			return txnErrName(kerrOf(h.txns.OnElected(part, coordEpoch)))
		}
		// Elected but not yet replayed: OnElected's first half.
		h.held[part] = h.txns.elect(part, coordEpoch)
		return "loading"
	case "load":
		return txnErrName(kerrOf(h.txns.load(part, h.held[part])))
	case "resign":
		h.txns.OnResigned(part)
		return ""
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

// printRecords prints the records appended to __transaction_state since
// the last step, decoded from the log.
func (h *txnHarness) printRecords() {
	t, out := h.t, &h.out
	topic := h.logs.Topic(TxnStateTopic)
	if topic == nil {
		return
	}
	for i, p := range topic.Partitions() {
		from := h.seen[int32(i)]
		err := p.Log.ForEachBatch(from, func(raw []byte) error {
			next, err := batchRecords(raw, func(key, value []byte) error {
				var k kmsg.TxnMetadataKey
				if err := k.ReadFrom(key); err != nil {
					return err
				}
				fmt.Fprintf(out, "record %s-%d %s: ", TxnStateTopic, i, k.TransactionalID)
				if value == nil {
					out.WriteString("tombstone\n")
					return nil
				}
				var v kmsg.TxnMetadataValue
				if err := v.ReadFrom(value); err != nil {
					return err
				}
				var tps []string
				for _, tp := range v.Topics {
					for _, p := range tp.Partitions {
						tps = append(tps, fmt.Sprintf("%s-%d", tp.Topic, p))
					}
				}
				fmt.Fprintf(out, "pid=%d epoch=%d state=%s timeout=%s start=%s update=%s partitions=[%s]",
					v.ProducerID, v.ProducerEpoch, kmsg.TransactionState(v.State),
					time.Duration(v.TimeoutMillis)*time.Millisecond, h.since(v.StartTimestamp), h.since(v.LastUpdateTimestamp),
					strings.Join(tps, " "))
				if v.Version >= 1 {
					fmt.Fprintf(out, " v1 prev-pid=%d next-pid=%d client-tv=%d", v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion)
				}
				out.WriteString("\n")
				return nil
			})
			if next > h.seen[int32(i)] {
				h.seen[int32(i)] = next
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// since prints a timestamp as the time since the script's start, "-" for -1.
func (h *txnHarness) since(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).Sub(h.base).String()
}

func txnErrName(err *kerr.Error) string {
	if err == nil {
		return "OK"
	}
	return err.Message
}

func kerrOf(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	return &kerr.Error{Message: err.Error()}
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

func mustDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return d
}
