package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/kraftmeta"
	"github.com/strata-io/strata/storage/vfs"
)

// cleanShutdownFile is Kafka's marker (LogLoader.CleanShutdownFile): present
// in a log.dir when the previous broker stopped cleanly, so the logs' indexes
// can be trusted and recovery skipped above the recovery point.
const cleanShutdownFile = ".kafka_cleanshutdown"

// ManagerOptions configures OpenManager.
type ManagerOptions struct {
	Logger *zap.Logger
	NodeID int32
	// Now is the clock of retention and of every log; nil = time.Now.
	Now func() time.Time
	// OnFsync, when set, is told how long each segment fsync took.
	OnFsync func(time.Duration)
	// ReserveProducerIDs, when set, is called while adopting a log dir
	// Apache Kafka wrote (manager_adopt.go) with the end of the producer
	// ids Kafka handed out, which must never be handed out again.
	ReserveProducerIDs func(end int64) error
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

	adminMu sync.Mutex
	closed  bool // under adminMu

	cleaner *logCleaner // nil when log.cleaner.enable is false
	// cleanMu serializes cleaning passes and cleaner-offset-checkpoint writes.
	cleanMu sync.Mutex

	// Retention and dynamic configs (manager_retention.go,
	// manager_configs.go): static is the broker's configured defaults,
	// brokerConfigs the dynamic cluster-default broker configs (under
	// adminMu; defaults = static overlaid with them: brokerDefault the
	// cluster default's, brokerConfigs this node's); ckptMu serializes
	// log-start-offset-checkpoint writes.
	now           func() time.Time
	onFsync       func(time.Duration)
	static        Config
	brokerDefault map[string]string
	brokerConfigs map[string]string
	retention     *logCleaner
	ckptMu        sync.Mutex

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

	cfg   Config // defaults overlaid with Configs
	parts atomic.Pointer[[]*Partition]
	// cfgMu guards Configs and cfg, which AlterTopicConfigs replaces; read
	// them through ConfigMap and LogConfig once the topic is published.
	cfgMu sync.RWMutex
}

// Partitions returns the topic's partitions, index = partition number. The
// slice is an immutable snapshot (adding partitions publishes a new one), so
// callers take no lock and must not modify it.
func (t *Topic) Partitions() []*Partition {
	if p := t.parts.Load(); p != nil {
		return *p
	}
	return nil
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
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log dir %s: %w", dir, err)
	}
	meta, err := loadOrCreateMetaProperties(fsys, dir, opts.NodeID)
	if err != nil {
		return nil, err
	}
	reg, err := readRegistry(fsys, dir)
	if err != nil {
		return nil, err
	}
	if reg == nil {
		if reg, err = adoptKafkaLogDir(fsys, dir, defaults, opts, logger); err != nil {
			return nil, err
		}
	}
	recoveryPoints, err := readOffsetCheckpoint(fsys, filepath.Join(dir, recoveryPointCheckpointFile))
	if err != nil {
		return nil, err
	}
	startOffsets, err := readOffsetCheckpoint(fsys, filepath.Join(dir, logStartOffsetCheckpointFile))
	if err != nil {
		return nil, err
	}
	dirtyOffsets, err := readOffsetCheckpoint(fsys, filepath.Join(dir, cleanerCheckpointFile))
	if err != nil {
		return nil, err
	}
	clean, err := consumeCleanShutdownMarker(fsys, dir)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		fsys:     fsys,
		dir:      dir,
		defaults: defaults,
		static:   defaults,
		logger:   logger,
		meta:     meta,
		now:      opts.Now,
		onFsync:  opts.OnFsync,
		topics:   make(map[string]*Topic, len(reg)),
		byID:     make(map[[16]byte]*Topic, len(reg)),
	}
	if m.now == nil {
		m.now = time.Now
	}
	if err := m.loadBrokerConfigs(); err != nil {
		return nil, err
	}
	logger.Info("opening log dir", zap.String("dir", dir), zap.String("cluster.id", meta.ClusterID),
		zap.Int("topics", len(reg)), zap.Bool("clean_shutdown", clean))
	var opens []partitionOpen
	for _, rt := range reg {
		t, err := m.newTopic(rt.Name, rt.ID, rt.Configs)
		if err != nil {
			return nil, fmt.Errorf("registry topic %s: %w", rt.Name, err)
		}
		parts := make([]*Partition, rt.Partitions)
		t.parts.Store(&parts)
		for i := range parts {
			tp := topicPartition{Topic: t.Name, Partition: int32(i)}
			rp, ok := recoveryPoints[tp]
			if !ok {
				rp = -1
			}
			o := partitionOpen{topic: t, index: int32(i), opts: OpenOptions{RecoveryPoint: rp, CleanShutdown: clean,
				LogStartOffset: startOffsets[tp], FirstDirtyOffset: dirtyOffsets[tp]}}
			if rt.LeaderEpochs != nil {
				o.leaderEpoch = rt.LeaderEpochs[i]
			}
			opens = append(opens, o)
		}
		m.topics[t.Name] = t
		m.byID[t.ID] = t
	}
	if err := m.openPartitions(opens); err != nil {
		return nil, err
	}
	if err := m.scanStrayDirs(); err != nil {
		if _, _, cerr := m.closeLogs(); cerr != nil {
			m.logger.Warn("close after failed open", zap.Error(cerr))
		}
		return nil, err
	}
	logger.Info("log dir open", zap.String("dir", dir), zap.Int("partitions", len(opens)))
	m.startCleaner()
	m.startRetention()
	return m, nil
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
// (Topic.isInternal): __consumer_offsets and __transaction_state, written
// only by the broker's coordinators.
func IsInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
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
	opts.Now, opts.OnFsync = m.now, m.onFsync
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

