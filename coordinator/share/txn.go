package share

import "sort"

// dropAborted is maybeFilterAbortedTransactionalAcquiredRecords: under
// read_committed, the batches of aborted transactions among those read
// are archived in flight and taken out of what was acquired.
func (p *Partition) dropAborted(req Acquire, acquired []AcquiredRecords, count int) ([]AcquiredRecords, int) {
	if !req.ReadCommitted || len(req.Aborted) == 0 {
		return acquired, count
	}
	drop := abortedBatches(req.Batches, req.Aborted)
	if len(drop) == 0 {
		return acquired, count
	}
	for _, b := range drop {
		i := p.floor(b.Base)
		if i < 0 {
			continue
		}
		p.archiveRange(b.Base, b.Last+1, p.between(p.batches[i].first, b.Last), Acquired, true)
	}
	out := withoutBatches(acquired, drop)
	count = 0
	for _, a := range out {
		count += int(a.Last - a.First + 1)
	}
	return out, count
}

// abortedBatches is fetchAbortedTransactionRecordBatches: the
// transactional batches of a producer between the first offset of one of
// its aborted transactions and its ABORT marker.
func abortedBatches(batches []LogBatch, aborted []AbortedTxn) []LogBatch {
	txns := append([]AbortedTxn(nil), aborted...)
	sort.Slice(txns, func(i, j int) bool { return txns[i].FirstOffset < txns[j].FirstOffset })
	open := map[int64]bool{}
	var out []LogBatch
	for _, b := range batches {
		if b.ProducerID < 0 {
			continue
		}
		for len(txns) > 0 && txns[0].FirstOffset <= b.Last {
			open[txns[0].ProducerID] = true
			txns = txns[1:]
		}
		if b.Abort {
			delete(open, b.ProducerID)
		} else if b.Transactional && open[b.ProducerID] {
			out = append(out, b)
		}
	}
	return out
}

// withoutBatches is filterRecordBatchesFromAcquiredRecords: the acquired
// ranges with the offsets of drop (ordered) cut out.
func withoutBatches(acquired []AcquiredRecords, drop []LogBatch) []AcquiredRecords {
	var out []AcquiredRecords
	for _, a := range acquired {
		for _, d := range drop {
			if a.First > a.Last || d.Last < a.First {
				continue
			}
			if d.Base > a.Last {
				break
			}
			if a.First < d.Base {
				out = append(out, AcquiredRecords{First: a.First, Last: d.Base - 1, DeliveryCount: a.DeliveryCount})
			}
			a.First = d.Last + 1
		}
		if a.First <= a.Last {
			out = append(out, a)
		}
	}
	return out
}
