package share

import "sort"

// Combine merges state batches into non-overlapping ones, as Kafka 4.4's
// PersisterStateBatchCombiner does when the share coordinator folds a
// write into a share-partition's state: batches before startOffset go
// (-1 keeps all), one straddling it is cut there; where batches overlap,
// the higher delivery count wins, then the higher state (ARCHIVED over
// ACKNOWLEDGED over AVAILABLE); adjacent batches of the same state and
// count become one. Offsets no batch covers stay uncovered.
func Combine(soFar, newer []StateBatch, startOffset int64) []StateBatch {
	type event struct {
		at    int64
		start bool
		prio  StateBatch // State and DeliveryCount only
	}
	var events []event
	add := func(b StateBatch) {
		if startOffset != -1 {
			if b.Last < startOffset {
				return
			}
			b.First = max(b.First, startOffset)
		}
		if b.Last < b.First {
			return
		}
		p := StateBatch{State: b.State, DeliveryCount: b.DeliveryCount}
		events = append(events, event{at: b.First, start: true, prio: p}, event{at: b.Last + 1, prio: p})
	}
	for _, b := range soFar {
		add(b)
	}
	for _, b := range newer {
		add(b)
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].at < events[j].at })
	var out []StateBatch
	active := map[StateBatch]int{}
	for i := 0; i < len(events); {
		at := events[i].at
		for ; i < len(events) && events[i].at == at; i++ {
			if events[i].start {
				active[events[i].prio]++
			} else if active[events[i].prio]--; active[events[i].prio] == 0 {
				delete(active, events[i].prio)
			}
		}
		if len(active) == 0 || i == len(events) {
			continue
		}
		var best StateBatch
		first := true
		for p := range active {
			if first || higher(p, best) {
				best, first = p, false
			}
		}
		last := events[i].at - 1
		if n := len(out); n > 0 && out[n-1].Last+1 == at && out[n-1].State == best.State && out[n-1].DeliveryCount == best.DeliveryCount {
			out[n-1].Last = last
			continue
		}
		out = append(out, StateBatch{First: at, Last: last, State: best.State, DeliveryCount: best.DeliveryCount})
	}
	return out
}

// higher is the combiner's priority: delivery count, then state.
func higher(a, b StateBatch) bool {
	if a.DeliveryCount != b.DeliveryCount {
		return a.DeliveryCount > b.DeliveryCount
	}
	return a.State > b.State
}
