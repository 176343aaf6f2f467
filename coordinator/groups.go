package coordinator

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
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

// OffsetsTopic is Kafka's internal topic holding committed offsets and
// group metadata.
const OffsetsTopic = "__consumer_offsets"

// offsetsTopicConfigs are the topic configs Kafka creates __consumer_offsets
// with: compacted by the log cleaner (latest record per key, tombstones
// dropped after delete.retention.ms), segments of offsets.topic.segment.bytes.
func offsetsTopicConfigs(segmentBytes int32) map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"segment.bytes":    strconv.Itoa(int(segmentBytes)),
		"compression.type": "producer",
	}
}

// maxOffsetMetadata is Kafka's offset.metadata.max.bytes default.
const maxOffsetMetadata = 4096

// GroupConfig is the group coordinator's part of server.properties.
type GroupConfig struct {
	OffsetsTopicPartitions int32         // offsets.topic.num.partitions
	OffsetsSegmentBytes    int32         // offsets.topic.segment.bytes
	OffsetsRetention       time.Duration // offsets.retention.minutes
	RetentionCheckInterval time.Duration // offsets.retention.check.interval.ms
	MinSessionTimeout      time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout      time.Duration // group.max.session.timeout.ms
	InitialRebalanceDelay  time.Duration // group.initial.rebalance.delay.ms
	MaxSize                int           // group.max.size; 0 = no limit

	// KIP-848 consumer groups.
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	ConsumerMaxSize           int           // group.consumer.max.size; 0 = no limit
	ConsumerMigrationPolicy   string        // group.consumer.migration.policy (Migration*); "" is bidirectional
	// GroupOverrides, when set, is a group's own consumer.session.timeout.ms
	// and consumer.heartbeat.interval.ms (its GROUP config resource), zero
	// where the group sets none.
	GroupOverrides func(group string) (session, heartbeat time.Duration)

	// ConsumerRegexRefreshInterval is group.consumer.regex.refresh.interval.ms:
	// a group's regexes are resolved again at least this often (0: Kafka's
	// default, 10 minutes).
	ConsumerRegexRefreshInterval time.Duration
	// PartitionRacks, when set, is the racks of a partition's replicas
	// (those whose broker has a broker.rack), which a consumer group's
	// MetadataHash covers as Kafka's does; unset, no partition has one.
	PartitionRacks func(topic [16]byte, partition int32) []string
	// KIP-1071 streams groups: StreamsSettings, when set, is a group's
	// settings (its streams.* configs, else the broker's group.streams.*).
	StreamsSettings func(group string) StreamsSettings
	StreamsMaxSize  int // group.streams.max.size; 0 = no limit
	// KIP-932 share groups: ShareSettings, when set, is a group's settings
	// (its share.* configs, else the broker's group.share.*; unset,
	// Kafka's defaults). ShareInitialize sends InitializeShareGroupState to
	// the share coordinators of its partitions and ShareDelete
	// DeleteShareGroupState (DeleteGroups of a share group); unset, share
	// state is not initialized (no partition is assigned) or deleted.
	ShareSettings   func(group string) ShareSettings
	ShareInitialize func(*kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse
	ShareDelete     func(*kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse

	Clock clockwork.Clock // nil: the real clock
}

// DefaultGroupConfig is Kafka's defaults.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{
		OffsetsTopicPartitions: 50,
		OffsetsSegmentBytes:    100 << 20,
		OffsetsRetention:       7 * 24 * time.Hour,
		RetentionCheckInterval: 10 * time.Minute,
		MinSessionTimeout:      6 * time.Second,
		MaxSessionTimeout:      30 * time.Minute,
		InitialRebalanceDelay:  3 * time.Second,
		MaxSize:                math.MaxInt32,

		ConsumerSessionTimeout:    45 * time.Second,
		ConsumerHeartbeatInterval: 5 * time.Second,
		ConsumerMaxSize:           math.MaxInt32,
		ConsumerMigrationPolicy:   MigrationBidirectional,
	}
}

// Groups is the group coordinator's driver: it owns one state machine
// (groupShard) per partition of __consumer_offsets this node leads, the
// locks, the clock and the log. A request runs on its group's shard under
// that shard's lock; the records the shard asks for are appended (through
// appendRecords, the one place that writes) before any answer that depends
// on them is sent; waiting JoinGroup and SyncGroup requests are answered
// through channels the driver keeps by waiter id; the shard's earliest
// timer is armed on the clock, which then ticks the shard.
type Groups struct {
	cfg    GroupConfig
	logger *zap.Logger
	clock  clockwork.Clock
	topics topicMetadata

	replicas *replica.Manager // every append goes through a partition's replica

	offsets internalTopic // __consumer_offsets

	mu    sync.RWMutex
	slots map[int32]*groupSlot // by partition; absent: not the coordinator

	waitMu      sync.Mutex
	nextWaiter  uint64
	joinWaiters map[uint64]chan joinResult
	syncWaiters map[uint64]chan syncResult

	life   sync.RWMutex
	closed bool           // under life
	wg     sync.WaitGroup // background loads and timer callbacks
	stop   chan struct{}
}

