package coordinator

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// ShareStateTopic is Kafka's internal topic holding the share coordinator's
// state of every share-partition (KIP-932).
const ShareStateTopic = "__share_group_state"

// ShareConfig is the share coordinator's part of server.properties
// (Kafka's ShareCoordinatorConfig); zero fields take Kafka's defaults.
type ShareConfig struct {
	StatePartitions       int32           // share.coordinator.state.topic.num.partitions
	StateSegmentBytes     int32           // share.coordinator.state.topic.segment.bytes
	StateMinISR           int             // share.coordinator.state.topic.min.isr
	SnapshotUpdateRecords int             // share.coordinator.snapshot.update.records.per.snapshot; 0 = 500, SnapshotEveryWrite = Kafka's 0
	WriteTimeout          time.Duration   // share.coordinator.write.timeout.ms
	PruneInterval         time.Duration   // share.coordinator.state.topic.prune.interval.ms
	ColdSnapshotInterval  time.Duration   // share.coordinator.cold.partition.snapshot.interval.ms
	Clock                 clockwork.Clock // of the records' timestamps; nil = the real clock
}

// SnapshotEveryWrite is ShareConfig.SnapshotUpdateRecords for Kafka's
// share.coordinator.snapshot.update.records.per.snapshot=0: every write is
// a ShareSnapshot, never a ShareUpdate.
const SnapshotEveryWrite = -1

// DefaultShareConfig is Kafka 4.4's defaults.
func DefaultShareConfig() ShareConfig {
	return ShareConfig{
		StatePartitions:       50,
		StateSegmentBytes:     100 << 20,
		StateMinISR:           2,
		SnapshotUpdateRecords: defaultSnapshotUpdateRecords,
		WriteTimeout:          5 * time.Second,
		PruneInterval:         5 * time.Minute,
		ColdSnapshotInterval:  5 * time.Minute,
	}
}

// shareStateTopicConfigs are the topic configs Kafka creates
// __share_group_state with (ShareCoordinatorService.shareGroupStateTopicConfigs):
// not compacted but kept forever, the share coordinator deleting the
// records no share-partition needs any more.
func shareStateTopicConfigs(cfg ShareConfig) map[string]string {
	return map[string]string{
		"cleanup.policy":      "delete",
		"compression.type":    "producer",
		"segment.bytes":       strconv.Itoa(int(cfg.StateSegmentBytes)),
		"min.insync.replicas": strconv.Itoa(cfg.StateMinISR),
		"retention.ms":        "-1",
	}
}

// ShareCoordinator is the share coordinator (Kafka's ShareCoordinatorService
// under its CoordinatorRuntime): the driver of one shareStateShard per
// partition of __share_group_state this node leads. A share-partition's
// state lives in the partition its key, group:topicId:partition, hashes
// to. OnElected replays a partition (COORDINATOR_LOAD_IN_PROGRESS until
// done), OnResigned drops it (NOT_COORDINATOR after). A request runs under
// its shard's lock: the shard answers with the records to append, which
// are appended through the partition's replica (acks=all) and replayed
// into the shard before the answer, so what was answered is durable and
// the shard is what a replay of the log gives.
type ShareCoordinator struct {
	cfg      ShareConfig
	logs     *storage.Manager
	replicas *replica.Manager
	clock    clockwork.Clock
	logger   *zap.Logger

	state internalTopic // __share_group_state

	mu    sync.RWMutex
	slots map[int32]*shareSlot

	stop   chan struct{}
	pruned map[int32]int64 // the offset each partition was last pruned to, by runTimers
	wg     sync.WaitGroup  // background loads and runTimers
}

// shareSlot is one partition's shard and whether it is loaded yet.
type shareSlot struct {
	partition int32

	mu       sync.Mutex
	loading  bool
	resigned bool
	sm       *shareStateShard
}

