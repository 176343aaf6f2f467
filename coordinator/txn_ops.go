package coordinator

import (
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/replica"
)

// InitProducerIDResult is the answer to InitProducerId.
type InitProducerIDResult struct {
	ProducerID int64
	Epoch      int16
	Err        *kerr.Error
}

// lock returns the transactional id's metadata locked, creating an empty
// entry (pid -1) when create is set; nil when it does not exist.
func (c *Txns) lock(id string, create bool) *txnMeta {
	for {
		c.mu.Lock()
		m := c.txns[id]
		if m == nil {
			if !create {
				c.mu.Unlock()
				return nil
			}
			m = &txnMeta{id: id, pid: -1, epoch: -1, lastEpoch: -1, partitions: map[txnTP]struct{}{}, stateLog: c.state.partitionOf(id)}
			c.txns[id] = m
		}
		c.mu.Unlock()
		m.mu.Lock()
		if m.state != txnDead {
			return m
		}
		m.mu.Unlock() // expired meanwhile: look again
	}
}

// InitProducerID serves InitProducerId with a transactional id, as Kafka's
// TransactionCoordinator.handleInitProducerId: a new id gets a producer id
// at epoch 0; a known one gets its epoch bumped, which fences the previous
// producer, after an ongoing transaction of that producer is aborted. A
// request naming its producer id and epoch (KIP-360, v3+) must match the
// current ones (or the epoch a timeout abort replaced), else
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4 is the caller's job).
func (c *Txns) InitProducerID(id string, timeoutMs int32, reqPid int64, reqEpoch int16) InitProducerIDResult {
	fail := func(err *kerr.Error) InitProducerIDResult {
		return InitProducerIDResult{ProducerID: -1, Epoch: -1, Err: err}
	}
	if err := c.checkReady(); err != nil {
		return fail(err)
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return fail(kerr.InvalidTransactionTimeout)
	}
	m := c.lock(id, true)
	defer m.mu.Unlock()
	now := c.now()
	if m.pid < 0 {
		pid, err := c.pids.Next()
		if err != nil {
			c.logger.Error("allocating a producer id", zap.String("transactional_id", id), zap.Error(err))
			c.dropIfNew(m)
			return fail(kerr.CoordinatorNotAvailable)
		}
		m.timeout = time.Duration(timeoutMs) * time.Millisecond
		if err := c.persist(m, pid, 0, txnEmpty, nil, time.Time{}, now); err != nil {
			c.logger.Error("init producer id", zap.Error(err))
			c.dropIfNew(m)
			return fail(kerr.CoordinatorNotAvailable)
		}
		m.pid, m.epoch, m.state, m.lastUpdate = pid, 0, txnEmpty, now
		return InitProducerIDResult{ProducerID: pid, Epoch: 0}
	}
	if reqPid >= 0 && !(reqPid == m.pid && (reqEpoch == m.epoch || reqEpoch == m.lastEpoch)) {
		return fail(kerr.ProducerFenced)
	}
	switch m.state {
	case txnPrepareCommit, txnPrepareAbort, txnPrepareEpochFence:
		if err := c.finish(m); err != nil {
			return fail(kerr.ConcurrentTransactions)
		}
	case txnOngoing:
		// Fence the old producer: abort its transaction at a bumped epoch
		// (Kafka's PrepareEpochFence), then bump again for the new one.
		if err := c.abortFenced(m, now); err != nil {
			c.logger.Error("aborting the ongoing transaction of a fenced producer", zap.String("transactional_id", id), zap.Error(err))
			return fail(kerr.ConcurrentTransactions)
		}
	}
	pid, epoch := m.pid, m.epoch+1
	if reqPid >= 0 && reqEpoch == m.lastEpoch && m.lastEpoch >= 0 {
		// The producer whose transaction timed out re-initializes: the
		// abort already bumped its epoch.
		epoch = m.epoch
	}
	if epoch >= math.MaxInt16-1 {
		var err error
		if pid, err = c.pids.Next(); err != nil {
			c.logger.Error("allocating a producer id", zap.String("transactional_id", id), zap.Error(err))
			return fail(kerr.CoordinatorNotAvailable)
		}
		epoch = 0
	}
	m.timeout = time.Duration(timeoutMs) * time.Millisecond
	if err := c.persist(m, pid, epoch, txnEmpty, nil, time.Time{}, now); err != nil {
		c.logger.Error("init producer id", zap.Error(err))
		return fail(kerr.CoordinatorNotAvailable)
	}
	m.pid, m.epoch, m.lastEpoch, m.state, m.lastUpdate = pid, epoch, -1, txnEmpty, now
	m.partitions = map[txnTP]struct{}{}
	m.start = time.Time{}
	return InitProducerIDResult{ProducerID: pid, Epoch: epoch}
}

