package chaos

import "testing"

func txr(v string, p int32, o, attempt int64) TxnRead {
	return TxnRead{Read: Read{Value: v, Pos: Pos{p, o}}, Attempt: attempt}
}

func TestCheckTxnClean(t *testing.T) {
	h := TxnHistory{
		Inputs:   []string{"0", "1", "2"},
		Outcomes: map[int64]TxnOutcome{1: TxnAborted, 2: TxnCommitted, 3: TxnUnknown},
		// Attempt 1 wrote "0" and "1" and aborted; attempt 2 wrote them
		// again after its markers; attempt 3's outcome is unknown but it
		// committed "2".
		ReadCommitted:   []TxnRead{txr("0", 0, 3, 2), txr("1", 0, 4, 2), txr("2", 1, 0, 3)},
		ReadUncommitted: []TxnRead{txr("0", 0, 0, 1), txr("1", 0, 1, 1), txr("0", 0, 3, 2), txr("1", 0, 4, 2), txr("2", 1, 0, 3)},
	}
	r := CheckTxn(h)
	if !r.OK() {
		t.Fatalf("clean history reported anomalies: %s", r.Summary())
	}
	if r.Commits != 1 || r.Aborts != 1 || r.Unknown != 1 || r.Visible != 3 || r.InLog != 5 {
		t.Errorf("figures: %s", r.Summary())
	}
}

func TestCheckTxnFindsEachAnomaly(t *testing.T) {
	outcomes := map[int64]TxnOutcome{1: TxnAborted, 2: TxnCommitted}
	tests := []struct {
		name string
		h    TxnHistory
		want func(TxnReport) int
	}{
		{"lost input", TxnHistory{Inputs: []string{"0", "1"}, Outcomes: outcomes,
			ReadCommitted: []TxnRead{txr("0", 0, 0, 2)}}, func(r TxnReport) int { return len(r.Lost) }},
		{"duplicate from two commits", TxnHistory{Inputs: []string{"0"}, Outcomes: outcomes,
			ReadCommitted: []TxnRead{txr("0", 0, 0, 2), txr("0", 0, 5, 2)}}, func(r TxnReport) int { return len(r.Duplicates) }},
		{"aborted record visible", TxnHistory{Inputs: []string{"0"}, Outcomes: outcomes,
			ReadCommitted: []TxnRead{txr("0", 0, 0, 1)}}, func(r TxnReport) int { return len(r.AbortedReads) }},
		{"value of no input", TxnHistory{Inputs: []string{"0"}, Outcomes: outcomes,
			ReadCommitted: []TxnRead{txr("0", 0, 0, 2), txr("x", 0, 1, 2)}}, func(r TxnReport) int { return len(r.Unexpected) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckTxn(tc.h)
			if tc.want(r) != 1 || r.OK() {
				t.Errorf("want exactly one anomaly of this kind: %s", r.Summary())
			}
		})
	}
}
