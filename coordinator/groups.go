package coordinator

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-io/strata/internal/batch"
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
	}
}

// Groups is the group coordinator for classic consumer groups: membership
// and rebalances in memory, committed offsets and group metadata as records
// in __consumer_offsets, replayed on start.
//
// Locking: mu guards the groups map only; each group has its own mutex,
// taken after mu is released (never while holding mu). Writes to
// __consumer_offsets for a group happen under that group's mutex, so a
// group's records reach the log in the order its state changed.
type Groups struct {
	cfg    GroupConfig
	logs   *storage.Manager
	logger *zap.Logger
	now    func() time.Time

	replicas *replica.Manager // every append goes through a partition's replica

	offsets internalTopic // __consumer_offsets

	loaded atomic.Bool // replayed, or nothing to replay

	mu     sync.RWMutex
	groups map[string]*group

	txn txnOffsets // pending transactional offset commits (txnoffsets.go)

	life   sync.RWMutex
	closed bool           // under life
	wg     sync.WaitGroup // background work and timer callbacks
	stop   chan struct{}
}

// OpenGroups opens the group coordinator. When __consumer_offsets exists
// it is replayed in the background and group requests get
// COORDINATOR_LOAD_IN_PROGRESS until that finishes; when it does not, there
// is nothing to load and the topic is created (with
// offsets.topic.num.partitions partitions) by the first request that needs
// it, as Kafka creates it on the first FindCoordinator.
func OpenGroups(logs *storage.Manager, replicas *replica.Manager, cfg GroupConfig, logger *zap.Logger) (*Groups, error) {
	def := DefaultGroupConfig()
	if cfg.OffsetsTopicPartitions <= 0 {
		cfg.OffsetsTopicPartitions = def.OffsetsTopicPartitions
	}
	if cfg.OffsetsSegmentBytes <= 0 {
		cfg.OffsetsSegmentBytes = def.OffsetsSegmentBytes
	}
	c := &Groups{
		cfg:    cfg,
		logs:   logs,
		logger: logger.Named("groups"),
		now:    time.Now,
		groups: make(map[string]*group),
		stop:   make(chan struct{}),
	}
	c.replicas = replicas
	c.offsets = internalTopic{name: OffsetsTopic, partitions: cfg.OffsetsTopicPartitions,
		configs: offsetsTopicConfigs(cfg.OffsetsSegmentBytes), logs: logs, logger: c.logger}
	t := logs.Topic(OffsetsTopic)
	if t == nil {
		c.loaded.Store(true) // nothing to load
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.expireLoop()
		}()
		return c, nil
	}
	c.offsets.adopt(t)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		start := time.Now()
		if err := c.load(); err != nil {
			c.logger.Error("loading "+OffsetsTopic+" failed; group requests keep getting COORDINATOR_LOAD_IN_PROGRESS", zap.Error(err))
			return
		}
		c.loaded.Store(true)
		c.mu.RLock()
		n := len(c.groups)
		c.mu.RUnlock()
		c.logger.Info("loaded groups from "+OffsetsTopic, zap.Int("groups", n), zap.Duration("duration", time.Since(start)))
		c.expireLoop()
	}()
	return c, nil
}

// Ensure makes sure __consumer_offsets exists, creating it on first need
// (FindCoordinator for a group, or any group request): once, even under
// concurrent callers; after a failure the next call tries again. A topic
// created meanwhile by other means (Metadata auto-creation, CreateTopics)
// is adopted.
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
	c.wg.Wait()
}

// Loaded reports whether __consumer_offsets has been replayed.
func (c *Groups) Loaded() bool { return c.loaded.Load() }

