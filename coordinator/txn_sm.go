package coordinator

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnMeta is one transactional id's metadata (Kafka's TransactionMetadata).
type txnMeta struct {
	id         string
	pid        int64
	epoch      int16
	lastEpoch  int16 // the epoch before a fencing abort or a KIP-890 end bumped it, else -1
	prevPid    int64 // the producer id before the last transition (Kafka's prevProducerId)
	nextPid    int64 // the producer id a KIP-890 end rotates to once complete, else -1
	clientTV   int16 // the transaction.version the client's last transition ran at
	timeout    time.Duration
	state      txnState
	partitions map[topicPartition]struct{}
	start      time.Time // of the ongoing transaction
	lastUpdate time.Time
	// pending is the transition in flight (Kafka's pendingState): its
	// record or markers are being written, and other requests for the id
	// wait for it.
	pending *txnPending
}

// txnTransit is what a transition moves an id to, as its record in
// __transaction_state says (Kafka's TxnTransitMetadata); applied once the
// record is durable.
type txnTransit struct {
	pid        int64
	epoch      int16
	lastEpoch  int16
	nextPid    int64
	clientTV   int16
	timeout    time.Duration
	state      txnState
	partitions map[topicPartition]struct{}
	start      time.Time
	lastUpdate time.Time
}

// txnPending continues a transition once its record was appended or its
// markers written (err nil) or not.
type txnPending struct {
	then func(err error, now time.Time) txnEffects
}

// txnRecord is a record for a partition of __transaction_state: value nil
// is a tombstone.
type txnRecord struct {
	partition int32
	id        string
	value     *kmsg.TxnMetadataValue
}

func (r txnRecord) kv() kv {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = r.id
	out := kv{key: k.AppendTo(nil)}
	if r.value != nil {
		out.value = r.value.AppendTo(nil)
	}
	return out
}

// txnResult is the answer to a request, or the outcome of a transition
// the coordinator started itself (a timeout abort, an expiry). cause and
// event are for the driver's log.
type txnResult struct {
	pid   int64
	epoch int16
	err   *kerr.Error
	cause error  // why err (logged as an error)
	event string // what happened (logged as info)
}

// txnEffects is what the driver does next for one transactional id:
// append record, or write markers, then report the outcome with step;
// neither means the result is final. wait means the id has a transition
// in flight: call again once it ends.
type txnEffects struct {
	id      string
	record  *txnRecord
	markers []TxnMarker
	wait    bool
	res     txnResult
}

func (e txnEffects) done() bool { return e.record == nil && e.markers == nil }

// producerIDSource allocates producer ids (ProducerIDs).
type producerIDSource interface {
	Next() (int64, error)
}

// txnPartition is the transaction coordinator of the transactional ids of
// one partition of __transaction_state, as a state machine: its methods
// take a request (or a record being replayed, or the time for Tick) and
// return effects for the driver to carry out; it owns no goroutine, lock
// or clock. A transition is Kafka's: prepare the target metadata, append
// its record, apply it once durable.
type txnPartition struct {
	index            int32
	coordinatorEpoch int32 // the epoch this node was elected at, on every marker
	cfg              TxnConfig
	pids             producerIDSource
	loading          bool // replaying, or completing what the replay found prepared
	resigned         bool
	txns             map[string]*txnMeta
	lastExpire       time.Time
}

func newTxnPartition(index, coordinatorEpoch int32, cfg TxnConfig, pids producerIDSource) *txnPartition {
	return &txnPartition{index: index, coordinatorEpoch: coordinatorEpoch, cfg: cfg, pids: pids,
		loading: true, txns: make(map[string]*txnMeta)}
}

// status is COORDINATOR_LOAD_IN_PROGRESS while loading and NOT_COORDINATOR
// after resigning, per partition as Kafka answers.
func (s *txnPartition) status() *kerr.Error {
	switch {
	case s.resigned:
		return kerr.NotCoordinator
	case s.loading:
		return kerr.CoordinatorLoadInProgress
	}
	return nil
}

