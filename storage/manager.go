package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/vfs"
)

// cleanShutdownFile is Kafka's marker (LogLoader.CleanShutdownFile): present
// in a log.dir when the previous broker stopped cleanly, so the logs' indexes
// can be trusted and recovery skipped above the recovery point.
const cleanShutdownFile = ".kafka_cleanshutdown"

// lockFile is Kafka's LogManager.LockFileName: held for the broker's
// lifetime so that a second broker (Strata or Kafka) cannot open the dir.
const lockFile = ".lock"

// ManagerOptions configures OpenManager.
type ManagerOptions struct {
	Logger *zap.Logger
	NodeID int32
	// ClusterID is the id of the cluster this node is one of, written to
	// a new log dir's meta.properties and required of an existing one's;
	// "" (a single node) creates a random one and accepts any.
	ClusterID string
	// Clock is the clock of retention, the cleaner, revivals and every
	// log; nil = the real one.
	Clock clockwork.Clock
	// Events is told what the log dir and its logs do (events.go); nil =
	// LoggingListener(Logger).
	Events *EventListener
	// ReserveProducerIDs, when set, is called while adopting a log dir
	// Apache Kafka wrote (manager_adopt.go) with the end of the producer
	// ids Kafka handed out, which must never be handed out again.
	ReserveProducerIDs func(end int64) error
	// HighWatermarkCheckpointInterval is how often replication-offset-checkpoint
	// is written (replica.high.watermark.checkpoint.interval.ms); 0 = 5s.
	HighWatermarkCheckpointInterval time.Duration
}

// Manager owns every topic and partition under one log.dir.
//
// Locking: mu guards only the topic maps and is never held during file I/O,
// so lookups from the request path stay cheap while an admin operation opens
// or closes logs. adminMu serializes the admin operations (create, delete,
// add partitions, close) and the registry file they rewrite.
type Manager struct {
	fsys     vfs.FS
	dir      string
	defaults Config
	logger   *zap.Logger
	meta     metaProperties
	lock     io.Closer // the log dir's .lock, released by Close

	adminMu sync.Mutex
	closed  bool // under adminMu
	// deleting lists deleted topics whose directories may remain (under
	// adminMu); foreign names the partition directories found at open that
	// no registered partition owns, and foreignCkpt their checkpoint
	// entries, kept on every rewrite (manager_dirs.go).
	deleting    []registryTopic
	foreign     map[string]bool
	foreignCkpt map[string]map[topicPartition]int64

	cleaner *logCleaner // nil when log.cleaner.enable is false
	// cleanMu serializes cleaning passes and cleaner-offset-checkpoint writes.
	cleanMu sync.Mutex

	// Retention and dynamic configs (manager_retention.go,
	// manager_configs.go): static is the broker's configured defaults,
	// brokerConfigs the dynamic cluster-default broker configs (under
	// adminMu; defaults = static overlaid with them: brokerDefault the
	// cluster default's, brokerConfigs this node's); ckptMu serializes
	// log-start-offset-checkpoint writes.
	clock         clockwork.Clock
	now           func() time.Time // clock.Now
	events        EventListener
	static        Config
	brokerDefault map[string]string
	brokerConfigs map[string]string
	retention     *logCleaner
	ckptMu        sync.Mutex
	// deletedSegs wakes the retention goroutine when a log renamed
	// segments .deleted, so it removes them when their delay is up.
	deletedSegs chan struct{}
	// lsoCkptPending is set when a log-start-offset-checkpoint write
	// failed; the retention goroutine retries it.
	lsoCkptPending atomic.Bool
	// someFailed is set when a log fails, so the once-a-second revival
	// check walks the partitions only while one may be failed.
	someFailed atomic.Bool
	// hwCkpt writes replication-offset-checkpoint (manager_hwckpt.go);
	// hwCkptMu serializes the writes and guards hwCkptLast, what the last
	// one held.
	hwCkpt     *logCleaner
	hwCkptMu   sync.Mutex
	hwCkptLast map[topicPartition]int64

	mu     sync.RWMutex
	topics map[string]*Topic
	byID   map[[16]byte]*Topic
}