// OpenShareCoordinator opens the share coordinator. It leads no partition
// of __share_group_state until it is elected (OnElected, from the metadata
// image); the topic is created by the first FindCoordinator for a share
// key (Ensure), with share.coordinator.state.topic.num.partitions
// partitions, as Kafka does.
func OpenShareCoordinator(logs *storage.Manager, replicas *replica.Manager, create CreateTopic, cfg ShareConfig, logger *zap.Logger) *ShareCoordinator {
	def := DefaultShareConfig()
	if cfg.StatePartitions <= 0 {
		cfg.StatePartitions = def.StatePartitions
	}
	if cfg.StateSegmentBytes <= 0 {
		cfg.StateSegmentBytes = def.StateSegmentBytes
	}
	if cfg.StateMinISR <= 0 {
		cfg.StateMinISR = def.StateMinISR
	}
	if cfg.SnapshotUpdateRecords == 0 {
		cfg.SnapshotUpdateRecords = def.SnapshotUpdateRecords
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = def.WriteTimeout
	}
	if cfg.PruneInterval <= 0 {
		cfg.PruneInterval = def.PruneInterval
	}
	if cfg.ColdSnapshotInterval <= 0 {
		cfg.ColdSnapshotInterval = def.ColdSnapshotInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	c := &ShareCoordinator{cfg: cfg, logs: logs, replicas: replicas, clock: cfg.Clock,
		logger: logger.Named("share"), slots: make(map[int32]*shareSlot), stop: make(chan struct{}), pruned: map[int32]int64{}}
	c.state = internalTopic{name: ShareStateTopic, partitions: cfg.StatePartitions,
		configs: shareStateTopicConfigs(cfg), logs: logs, create: create, logger: c.logger}
	if t := logs.Topic(ShareStateTopic); t != nil {
		c.state.adopt(t)
	}
	c.wg.Add(1)
	go c.runTimers()
	return c
}

// Close stops the timers and waits for the loads in progress; requests
// must have finished first.
func (c *ShareCoordinator) Close() {
	close(c.stop)
	c.wg.Wait()
}

// Ensure makes sure __share_group_state exists, creating it on first need
// (FindCoordinator for a share key): once, even under concurrent callers;
// after a failure the next call tries again. The metadata image elects its
// partitions within the creation.
func (c *ShareCoordinator) Ensure() error { return c.state.ensure() }

// ShareKey is Kafka's SharePartitionKey.asCoordinatorKey: the key of a
// share-partition's state, group:topicId:partition with the topic id as
// Kafka prints a Uuid.
func ShareKey(group string, topicID [16]byte, partition int32) string {
	return group + ":" + base64.RawURLEncoding.EncodeToString(topicID[:]) + ":" + strconv.Itoa(int(partition))
}

// PartitionFor is the __share_group_state partition holding the state of
// the share-partition of key (ShareKey), as Kafka's
// ShareCoordinatorService.partitionFor: Utils.abs of the key's Java hash
// code modulo the topic's partition count.
func (c *ShareCoordinator) PartitionFor(key string) int32 { return c.state.partitionOf(key) }

// topicPartitions is the metadata the shards check a share-partition
// against: the topic's partition count, 0 when no topic has the id.
func (c *ShareCoordinator) topicPartitions(id [16]byte) int32 {
	if t := c.logs.TopicByID(id); t != nil {
		return t.PartitionCount()
	}
	return 0
}

func (c *ShareCoordinator) newShard() *shareStateShard {
	return newShareStateShard(c.cfg.SnapshotUpdateRecords, c.topicPartitions)
}

// OnElected makes this node the share coordinator of the share-partitions
// whose state is in partition of __share_group_state: it is replayed, in
// the background unless it is empty (one just created is loaded before it
// is published, so no request sees it half elected), and its keys answer
// COORDINATOR_LOAD_IN_PROGRESS until that is done.
func (c *ShareCoordinator) OnElected(partition, _ int32) {
	sl := &shareSlot{partition: partition, loading: true, sm: c.newShard()}
	p, err := c.state.partition(partition)
	if err == nil && p.Log.LogStartOffset() == p.Log.LogEndOffset() {
		c.load(sl)
		c.publish(sl)
		c.state.adoptExisting()
		return
	}
	c.publish(sl)
	c.state.adoptExisting()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.load(sl)
	}()
}

// OnResigned drops partition of __share_group_state: its keys are
// NOT_COORDINATOR from now on.
func (c *ShareCoordinator) OnResigned(partition int32) {
	c.mu.Lock()
	sl := c.slots[partition]
	delete(c.slots, partition)
	c.mu.Unlock()
	if sl != nil {
		sl.mu.Lock()
		sl.resigned = true
		sl.mu.Unlock()
	}
}

// publish makes sl the partition's shard, resigning any earlier one.
func (c *ShareCoordinator) publish(sl *shareSlot) {
	c.mu.Lock()
	old := c.slots[sl.partition]
	c.slots[sl.partition] = sl
	c.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		old.resigned = true
		old.mu.Unlock()
	}
}

// load replays the partition into sl's shard; a partition that cannot be
// read stays loading (its keys COORDINATOR_LOAD_IN_PROGRESS).
func (c *ShareCoordinator) load(sl *shareSlot) {
	err := c.replay(sl)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if err != nil {
		c.logger.Error("loading "+ShareStateTopic+" partition failed; its share-partitions keep getting COORDINATOR_LOAD_IN_PROGRESS",
			zap.Int32("partition", sl.partition), zap.Error(err))
		return
	}
	sl.loading = false
}

