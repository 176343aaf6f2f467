package coordinator

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// get is id's metadata for a request: the error to answer when the
// partition does not serve, wait when a transition of id is in flight.
func (s *txnPartition) get(id string) (m *txnMeta, err *kerr.Error, wait bool) {
	if err := s.status(); err != nil {
		return nil, err, false
	}
	m = s.txns[id]
	return m, nil, m != nil && m.pending != nil
}

var waitEffects = txnEffects{wait: true}

// initProducerID is Kafka's TransactionCoordinator.handleInitProducerId:
// a new id gets a producer id at epoch 0; a known one gets its epoch
// bumped, which fences the previous producer, after a transaction left
// prepared is finished and an ongoing one is aborted at a bumped epoch
// (Kafka's PrepareEpochFence, then bumped again for the new producer). A
// request naming its producer id and epoch (KIP-360, v3+) must match the
// current ones (or the epoch a timeout abort replaced), else
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4 is the caller's job).
func (s *txnPartition) initProducerID(id string, timeoutMs int32, reqPid int64, reqEpoch int16, now time.Time) txnEffects {
	m, serr, wait := s.get(id)
	switch {
	case serr != nil:
		return fail(id, serr, nil)
	case wait:
		return waitEffects
	case timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > s.cfg.MaxTimeout:
		return fail(id, kerr.InvalidTransactionTimeout, nil)
	}
	timeout := time.Duration(timeoutMs) * time.Millisecond
	if m == nil {
		pid, err := s.pids.Next()
		if err != nil {
			return fail(id, kerr.CoordinatorNotAvailable, fmt.Errorf("allocating a producer id: %w", err))
		}
		m = &txnMeta{id: id, pid: -1, epoch: -1, lastEpoch: -1, partitions: map[topicPartition]struct{}{}}
		s.txns[id] = m
		return s.persist(m, txnTransit{pid: pid, lastEpoch: -1, nextPid: -1, timeout: timeout, state: txnEmpty, lastUpdate: now},
			func(time.Time) txnEffects { return s.done(m, txnResult{}) },
			func(err error) txnEffects {
				delete(s.txns, id)
				return fail(id, kerr.CoordinatorNotAvailable, fmt.Errorf("init producer id: %w", err))
			})
	}
	if reqPid >= 0 && !(reqPid == m.pid && (reqEpoch == m.epoch || reqEpoch == m.lastEpoch)) {
		return fail(id, kerr.ProducerFenced, nil)
	}
	bump := func(time.Time) txnEffects {
		pid, epoch := m.pid, m.epoch+1
		if reqPid >= 0 && reqEpoch == m.lastEpoch && m.lastEpoch >= 0 {
			// The producer whose transaction timed out re-initializes: the
			// abort already bumped its epoch.
			epoch = m.epoch
		}
		if epoch >= math.MaxInt16-1 {
			var err error
			if pid, err = s.pids.Next(); err != nil {
				return fail(id, kerr.CoordinatorNotAvailable, fmt.Errorf("allocating a producer id: %w", err))
			}
			epoch = 0
		}
		return s.persist(m, txnTransit{pid: pid, epoch: epoch, lastEpoch: -1, nextPid: -1, clientTV: m.clientTV,
			timeout: timeout, state: txnEmpty, lastUpdate: now},
			func(time.Time) txnEffects { return s.done(m, txnResult{}) },
			func(err error) txnEffects {
				return fail(id, kerr.CoordinatorNotAvailable, fmt.Errorf("init producer id: %w", err))
			})
	}
	concurrent := func(what string) func(err error) txnEffects {
		return func(err error) txnEffects {
			return fail(id, kerr.ConcurrentTransactions, fmt.Errorf("%s: %w", what, err))
		}
	}
	switch m.state {
	case txnPrepareCommit, txnPrepareAbort, txnPrepareEpochFence:
		return s.finish(m, bump, concurrent("finishing a prepared transaction"))
	case txnOngoing:
		return s.abortFenced(m, now, bump, concurrent("aborting the ongoing transaction of a fenced producer"))
	}
	return bump(now)
}

// check is the common validation of AddPartitionsToTxn, AddOffsetsToTxn
// and EndTxn against the transactional id's producer (Kafka's order).
func check(m *txnMeta, pid int64, epoch int16) *kerr.Error {
	switch {
	case m == nil || m.pid != pid:
		return kerr.InvalidProducerIDMapping
	case epoch != m.epoch:
		return kerr.ProducerFenced
	case m.state == txnPrepareCommit || m.state == txnPrepareAbort || m.state == txnPrepareEpochFence:
		return kerr.ConcurrentTransactions
	}
	return nil
}

