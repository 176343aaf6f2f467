package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// TxnOutcome is what the transforming client was told of one transaction.
type TxnOutcome int

const (
	TxnCommitted TxnOutcome = iota // EndTxn(commit) succeeded
	TxnAborted                     // the transaction was aborted, and EndTxn(abort) succeeded
	TxnUnknown                     // EndTxn failed: the transaction may have committed or not
)

// TxnRead is one output record as a final read saw it, with the attempt
// (the transaction) that wrote it.
type TxnRead struct {
	Read
	Attempt int64
}

// TxnHistory is what an exactly-once consume-transform-produce run
// observed.
type TxnHistory struct {
	Inputs          []string             // every input value, each to be in the output exactly once
	Outcomes        map[int64]TxnOutcome // each attempt's outcome
	ReadCommitted   []TxnRead            // a read_committed read of the whole output after the run
	ReadUncommitted []TxnRead            // a read_uncommitted read of it: aborted records too
}

// TxnReport is the exactly-once verdict.
type TxnReport struct {
	Inputs, Attempts, Commits, Aborts, Unknown int
	Visible                                    int // records read_committed
	InLog                                      int // records read_uncommitted
	Lost                                       []string
	Duplicates                                 []Dup
	AbortedReads                               []TxnRead // read_committed records of an aborted transaction
	Unexpected                                 []TxnRead // read_committed records of no input value
}

// OK says every input is in the output exactly once and nothing aborted
// is visible.
func (r *TxnReport) OK() bool {
	return len(r.Lost) == 0 && len(r.Duplicates) == 0 && len(r.AbortedReads) == 0 && len(r.Unexpected) == 0
}

// Summary is the report's figures on one line, then the first few anomalies.
func (r *TxnReport) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d inputs, %d transactions (%d committed, %d aborted, %d unknown); output %d read_committed of %d in the log: lost %d, duplicates %d, aborted reads %d, unexpected %d",
		r.Inputs, r.Attempts, r.Commits, r.Aborts, r.Unknown, r.Visible, r.InLog, len(r.Lost), len(r.Duplicates), len(r.AbortedReads), len(r.Unexpected))
	const show = 5
	if len(r.Lost) > 0 {
		fmt.Fprintf(&b, "\n  lost: %q", r.Lost[:min(show, len(r.Lost))])
	}
	for i, d := range r.Duplicates[:min(show, len(r.Duplicates))] {
		fmt.Fprintf(&b, "\n  duplicate[%d]: value %s at %v", i, d.Value, d.Positions)
	}
	for i, x := range r.AbortedReads[:min(show, len(r.AbortedReads))] {
		fmt.Fprintf(&b, "\n  aborted read[%d]: value %s at %v from aborted transaction %d", i, x.Value, x.Pos, x.Attempt)
	}
	for i, x := range r.Unexpected[:min(show, len(r.Unexpected))] {
		fmt.Fprintf(&b, "\n  unexpected[%d]: value %q at %v", i, x.Value, x.Pos)
	}
	return b.String()
}

// CheckTxn analyses an exactly-once history:
//
//   - lost: an input value absent from the read_committed output;
//   - duplicate: an input value at more than one read_committed position;
//   - aborted read: a read_committed record written by a transaction the
//     client saw aborted (a transaction whose EndTxn failed may have gone
//     either way, so its records are not held against the broker);
//   - unexpected: a read_committed value that is no input.
func CheckTxn(h TxnHistory) TxnReport {
	r := TxnReport{Inputs: len(h.Inputs), Attempts: len(h.Outcomes), Visible: len(h.ReadCommitted), InLog: len(h.ReadUncommitted)}
	for _, o := range h.Outcomes {
		switch o {
		case TxnCommitted:
			r.Commits++
		case TxnAborted:
			r.Aborts++
		default:
			r.Unknown++
		}
	}
	inputs := make(map[string]bool, len(h.Inputs))
	for _, v := range h.Inputs {
		inputs[v] = true
	}
	posOf := map[string]map[Pos]struct{}{}
	for _, rd := range h.ReadCommitted {
		if !inputs[rd.Value] {
			r.Unexpected = append(r.Unexpected, rd)
			continue
		}
		if posOf[rd.Value] == nil {
			posOf[rd.Value] = map[Pos]struct{}{}
		}
		posOf[rd.Value][rd.Pos] = struct{}{}
		if o, ok := h.Outcomes[rd.Attempt]; ok && o == TxnAborted {
			r.AbortedReads = append(r.AbortedReads, rd)
		}
	}
	for _, v := range h.Inputs {
		if len(posOf[v]) == 0 {
			r.Lost = append(r.Lost, v)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(posOf)) {
		if ps := posOf[v]; len(ps) > 1 {
			r.Duplicates = append(r.Duplicates, Dup{Value: v, Positions: sortedPos(ps)})
		}
	}
	return r
}