// dropIfNew removes an entry created by a failed first InitProducerId.
func (c *Txns) dropIfNew(m *txnMeta) {
	if m.pid >= 0 {
		return
	}
	c.mu.Lock()
	if c.txns[m.id] == m {
		delete(c.txns, m.id)
	}
	c.mu.Unlock()
}

// check is the common validation of AddPartitionsToTxn, AddOffsetsToTxn
// and EndTxn against the transactional id's producer (Kafka's order).
func (c *Txns) check(m *txnMeta, pid int64, epoch int16) *kerr.Error {
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

// TxnPartition is a partition to add to a transaction, with its outcome.
type TxnPartition struct {
	Topic     string
	Partition int32
	Err       *kerr.Error
}

// AddPartitions serves AddPartitionsToTxn (and AddOffsetsToTxn, with the
// group's __consumer_offsets partition): the partitions join the
// transaction, which becomes Ongoing. Partitions that do not exist get
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as
// in Kafka; an error of the transaction applies to every partition.
func (c *Txns) AddPartitions(id string, pid int64, epoch int16, parts []TxnPartition) {
	setAll := func(err *kerr.Error) {
		for i := range parts {
			parts[i].Err = err
		}
	}
	if !c.loaded.Load() {
		setAll(kerr.CoordinatorLoadInProgress)
		return
	}
	bad := false
	for i, p := range parts {
		if t := c.logs.Topic(p.Topic); t == nil || p.Partition < 0 || int(p.Partition) >= len(t.Partitions()) {
			parts[i].Err, bad = kerr.UnknownTopicOrPartition, true
		}
	}
	if bad {
		for i := range parts {
			if parts[i].Err == nil {
				parts[i].Err = kerr.OperationNotAttempted
			}
		}
		return
	}
	m := c.lock(id, false)
	if m == nil {
		setAll(kerr.InvalidProducerIDMapping)
		return
	}
	defer m.mu.Unlock()
	if err := c.check(m, pid, epoch); err != nil {
		setAll(err)
		return
	}
	next := make(map[txnTP]struct{}, len(m.partitions)+len(parts))
	if m.state == txnOngoing {
		for tp := range m.partitions {
			next[tp] = struct{}{}
		}
	}
	added := false
	for _, p := range parts {
		tp := txnTP{p.Topic, p.Partition}
		if _, ok := next[tp]; !ok {
			next[tp] = struct{}{}
			added = true
		}
	}
	if m.state == txnOngoing && !added {
		return
	}
	now := c.now()
	start := m.start
	if m.state != txnOngoing {
		start = now
	}
	if err := c.persist(m, m.pid, m.epoch, txnOngoing, next, start, now); err != nil {
		c.logger.Error("add partitions to transaction", zap.Error(err))
		setAll(kerr.CoordinatorNotAvailable)
		return
	}
	m.state, m.partitions, m.start, m.lastUpdate = txnOngoing, next, start, now
}

// AddOffsets serves AddOffsetsToTxn: the group's __consumer_offsets
// partition joins the transaction.
func (c *Txns) AddOffsets(id string, pid int64, epoch int16, group string) *kerr.Error {
	if group == "" {
		return kerr.InvalidGroupID
	}
	if c.groups == nil {
		return kerr.CoordinatorNotAvailable
	}
	if err := c.groups.checkReady(); err != nil {
		return err // the group's partition must exist to get a marker
	}
	parts := []TxnPartition{{Topic: OffsetsTopic, Partition: c.groups.PartitionFor(group)}}
	c.AddPartitions(id, pid, epoch, parts)
	return parts[0].Err
}

// EndTxn serves EndTxn: commit or abort the ongoing transaction, writing
// the markers before answering. A retry of a completed end with the same
// result succeeds; ending with the other result, or ending nothing, is
// INVALID_TXN_STATE.
func (c *Txns) EndTxn(id string, pid int64, epoch int16, commit bool) *kerr.Error {
	if !c.loaded.Load() {
		return kerr.CoordinatorLoadInProgress
	}
	m := c.lock(id, false)
	if m == nil {
		return kerr.InvalidProducerIDMapping
	}
	defer m.mu.Unlock()
	if m.pid == pid && m.epoch == epoch && (m.state == txnPrepareCommit && commit || m.state == txnPrepareAbort && !commit) {
		// A previous attempt failed writing markers: finish it.
		if err := c.finish(m); err != nil {
			return kerr.ConcurrentTransactions
		}
		return nil
	}
	if err := c.check(m, pid, epoch); err != nil {
		return err
	}
	switch {
	case m.state == txnOngoing:
	case m.state == txnCompleteCommit && commit, m.state == txnCompleteAbort && !commit:
		return nil
	default:
		return kerr.InvalidTxnState
	}
	if err := c.end(m, m.epoch, commit, c.now()); err != nil {
		c.logger.Error("ending transaction", zap.String("transactional_id", id), zap.Bool("commit", commit), zap.Error(err))
		if errors.Is(err, errPrepare) {
			return kerr.CoordinatorNotAvailable
		}
		return kerr.ConcurrentTransactions
	}
	return nil
}

var errPrepare = errors.New("writing the prepare record failed")

// end moves an Ongoing transaction to PrepareCommit/PrepareAbort at epoch
// and completes it. Caller holds m.mu.
func (c *Txns) end(m *txnMeta, epoch int16, commit bool, now time.Time) error {
	state := txnPrepareAbort
	if commit {
		state = txnPrepareCommit
	}
	if err := c.persist(m, m.pid, epoch, state, m.partitions, m.start, now); err != nil {
		return errors.Join(errPrepare, err)
	}
	m.state, m.epoch, m.lastUpdate = state, epoch, now
	return c.finish(m)
}

// abortFenced aborts m's ongoing transaction at epoch+1, fencing its
// producer (InitProducerId by a new producer, or a timeout). Caller holds
// m.mu.
func (c *Txns) abortFenced(m *txnMeta, now time.Time) error {
	if m.epoch >= math.MaxInt16-1 {
		return c.end(m, m.epoch, false, now)
	}
	old := m.epoch
	if err := c.end(m, m.epoch+1, false, now); err != nil {
		return err
	}
	m.lastEpoch = old
	return nil
}

// finish writes the markers of a PrepareCommit/PrepareAbort transaction to
// each of its partitions (completing pending offsets on
// __consumer_offsets), then the Complete record. Partitions of deleted
// topics are skipped. Caller holds m.mu.
func (c *Txns) finish(m *txnMeta) error {
	commit := m.state == txnPrepareCommit
	for _, tp := range m.sortedPartitions() {
		t := c.logs.Topic(tp.topic)
		if t == nil || int(tp.partition) >= len(t.Partitions()) {
			continue
		}
		p, err := c.replicas.Partition(t.Partitions()[tp.partition])
		if err == nil {
			_, err = p.AppendControl(m.pid, m.epoch, commit, 0, appendTimeout)
		}
		if err != nil {
			return err
		}
		if tp.topic == OffsetsTopic && c.groups != nil {
			c.groups.CompleteTxnOffsets(m.pid, commit)
		}
	}
	state := txnCompleteAbort
	if commit {
		state = txnCompleteCommit
	}
	now := c.now()
	if err := c.persist(m, m.pid, m.epoch, state, nil, time.Time{}, now); err != nil {
		return err
	}
	m.state, m.partitions, m.start, m.lastUpdate = state, map[txnTP]struct{}{}, time.Time{}, now
	return nil
}

// completePending finishes transactions found in a Prepare state on start.
func (c *Txns) completePending() {
	for _, m := range c.snapshot() {
		m.mu.Lock()
		if m.state == txnPrepareCommit || m.state == txnPrepareAbort {
			if err := c.finish(m); err != nil {
				c.logger.Error("completing a transaction found prepared on start", zap.String("transactional_id", m.id), zap.Error(err))
			} else {
				c.logger.Info("completed a transaction found prepared on start", zap.String("transactional_id", m.id), zap.Stringer("state", m.state))
			}
		}
		m.mu.Unlock()
	}
}

func (c *Txns) snapshot() []*txnMeta {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*txnMeta, 0, len(c.txns))
	for _, m := range c.txns {
		out = append(out, m)
	}
	return out
}

