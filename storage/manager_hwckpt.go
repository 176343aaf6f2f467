package storage

import (
	"fmt"
	"maps"
	"time"

	"go.uber.org/zap"
)

// replicationOffsetCheckpointFile is Kafka's ReplicaManager.HighWatermarkFilename:
// every partition's high watermark, in the offset checkpoint format.
const replicationOffsetCheckpointFile = "replication-offset-checkpoint"

// defaultHighWatermarkCheckpointInterval is the default of Kafka's
// replica.high.watermark.checkpoint.interval.ms.
const defaultHighWatermarkCheckpointInterval = 5 * time.Second

// highWatermarks returns every partition's high watermark.
func (m *Manager) highWatermarks() map[topicPartition]int64 {
	hws := map[topicPartition]int64{}
	for _, t := range m.Topics() {
		for _, p := range t.Partitions() {
			hws[topicPartition{Topic: p.Topic, Partition: p.Index}] = p.Log.HighWatermark()
		}
	}
	return hws
}

// checkpointHighWatermarks writes replication-offset-checkpoint with every
// partition's high watermark, as Kafka's
// ReplicaManager.checkpointHighWatermarks; it skips the write when nothing
// changed since the last one.
func (m *Manager) checkpointHighWatermarks() error {
	return m.writeHighWatermarks(m.highWatermarks())
}

func (m *Manager) writeHighWatermarks(hws map[topicPartition]int64) error {
	m.hwCkptMu.Lock()
	defer m.hwCkptMu.Unlock()
	if m.hwCkptLast != nil && maps.Equal(hws, m.hwCkptLast) {
		return nil
	}
	if err := m.writeCheckpoint(replicationOffsetCheckpointFile, maps.Clone(hws)); err != nil {
		return err
	}
	m.hwCkptLast = hws
	return nil
}

// startHighWatermarkCheckpoints checkpoints the high watermarks every
// interval (replica.high.watermark.checkpoint.interval.ms) until
// stopHighWatermarkCheckpoints; Close writes the last one.
func (m *Manager) startHighWatermarkCheckpoints(interval time.Duration) {
	if interval <= 0 {
		interval = defaultHighWatermarkCheckpointInterval
	}
	c := &logCleaner{stop: make(chan struct{}), done: make(chan struct{})}
	m.hwCkpt = c
	go func() {
		defer close(c.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
			if err := m.checkpointHighWatermarks(); err != nil {
				m.logger.Warn("cannot write the high watermark checkpoint", zap.Error(err))
			}
		}
	}()
}

// stopHighWatermarkCheckpoints stops the checkpointing goroutine and waits for it.
func (m *Manager) stopHighWatermarkCheckpoints() {
	if m.hwCkpt == nil {
		return
	}
	close(m.hwCkpt.stop)
	<-m.hwCkpt.done
	m.hwCkpt = nil
}

// checkHighWatermarks warns about every partition whose log recovery ended
// below the high watermark replication-offset-checkpoint held for it:
// records a fetch may have seen are gone.
func (m *Manager) checkHighWatermarks(checkpointed map[topicPartition]int64) {
	for _, t := range m.Topics() {
		for _, p := range t.Partitions() {
			hw, ok := checkpointed[topicPartition{Topic: p.Topic, Partition: p.Index}]
			if leo := p.Log.LogEndOffset(); ok && hw > leo {
				m.logger.Warn("partition log recovered below its checkpointed high watermark",
					zap.String("partition", fmt.Sprintf("%s-%d", p.Topic, p.Index)), zap.Int64("highWatermark", hw), zap.Int64("logEndOffset", leo))
			}
		}
	}
}