// Topic is one topic. Name, ID and Internal never change after creation;
// Configs change with AlterTopicConfigs.
type Topic struct {
	Name     string
	ID       [16]byte          // random, persisted in partition.metadata and the registry
	Configs  map[string]string // topic-level overrides; replaced (never modified) under cfgMu
	Internal bool              // Kafka's internal topics (IsInternalTopic), derived from the name

	cfg Config // defaults overlaid with Configs
	// parts is every partition by number, nil where this log dir hosts
	// no log of it.
	parts atomic.Pointer[[]*Partition]
	// cfgMu guards Configs and cfg, which AlterTopicConfigs replaces; read
	// them through ConfigMap and LogConfig once the topic is published.
	cfgMu sync.RWMutex
}

// Partitions returns the partitions this log dir hosts, by partition
// number: every one on a single node, the ones this node is a replica of
// in a cluster. The slice is an immutable snapshot (adding or dropping a
// partition publishes a new one), so callers take no lock and must not
// modify it.
func (t *Topic) Partitions() []*Partition {
	p := t.parts.Load()
	if p == nil {
		return nil
	}
	if !slices.Contains(*p, nil) {
		return *p
	}
	return slices.DeleteFunc(slices.Clone(*p), func(p *Partition) bool { return p == nil })
}

// Partition is partition i, nil when the topic has no such partition or
// this log dir does not host it.
func (t *Topic) Partition(i int32) *Partition {
	p := t.parts.Load()
	if p == nil || i < 0 || int(i) >= len(*p) {
		return nil
	}
	return (*p)[i]
}

// PartitionCount is the topic's number of partitions, hosted here or not.
func (t *Topic) PartitionCount() int32 {
	if p := t.parts.Load(); p != nil {
		return int32(len(*p))
	}
	return 0
}

// Partition is one partition of a topic and its log.
type Partition struct {
	Topic string
	Index int32
	Log   *Log

	leaderEpoch atomic.Int32
}

// LeaderEpoch is the partition's current leader epoch, stamped on appended
// batches: the log's latest (0 for a log Strata created).
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// SetLeaderEpoch records a new leader epoch (for replication).
func (p *Partition) SetLeaderEpoch(epoch int32) { p.leaderEpoch.Store(epoch) }

// partitionDir is Kafka's partition directory name, <topic>-<partition>.
func partitionDir(dir, topic string, partition int32) string {
	return filepath.Join(dir, topic+"-"+strconv.Itoa(int(partition)))
}

// OpenManager opens (creating if needed) the log.dir: meta.properties, the
// topic registry, the offset checkpoints and every partition's log, which
// OpenLog recovers. Partitions open in parallel, bounded by GOMAXPROCS, since
// recovery is I/O bound. The clean-shutdown marker is consumed: a crash from
// here on makes the next start recover fully.
func OpenManager(fsys vfs.FS, dir string, defaults Config, opts ManagerOptions) (*Manager, error) {
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log dir %s: %w", dir, err)
	}
	lock, err := fsys.Lock(filepath.Join(dir, lockFile))
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("log dir %s is in use by another broker: %w", dir, err)
		}
		return nil, fmt.Errorf("log dir %s: %w", dir, err)
	}
	m, err := openLockedManager(fsys, dir, defaults, opts, logger)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	m.lock = lock
	return m, nil
}

