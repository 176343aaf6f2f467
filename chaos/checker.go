package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Pos is a place in the topic: a partition and an offset.
type Pos struct {
	Partition int32
	Offset    int64
}

func (p Pos) String() string { return fmt.Sprintf("%d/%d", p.Partition, p.Offset) }

// Ack is an acknowledged send: the broker said Value is at Pos.
type Ack struct {
	Value string
	Pos
}

// Read is one record a consumer received. Session numbers the consumer's
// assignments: a rebalance, a revocation or a lost assignment starts a new
// session, and so does each consumer client, so positions may go back
// between sessions but not within one.
type Read struct {
	Session int64
	Value   string
	Pos
}

// History is everything the workload observed.
type History struct {
	Attempted     int      // records handed to the producer
	Acked         []Ack    // sends the broker acknowledged, in ack order
	Indeterminate int      // sends that failed: they may or may not be in the log
	SendErrors    []string // distinct send error messages, for the report
	Polls         []Read   // records the group consumer received, in poll order
	Final         []Read   // a full read of every partition after the last recovery
}

// Dup is a value seen at more than one position.
type Dup struct {
	Value     string
	Positions []Pos
}

// Inconsistent is a position at which more than one value was seen.
type Inconsistent struct {
	Pos
	Values []string
}

// PollAnomaly is a step of one consumer session on one partition from
// offset From to offset To that goes backwards (non-monotonic) or jumps over
// offsets that exist in the log (skip).
type PollAnomaly struct {
	Session   int64
	Partition int32
	From, To  int64
	Missed    []int64 // for skips: offsets in (From, To) known to hold records (first few)
}

// Report is the checker's verdict, Jepsen-style.
type Report struct {
	Target        string
	KillCycles    int
	Attempted     int
	Acked         int
	Indeterminate int
	SendErrors    []string
	Polled        int
	Sessions      int
	FinalRecords  int
	Unacked       int // records in the final log that were never acknowledged (indeterminate sends that landed)

	Lost                []Ack
	Duplicates          []Dup
	InconsistentOffsets []Inconsistent
	NonMonotonic        []PollAnomaly
	Skips               []PollAnomaly
}

// OK says no anomaly was found.
func (r *Report) OK() bool {
	return len(r.Lost) == 0 && len(r.Duplicates) == 0 && len(r.InconsistentOffsets) == 0 &&
		len(r.NonMonotonic) == 0 && len(r.Skips) == 0
}

// Summary is the report's figures on one line, then the first few anomalies.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: kill cycles %d, attempted %d, acknowledged %d, indeterminate %d, polled %d in %d sessions, final log %d (unacked but present %d): lost %d, duplicates %d, inconsistent offsets %d, non-monotonic polls %d, poll skips %d",
		r.Target, r.KillCycles, r.Attempted, r.Acked, r.Indeterminate, r.Polled, r.Sessions, r.FinalRecords, r.Unacked,
		len(r.Lost), len(r.Duplicates), len(r.InconsistentOffsets), len(r.NonMonotonic), len(r.Skips))
	const show = 5
	for i, a := range r.Lost[:min(show, len(r.Lost))] {
		fmt.Fprintf(&b, "\n  lost[%d]: value %s acked at %v", i, a.Value, a.Pos)
	}
	for i, d := range r.Duplicates[:min(show, len(r.Duplicates))] {
		fmt.Fprintf(&b, "\n  duplicate[%d]: value %s at %v", i, d.Value, d.Positions)
	}
	for i, x := range r.InconsistentOffsets[:min(show, len(r.InconsistentOffsets))] {
		fmt.Fprintf(&b, "\n  inconsistent[%d]: %v holds %q", i, x.Pos, x.Values)
	}
	for i, x := range r.NonMonotonic[:min(show, len(r.NonMonotonic))] {
		fmt.Fprintf(&b, "\n  non-monotonic[%d]: session %d partition %d went %d -> %d", i, x.Session, x.Partition, x.From, x.To)
	}
	for i, x := range r.Skips[:min(show, len(r.Skips))] {
		fmt.Fprintf(&b, "\n  skip[%d]: session %d partition %d went %d -> %d, missing %v", i, x.Session, x.Partition, x.From, x.To, x.Missed)
	}
	if len(r.SendErrors) > 0 {
		fmt.Fprintf(&b, "\n  send errors: %q", r.SendErrors)
	}
	return b.String()
}