// groupSlot is one partition's shard and whether it is loaded yet.
type groupSlot struct {
	partition int32
	epoch     int32 // the leader epoch it was elected at

	mu       sync.Mutex
	loading  bool
	resigned bool
	shard    *groupShard
	timer    clockwork.Timer
	armedAt  time.Time
}

// OpenGroups opens the group coordinator. It leads no partition of
// __consumer_offsets until it is elected (OnElected, from the metadata
// image); when the topic does not exist it is created (with
// offsets.topic.num.partitions partitions) by the first request that needs
// it, as Kafka creates it on the first FindCoordinator; create makes it.
func OpenGroups(logs *storage.Manager, replicas *replica.Manager, create CreateTopic, cfg GroupConfig, logger *zap.Logger) (*Groups, error) {
	def := DefaultGroupConfig()
	if cfg.OffsetsTopicPartitions <= 0 {
		cfg.OffsetsTopicPartitions = def.OffsetsTopicPartitions
	}
	if cfg.OffsetsSegmentBytes <= 0 {
		cfg.OffsetsSegmentBytes = def.OffsetsSegmentBytes
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = def.RetentionCheckInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	c := &Groups{
		cfg:         cfg,
		logger:      logger.Named("groups"),
		clock:       cfg.Clock,
		replicas:    replicas,
		topics:      storageTopics{logs},
		slots:       make(map[int32]*groupSlot),
		joinWaiters: make(map[uint64]chan joinResult),
		syncWaiters: make(map[uint64]chan syncResult),
		stop:        make(chan struct{}),
	}
	c.offsets = internalTopic{name: OffsetsTopic, partitions: cfg.OffsetsTopicPartitions,
		configs: offsetsTopicConfigs(cfg.OffsetsSegmentBytes), logs: logs, create: create, logger: c.logger}
	if t := logs.Topic(OffsetsTopic); t != nil {
		c.offsets.adopt(t)
	}
	return c, nil
}

// newSlot is a loading shard for the partition.
func (c *Groups) newSlot(partition, epoch int32) *groupSlot {
	return &groupSlot{partition: partition, epoch: epoch, loading: true,
		shard: newGroupShard(partition, c.cfg, c.topics, c.logger)}
}

// publish makes sl the partition's shard, resigning any earlier one.
func (c *Groups) publish(sl *groupSlot) {
	c.mu.Lock()
	old := c.slots[sl.partition]
	c.slots[sl.partition] = sl
	c.mu.Unlock()
	if old != nil {
		c.resign(old)
	}
}

// OnElected makes this node the coordinator of the partition's groups at
// the leader epoch: the partition is replayed in the background, its
// groups answered COORDINATOR_LOAD_IN_PROGRESS until that is done. A
// partition with nothing to replay (one just created) is loaded before it
// is published, so no request sees it half elected.
func (c *Groups) OnElected(partition, epoch int32) {
	sl := c.newSlot(partition, epoch)
	if p, err := c.offsets.partition(partition); err == nil && p.Log.LogStartOffset() == p.Log.LogEndOffset() {
		if _, err := c.load(sl); err != nil {
			c.logger.Error("loading "+OffsetsTopic+" partition failed; its groups keep getting COORDINATOR_LOAD_IN_PROGRESS",
				zap.Int32("partition", partition), zap.Error(err))
		}
		c.publish(sl)
		return
	}
	c.publish(sl)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if _, err := c.load(sl); err != nil {
			c.logger.Error("loading "+OffsetsTopic+" partition failed; its groups keep getting COORDINATOR_LOAD_IN_PROGRESS",
				zap.Int32("partition", partition), zap.Error(err))
		}
	}()
}

// OnResigned drops the partition's groups: this node no longer leads it,
// waiting requests and later ones get NOT_COORDINATOR.
func (c *Groups) OnResigned(partition int32) {
	c.mu.Lock()
	sl := c.slots[partition]
	delete(c.slots, partition)
	c.mu.Unlock()
	if sl != nil {
		c.resign(sl)
	}
}

