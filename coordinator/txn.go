package coordinator

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// TxnStateTopic is Kafka's internal topic holding transaction metadata.
const TxnStateTopic = "__transaction_state"

// txnStateTopicConfigs are the topic configs Kafka creates
// __transaction_state with.
var txnStateTopicConfigs = map[string]string{
	"cleanup.policy":   "compact",
	"segment.bytes":    "104857600",
	"compression.type": "uncompressed",
}

// TxnConfig is the transaction coordinator's part of server.properties;
// zero fields take Kafka's defaults.
type TxnConfig struct {
	StateLogPartitions  int32         // transaction.state.log.num.partitions
	MaxTimeout          time.Duration // transaction.max.timeout.ms
	AbortCheckInterval  time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms
	IDExpiration        time.Duration // transactional.id.expiration.ms
	IDExpirationChecker time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms
}

// DefaultTxnConfig is Kafka's defaults.
func DefaultTxnConfig() TxnConfig {
	return TxnConfig{
		StateLogPartitions:  50,
		MaxTimeout:          15 * time.Minute,
		AbortCheckInterval:  10 * time.Second,
		IDExpiration:        7 * 24 * time.Hour,
		IDExpirationChecker: time.Hour,
	}
}

// txnState is Kafka's TransactionState; the values are the ones stored in
// TxnMetadataValue.State.
type txnState int8

const (
	txnEmpty txnState = iota
	txnOngoing
	txnPrepareCommit
	txnPrepareAbort
	txnCompleteCommit
	txnCompleteAbort
	txnDead
	txnPrepareEpochFence
)

func (s txnState) String() string { return kmsg.TransactionState(s).String() }

// txnTP is a partition of a transaction.
type txnTP struct {
	topic     string
	partition int32
}

// txnMeta is one transactional id's metadata (Kafka's TransactionMetadata).
// Guarded by mu; the coordinator's map by Txns.mu.
type txnMeta struct {
	mu         sync.Mutex
	id         string
	pid        int64
	epoch      int16
	lastEpoch  int16 // the epoch before a timeout abort bumped it, else -1
	timeout    time.Duration
	state      txnState
	partitions map[txnTP]struct{}
	start      time.Time // of the ongoing transaction
	lastUpdate time.Time
	stateLog   int32 // partition of __transaction_state
}

