package share

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestPartitionScripts runs the scripts in testdata/partition against the
// share-partition state machine: one call per step (acquire, ack, release,
// tick 30s, write-done, dead-letters, ...), printing what it returned (acquired records,
// writes, errors) and, with `state`, its in-flight records, so a
// transition that breaks changes the output. Writes complete as soon as
// they are made unless `writes hold` (then `write-done ID ok|fail`).
// Rewrite the expected outputs with `go test ./coordinator/share -run
// TestPartitionScripts -rewrite` and read the diff.
func TestPartitionScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/partition", func(t *testing.T, path string) {
		h := &partitionHarness{cfg: DefaultConfig(), now: scriptStart}
		h.p, _ = Load(h.cfg, Persisted{StartOffset: -1}, 0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.step(t, d)
		})
	})
}

var scriptStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type partitionHarness struct {
	cfg  Config
	now  time.Time
	p    *Partition
	hold bool
	out  *strings.Builder
}

// args is a step's arguments: key=value (a list in parentheses joined by
// commas) and bare words.
type args struct {
	kv    map[string]string
	words []string
}

func parseArgs(d *datadriven.TestData) args {
	a := args{kv: map[string]string{}}
	for _, arg := range d.CmdArgs {
		if len(arg.Vals) == 0 {
			a.words = append(a.words, arg.Key)
			continue
		}
		a.kv[arg.Key] = strings.Join(arg.Vals, ",")
	}
	return a
}

func (a args) str(key, def string) string {
	if v, ok := a.kv[key]; ok {
		return v
	}
	return def
}

func (a args) word(i int, def string) string {
	if i < len(a.words) {
		return a.words[i]
	}
	return def
}

func (a args) int(key string, def int) int {
	v, err := strconv.Atoi(a.str(key, strconv.Itoa(def)))
	if err != nil {
		panic(fmt.Sprintf("%s: %v", key, err))
	}
	return v
}

func (a args) list(key string) []string {
	v := a.str(key, "")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// span parses "5" or "5-9".
func span(s string) (int64, int64) {
	f, l, ok := strings.Cut(s, "-")
	first, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		panic(err)
	}
	if !ok {
		return first, first
	}
	last, err := strconv.ParseInt(l, 10, 64)
	if err != nil {
		panic(err)
	}
	return first, last
}