// openLockedManager is OpenManager once the log dir's lock is held.
func openLockedManager(fsys vfs.FS, dir string, defaults Config, opts ManagerOptions, logger *zap.Logger) (*Manager, error) {
	meta, created, err := loadOrCreateMetaProperties(fsys, dir, opts.NodeID, opts.ClusterID)
	if err != nil {
		return nil, err
	}
	reg, deleted, err := readRegistry(fsys, dir)
	if err != nil {
		return nil, err
	}
	if reg == nil {
		if reg, err = adoptKafkaLogDir(fsys, dir, defaults, opts, logger); err != nil {
			return nil, err
		}
	}
	checkpoints := map[string]map[topicPartition]int64{}
	for _, name := range []string{recoveryPointCheckpointFile, logStartOffsetCheckpointFile, cleanerCheckpointFile, replicationOffsetCheckpointFile} {
		if checkpoints[name], err = readOffsetCheckpoint(fsys, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	clean, err := consumeCleanShutdownMarker(fsys, dir)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		fsys:        fsys,
		dir:         dir,
		defaults:    defaults,
		static:      defaults,
		logger:      logger,
		meta:        meta,
		clock:       opts.Clock,
		events:      LoggingListener(logger),
		deleting:    deleted,
		deletedSegs: make(chan struct{}, 1),
		foreignCkpt: map[string]map[topicPartition]int64{},
		topics:      make(map[string]*Topic, len(reg)),
		byID:        make(map[[16]byte]*Topic, len(reg)),
	}
	if m.clock == nil {
		m.clock = clockwork.NewRealClock()
	}
	m.now = m.clock.Now
	if opts.Events != nil {
		m.events = *opts.Events
	}
	if err := m.loadBrokerConfigs(); err != nil {
		return nil, err
	}
	if created && len(reg) == 0 {
		logger.Info("log dir is new", zap.String("dir", dir), zap.String("cluster.id", meta.ClusterID))
	} else {
		logger.Info("opening log dir", zap.String("dir", dir), zap.String("cluster.id", meta.ClusterID),
			zap.Int("topics", len(reg)), zap.Bool("clean_shutdown", clean))
	}
	var opens []partitionOpen
	hosted := map[string]bool{} // the partition directories the registry hosts
	for _, rt := range reg {
		t, err := m.newTopic(rt.Name, rt.ID, rt.Configs)
		if err != nil {
			return nil, fmt.Errorf("registry topic %s: %w", rt.Name, err)
		}
		parts := make([]*Partition, rt.Partitions)
		t.parts.Store(&parts)
		for i := range parts {
			if slices.Contains(rt.NotHosted, int32(i)) {
				continue
			}
			hosted[filepath.Base(partitionDir(m.dir, t.Name, int32(i)))] = true
			tp := topicPartition{Topic: t.Name, Partition: int32(i)}
			rp, ok := checkpoints[recoveryPointCheckpointFile][tp]
			if !ok {
				rp = -1
			}
			o := partitionOpen{topic: t, index: int32(i), opts: OpenOptions{RecoveryPoint: rp, CleanShutdown: clean,
				LogStartOffset: checkpoints[logStartOffsetCheckpointFile][tp], FirstDirtyOffset: checkpoints[cleanerCheckpointFile][tp]}}
			if rt.LeaderEpochs != nil {
				o.leaderEpoch = rt.LeaderEpochs[i]
			}
			opens = append(opens, o)
		}
		m.topics[t.Name] = t
		m.byID[t.ID] = t
	}
	if err := m.finishDeletions(deleted); err != nil {
		return nil, err
	}
	if err := m.scanLogDir(hosted); err != nil {
		return nil, err
	}
	for name, cp := range checkpoints {
		m.keepForeignCheckpoints(name, cp)
	}
	start := time.Now()
	if err := m.openPartitions(opens); err != nil {
		return nil, err
	}
	m.logOpened(opens, clean, time.Since(start))
	m.checkHighWatermarks(checkpoints[replicationOffsetCheckpointFile])
	m.startCleaner()
	m.startRetention()
	m.startHighWatermarkCheckpoints(opts.HighWatermarkCheckpointInterval)
	return m, nil
}

// logOpened reports what opening the partitions took and what their
// recoveries checked and dropped (OnRecovered).
func (m *Manager) logOpened(opens []partitionOpen, clean bool, took time.Duration) {
	info := RecoveryInfo{Dir: m.dir, Partitions: len(opens), Took: took, CleanShutdown: clean}
	for _, o := range opens {
		r := (*o.topic.parts.Load())[o.index].Log.Recovery()
		info.Report.add(r)
		if r.DroppedFrom >= 0 {
			info.Truncated = append(info.Truncated, fmt.Sprintf("%s-%d from offset %d", o.topic.Name, o.index, r.DroppedFrom))
		}
	}
	call(m.events.OnRecovered, info)
}

// consumeCleanShutdownMarker reports whether the marker was present and
// removes it durably, so that a crash before the next clean Close is noticed.
func consumeCleanShutdownMarker(fsys vfs.FS, dir string) (bool, error) {
	path := filepath.Join(dir, cleanShutdownFile)
	if _, err := fsys.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("clean shutdown marker %s: %w", path, err)
	}
	if err := fsys.Remove(path); err != nil {
		return false, fmt.Errorf("remove clean shutdown marker %s: %w", path, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return false, fmt.Errorf("remove clean shutdown marker: %w", err)
	}
	return true, nil
}

// writeCleanShutdownMarker creates the marker with the content Kafka's
// CleanShutdownFileHandler writes (no broker epoch without KRaft: -1).
func writeCleanShutdownMarker(fsys vfs.FS, dir string) error {
	path := filepath.Join(dir, cleanShutdownFile)
	if err := replaceFile(fsys, path, []byte(`{"version":0,"brokerEpoch":-1}`)); err != nil {
		return fmt.Errorf("clean shutdown marker: %w", err)
	}
	return nil
}

// newTopic builds a Topic with its effective config; partitions are set by
// the caller.
func (m *Manager) newTopic(name string, id [16]byte, configs map[string]string) (*Topic, error) {
	cfg, err := m.defaults.WithTopicConfigs(configs)
	if err != nil {
		return nil, err
	}
	if configs == nil {
		configs = map[string]string{}
	}
	return &Topic{Name: name, ID: id, Configs: configs, Internal: IsInternalTopic(name), cfg: cfg}, nil
}

// IsInternalTopic reports whether name is one of Kafka's internal topics
// (Topic.isInternal): __consumer_offsets, __transaction_state and
// __share_group_state, written only by the broker's coordinators.
func IsInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

// partitionOpen is one partition log to open into topic's partition slice.
type partitionOpen struct {
	topic       *Topic
	index       int32
	opts        OpenOptions
	create      bool  // a new, empty partition rather than one from the registry
	leaderEpoch int32 // to lead with if newer than the log's (adopting Kafka's); 0 is every log's first
}

// openPartitions opens the logs in parallel and stores each Partition at its
// index in its topic's current slice. On any failure every log opened here is
// closed and the first error (by position) is returned.
func (m *Manager) openPartitions(opens []partitionOpen) error {
	parts := make([]*Partition, len(opens))
	errs := parallel(len(opens), func(i int) error {
		p, err := m.openPartition(opens[i])
		parts[i] = p
		return err
	})
	if err := errors.Join(errs...); err != nil {
		for _, p := range parts {
			if p != nil {
				if cerr := p.Log.Close(); cerr != nil {
					m.logger.Warn("close after failed open", zap.String("topic", p.Topic), zap.Int32("partition", p.Index), zap.Error(cerr))
				}
			}
		}
		return err
	}
	for i, o := range opens {
		(*o.topic.parts.Load())[o.index] = parts[i]
	}
	return nil
}

func (m *Manager) openPartition(o partitionOpen) (*Partition, error) {
	t := o.topic
	pdir := partitionDir(m.dir, t.Name, o.index)
	if !o.create {
		if _, err := m.fsys.Stat(pdir); errors.Is(err, fs.ErrNotExist) {
			m.logger.Warn("registered partition has no directory, starting it empty", zap.String("dir", pdir))
		}
	}
	if err := m.fsys.MkdirAll(pdir, 0o755); err != nil {
		return nil, fmt.Errorf("partition %s-%d: %w", t.Name, o.index, err)
	}
	if err := ensurePartitionMetadata(m.fsys, pdir, t.ID); err != nil {
		return nil, fmt.Errorf("partition %s-%d: %w", t.Name, o.index, err)
	}
	opts := o.opts
	opts.Logger = m.logger.With(zap.String("topic", t.Name), zap.Int32("partition", o.index))
	events := m.forLog(t.Name, o.index)
	opts.Clock, opts.Events = m.clock, &events
	l, err := OpenLog(m.fsys, pdir, t.LogConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("partition %s-%d: %w", t.Name, o.index, err)
	}
	if o.leaderEpoch > 0 {
		if err := l.AssignLeaderEpoch(o.leaderEpoch); err != nil {
			return nil, errors.Join(fmt.Errorf("partition %s-%d: %w", t.Name, o.index, err), l.Close())
		}
	}
	p := &Partition{Topic: t.Name, Index: o.index, Log: l}
	// Lead with the log's latest epoch, so that epochs never go backwards
	// on a log an earlier leader (Kafka) wrote.
	p.leaderEpoch.Store(max(0, l.LatestEpoch()))
	return p, nil
}

// parallel runs fn(0..n-1) on at most GOMAXPROCS goroutines and returns the
// errors by index.
func parallel(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errs
}

// ClusterID is the cluster id from meta.properties.
func (m *Manager) ClusterID() string { return m.meta.ClusterID }

// Topic returns the named topic, or nil.
func (m *Manager) Topic(name string) *Topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topics[name]
}