// Check analyses a history.
//
//   - lost: an acknowledged value absent from the final read, which starts at
//     offset 0 of every partition after the last recovery;
//   - duplicate: one value seen (acked, polled or finally read) at two
//     positions;
//   - inconsistent offset: one position seen with two values;
//   - non-monotonic poll: within a session, a partition's offset not above the
//     one before it;
//   - poll skip: within a session, a partition's offset more than one above
//     the one before it while some offset in between is known (from any
//     observation) to hold a record.
func Check(h History) Report {
	r := Report{
		Attempted:     h.Attempted,
		Acked:         len(h.Acked),
		Indeterminate: h.Indeterminate,
		SendErrors:    h.SendErrors,
		Polled:        len(h.Polls),
		FinalRecords:  len(h.Final),
	}
	valuesAt := map[Pos]map[string]struct{}{}
	posOf := map[string]map[Pos]struct{}{}
	known := map[int32]map[int64]struct{}{} // offsets known to hold a record
	see := func(v string, p Pos) {
		if valuesAt[p] == nil {
			valuesAt[p] = map[string]struct{}{}
		}
		valuesAt[p][v] = struct{}{}
		if posOf[v] == nil {
			posOf[v] = map[Pos]struct{}{}
		}
		posOf[v][p] = struct{}{}
		if known[p.Partition] == nil {
			known[p.Partition] = map[int64]struct{}{}
		}
		known[p.Partition][p.Offset] = struct{}{}
	}
	for _, a := range h.Acked {
		see(a.Value, a.Pos)
	}
	for _, rd := range h.Polls {
		see(rd.Value, rd.Pos)
	}
	final := make(map[string]struct{}, len(h.Final))
	for _, rd := range h.Final {
		see(rd.Value, rd.Pos)
		final[rd.Value] = struct{}{}
	}

	acked := make(map[string]struct{}, len(h.Acked))
	for _, a := range h.Acked {
		acked[a.Value] = struct{}{}
		if _, ok := final[a.Value]; !ok {
			r.Lost = append(r.Lost, a)
		}
	}
	for v := range final {
		if _, ok := acked[v]; !ok {
			r.Unacked++
		}
	}
	for _, v := range slices.Sorted(maps.Keys(posOf)) {
		if ps := posOf[v]; len(ps) > 1 {
			r.Duplicates = append(r.Duplicates, Dup{Value: v, Positions: sortedPos(ps)})
		}
	}
	for _, p := range sortedPos(valuesAt) {
		if vs := valuesAt[p]; len(vs) > 1 {
			r.InconsistentOffsets = append(r.InconsistentOffsets, Inconsistent{Pos: p, Values: slices.Sorted(maps.Keys(vs))})
		}
	}

	sorted := map[int32][]int64{}
	for part, offs := range known {
		sorted[part] = slices.Sorted(maps.Keys(offs))
	}
	type key struct {
		session   int64
		partition int32
	}
	last := map[key]int64{}
	sessions := map[int64]struct{}{}
	for _, rd := range h.Polls {
		sessions[rd.Session] = struct{}{}
		k := key{rd.Session, rd.Partition}
		prev, ok := last[k]
		last[k] = rd.Offset
		if !ok {
			continue
		}
		switch {
		case rd.Offset <= prev:
			r.NonMonotonic = append(r.NonMonotonic, PollAnomaly{Session: rd.Session, Partition: rd.Partition, From: prev, To: rd.Offset})
		case rd.Offset > prev+1:
			offs := sorted[rd.Partition]
			i := sort.Search(len(offs), func(i int) bool { return offs[i] > prev })
			var missed []int64
			for ; i < len(offs) && offs[i] < rd.Offset && len(missed) < 5; i++ {
				missed = append(missed, offs[i])
			}
			if len(missed) > 0 {
				r.Skips = append(r.Skips, PollAnomaly{Session: rd.Session, Partition: rd.Partition, From: prev, To: rd.Offset, Missed: missed})
			}
		}
	}
	r.Sessions = len(sessions)
	return r
}

func sortedPos[V any](m map[Pos]V) []Pos {
	ps := slices.Collect(maps.Keys(m))
	slices.SortFunc(ps, func(a, b Pos) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	return ps
}