func (h *partitionHarness) step(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	h.out = &out
	a := parseArgs(d)
	switch d.Cmd {
	case "config":
		h.cfg.MaxInFlightRecords = a.int("max-in-flight", h.cfg.MaxInFlightRecords)
		h.cfg.DeliveryCountLimit = a.int("delivery-limit", h.cfg.DeliveryCountLimit)
		if v, ok := a.kv["dlq"]; ok {
			h.cfg.DeadLetterQueue = v == "true"
		}
		if v, ok := a.kv["lock"]; ok {
			dur, err := time.ParseDuration(v)
			if err != nil {
				t.Fatal(err)
			}
			h.cfg.LockDuration = dur
		}
		h.p.SetConfig(h.cfg)
	case "load":
		// load start=N reset=N batches=(first-last:state:count,...)
		st := Persisted{StateEpoch: 1, StartOffset: int64(a.int("start", -1))}
		for _, s := range a.list("batches") {
			parts := strings.Split(s, ":")
			f, l := span(parts[0])
			state, _ := strconv.Atoi(parts[1])
			count, _ := strconv.Atoi(parts[2])
			st.Batches = append(st.Batches, StateBatch{First: f, Last: l, State: RecordState(state), DeliveryCount: int16(count)})
		}
		p, err := Load(h.cfg, st, int64(a.int("reset", 0)))
		if err != nil {
			fmt.Fprintf(&out, "error: %v\n", err)
			break
		}
		h.p = p
		h.dump()
	case "acquire":
		// acquire member=A max=N batch-size=N mode=record_limit fetch=N
		// isolation=read_committed log=(...) aborted=(...)
		req := Acquire{Member: a.str("member", "A"), MaxRecords: a.int("max", 500), BatchSize: a.int("batch-size", 500),
			FetchOffset: int64(a.int("fetch", int(h.p.NextFetchOffset())))}
		if a.str("mode", "batch_optimized") == "record_limit" {
			req.Mode = RecordLimit
		}
		// log=(0-4,5-7@1,8@1abort): offsets, then a transactional
		// producer id, and for a control batch its ABORT marker.
		for _, s := range a.list("log") {
			rng, txn, isTxn := strings.Cut(s, "@")
			f, l := span(rng)
			lb := LogBatch{Base: f, Last: l, ProducerID: -1}
			if isTxn {
				pid, abort := strings.CutSuffix(txn, "abort")
				id, err := strconv.ParseInt(pid, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				lb.ProducerID, lb.Transactional, lb.Abort = id, true, abort
			}
			req.Batches = append(req.Batches, lb)
		}
		// aborted=(1:5): producer 1's transaction from offset 5 aborted.
		for _, s := range a.list("aborted") {
			pid, first, _ := strings.Cut(s, ":")
			id, _ := strconv.ParseInt(pid, 10, 64)
			fo, _ := strconv.ParseInt(first, 10, 64)
			req.Aborted = append(req.Aborted, AbortedTxn{ProducerID: id, FirstOffset: fo})
		}
		req.ReadCommitted = a.str("isolation", "read_uncommitted") == "read_committed"
		got, n := h.p.Acquire(req, h.now)
		var parts []string
		for _, r := range got {
			parts = append(parts, fmt.Sprintf("%d-%d#%d", r.First, r.Last, r.DeliveryCount))
		}
		fmt.Fprintf(&out, "acquired %d: (%s)\n", n, strings.Join(parts, " "))
	case "ack":
		// ack member=A (0-4:accept) (5-9:accept/release/...) : one arg per batch
		var acks []AckBatch
		for _, arg := range d.CmdArgs {
			if arg.Key == "member" {
				continue
			}
			rng, types, _ := strings.Cut(arg.Key, ":")
			f, l := span(rng)
			ab := AckBatch{First: f, Last: l}
			for _, ty := range strings.Split(types, "/") {
				ab.Types = append(ab.Types, ackTypeOf(t, ty))
			}
			acks = append(acks, ab)
		}
		w, err := h.p.Acknowledge(a.str("member", "A"), acks, h.now)
		h.result(w, err)
	case "release":
		w, err := h.p.ReleaseMember(a.str("member", "A"), h.now)
		h.result(w, err)
	case "tick":
		dur, err := time.ParseDuration(a.word(0, "0s"))
		if err != nil {
			t.Fatal(err)
		}
		h.now = h.now.Add(dur)
		fmt.Fprintf(&out, "now %s\n", h.now.Sub(scriptStart))
		for _, w := range h.p.Tick(h.now) {
			h.result(w, nil)
		}
	case "writes":
		h.hold = a.word(0, "hold") == "hold"
	case "write-done":
		id, err := strconv.ParseUint(a.word(0, ""), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		h.p.WriteDone(id, a.word(1, "ok") == "ok", h.now)
	case "dead-letters":
		// dead-letters [archive]: what went ARCHIVING, then archived.
		for _, dl := range h.p.DeadLetters() {
			fmt.Fprintf(&out, "dead letter %d-%d#%d: %s\n", dl.First, dl.Last, dl.DeliveryCount, dl.Cause.Message())
			if a.word(0, "") == "archive" {
				h.result(h.p.Archive(dl), nil)
			}
		}
	case "log-start":
		h.p.UpdateLogStart(int64(a.int("offset", 0)))
	case "state":
		h.dump()
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	return out.String()
}

func ackTypeOf(t *testing.T, s string) AckType {
	switch s {
	case "gap":
		return AckGap
	case "accept":
		return AckAccept
	case "release":
		return AckRelease
	case "reject":
		return AckReject
	case "renew":
		return AckRenew
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("ack type %q", s)
	}
	return AckType(n)
}

// result prints a write or an error, completing the write unless held.
func (h *partitionHarness) result(w *Write, err *Error) {
	if err != nil {
		fmt.Fprintf(h.out, "error: %s: %s\n", err.Err.Message, err.Message)
		return
	}
	if w == nil {
		return
	}
	var parts []string
	for _, b := range w.Batches {
		parts = append(parts, fmt.Sprintf("%d-%d:%s#%d", b.First, b.Last, b.State, b.DeliveryCount))
	}
	fmt.Fprintf(h.out, "write %d: start=%d complete=%d (%s)\n", w.ID, w.StartOffset, w.DeliveryCompleteCount, strings.Join(parts, " "))
	if !h.hold {
		h.p.WriteDone(w.ID, true, h.now)
	}
}

// dump prints the offsets and every in-flight batch, then each offset of
// an offset-tracked one.
func (h *partitionHarness) dump() {
	p := h.p
	fmt.Fprintf(h.out, "spso=%d speo=%d next=%d complete=%d can-acquire=%t", p.StartOffset(), p.EndOffset(), p.NextFetchOffset(), p.DeliveryCompleteCount(), p.CanAcquire())
	if dl := p.NextDeadline(); !dl.IsZero() {
		fmt.Fprintf(h.out, " deadline=%s", dl.Sub(scriptStart))
	}
	fmt.Fprintln(h.out)
	for _, b := range p.batches {
		if b.offsets == nil {
			fmt.Fprintf(h.out, "  %d-%d %s\n", b.first, b.last, h.stateString(&b.batch))
			continue
		}
		fmt.Fprintf(h.out, "  %d-%d by offset\n", b.first, b.last)
		for i := range b.offsets {
			fmt.Fprintf(h.out, "    %d %s\n", b.first+int64(i), h.stateString(&b.offsets[i]))
		}
	}
}

func (h *partitionHarness) stateString(s *inFlightState) string {
	str := fmt.Sprintf("%s#%d", s.state, s.deliveryCount)
	if s.member != "" {
		str += " " + s.member
	}
	if !s.lockUntil.IsZero() {
		str += " lock=" + s.lockUntil.Sub(scriptStart).String()
	}
	if s.pending() {
		str += " pending"
	}
	return str
}