// timeoutLoop aborts transactions open longer than their timeout, every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, and expires
// idle transactional ids after transactional.id.expiration.ms.
func (c *Txns) timeoutLoop() {
	t := time.NewTicker(c.cfg.AbortCheckInterval)
	defer t.Stop()
	lastExpire := c.now()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.abortTimedOut()
		if c.cfg.IDExpirationChecker > 0 && c.now().Sub(lastExpire) >= c.cfg.IDExpirationChecker {
			lastExpire = c.now()
			c.expireIDs()
		}
	}
}

// abortTimedOut is Kafka's abortTimedOutTransactions: the producer is
// fenced (epoch bump) and its transaction aborted.
func (c *Txns) abortTimedOut() {
	now := c.now()
	for _, m := range c.snapshot() {
		m.mu.Lock()
		if m.state == txnOngoing && now.Sub(m.start) > m.timeout {
			if err := c.abortFenced(m, now); err != nil {
				c.logger.Error("aborting a timed out transaction", zap.String("transactional_id", m.id), zap.Error(err))
			} else {
				c.logger.Info("aborted a timed out transaction", zap.String("transactional_id", m.id),
					zap.Int64("producer_id", m.pid), zap.Int16("epoch", m.epoch), zap.Duration("timeout", m.timeout))
			}
		} else if m.state == txnPrepareCommit || m.state == txnPrepareAbort {
			_ = c.finish(m) // retry markers that failed earlier
		}
		m.mu.Unlock()
	}
}

// expireIDs removes transactional ids idle (Empty or Complete) for longer
// than transactional.id.expiration.ms, with a tombstone.
func (c *Txns) expireIDs() {
	now := c.now()
	for _, m := range c.snapshot() {
		m.mu.Lock()
		idle := m.state == txnEmpty || m.state == txnCompleteCommit || m.state == txnCompleteAbort
		if idle && now.Sub(m.lastUpdate) > c.cfg.IDExpiration {
			k := kvTxnTombstone(m.id)
			p, err := c.replicas.Partition(c.state.current()[m.stateLog]) // exists: m was persisted
			if err == nil {
				_, err = p.AppendAsLeader(buildBatch([]kv{k}, now), replica.AcksAll, appendTimeout)
			}
			if err != nil {
				c.logger.Error("expiring a transactional id", zap.String("transactional_id", m.id), zap.Error(err))
			} else {
				m.state = txnDead
				c.mu.Lock()
				if c.txns[m.id] == m {
					delete(c.txns, m.id)
				}
				c.mu.Unlock()
			}
		}
		m.mu.Unlock()
	}
}
