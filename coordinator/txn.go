package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// TxnStateTopic is Kafka's internal topic holding transaction metadata.
const TxnStateTopic = "__transaction_state"

// txnStateTopicConfigs are the topic configs Kafka creates
// __transaction_state with (TransactionStateManager.transactionTopicConfigs):
// never an unclean leader, which would forget transactions it answered;
// minISR is transaction.state.log.min.isr, left to the broker's
// min.insync.replicas when 0 (a single node, whose topics have one replica).
func txnStateTopicConfigs(minISR int) map[string]string {
	configs := map[string]string{
		"cleanup.policy":                 "compact",
		"segment.bytes":                  "104857600",
		"compression.type":               "uncompressed",
		"unclean.leader.election.enable": "false",
	}
	if minISR > 0 {
		configs["min.insync.replicas"] = strconv.Itoa(minISR)
	}
	return configs
}

// TxnConfig is the transaction coordinator's part of server.properties;
// zero fields take Kafka's defaults.
type TxnConfig struct {
	StateLogPartitions  int32           // transaction.state.log.num.partitions
	StateLogMinISR      int             // transaction.state.log.min.isr; 0 = not set (a single node)
	MaxTimeout          time.Duration   // transaction.max.timeout.ms
	AbortCheckInterval  time.Duration   // transaction.abort.timed.out.transaction.cleanup.interval.ms
	IDExpiration        time.Duration   // transactional.id.expiration.ms
	IDExpirationChecker time.Duration   // transaction.remove.expired.transaction.cleanup.interval.ms
	Clock               clockwork.Clock // of timeouts, expiry and record timestamps; nil = the real clock
	// TransactionVersion is the finalized transaction.version feature
	// level: from 1 the records are TransactionLogValue v1, from 2 the
	// coordinator's own aborts run at 2. nil = 0.
	TransactionVersion func() int16
	// Markers writes the markers of ending transactions; nil =
	// LocalMarkers, a single node's.
	Markers MarkerWriter
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

// Txns is the transaction coordinator (KIP-98): the driver of one
// txnPartition state machine per partition of __transaction_state this
// node leads. It owns the locks, the clock, the ticker, the one funnel
// that appends to __transaction_state (appendState) and the MarkerWriter.
// A partition is loaded when this node is elected its leader (OnElected:
// replay, then the transactions found prepared are finished) and dropped
// when it resigns; requests for its ids get COORDINATOR_LOAD_IN_PROGRESS
// meanwhile and NOT_COORDINATOR after. Ending a transaction writes
// PrepareCommit/PrepareAbort, the markers to every partition, then
// CompleteCommit/CompleteAbort, all before the EndTxn answer (Kafka
// answers after the Prepare record and writes the markers in the
// background; a single node can do it in the request).
type Txns struct {
	cfg     TxnConfig
	logs    *storage.Manager
	pids    *ProducerIDs
	groups  *Groups
	markers MarkerWriter
	clock   clockwork.Clock
	logger  *zap.Logger

	replicas *replica.Manager // every append goes through a partition's replica

	state internalTopic // __transaction_state

	// groupsLoaded is whether the group coordinator has replayed: markers
	// on __consumer_offsets complete its pending offsets, so a partition's
	// prepared transactions are finished only after.
	groupsLoaded func() bool

	mu     sync.Mutex
	shards map[int32]*txnShard

	life   sync.RWMutex
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// txnShard is the driver's side of one partition's state machine: mu
// guards sm, and cond (on mu) is signalled when a transition ends.
type txnShard struct {
	mu   sync.Mutex
	cond *sync.Cond
	sm   *txnPartition
}

// OpenTxns opens the transaction coordinator. It leads no partition of
// __transaction_state until it is elected (OnElected, from the metadata
// image); when the topic does not exist the first request that needs it
// creates it, with transaction.state.log.num.partitions partitions, as
// Kafka does on the first FindCoordinator, through create. The ticker
// aborting timed out transactions and expiring idle ids starts.
func OpenTxns(logs *storage.Manager, replicas *replica.Manager, create CreateTopic, pids *ProducerIDs, groups *Groups, cfg TxnConfig, logger *zap.Logger) (*Txns, error) {
	c := newTxns(logs, replicas, create, pids, groups, cfg, logger)
	if t := logs.Topic(TxnStateTopic); t != nil {
		c.state.adopt(t)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.tickLoop()
	}()
	return c, nil
}

func newTxns(logs *storage.Manager, replicas *replica.Manager, create CreateTopic, pids *ProducerIDs, groups *Groups, cfg TxnConfig, logger *zap.Logger) *Txns {
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
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Markers == nil {
		cfg.Markers = LocalMarkers(logs, replicas, groups)
	}
	c := &Txns{
		cfg:          cfg,
		logs:         logs,
		pids:         pids,
		groups:       groups,
		markers:      cfg.Markers,
		clock:        cfg.Clock,
		replicas:     replicas,
		logger:       logger.Named("txns"),
		groupsLoaded: func() bool { return true },
		shards:       make(map[int32]*txnShard),
		stop:         make(chan struct{}),
	}
	if groups != nil {
		c.groupsLoaded = groups.Loaded
	}
	c.state = internalTopic{name: TxnStateTopic, partitions: cfg.StateLogPartitions,
		configs: txnStateTopicConfigs(cfg.StateLogMinISR), logs: logs, create: create, logger: c.logger}
	return c
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

// Loaded reports whether every partition this node leads serves
// requests (before __transaction_state exists: whether the group
// coordinator has loaded, as requests wait for it).
func (c *Txns) Loaded() bool {
	if c.state.current() == nil {
		return c.groupsLoaded()
	}
	for _, sh := range c.snapshot() {
		sh.mu.Lock()
		err := sh.sm.status()
		sh.mu.Unlock()
		if err != nil {
			return false
		}
	}
	return true
}

// snapshot is the shards, in partition order.
func (c *Txns) snapshot() []*txnShard {
	c.mu.Lock()
	shards := make([]*txnShard, 0, len(c.shards))
	for _, sh := range c.shards {
		shards = append(shards, sh)
	}
	c.mu.Unlock()
	sort.Slice(shards, func(i, j int) bool { return shards[i].sm.index < shards[j].sm.index })
	return shards
}

// Ensure makes sure __transaction_state exists, creating it on first need
// (FindCoordinator for a transactional id, InitProducerId with one): once,
// even under concurrent callers; after a failure the next call tries
// again. A topic created meanwhile by other means is adopted. The metadata
// image elects its partitions within the creation (OnElected), and the
// topic is adopted only after: until then no id is known (shardFor).
func (c *Txns) Ensure() error { return c.state.ensure() }

// OnElected makes this node the coordinator of the transactional ids of
// partition of __transaction_state at epoch (the coordinator epoch of its
// markers): the partition is replayed, answering
// COORDINATOR_LOAD_IN_PROGRESS until the transactions it left prepared
// are finished (after the group coordinator has loaded).
func (c *Txns) OnElected(partition, epoch int32) error {
	if _, err := c.state.partition(partition); err != nil {
		return fmt.Errorf("elected for %s-%d: %w", TxnStateTopic, partition, err)
	}
	sh := c.elect(partition, epoch)
	c.state.adoptExisting()
	return c.load(partition, sh)
}

// OnResigned drops partition of __transaction_state: its ids are
// NOT_COORDINATOR from now on, also for transitions in flight.
func (c *Txns) OnResigned(partition int32) {
	c.mu.Lock()
	sh := c.shards[partition]
	delete(c.shards, partition)
	c.mu.Unlock()
	if sh != nil {
		sh.mu.Lock()
		sh.sm.resign()
		sh.mu.Unlock()
		sh.cond.Broadcast()
	}
}

// elect publishes a loading state machine for partition, replacing (and
// resigning) an earlier one.
func (c *Txns) elect(partition, epoch int32) *txnShard {
	sh := &txnShard{sm: newTxnPartition(partition, epoch, c.cfg, c.pids)}
	sh.cond = sync.NewCond(&sh.mu)
	c.mu.Lock()
	old := c.shards[partition]
	c.shards[partition] = sh
	c.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		old.sm.resign()
		old.mu.Unlock()
		old.cond.Broadcast()
	}
	return sh
}

// load replays partition into sh's state machine, then finishes its
// prepared transactions: now if the group coordinator has loaded, else
// in the background once it has.
func (c *Txns) load(partition int32, sh *txnShard) error {
	p, err := c.state.partition(partition)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	err = p.Log.ForEachBatchToEnd(p.Log.LogStartOffset(), func(raw []byte) error {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		_, err := batchRecords(raw, sh.sm.replay)
		return err
	})
	if err != nil {
		return fmt.Errorf("load %s-%d: %w", TxnStateTopic, partition, err)
	}
	if c.groupsLoaded() {
		c.completeLoad(sh)
		return nil
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		// Real time, not the coordinator's clock: this waits for the
		// group coordinator's replay, not for a timeout.
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for !c.groupsLoaded() {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
		}
		c.completeLoad(sh)
	}()
	return nil
}

func (c *Txns) completeLoad(sh *txnShard) {
	sh.mu.Lock()
	effs := sh.sm.completePending()
	sh.mu.Unlock()
	for _, e := range effs {
		c.run(sh, e)
	}
	sh.mu.Lock()
	sh.sm.loadDone(c.clock.Now())
	sh.mu.Unlock()
	sh.cond.Broadcast()
}

// PartitionFor is the __transaction_state partition holding
// transactionalID's state (Kafka's TransactionStateManager.partitionFor).
func (c *Txns) PartitionFor(transactionalID string) int32 {
	return c.state.partitionOf(transactionalID)
}

// shardFor is the state machine of id's partition: nil without error
// while __transaction_state does not exist (no id is known), error
// NOT_COORDINATOR when this node does not lead the partition.
func (c *Txns) shardFor(id string) (*txnShard, *kerr.Error) {
	if c.state.current() == nil {
		if !c.groupsLoaded() {
			return nil, kerr.CoordinatorLoadInProgress
		}
		return nil, nil
	}
	idx := c.PartitionFor(id)
	c.mu.Lock()
	sh := c.shards[idx]
	c.mu.Unlock()
	if sh == nil {
		return nil, kerr.NotCoordinator
	}
	return sh, nil
}

// call runs op against id's state machine, waiting while a transition of
// id is in flight, and carries out its effects. noShard answers when
// __transaction_state does not exist yet.
func (c *Txns) call(id string, noShard *kerr.Error, op func(s *txnPartition, now time.Time) txnEffects) txnResult {
	sh, err := c.shardFor(id)
	switch {
	case err != nil:
		return txnResult{pid: -1, epoch: -1, err: err}
	case sh == nil:
		return txnResult{pid: -1, epoch: -1, err: noShard}
	}
	sh.mu.Lock()
	e := op(sh.sm, c.clock.Now())
	for e.wait {
		sh.cond.Wait()
		e = op(sh.sm, c.clock.Now())
	}
	sh.mu.Unlock()
	return c.run(sh, e)
}

// run carries out a transition's effects until its result is final.
func (c *Txns) run(sh *txnShard, e txnEffects) txnResult {
	for !e.done() {
		var err error
		if e.record != nil {
			err = c.appendState(*e.record)
		} else {
			err = errors.Join(c.markers.WriteMarkers(context.Background(), e.markers)...)
		}
		sh.mu.Lock()
		e = sh.sm.step(e.id, err, c.clock.Now())
		sh.mu.Unlock()
	}
	sh.cond.Broadcast()
	switch {
	case e.res.cause != nil:
		c.logger.Error("transaction coordinator", zap.String("transactional_id", e.id), zap.Error(e.res.cause))
	case e.res.event != "":
		c.logger.Info(e.res.event, zap.String("transactional_id", e.id),
			zap.Int64("producer_id", e.res.pid), zap.Int16("epoch", e.res.epoch))
	}
	return e.res
}

// appendState is the one place records are appended to
// __transaction_state.
func (c *Txns) appendState(r txnRecord) error {
	sp, err := c.state.partition(r.partition)
	var p *replica.Partition
	if err == nil {
		p, err = c.replicas.Partition(sp)
	}
	if err == nil {
		_, err = p.AppendAsLeader(buildBatch([]kv{r.kv()}, c.clock.Now()), replica.AcksAll, appendTimeout)
	}
	if err != nil {
		return fmt.Errorf("transactional id %q: append to %s-%d: %w", r.id, TxnStateTopic, r.partition, err)
	}
	return nil
}

// tickLoop ticks every partition every
// transaction.abort.timed.out.transaction.cleanup.interval.ms.
func (c *Txns) tickLoop() {
	t := c.clock.NewTicker(c.cfg.AbortCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.Chan():
		}
		c.tick()
	}
}

// tick gives every partition the time, carrying out what it decides.
func (c *Txns) tick() {
	for _, sh := range c.snapshot() {
		sh.mu.Lock()
		effs := sh.sm.tick(c.clock.Now())
		sh.mu.Unlock()
		for _, e := range effs {
			c.run(sh, e)
		}
	}
}
