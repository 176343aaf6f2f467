package coordinator

import (
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// endTxn is EndTxn at transaction.version tv: 2 for EndTxn v5+ (KIP-890
// part 2), else 0, chosen per request as Kafka's KafkaApis does, so old
// clients keep the KIP-98 flow whatever is finalized.
//
// At tv 0 the transaction ends at the producer's epoch. A retry of a
// completed end with the same result succeeds, as does one of an end
// whose markers failed (which finishes it); ending with the other result,
// or ending nothing, is INVALID_TXN_STATE.
//
// At tv 2 every end bumps the epoch (the Prepare record carries epoch+1,
// and so do the markers); once the epochs are exhausted the Prepare
// record names a new producer id, which the Complete record switches to
// at epoch 0. The answer is the producer id and epoch to continue with.
// Kafka's TV2 table for an id whose last transition ran at tv 2, where a
// retry is the epoch before the bump (or the exhausted epoch of the
// previous producer id):
//
//	              | abort: retry | abort: current | commit: retry | commit: current
//	Empty         | FENCED       | bump           | FENCED        | INVALID_TXN_STATE
//	CompleteAbort | OK           | bump           | INVALID_TXN_STATE | INVALID_TXN_STATE
//	CompleteCommit| INVALID_TXN_STATE | bump      | OK            | INVALID_TXN_STATE
//
// "bump" is an abort of nothing added (the producer cannot know whether
// its produce requests added partitions): it is written and bumps the
// epoch like any end.
func (s *txnPartition) endTxn(id string, pid int64, epoch int16, commit bool, tv int16, now time.Time) txnEffects {
	m, serr, wait := s.get(id)
	switch {
	case serr != nil:
		return fail(id, serr, nil)
	case wait:
		return waitEffects
	case m == nil:
		return fail(id, kerr.InvalidProducerIDMapping, nil)
	}
	ok := func(time.Time) txnEffects { return s.done(m, txnResult{}) }
	failed := func(err error) txnEffects {
		return fail(id, kerr.ConcurrentTransactions, fmt.Errorf("ending transaction (commit %t): %w", commit, err))
	}
	v2 := m.clientTV >= 2
	retryBump := v2 && m.epoch == epoch+1
	retryOverflow := v2 && m.prevPid == pid && epoch == math.MaxInt16-1 && m.epoch == 0
	retry := retryBump || retryOverflow
	if m.pid != pid && !retryOverflow {
		return fail(id, kerr.InvalidProducerIDMapping, nil)
	}
	valid := epoch == m.epoch
	if v2 {
		switch m.state {
		case txnPrepareCommit, txnPrepareAbort:
			valid = retryBump
		case txnCompleteCommit, txnCompleteAbort:
			valid = valid || retry
		}
	}
	if !valid {
		return fail(id, kerr.ProducerFenced, nil)
	}
	matches := commit && (m.state == txnPrepareCommit || m.state == txnCompleteCommit) ||
		!commit && (m.state == txnPrepareAbort || m.state == txnCompleteAbort)
	switch m.state {
	case txnOngoing:
		return s.endAt(m, commit, tv, now, ok, failed)
	case txnPrepareCommit, txnPrepareAbort:
		if matches {
			return s.finish(m, ok, failed) // its markers failed: finish it now
		}
		// Kafka is still writing the markers in the background here.
		return fail(id, kerr.ConcurrentTransactions, nil)
	case txnCompleteCommit, txnCompleteAbort:
		switch {
		case retry && matches:
			return s.done(m, txnResult{})
		case retry:
		case !commit && tv >= 2:
			return s.endAt(m, false, tv, now, ok, failed)
		case matches && !v2:
			return s.done(m, txnResult{})
		}
	case txnEmpty:
		if !commit && tv >= 2 {
			return s.endAt(m, false, tv, now, ok, failed)
		}
	}
	return fail(id, kerr.InvalidTxnState, nil)
}

// endAt ends m's transaction at transaction.version tv: at m's epoch
// below 2, else at epoch+1, allocating the next producer id when the
// epochs are exhausted (Kafka's isProducerEpochExhausted: from
// Short.MaxValue-1, keeping the last epoch for fencing).
func (s *txnPartition) endAt(m *txnMeta, commit bool, tv int16, now time.Time, ok func(time.Time) txnEffects, failed func(error) txnEffects) txnEffects {
	prepareFailed := func(err error) txnEffects {
		return fail(m.id, kerr.CoordinatorNotAvailable, fmt.Errorf("ending transaction (commit %t): prepare: %w", commit, err))
	}
	if tv < 2 {
		return s.end(m, m.epoch, tv, -1, commit, now, ok, prepareFailed, failed)
	}
	nextPid := int64(-1)
	if m.epoch >= math.MaxInt16-1 {
		var err error
		if nextPid, err = s.pids.Next(); err != nil {
			return fail(m.id, kerr.CoordinatorNotAvailable, fmt.Errorf("allocating a producer id: %w", err))
		}
	}
	return s.end(m, m.epoch+1, 2, nextPid, commit, now, ok, prepareFailed, failed)
}
