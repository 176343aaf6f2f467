package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
)

// reviveInterval is how often, while some log is failed, the Manager
// checks whether a write in the log dir succeeds again.
const reviveInterval = time.Second

// probeFile is written, fsynced and removed to see whether the log dir
// takes writes again. Kafka ignores files at the top of a log dir.
const probeFile = ".strata-write-probe"

// OfflinePartition is a partition whose log failed and refuses writes.
type OfflinePartition struct {
	Topic     string
	Partition int32
	Err       error
}

// OfflinePartitions lists the partitions whose logs have failed, by topic
// and partition.
func (m *Manager) OfflinePartitions() []OfflinePartition {
	var out []OfflinePartition
	for _, t := range m.Topics() {
		for _, p := range t.Partitions() {
			if p == nil {
				continue
			}
			if err := p.Log.Failed(); err != nil {
				out = append(out, OfflinePartition{Topic: p.Topic, Partition: p.Index, Err: err})
			}
		}
	}
	return out
}

// reviveFailed revives the failed logs if a write of the largest batch a
// log accepts now succeeds in the log dir.
func (m *Manager) reviveFailed() {
	if !m.someFailed.Swap(false) {
		return
	}
	failed := m.OfflinePartitions()
	if len(failed) == 0 {
		return
	}
	defer func() {
		if len(m.OfflinePartitions()) > 0 {
			m.someFailed.Store(true)
		}
	}()
	if err := m.probeWrite(int(m.defaults.MaxMessageBytes)); err != nil {
		m.logger.Debug("log dir still refuses writes", zap.Int("offlinePartitions", len(failed)), zap.Error(err))
		return
	}
	for _, o := range failed {
		t := m.Topic(o.Topic)
		if t == nil || t.Partition(o.Partition) == nil {
			continue
		}
		if _, err := t.Partition(o.Partition).Log.Revive(); err != nil {
			m.logger.Error("cannot revive a failed partition log", zap.String("topic", o.Topic), zap.Int32("partition", o.Partition), zap.Error(err))
		}
	}
}

// logFailed is run by every log's OnLogFailed.
func (m *Manager) logFailed() { m.someFailed.Store(true) }

// probeWrite writes n bytes to the probe file, fsyncs and removes it.
func (m *Manager) probeWrite(n int) error {
	path := filepath.Join(m.dir, probeFile)
	f, err := m.fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write probe: %w", err)
	}
	_, werr := f.Write(make([]byte, max(n, 4096)))
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	rerr := m.fsys.Remove(path)
	if err := errors.Join(werr, cerr, rerr); err != nil {
		return fmt.Errorf("write probe: %w", err)
	}
	return nil
}