// afterFunc runs fn after d unless the coordinator closes first.
func (c *Groups) afterFunc(d time.Duration, fn func()) *time.Timer {
	return time.AfterFunc(d, func() {
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

// lookup returns the group, or nil.
func (c *Groups) lookup(id string) *group {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.groups[id]
}

// lockGroup returns the group locked, creating it when create is set; nil
// when it does not exist. A group found Dead was just removed from the map:
// look again.
func (c *Groups) lockGroup(id string, create bool) *group {
	for {
		g := c.lookup(id)
		if g == nil {
			if !create {
				return nil
			}
			c.mu.Lock()
			if g = c.groups[id]; g == nil {
				g = newGroup(id, c.offsets.partitionOf(id), c.now())
				c.groups[id] = g
			}
			c.mu.Unlock()
		}
		g.mu.Lock()
		if g.state != stateDead {
			return g
		}
		g.mu.Unlock()
	}
}

// deleteGroup marks g Dead and drops it from the map; the caller holds g.mu.
func (c *Groups) deleteGroup(g *group) {
	g.transition(stateDead, c.now())
	c.mu.Lock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
	c.mu.Unlock()
}

// PartitionFor is the __consumer_offsets partition holding groupID's
// records (Kafka's GroupMetadataManager.partitionFor).
func (c *Groups) PartitionFor(groupID string) int32 { return c.offsets.partitionOf(groupID) }

// append writes records for group g's partition; they are visible once it
// returns without error.
func (c *Groups) append(g *group, recs []kv) error {
	if len(recs) == 0 {
		return nil
	}
	parts := c.offsets.current()
	if int(g.partition) >= len(parts) {
		return fmt.Errorf("group %s: %s-%d does not exist", g.id, OffsetsTopic, g.partition)
	}
	p, err := c.replicas.Partition(parts[g.partition])
	if err == nil {
		_, err = p.AppendAsLeader(buildBatch(recs, c.now()), replica.AcksAll, appendTimeout)
	}
	if err != nil {
		return fmt.Errorf("group %s: append to %s-%d: %w", g.id, OffsetsTopic, g.partition, err)
	}
	return nil
}

// storeGroup persists g's metadata (Kafka's storeGroup); caller holds g.mu.
func (c *Groups) storeGroup(g *group) error {
	return c.append(g, []kv{{key: groupMetadataKey(g.id), value: groupMetadataValue(g, c.now())}})
}

// load replays every partition of __consumer_offsets: the latest record
// per key wins and tombstones delete.
func (c *Groups) load() error {
	for _, p := range c.offsets.current() {
		if err := c.loadPartition(p); err != nil {
			return fmt.Errorf("%s-%d: %w", OffsetsTopic, p.Index, err)
		}
	}
	now := c.now()
	for _, g := range c.groups {
		for _, m := range g.members {
			c.scheduleHeartbeat(g, m)
		}
		if len(g.members) == 0 && len(g.offsets) == 0 && g.generation == 0 {
			delete(c.groups, g.id)
		}
		if g.stateTime.After(now) {
			g.stateTime = now
		}
	}
	return nil
}

// loadPartition replays the partition batch by batch in place
// (Log.ForEachBatch), from the log start to the high watermark.
func (c *Groups) loadPartition(p *storage.Partition) error {
	return p.Log.ForEachBatch(p.Log.LogStartOffset(), func(raw []byte) error {
		select {
		case <-c.stop:
			return errors.New("coordinator closed while loading")
		default:
		}
		if _, err := forEachRecord(raw, func(b *batchInfo, key, value []byte) error {
			if b.transactional {
				return c.replayTxn(p.Index, b, key, value)
			}
			return c.replay(p.Index, key, value)
		}); err != nil {
			return fmt.Errorf("replay batch at offset %d: %w", batch.DecodeHeader(raw).BaseOffset, err)
		}
		return nil
	})
}

// replay applies one record during load.
func (c *Groups) replay(partition int32, key, value []byte) error {
	version, err := keyVersion(key)
	if err != nil {
		return err
	}
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("offset commit key: %w", err)
		}
		g := c.replayGroup(k.Group, partition)
		tp := topicPartition{k.Topic, k.Partition}
		if value == nil {
			delete(g.offsets, tp)
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("offset commit value of group %s: %w", k.Group, err)
		}
		expire := int64(-1)
		if v.Version == 1 {
			expire = v.ExpireTimestamp
		}
		g.offsets[tp] = committedOffset{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: expire}
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("group metadata key: %w", err)
		}
		if value == nil {
			delete(c.groups, k.Group)
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("group metadata value of group %s: %w", k.Group, err)
		}
		c.replayGroupMetadata(c.replayGroup(k.Group, partition), &v)
	}
	return nil
}

func (c *Groups) replayGroup(id string, partition int32) *group {
	g := c.groups[id]
	if g == nil {
		g = newGroup(id, partition, c.now())
		c.groups[id] = g
	}
	return g
}

// replayGroupMetadata replaces g's membership with v's, as Kafka's
// GroupMetadata.loadGroup: Stable with members, else Empty.
func (c *Groups) replayGroupMetadata(g *group, v *kmsg.GroupMetadataValue) {
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	g.protocol, g.leader = deref(v.Protocol), deref(v.Leader)
	g.members = make(map[string]*member, len(v.Members))
	g.static = make(map[string]string)
	for _, vm := range v.Members {
		m := &member{
			id:               vm.MemberID,
			instanceID:       deref(vm.InstanceID),
			clientID:         vm.ClientID,
			clientHost:       vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []protocolMeta{{name: g.protocol, metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
	}
	g.state = stateEmpty
	if len(g.members) > 0 {
		g.state = stateStable
	}
	if v.CurrentStateTimestamp > 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkGroupID is the common check of group requests: INVALID_GROUP_ID for
// an empty id (when the request requires one),
// COORDINATOR_LOAD_IN_PROGRESS until __consumer_offsets is replayed, and
// COORDINATOR_NOT_AVAILABLE if it does not exist and cannot be created.
func (c *Groups) checkGroupID(id string) *kerr.Error {
	if id == "" {
		return kerr.InvalidGroupID
	}
	return c.checkReady()
}

// checkGroupRead is checkGroupID for requests that only read or delete
// existing groups: they need no __consumer_offsets until a group exists
// (none does before it is created), so they do not create it.
func (c *Groups) checkGroupRead(id string) *kerr.Error {
	if id == "" {
		return kerr.InvalidGroupID
	}
	if !c.loaded.Load() {
		return kerr.CoordinatorLoadInProgress
	}
	return nil
}

// checkReady is COORDINATOR_LOAD_IN_PROGRESS until __consumer_offsets is
// replayed, then creates it if needed (ensure).
func (c *Groups) checkReady() *kerr.Error {
	if !c.loaded.Load() {
		return kerr.CoordinatorLoadInProgress
	}
	return c.ensure()
}

// newMemberID is Kafka's member id: client id, '-', a random UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