// scanStrayDirs removes leftovers of interrupted deletions (<name>-delete) and
// warns about partition-like directories that no registered topic owns;
// those are left alone.
func (m *Manager) scanStrayDirs() error {
	ents, err := m.fsys.ReadDir(m.dir)
	if err != nil {
		return fmt.Errorf("list log dir %s: %w", m.dir, err)
	}
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		if name == kraftmeta.DirName {
			continue // Kafka's metadata log: read when adopting, never touched
		}
		if strings.HasSuffix(name, deleteDirSuffix) {
			if err := m.fsys.RemoveAll(filepath.Join(m.dir, name)); err != nil {
				return fmt.Errorf("remove deleted partition dir %s: %w", name, err)
			}
			continue
		}
		i := strings.LastIndexByte(name, '-')
		if i <= 0 {
			continue
		}
		p, err := strconv.ParseInt(name[i+1:], 10, 32)
		if err != nil || p < 0 {
			continue
		}
		if t := m.topics[name[:i]]; t == nil || int(p) >= len(t.Partitions()) {
			m.logger.Warn("partition directory not in topic registry, leaving it", zap.String("dir", filepath.Join(m.dir, name)))
		}
	}
	return nil
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
// recovery-point and log-start-offset checkpoints as of the close.
func (m *Manager) closeLogs() (recovery, start map[topicPartition]int64, err error) {
	var parts []*Partition
	for _, t := range m.Topics() {
		parts = append(parts, t.Partitions()...)
	}
	errs := parallel(len(parts), func(i int) error {
		if err := parts[i].Log.Close(); err != nil {
			return fmt.Errorf("close partition %s-%d: %w", parts[i].Topic, parts[i].Index, err)
		}
		return nil
	})
	recovery = make(map[topicPartition]int64, len(parts))
	start = make(map[topicPartition]int64, len(parts))
	for _, p := range parts {
		tp := topicPartition{Topic: p.Topic, Partition: p.Index}
		recovery[tp] = p.Log.RecoveryPoint()
		start[tp] = p.Log.LogStartOffset()
	}
	return recovery, start, errors.Join(errs...)
}

// Close shuts the log dir down cleanly: it closes every log (flushing it),
// writes the recovery-point and log-start-offset checkpoints and, only if all
// of that succeeded, the clean-shutdown marker. Later calls return nil.
func (m *Manager) Close() error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.stopCleaner()
	m.stopRetention()
	dirty := m.cleanerOffsets()
	recovery, start, err := m.closeLogs()
	if err != nil {
		m.logger.Error("closing logs failed; next start will recover", zap.Error(err))
		return err
	}
	if err := writeOffsetCheckpoint(m.fsys, filepath.Join(m.dir, recoveryPointCheckpointFile), recovery); err != nil {
		return err
	}
	if err := writeOffsetCheckpoint(m.fsys, filepath.Join(m.dir, logStartOffsetCheckpointFile), start); err != nil {
		return err
	}
	if err := writeOffsetCheckpoint(m.fsys, filepath.Join(m.dir, cleanerCheckpointFile), dirty); err != nil {
		return err
	}
	if err := writeCleanShutdownMarker(m.fsys, m.dir); err != nil {
		return err
	}
	m.logger.Info("log dir closed cleanly", zap.String("dir", m.dir), zap.Int("partitions", len(recovery)))
	return nil
}

// errClosed is returned by admin operations after Close.
var errClosed = errors.New("storage manager is closed")

// ensureOpen fails admin operations after Close; call under adminMu.
func (m *Manager) ensureOpen() error {
	if m.closed {
		return errClosed
	}
	return nil
}