// replay applies one record of the partition's log (latest per key wins).
func (s *txnPartition) replay(key, value []byte) error {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("transaction log key: %w", err)
	}
	if value == nil {
		delete(s.txns, k.TransactionalID)
		return nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("transaction log value of %q: %w", k.TransactionalID, err)
	}
	m := &txnMeta{id: k.TransactionalID, pid: v.ProducerID, epoch: v.ProducerEpoch, lastEpoch: -1,
		prevPid: v.PreviousProducerID, nextPid: v.NextProducerID, clientTV: v.ClientTransactionVersion,
		timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, state: txnState(v.State),
		partitions: make(map[topicPartition]struct{}), lastUpdate: time.UnixMilli(v.LastUpdateTimestamp)}
	if v.StartTimestamp >= 0 {
		m.start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[topicPartition{t.Topic, p}] = struct{}{}
		}
	}
	s.txns[k.TransactionalID] = m
	return nil
}

// completePending finishes the transactions the replay found in
// PrepareCommit/PrepareAbort; the partition keeps answering
// COORDINATOR_LOAD_IN_PROGRESS until loadDone.
func (s *txnPartition) completePending() []txnEffects {
	var out []txnEffects
	for _, m := range s.sorted() {
		if (m.state == txnPrepareCommit || m.state == txnPrepareAbort) && m.pending == nil {
			out = append(out, s.finish(m,
				func(time.Time) txnEffects {
					return s.done(m, txnResult{event: "completed a transaction found prepared on load"})
				},
				func(err error) txnEffects {
					return s.done(m, txnResult{cause: fmt.Errorf("completing a transaction found prepared on load: %w", err)})
				}))
		}
	}
	return out
}

// loadDone makes the partition serve requests.
func (s *txnPartition) loadDone(now time.Time) {
	s.loading = false
	s.lastExpire = now
}

// resign drops the partition: every request, and every transition in
// flight when it ends, is NOT_COORDINATOR.
func (s *txnPartition) resign() {
	s.resigned = true
	s.txns = map[string]*txnMeta{}
}