func (c *ShareCoordinator) replay(sl *shareSlot) error {
	p, err := c.state.partition(sl.partition)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	err = p.Log.ForEachBatchToEnd(p.Log.LogStartOffset(), func(raw []byte) error {
		sl.mu.Lock()
		defer sl.mu.Unlock()
		if sl.resigned {
			return errResignedWhileLoading
		}
		_, err := forEachRecord(raw, func(b *batchInfo, key, value []byte) error {
			if b.control {
				return nil
			}
			return sl.sm.replay(b.offset, key, value)
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("load %s-%d: %w", ShareStateTopic, sl.partition, err)
	}
	return nil
}

var errResignedWhileLoading = errors.New("resigned while loading")

// Loaded reports whether every partition this node leads has been replayed.
func (c *ShareCoordinator) Loaded() bool {
	for _, sl := range c.sortedSlots() {
		sl.mu.Lock()
		loading := sl.loading
		sl.mu.Unlock()
		if loading {
			return false
		}
	}
	return true
}

func (c *ShareCoordinator) sortedSlots() []*shareSlot {
	c.mu.RLock()
	out := make([]*shareSlot, 0, len(c.slots))
	for _, sl := range c.slots {
		out = append(out, sl)
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].partition < out[j].partition })
	return out
}

// run is one share-partition's operation on the shard of its key: op
// decides on the shard's state and returns the records to append (or the
// share-partition's error); they are appended and replayed before run
// returns. NOT_COORDINATOR when this node does not lead the key's
// partition (also before the topic exists), COORDINATOR_LOAD_IN_PROGRESS
// while it loads; a failed append is mapped as Kafka's
// CoordinatorOperationExceptionHelper maps it.
func (c *ShareCoordinator) run(k sharePartKey, op func(sm *shareStateShard, now time.Time) ([]kv, *shareError)) *shareError {
	partition := c.PartitionFor(ShareKey(k.group, k.topicID, k.partition))
	c.mu.RLock()
	sl := c.slots[partition]
	c.mu.RUnlock()
	if sl == nil {
		return shareErr(kerr.NotCoordinator, "")
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	switch {
	case sl.resigned:
		return shareErr(kerr.NotCoordinator, "")
	case sl.loading:
		return shareErr(kerr.CoordinatorLoadInProgress, "")
	}
	now := c.clock.Now()
	recs, serr := op(sl.sm, now)
	if serr != nil || len(recs) == 0 {
		return serr
	}
	if err := c.appendState(sl, recs, now); err != nil {
		c.logger.Warn("share coordinator write failed", zap.Int32("partition", partition), zap.Error(err))
		return appendError(err)
	}
	return nil
}

// appendState is the one place records reach __share_group_state, sl.mu
// held: they are durable once it returns without error, and replayed into
// the shard whenever the local log took them, also when the in-sync
// replicas did not in time, so the shard stays what a replay of the log
// gives.
func (c *ShareCoordinator) appendState(sl *shareSlot, recs []kv, now time.Time) error {
	sp, err := c.state.partition(sl.partition)
	var p *replica.Partition
	if err == nil {
		p, err = c.replicas.Partition(sp)
	}
	if err != nil {
		return fmt.Errorf("append to %s-%d: %w", ShareStateTopic, sl.partition, err)
	}
	before := sp.Log.LogEndOffset()
	_, err = p.AppendAsLeader(buildBatch(recs, now), replica.AcksAll, c.cfg.WriteTimeout)
	if sp.Log.LogEndOffset() > before {
		for i, r := range recs {
			if rerr := sl.sm.replay(before+int64(i), r.key, r.value); rerr != nil {
				err = errors.Join(err, fmt.Errorf("replay: %w", rerr))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("append to %s-%d: %w", ShareStateTopic, sl.partition, err)
	}
	return nil
}

// appendError is Kafka's CoordinatorOperationExceptionHelper: the error a
// failed write answers.
func appendError(err error) *shareError {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return shareErr(kerr.UnknownServerError, err.Error())
	}
	switch ke {
	case kerr.NetworkException:
		return shareErr(kerr.CoordinatorLoadInProgress, err.Error())
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.RequestTimedOut:
		return shareErr(kerr.CoordinatorNotAvailable, err.Error())
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return shareErr(kerr.NotCoordinator, err.Error())
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return shareErr(kerr.UnknownServerError, err.Error())
	}
	return shareErr(ke, err.Error())
}
