package storage

// A cluster node hosts the logs of the partitions it is a replica of, as
// Kafka's LogManager: HostPartition creates the log of a partition the
// node became a replica of, DropPartition deletes the log of one it
// stopped being a replica of (Kafka's asyncDelete: the directory is
// renamed <topic>-<p>.<uuid>-delete, then removed). The registry lists
// the partitions a topic's entry does not host (registryTopic.NotHosted).

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// HostPartition opens a log for partition p of topic name, which this log
// dir does not host yet: an empty one, or, when the partition's directory
// is already there holding this topic's id (a creation a crash cut short
// before the registry recorded it), that one. kerr.UnknownTopicOrPartition
// when there is no such topic or partition.
func (m *Manager) HostPartition(name string, p int32) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	t := m.Topic(name)
	if t == nil || p < 0 || p >= t.PartitionCount() {
		return fmt.Errorf("partition %s-%d: %w", name, p, kerr.UnknownTopicOrPartition)
	}
	if t.Partition(p) != nil {
		return nil
	}
	pdir := partitionDir(m.dir, name, p)
	dirName := filepath.Base(pdir)
	existing := m.foreign[dirName] && m.holdsTopicID(pdir, t.ID)
	if !existing {
		if err := m.claimPartitionDir(t, p); err != nil {
			return err
		}
	}
	parts := slices.Clone(*t.parts.Load())
	staging := &Topic{Name: t.Name, ID: t.ID, Configs: t.ConfigMap(), cfg: t.LogConfig()}
	staging.parts.Store(&parts)
	open := partitionOpen{topic: staging, index: p, opts: OpenOptions{RecoveryPoint: 0, CleanShutdown: true}, create: !existing}
	if existing {
		open.opts = OpenOptions{RecoveryPoint: -1}
	}
	err := m.openPartitions([]partitionOpen{open})
	if err == nil {
		if err = m.writeRegistry(m.registryWith(staging, len(parts))); err != nil {
			m.discardPartitions(parts[p : p+1])
		}
	}
	if err != nil {
		if !existing {
			if rerr := m.fsys.RemoveAll(pdir); rerr != nil {
				m.logger.Warn("cleanup after failed create", zap.String("topic", name), zap.Int32("partition", p), zap.Error(rerr))
			}
		}
		return fmt.Errorf("partition %s-%d: %w", name, p, storageFailure(err))
	}
	delete(m.foreign, dirName)
	t.parts.Store(&parts)
	if existing {
		m.logger.Info("hosting a partition directory left by an interrupted creation", zap.String("dir", pdir))
	}
	return nil
}

// DropPartition deletes the log of partition p of topic name: it stops
// being served, the registry records it not hosted, then its directory is
// renamed to Kafka's -delete name and removed and its checkpoint entries
// dropped. A crash before the rename leaves the directory, which the next
// open keeps as one it cannot account for. kerr.UnknownTopicOrPartition
// when this log dir does not host it.
func (m *Manager) DropPartition(name string, p int32) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	t := m.Topic(name)
	if t == nil || t.Partition(p) == nil {
		return fmt.Errorf("partition %s-%d: %w", name, p, kerr.UnknownTopicOrPartition)
	}
	was := *t.parts.Load()
	sp := was[p]
	parts := slices.Clone(was)
	parts[p] = nil
	t.parts.Store(&parts)
	if err := m.writeRegistry(m.registryWith(t, len(parts))); err != nil {
		t.parts.Store(&was)
		return fmt.Errorf("drop partition %s-%d: %w", name, p, storageFailure(err))
	}
	if err := sp.Log.Close(); err != nil {
		m.logger.Warn("close dropped partition", zap.String("topic", name), zap.Int32("partition", p), zap.Error(err))
	}
	if err := m.removePartitionDir(name, p); err != nil {
		return storageFailure(err)
	}
	if err := m.fsys.SyncDir(m.dir); err != nil {
		return storageFailure(fmt.Errorf("drop partition %s-%d: %w", name, p, err))
	}
	return storageFailure(m.dropPartitionFromCheckpoints(topicPartition{Topic: name, Partition: p}))
}

// dropPartitionFromCheckpoints removes one partition from the offset
// checkpoint files, so that a log later created for it starts afresh.
func (m *Manager) dropPartitionFromCheckpoints(tp topicPartition) error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	for _, name := range []string{recoveryPointCheckpointFile, logStartOffsetCheckpointFile, cleanerCheckpointFile} {
		path := filepath.Join(m.dir, name)
		cp, err := readOffsetCheckpoint(m.fsys, path)
		if err != nil {
			return fmt.Errorf("drop partition %s-%d: %w", tp.Topic, tp.Partition, err)
		}
		if _, ok := cp[tp]; !ok {
			continue
		}
		delete(cp, tp)
		if err := writeOffsetCheckpoint(m.fsys, path, cp); err != nil {
			return fmt.Errorf("drop partition %s-%d: %w", tp.Topic, tp.Partition, err)
		}
	}
	return nil
}