func (m *txnMeta) sortedPartitions() []txnTP {
	out := make([]txnTP, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out
}

// Txns is the transaction coordinator (KIP-98) for every transactional id:
// producer ids and epochs, the partitions of each ongoing transaction and
// its state, stored in __transaction_state (Kafka's TransactionLogKey and
// TransactionLogValue records, latest per key wins) and replayed on start.
// Ending a transaction writes PrepareCommit/PrepareAbort, the markers to
// every partition, then CompleteCommit/CompleteAbort, all before the
// EndTxn answer (Kafka answers after the Prepare record and writes the
// markers in the background; a single node can do it in the request).
type Txns struct {
	cfg    TxnConfig
	logs   *storage.Manager
	pids   *ProducerIDs
	groups *Groups
	logger *zap.Logger
	now    func() time.Time

	replicas *replica.Manager // every append goes through a partition's replica

	state internalTopic // __transaction_state

	loaded atomic.Bool

	mu   sync.Mutex
	txns map[string]*txnMeta

	life   sync.RWMutex
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// OpenTxns replays __transaction_state if it exists (else the first
// request that needs it creates it, with transaction.state.log.num.partitions
// partitions, as Kafka does on the first FindCoordinator), and in the
// background (once the group coordinator has loaded, since markers on
// __consumer_offsets complete its pending offsets) finishes transactions
// left in PrepareCommit/PrepareAbort and starts aborting timed out ones.
// Until then requests get COORDINATOR_LOAD_IN_PROGRESS.
func OpenTxns(logs *storage.Manager, replicas *replica.Manager, pids *ProducerIDs, groups *Groups, cfg TxnConfig, logger *zap.Logger) (*Txns, error) {
	def := DefaultTxnConfig()
	if cfg.StateLogPartitions <= 0 {
		cfg.StateLogPartitions = def.StateLogPartitions
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = def.MaxTimeout
	}
	if cfg.AbortCheckInterval <= 0 {
		cfg.AbortCheckInterval = def.AbortCheckInterval
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = def.IDExpiration
	}
	if cfg.IDExpirationChecker <= 0 {
		cfg.IDExpirationChecker = def.IDExpirationChecker
	}
	c := &Txns{
		cfg:    cfg,
		logs:   logs,
		pids:   pids,
		groups: groups,
		logger: logger.Named("txns"),
		now:    time.Now,
		txns:   make(map[string]*txnMeta),
		stop:   make(chan struct{}),
	}
	c.replicas = replicas
	c.state = internalTopic{name: TxnStateTopic, partitions: cfg.StateLogPartitions,
		configs: txnStateTopicConfigs, logs: logs, logger: c.logger}
	if t := logs.Topic(TxnStateTopic); t != nil {
		c.state.adopt(t)
		start := time.Now()
		if err := c.load(); err != nil {
			return nil, fmt.Errorf("load %s: %w", TxnStateTopic, err)
		}
		c.logger.Info("loaded transactions from "+TxnStateTopic, zap.Int("transactional_ids", len(c.txns)), zap.Duration("duration", time.Since(start)))
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		// A group coordinator without __consumer_offsets is loaded from
		// the start (nothing to load), so this only waits for a replay.
		t := time.NewTicker(10 * time.Millisecond)
		for groups != nil && !groups.Loaded() {
			select {
			case <-c.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		t.Stop()
		c.completePending()
		c.loaded.Store(true)
		c.timeoutLoop()
	}()
	return c, nil
}

// Close stops the background work; requests must have finished first.
func (c *Txns) Close() {
	c.life.Lock()
	if c.closed {
		c.life.Unlock()
		return
	}
	c.closed = true
	close(c.stop)
	c.life.Unlock()
	c.wg.Wait()
}

// Loaded reports whether the coordinator serves requests.
func (c *Txns) Loaded() bool { return c.loaded.Load() }

// Ensure makes sure __transaction_state exists, creating it on first need
// (FindCoordinator for a transactional id, InitProducerId with one): once,
// even under concurrent callers; after a failure the next call tries
// again. A topic created meanwhile by other means is adopted.
func (c *Txns) Ensure() error { return c.state.ensure() }

// checkReady is COORDINATOR_LOAD_IN_PROGRESS until the coordinator is
// loaded, then COORDINATOR_NOT_AVAILABLE if __transaction_state does not
// exist and cannot be created.
func (c *Txns) checkReady() *kerr.Error {
	if !c.loaded.Load() {
		return kerr.CoordinatorLoadInProgress
	}
	if err := c.Ensure(); err != nil {
		c.logger.Error("transaction coordinator not available", zap.Error(err))
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// load replays every partition of __transaction_state.
func (c *Txns) load() error {
	for _, p := range c.state.current() {
		err := p.Log.ForEachBatch(p.Log.LogStartOffset(), func(raw []byte) error {
			_, err := batchRecords(raw, func(key, value []byte) error {
				return c.replay(p.Index, key, value)
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("%s-%d: %w", TxnStateTopic, p.Index, err)
		}
	}
	return nil
}

func (c *Txns) replay(partition int32, key, value []byte) error {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("transaction log key: %w", err)
	}
	if value == nil {
		delete(c.txns, k.TransactionalID)
		return nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("transaction log value of %q: %w", k.TransactionalID, err)
	}
	m := &txnMeta{id: k.TransactionalID, pid: v.ProducerID, epoch: v.ProducerEpoch, lastEpoch: -1,
		timeout: time.Duration(v.TimeoutMillis) * time.Millisecond, state: txnState(v.State),
		partitions: make(map[txnTP]struct{}), lastUpdate: time.UnixMilli(v.LastUpdateTimestamp), stateLog: partition}
	if v.StartTimestamp >= 0 {
		m.start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[txnTP{t.Topic, p}] = struct{}{}
		}
	}
	c.txns[k.TransactionalID] = m
	return nil
}

// persist writes m's state (as it would be after the transition) to
// __transaction_state; the caller applies it to m after success.
func (c *Txns) persist(m *txnMeta, pid int64, epoch int16, state txnState, parts map[txnTP]struct{}, start, now time.Time) error {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = m.id
	v := kmsg.NewTxnMetadataValue()
	v.ProducerID, v.ProducerEpoch = pid, epoch
	v.TimeoutMillis = int32(m.timeout.Milliseconds())
	v.State = kmsg.TransactionState(state)
	v.LastUpdateTimestamp = now.UnixMilli()
	v.StartTimestamp = -1
	if !start.IsZero() {
		v.StartTimestamp = start.UnixMilli()
	}
	if state != txnEmpty && state != txnCompleteCommit && state != txnCompleteAbort {
		tmp := &txnMeta{partitions: parts}
		for _, tp := range tmp.sortedPartitions() {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.topic {
				vt := kmsg.NewTxnMetadataValueTopic()
				vt.Topic = tp.topic
				v.Topics = append(v.Topics, vt)
			}
			v.Topics[len(v.Topics)-1].Partitions = append(v.Topics[len(v.Topics)-1].Partitions, tp.partition)
		}
	}
	stateLog := c.state.current()
	if int(m.stateLog) >= len(stateLog) {
		return fmt.Errorf("transactional id %q: %s-%d does not exist", m.id, TxnStateTopic, m.stateLog)
	}
	p, err := c.replicas.Partition(stateLog[m.stateLog])
	if err == nil {
		_, err = p.AppendAsLeader(buildBatch([]kv{{key: k.AppendTo(nil), value: v.AppendTo(nil)}}, now), replica.AcksAll, appendTimeout)
	}
	if err != nil {
		return fmt.Errorf("transactional id %q: append to %s-%d: %w", m.id, TxnStateTopic, m.stateLog, err)
	}
	return nil
}