func (s *txnPartition) sorted() []*txnMeta {
	out := make([]*txnMeta, 0, len(s.txns))
	for _, m := range s.txns {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// step reports the outcome of the record or markers of id's transition
// in flight and returns what to do next.
func (s *txnPartition) step(id string, err error, now time.Time) txnEffects {
	if s.resigned {
		return txnEffects{id: id, res: txnResult{pid: -1, epoch: -1, err: kerr.NotCoordinator}}
	}
	m := s.txns[id]
	if m == nil || m.pending == nil {
		return txnEffects{id: id, res: txnResult{pid: -1, epoch: -1, err: kerr.CoordinatorNotAvailable,
			cause: fmt.Errorf("transactional id %q has no transition in flight", id)}}
	}
	p := m.pending
	m.pending = nil
	return p.then(err, now)
}

// done is a final result for m, with m's producer id and epoch unless it
// is an error.
func (s *txnPartition) done(m *txnMeta, r txnResult) txnEffects {
	r.pid, r.epoch = m.pid, m.epoch
	if r.err != nil {
		r.pid, r.epoch = -1, -1
	}
	return txnEffects{id: m.id, res: r}
}

func fail(id string, err *kerr.Error, cause error) txnEffects {
	return txnEffects{id: id, res: txnResult{pid: -1, epoch: -1, err: err, cause: cause}}
}

// persist starts the transition of m to t: its record is appended, then
// t is applied and ok continues; a failed append leaves m as it was. The
// record is Kafka's TransactionLogValue at the version the finalized
// transaction.version asks for (TransactionVersion.transactionLogValueVersion:
// 0 below level 1, else 1 with the previous and next producer ids and the
// client's transaction version as tagged fields).
func (s *txnPartition) persist(m *txnMeta, t txnTransit, ok func(now time.Time) txnEffects, failed func(err error) txnEffects) txnEffects {
	prevPid := m.pid
	if prevPid < 0 {
		prevPid = t.pid // a new id: Kafka's metadata holds the allocated id before its first record
	}
	v := kmsg.NewTxnMetadataValue()
	if s.finalizedTV() >= 1 {
		v.Version = 1
		v.PreviousProducerID, v.NextProducerID, v.ClientTransactionVersion = prevPid, t.nextPid, t.clientTV
	}
	v.ProducerID, v.ProducerEpoch = t.pid, t.epoch
	v.TimeoutMillis = int32(t.timeout.Milliseconds())
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp = t.lastUpdate.UnixMilli()
	v.StartTimestamp = -1
	if !t.start.IsZero() {
		v.StartTimestamp = t.start.UnixMilli()
	}
	if t.state != txnEmpty {
		v.Topics = []kmsg.TxnMetadataValueTopic{} // Kafka writes null only for Empty
		for _, tp := range sortedTPs(t.partitions) {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.topic {
				vt := kmsg.NewTxnMetadataValueTopic()
				vt.Topic = tp.topic
				v.Topics = append(v.Topics, vt)
			}
			v.Topics[len(v.Topics)-1].Partitions = append(v.Topics[len(v.Topics)-1].Partitions, tp.partition)
		}
	}
	m.pending = &txnPending{then: func(err error, now time.Time) txnEffects {
		if err != nil {
			return failed(err)
		}
		m.prevPid = prevPid
		m.pid, m.epoch, m.lastEpoch, m.timeout, m.state = t.pid, t.epoch, t.lastEpoch, t.timeout, t.state
		m.nextPid, m.clientTV = t.nextPid, t.clientTV
		m.partitions, m.start, m.lastUpdate = t.partitions, t.start, t.lastUpdate
		if m.partitions == nil {
			m.partitions = map[topicPartition]struct{}{}
		}
		return ok(now)
	}}
	return txnEffects{id: m.id, record: &txnRecord{partition: s.index, id: m.id, value: &v}}
}

// finalizedTV is the cluster's finalized transaction.version.
func (s *txnPartition) finalizedTV() int16 {
	if s.cfg.TransactionVersion == nil {
		return 0
	}
	return s.cfg.TransactionVersion()
}

// transit is m's metadata as a transition's starting point.
func (m *txnMeta) transit() txnTransit {
	return txnTransit{pid: m.pid, epoch: m.epoch, lastEpoch: m.lastEpoch, nextPid: m.nextPid, clientTV: m.clientTV,
		timeout: m.timeout, state: m.state, partitions: m.partitions, start: m.start, lastUpdate: m.lastUpdate}
}

// finish writes the markers of m's PrepareCommit/PrepareAbort transaction
// to each of its partitions, then the CompleteCommit/CompleteAbort record
// (Kafka's order: the markers only after the Prepare record is durable,
// the Complete record only after every marker).
func (s *txnPartition) finish(m *txnMeta, ok func(now time.Time) txnEffects, failed func(err error) txnEffects) txnEffects {
	commit := m.state == txnPrepareCommit
	tps := sortedTPs(m.partitions)
	markers := make([]TxnMarker, 0, len(tps))
	for _, tp := range tps {
		markers = append(markers, TxnMarker{Topic: tp.topic, Partition: tp.partition, ProducerID: m.pid,
			ProducerEpoch: m.epoch, Commit: commit, CoordinatorEpoch: s.coordinatorEpoch, TransactionVersion: int8(m.clientTV)})
	}
	m.pending = &txnPending{then: func(err error, now time.Time) txnEffects {
		if err != nil {
			return failed(err)
		}
		t := m.transit()
		t.state = txnCompleteAbort
		if commit {
			t.state = txnCompleteCommit
		}
		if t.clientTV >= 2 && t.nextPid >= 0 {
			// The bump of a KIP-890 end exhausted the epochs: the
			// producer continues as the id allocated at its Prepare.
			t.pid, t.epoch = t.nextPid, 0
		}
		t.nextPid = -1
		// The start stays: Kafka's prepareComplete keeps txnStartTimestamp.
		t.partitions, t.lastUpdate = nil, now
		return s.persist(m, t, ok, failed)
	}}
	return txnEffects{id: m.id, markers: markers}
}

// end moves m's transaction to PrepareCommit/PrepareAbort at epoch and
// finishes it; tv is the transaction.version the end runs at, and nextPid
// (else -1) the producer id it rotates to. prepareFailed is called if the
// Prepare record cannot be written, failed if a later step fails.
func (s *txnPartition) end(m *txnMeta, epoch int16, tv int16, nextPid int64, commit bool, now time.Time, ok func(now time.Time) txnEffects,
	prepareFailed, failed func(err error) txnEffects) txnEffects {
	t := m.transit()
	t.epoch, t.state, t.lastUpdate, t.clientTV, t.nextPid = epoch, txnPrepareAbort, now, tv, nextPid
	if epoch != m.epoch {
		t.lastEpoch = m.epoch
	}
	if commit {
		t.state = txnPrepareCommit
	}
	if m.state != txnOngoing {
		// A KIP-890 abort with nothing added (Kafka's noPartitionAdded):
		// a transaction of no partitions starts and ends now.
		t.start = now
	}
	return s.persist(m, t, func(time.Time) txnEffects { return s.finish(m, ok, failed) }, prepareFailed)
}

// abortFenced aborts m's Ongoing transaction at epoch+1, fencing its
// producer (InitProducerId by a new producer, or a timeout); the old
// epoch is remembered for the timed-out producer's re-initialization.
func (s *txnPartition) abortFenced(m *txnMeta, now time.Time, ok func(now time.Time) txnEffects, failed func(err error) txnEffects) txnEffects {
	tv := min(s.finalizedTV(), 2) // not the client's: the coordinator ends it (Kafka: the server's level)
	if m.epoch >= math.MaxInt16-1 {
		// No epoch left to fence with: the abort keeps it, so its
		// markers cannot be transaction version 2's (which bump).
		return s.end(m, m.epoch, 0, -1, false, now, ok, failed, failed)
	}
	return s.end(m, m.epoch+1, tv, -1, false, now, ok, failed, failed)
}

// tick is Kafka's abortTimedOutTransactions: transactions open longer
// than their timeout are aborted with their producer fenced (epoch bump),
// transactions left prepared by a failed marker write are retried, and
// every transaction.remove.expired.transaction.cleanup.interval.ms the
// ids idle (Empty or Complete) for longer than
// transactional.id.expiration.ms are removed with a tombstone.
func (s *txnPartition) tick(now time.Time) []txnEffects {
	if s.status() != nil {
		return nil
	}
	var out []txnEffects
	for _, m := range s.sorted() {
		if m.pending != nil {
			continue
		}
		switch {
		case m.state == txnOngoing && now.Sub(m.start) > m.timeout:
			out = append(out, s.abortFenced(m, now,
				func(time.Time) txnEffects {
					return s.done(m, txnResult{event: "aborted a timed out transaction"})
				},
				func(err error) txnEffects {
					return s.done(m, txnResult{cause: fmt.Errorf("aborting a timed out transaction: %w", err)})
				}))
		case m.state == txnPrepareCommit || m.state == txnPrepareAbort:
			out = append(out, s.finish(m,
				func(time.Time) txnEffects { return s.done(m, txnResult{}) },
				func(error) txnEffects { return s.done(m, txnResult{}) })) // retried at the next tick
		}
	}
	if s.cfg.IDExpirationChecker > 0 && now.Sub(s.lastExpire) >= s.cfg.IDExpirationChecker {
		s.lastExpire = now
		out = append(out, s.expire(now)...)
	}
	return out
}

// expire removes the ids idle for longer than transactional.id.expiration.ms.
func (s *txnPartition) expire(now time.Time) []txnEffects {
	var out []txnEffects
	for _, m := range s.sorted() {
		idle := m.state == txnEmpty || m.state == txnCompleteCommit || m.state == txnCompleteAbort
		if m.pending != nil || !idle || now.Sub(m.lastUpdate) <= s.cfg.IDExpiration {
			continue
		}
		m.pending = &txnPending{then: func(err error, _ time.Time) txnEffects {
			if err != nil {
				return s.done(m, txnResult{cause: fmt.Errorf("expiring a transactional id: %w", err)})
			}
			delete(s.txns, m.id)
			return s.done(m, txnResult{event: "expired a transactional id"})
		}}
		out = append(out, txnEffects{id: m.id, record: &txnRecord{partition: s.index, id: m.id}})
	}
	return out
}