// addPartitions is AddPartitionsToTxn (and AddOffsetsToTxn) for
// partitions that exist: they join the transaction, which becomes
// Ongoing, at transaction.version tv (2 when a partition leader adds them
// for a KIP-890 client's produce or offset commit).
func (s *txnPartition) addPartitions(id string, pid int64, epoch int16, parts []topicPartition, tv int16, now time.Time) txnEffects {
	m, serr, wait := s.get(id)
	switch {
	case serr != nil:
		return fail(id, serr, nil)
	case wait:
		return waitEffects
	}
	if err := check(m, pid, epoch); err != nil {
		return fail(id, err, nil)
	}
	next := make(map[topicPartition]struct{}, len(m.partitions)+len(parts))
	if m.state == txnOngoing {
		for tp := range m.partitions {
			next[tp] = struct{}{}
		}
	}
	added := false
	for _, tp := range parts {
		if _, ok := next[tp]; !ok {
			next[tp] = struct{}{}
			added = true
		}
	}
	if m.state == txnOngoing && !added {
		return s.done(m, txnResult{})
	}
	t := m.transit()
	t.state, t.partitions, t.lastUpdate, t.clientTV = txnOngoing, next, now, tv
	if m.state != txnOngoing {
		t.start = now
	}
	return s.persist(m, t, func(time.Time) txnEffects { return s.done(m, txnResult{}) },
		func(err error) txnEffects {
			return fail(id, kerr.CoordinatorNotAvailable, fmt.Errorf("add partitions to transaction: %w", err))
		})
}

// verify is Kafka's KIP-890 part 1 verification of a transactional batch:
// the producer's transaction is Ongoing and contains the partition.
// Unknown producer ids and epochs are INVALID_PRODUCER_ID_MAPPING /
// INVALID_PRODUCER_EPOCH, a partition not added (or no ongoing
// transaction) INVALID_TXN_STATE.
func (s *txnPartition) verify(id string, pid int64, epoch int16, tp topicPartition) (err *kerr.Error, wait bool) {
	m, serr, wait := s.get(id)
	switch {
	case serr != nil:
		return serr, false
	case wait:
		return nil, true
	case m == nil || m.pid != pid:
		return kerr.InvalidProducerIDMapping, false
	case epoch != m.epoch:
		return kerr.InvalidProducerEpoch, false
	case m.state != txnOngoing:
		return kerr.InvalidTxnState, false
	}
	if _, ok := m.partitions[tp]; !ok {
		return kerr.InvalidTxnState, false
	}
	return nil, false
}

// describe is one entry of DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND
// for an unknown id.
func (s *txnPartition) describe(id string) (d kmsg.DescribeTransactionsResponseTransactionState, wait bool) {
	d = kmsg.NewDescribeTransactionsResponseTransactionState()
	d.TransactionalID = id
	d.ProducerID, d.ProducerEpoch, d.StartTimestamp = -1, -1, -1
	m, serr, wait := s.get(id)
	switch {
	case serr != nil:
		d.ErrorCode = serr.Code
		return d, false
	case wait:
		return d, true
	case m == nil:
		d.ErrorCode = kerr.TransactionalIDNotFound.Code
		return d, false
	}
	d.State = m.state.String()
	d.TimeoutMillis = int32(m.timeout.Milliseconds())
	d.ProducerID, d.ProducerEpoch = m.pid, m.epoch
	if !m.start.IsZero() {
		d.StartTimestamp = m.start.UnixMilli()
	}
	for _, tp := range sortedTPs(m.partitions) {
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.topic {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = tp.topic
			d.Topics = append(d.Topics, t)
		}
		d.Topics[len(d.Topics)-1].Partitions = append(d.Topics[len(d.Topics)-1].Partitions, tp.partition)
	}
	return d, false
}

// txnListFilter is ListTransactions' filters: lower-cased state names and
// producer ids (nil: no filter), and (when minDuration >= 0) how long a
// transaction has run.
type txnListFilter struct {
	states      map[string]bool
	pids        map[int64]bool
	minDuration time.Duration
}

// list is the partition's part of ListTransactions, in id order.
func (s *txnPartition) list(f txnListFilter, now time.Time) ([]kmsg.ListTransactionsResponseTransactionState, *kerr.Error) {
	if err := s.status(); err != nil {
		return nil, err
	}
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, m := range s.sorted() {
		ok := m.pid >= 0 &&
			(f.states == nil || f.states[strings.ToLower(m.state.String())]) &&
			(f.pids == nil || f.pids[m.pid]) &&
			(f.minDuration < 0 || m.state == txnOngoing && now.Sub(m.start) >= f.minDuration)
		if ok {
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = m.id, m.pid, m.state.String()
			out = append(out, st)
		}
	}
	return out, nil
}
