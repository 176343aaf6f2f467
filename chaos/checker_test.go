package chaos

import (
	"strings"
	"testing"
)

func ack(v string, p int32, o int64) Ack { return Ack{Value: v, Pos: Pos{p, o}} }
func rd(s int64, v string, p int32, o int64) Read {
	return Read{Session: s, Value: v, Pos: Pos{p, o}}
}

func TestCheckClean(t *testing.T) {
	h := History{
		Attempted: 4,
		Acked:     []Ack{ack("a", 0, 0), ack("b", 0, 1), ack("c", 1, 0)},
		// "d" was never acknowledged but landed: allowed.
		Polls: []Read{rd(1, "a", 0, 0), rd(1, "c", 1, 0), rd(1, "b", 0, 1),
			rd(2, "a", 0, 0), rd(2, "b", 0, 1), rd(2, "d", 0, 2)}, // a new session may go back
		Final: []Read{rd(0, "a", 0, 0), rd(0, "b", 0, 1), rd(0, "d", 0, 2), rd(0, "c", 1, 0)},
	}
	r := Check(h)
	if !r.OK() {
		t.Fatalf("clean history reported anomalies: %s", r.Summary())
	}
	if r.Acked != 3 || r.Unacked != 1 || r.Sessions != 2 || r.FinalRecords != 4 {
		t.Errorf("figures: %s", r.Summary())
	}
}

func TestCheckFindsEachAnomaly(t *testing.T) {
	tests := []struct {
		name string
		h    History
		want func(Report) int
	}{
		{"lost acknowledged write", History{
			Acked: []Ack{ack("a", 0, 0), ack("b", 0, 1)},
			Final: []Read{rd(0, "a", 0, 0)},
		}, func(r Report) int { return len(r.Lost) }},
		{"duplicate: one value at two offsets", History{
			Acked: []Ack{ack("a", 0, 0)},
			Final: []Read{rd(0, "a", 0, 0), rd(0, "a", 0, 1)},
		}, func(r Report) int { return len(r.Duplicates) }},
		{"inconsistent offset: ack and read disagree", History{
			Acked: []Ack{ack("a", 0, 0), ack("b", 0, 1)},
			Polls: []Read{rd(1, "b", 0, 0)},
			Final: []Read{rd(0, "a", 0, 0), rd(0, "b", 0, 1)},
		}, func(r Report) int { return len(r.InconsistentOffsets) }},
		{"non-monotonic poll within a session", History{
			Polls: []Read{rd(1, "a", 0, 0), rd(1, "b", 0, 1), rd(1, "a", 0, 0)},
			Final: []Read{rd(0, "a", 0, 0), rd(0, "b", 0, 1)},
		}, func(r Report) int { return len(r.NonMonotonic) }},
		{"poll skip over an offset that holds a record", History{
			Polls: []Read{rd(1, "a", 0, 0), rd(1, "c", 0, 2)},
			Final: []Read{rd(0, "a", 0, 0), rd(0, "b", 0, 1), rd(0, "c", 0, 2)},
		}, func(r Report) int { return len(r.Skips) }},
	}
	for _, tt := range tests {
		r := Check(tt.h)
		if n := tt.want(r); n != 1 || r.OK() {
			t.Errorf("%s: found %d, want 1: %s", tt.name, n, r.Summary())
		}
	}
	// A gap no observation fills (compaction, transaction markers) is no skip.
	r := Check(History{Polls: []Read{rd(1, "a", 0, 0), rd(1, "c", 0, 5)}, Final: []Read{rd(0, "a", 0, 0), rd(0, "c", 0, 5)}})
	if !r.OK() {
		t.Errorf("gap without records reported: %s", r.Summary())
	}
	lost := Check(History{Acked: []Ack{ack("x", 2, 9)}})
	if s := lost.Summary(); !strings.Contains(s, "lost[0]: value x acked at 2/9") {
		t.Errorf("summary does not name the lost write: %s", s)
	}
}