// TopicByID returns the topic with the given id, or nil.
func (m *Manager) TopicByID(id [16]byte) *Topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byID[id]
}

// Topics returns all topics sorted by name.
func (m *Manager) Topics() []*Topic {
	m.mu.RLock()
	ts := make([]*Topic, 0, len(m.topics))
	for _, t := range m.topics {
		ts = append(ts, t)
	}
	m.mu.RUnlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// closeLogs closes every partition log in parallel and returns the
// recovery-point, log-start-offset and high watermark checkpoints as of the close, and the
// partitions that were offline (failed logs close without touching their
// files; that is not an error).
func (m *Manager) closeLogs() (recovery, start, hws map[topicPartition]int64, offline []string, err error) {
	var parts []*Partition
	for _, t := range m.Topics() {
		parts = append(parts, t.Partitions()...)
	}
	failed := make([]bool, len(parts))
	errs := parallel(len(parts), func(i int) error {
		failed[i] = parts[i].Log.Failed() != nil
		if err := parts[i].Log.Close(); err != nil && !failed[i] {
			return fmt.Errorf("close partition %s-%d: %w", parts[i].Topic, parts[i].Index, err)
		}
		return nil
	})
	recovery = make(map[topicPartition]int64, len(parts))
	start = make(map[topicPartition]int64, len(parts))
	hws = make(map[topicPartition]int64, len(parts))
	for i, p := range parts {
		tp := topicPartition{Topic: p.Topic, Partition: p.Index}
		recovery[tp] = p.Log.RecoveryPoint()
		start[tp] = p.Log.LogStartOffset()
		hws[tp] = p.Log.HighWatermark()
		if failed[i] {
			offline = append(offline, fmt.Sprintf("%s-%d", p.Topic, p.Index))
		}
	}
	return recovery, start, hws, offline, errors.Join(errs...)
}

// Close shuts the log dir down: it closes every log (flushing it), writes
// the recovery-point, log-start-offset, cleaner and high watermark
// (replication-offset-checkpoint) checkpoints and, if all
// of that succeeded and no partition was offline, the clean-shutdown
// marker. An offline partition is not a failed shutdown: the checkpoints
// hold its last fsynced offset, and the next start recovers the log dir
// from them. The log dir's lock is released last. Later calls return nil.
func (m *Manager) Close() error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.lock != nil {
		defer func() { _ = m.lock.Close() }()
	}
	m.stopCleaner()
	m.stopRetention()
	m.stopHighWatermarkCheckpoints()
	dirty := m.cleanerOffsets()
	recovery, start, hws, offline, err := m.closeLogs()
	if err != nil {
		m.logger.Error("closing logs failed; next start will recover", zap.Error(err))
		return err
	}
	var ckptErrs []error
	for name, cp := range map[string]map[topicPartition]int64{recoveryPointCheckpointFile: recovery,
		logStartOffsetCheckpointFile: start, cleanerCheckpointFile: dirty} {
		ckptErrs = append(ckptErrs, m.writeCheckpoint(name, cp))
	}
	ckptErrs = append(ckptErrs, m.writeHighWatermarks(hws))
	if len(offline) > 0 {
		// The disk that failed them may refuse the checkpoints too; the
		// previous ones stay valid (older points only mean more to scan).
		m.logger.Warn("log dir closed with offline partitions; the next start recovers it from its checkpoints",
			zap.String("dir", m.dir), zap.Strings("offline", offline), zap.NamedError("checkpoints", errors.Join(ckptErrs...)))
		return nil
	}
	if err := errors.Join(ckptErrs...); err != nil {
		return err
	}
	if err := writeCleanShutdownMarker(m.fsys, m.dir); err != nil {
		return err
	}
	m.logger.Info("log dir closed cleanly", zap.String("dir", m.dir), zap.Int("partitions", len(recovery)))
	return nil
}

// errClosed is returned by admin operations after Close.
var errClosed = fmt.Errorf("storage manager is closed: %w", kerr.KafkaStorageError)

// ensureOpen fails admin operations after Close; call under adminMu.
func (m *Manager) ensureOpen() error {
	if m.closed {
		return errClosed
	}
	return nil
}