func (c *Groups) resign(sl *groupSlot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.resigned = true
	if sl.loading {
		return // the load sees resigned and stops there
	}
	sl.shard.begin(c.clock.Now())
	sl.shard.resign()
	c.execute(sl)
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
}

// Ensure makes sure __consumer_offsets exists, creating it on first need
// (FindCoordinator for a group, or any group request): once, even under
// concurrent callers; after a failure the next call tries again. A topic
// created meanwhile by other means (Metadata auto-creation, CreateTopics)
// is adopted. The metadata image elects its partitions within the
// creation (OnElected, empty partitions loaded before they are published),
// and the topic is adopted only after: until then no group exists (run),
// as for a topic that does not exist yet.
func (c *Groups) Ensure() error { return c.offsets.ensure() }

// ensure is Ensure for request paths: COORDINATOR_NOT_AVAILABLE when the
// topic cannot be created, as Kafka answers while it creates it.
func (c *Groups) ensure() *kerr.Error {
	if err := c.Ensure(); err != nil {
		c.logger.Error("group coordinator not available", zap.Error(err))
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// Close stops timers and background work and waits for running callbacks;
// nothing is written to the log after it returns. Requests must have
// finished first.
func (c *Groups) Close() {
	c.life.Lock()
	if c.closed {
		c.life.Unlock()
		return
	}
	c.closed = true
	close(c.stop)
	c.life.Unlock()
	c.mu.RLock()
	for _, sl := range c.slots {
		sl.mu.Lock()
		if sl.timer != nil {
			sl.timer.Stop()
		}
		sl.mu.Unlock()
	}
	c.mu.RUnlock()
	c.wg.Wait()
}

// Loaded reports whether every partition of __consumer_offsets this node
// leads has been replayed.
func (c *Groups) Loaded() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, sl := range c.slots {
		sl.mu.Lock()
		loading := sl.loading
		sl.mu.Unlock()
		if loading {
			return false
		}
	}
	return true
}

// afterFunc runs fn after d unless the coordinator closes first.
func (c *Groups) afterFunc(d time.Duration, fn func()) clockwork.Timer {
	return c.clock.AfterFunc(d, func() {
		c.life.RLock()
		if c.closed {
			c.life.RUnlock()
			return
		}
		c.wg.Add(1)
		c.life.RUnlock()
		defer c.wg.Done()
		fn()
	})
}

// PartitionFor is the __consumer_offsets partition holding groupID's
// records (Kafka's GroupMetadataManager.partitionFor).
func (c *Groups) PartitionFor(groupID string) int32 { return c.offsets.partitionOf(groupID) }

// run handles one request for groupID on its partition's shard and carries
// out the effects; it answers NOT_COORDINATOR when this node does not lead
// that partition and COORDINATOR_LOAD_IN_PROGRESS while it loads. Before
// __consumer_offsets exists and is elected no group does: fn runs on an
// empty shard.
func (c *Groups) run(groupID string, fn func(s *groupShard)) *kerr.Error {
	partition := c.PartitionFor(groupID)
	c.mu.RLock()
	sl := c.slots[partition]
	c.mu.RUnlock()
	if sl == nil {
		if c.offsets.current() != nil {
			return kerr.NotCoordinator
		}
		s := newGroupShard(partition, c.cfg, c.topics, c.logger)
		s.begin(c.clock.Now())
		fn(s)
		return nil
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if err := sl.unavailable(); err != nil {
		return err
	}
	sl.shard.begin(c.clock.Now())
	fn(sl.shard)
	c.execute(sl)
	return nil
}

// unavailable is how a request for the slot's groups is answered while
// they cannot be served, nil when they can; sl.mu held.
func (sl *groupSlot) unavailable() *kerr.Error {
	switch {
	case sl.resigned:
		return kerr.NotCoordinator
	case sl.loading:
		return kerr.CoordinatorLoadInProgress
	}
	return nil
}

// execute carries out the shard's effects, sl.mu held: the writes are
// appended (settle), then the answers delivered and the clock armed for
// the next timer.
func (c *Groups) execute(sl *groupSlot) {
	e := sl.shard.settle(func(b recordBatch) error { return c.appendRecords(sl.partition, b) })
	c.deliver(e.joins, e.syncs)
	if !sl.resigned {
		c.arm(sl)
	}
}

// appendRecords is the one place group records reach __consumer_offsets;
// they are durable (visible to replay) once it returns without error.
func (c *Groups) appendRecords(partition int32, b recordBatch) error {
	if len(b.recs) == 0 {
		return nil
	}
	sp, err := c.offsets.partition(partition)
	var p *replica.Partition
	if err == nil {
		p, err = c.replicas.Partition(sp)
	}
	if err == nil {
		now := c.clock.Now()
		if b.transactional {
			_, err = p.AppendCoordinator(buildTxnBatch(b.recs, b.producerID, b.producerEpoch, now), appendTimeout)
		} else {
			_, err = p.AppendAsLeader(buildBatch(b.recs, now), replica.AcksAll, appendTimeout)
		}
	}
	if err != nil {
		return fmt.Errorf("append to %s-%d: %w", OffsetsTopic, partition, err)
	}
	return nil
}

// arm sets the slot's clock timer to the shard's earliest deadline.
func (c *Groups) arm(sl *groupSlot) {
	at, ok := sl.shard.nextDeadline()
	if ok && sl.timer != nil && at.Equal(sl.armedAt) {
		return
	}
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
	if !ok {
		return
	}
	sl.armedAt = at
	sl.timer = c.afterFunc(max(at.Sub(c.clock.Now()), 0), func() { c.tick(sl) })
}

// tick fires the slot's due timers.
func (c *Groups) tick(sl *groupSlot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.resigned || sl.loading {
		return
	}
	sl.timer = nil
	sl.shard.begin(c.clock.Now())
	sl.shard.tick()
	c.execute(sl)
}

// newWaiter registers a JoinGroup (join) or SyncGroup waiting for its answer.
func (c *Groups) newJoinWaiter() (uint64, chan joinResult) {
	ch := make(chan joinResult, 1)
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	c.nextWaiter++
	c.joinWaiters[c.nextWaiter] = ch
	return c.nextWaiter, ch
}

func (c *Groups) newSyncWaiter() (uint64, chan syncResult) {
	ch := make(chan syncResult, 1)
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	c.nextWaiter++
	c.syncWaiters[c.nextWaiter] = ch
	return c.nextWaiter, ch
}

// dropWaiter forgets a waiter that stopped waiting (shutdown).
func (c *Groups) dropWaiter(id uint64) {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	delete(c.joinWaiters, id)
	delete(c.syncWaiters, id)
}

func (c *Groups) deliver(joins []joinAnswer, syncs []syncAnswer) {
	if len(joins) == 0 && len(syncs) == 0 {
		return
	}
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	for _, a := range joins {
		if ch := c.joinWaiters[a.waiter]; ch != nil {
			ch <- a.r
			delete(c.joinWaiters, a.waiter)
		}
	}
	for _, a := range syncs {
		if ch := c.syncWaiters[a.waiter]; ch != nil {
			ch <- a.r
			delete(c.syncWaiters, a.waiter)
		}
	}
}

// checkGroupID is the common check of group requests that may create a
// group: INVALID_GROUP_ID for an empty id, COORDINATOR_NOT_AVAILABLE if
// __consumer_offsets does not exist and cannot be created. The partition's
// own state (loading, not led here) is run's to answer.
func (c *Groups) checkGroupID(id string) *kerr.Error {
	if id == "" {
		return kerr.InvalidGroupID
	}
	return c.ensure()
}

// checkReady is COORDINATOR_LOAD_IN_PROGRESS until every partition is
// replayed, then creates __consumer_offsets if needed (ensure).
func (c *Groups) checkReady() *kerr.Error {
	if !c.Loaded() {
		return kerr.CoordinatorLoadInProgress
	}
	return c.ensure()
}

// sortedSlots is the slots by partition.
func (c *Groups) sortedSlots() []*groupSlot {
	c.mu.RLock()
	out := make([]*groupSlot, 0, len(c.slots))
	for _, sl := range c.slots {
		out = append(out, sl)
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].partition < out[j].partition })
	return out
}

// storageTopics is topicMetadata read from the partition logs.
type storageTopics struct{ logs *storage.Manager }

func metaOf(t *storage.Topic) topicMeta {
	return topicMeta{name: t.Name, id: t.ID, partitions: t.PartitionCount(), internal: t.Internal}
}

func (t storageTopics) Topic(name string) (topicMeta, bool) {
	if st := t.logs.Topic(name); st != nil {
		return metaOf(st), true
	}
	return topicMeta{}, false
}

func (t storageTopics) TopicByID(id [16]byte) (topicMeta, bool) {
	if st := t.logs.TopicByID(id); st != nil {
		return metaOf(st), true
	}
	return topicMeta{}, false
}

func (t storageTopics) Topics() []topicMeta {
	ts := t.logs.Topics()
	out := make([]topicMeta, len(ts))
	for i, st := range ts {
		out[i] = metaOf(st)
	}
	return out
}

// randomMemberID is Kafka's member id: client id, '-', a random UUID.
func randomMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

var errClosedWhileLoading = errors.New("coordinator closed while loading")
