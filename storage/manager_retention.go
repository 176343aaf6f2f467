package storage

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// startRetention starts the goroutine that applies retention every
// log.retention.check.interval.ms (Config.RetentionCheckIntervalMs of the
// defaults, 300000 when unset), removes deleted segments' files when their
// file.delete.delay.ms has passed (woken by every deletion, whatever made
// it), and revives failed logs once a write in the log dir succeeds
// (reviveInterval). Waits are computed from the Manager's clock, so an
// injected clock that does not move never fires a check early.
func (m *Manager) startRetention() {
	interval := time.Duration(m.static.RetentionCheckIntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = 300 * time.Second
	}
	r := &logCleaner{stop: make(chan struct{}), done: make(chan struct{})}
	m.retention = r
	go func() {
		defer close(r.done)
		nextCheck := m.now().Add(interval)
		var nextRemoval time.Time
		revive := m.clock.NewTicker(reviveInterval)
		defer revive.Stop()
		for {
			wait := nextCheck.Sub(m.now())
			if !nextRemoval.IsZero() {
				wait = min(wait, nextRemoval.Sub(m.now()))
			}
			t := m.clock.NewTimer(max(wait, time.Millisecond))
			select {
			case <-r.stop:
				t.Stop()
				return
			case <-revive.Chan():
				t.Stop()
				m.reviveFailed()
				if m.lsoCkptPending.Load() && m.checkpointLogStartOffsets() == nil {
					m.lsoCkptPending.Store(false)
				}
				continue
			case <-m.deletedSegs:
			case <-t.Chan():
			}
			t.Stop()
			if !m.now().Before(nextCheck) {
				m.RetainNow()
				nextCheck = m.now().Add(interval)
			}
			nextRemoval = m.removeDeletedSegments()
		}
	}()
}

// segmentsDeleted is run by every log's OnSegmentsDeleted: it wakes the
// retention goroutine without blocking the log.
func (m *Manager) segmentsDeleted() {
	select {
	case m.deletedSegs <- struct{}{}:
	default:
	}
}

// stopRetention stops the retention goroutine and waits for it.
func (m *Manager) stopRetention() {
	if m.retention == nil {
		return
	}
	close(m.retention.stop)
	<-m.retention.done
	m.retention = nil
}

// RetainNow applies retention to every partition once, in the calling
// goroutine (as the background check does every
// log.retention.check.interval.ms), checkpoints the log start offsets if
// any moved, and returns the number of segments deleted.
func (m *Manager) RetainNow() int {
	deleted, moved := 0, false
	for _, t := range m.Topics() {
		for _, p := range t.Partitions() {
			if p == nil {
				continue
			}
			res, err := p.Log.ApplyRetention()
			if err != nil {
				m.logger.Error("retention failed", zap.String("topic", p.Topic), zap.Int32("partition", p.Index), zap.Error(err))
			}
			deleted += res.Segments
			moved = moved || res.Segments > 0
		}
	}
	if moved {
		if err := m.checkpointLogStartOffsets(); err != nil {
			m.logger.Warn("cannot write the log start offset checkpoint; retrying every second", zap.Error(err))
			m.lsoCkptPending.Store(true)
		}
	}
	return deleted
}

// removeDeletedSegments removes due .deleted files of every partition and
// returns when the next are due (zero if none wait).
func (m *Manager) removeDeletedSegments() time.Time {
	var next time.Time
	for _, t := range m.Topics() {
		for _, p := range t.Partitions() {
			if p == nil {
				continue
			}
			due, err := p.Log.RemoveDeletedSegments()
			if err != nil {
				m.logger.Warn("cannot remove deleted segments", zap.String("topic", p.Topic), zap.Int32("partition", p.Index), zap.Error(err))
			}
			if !due.IsZero() && (next.IsZero() || due.Before(next)) {
				next = due
			}
		}
	}
	return next
}

// DeleteRecords moves a partition's log start offset to offset (-1 = the
// high watermark), deletes the segments below it and checkpoints the new
// start, which it returns (DeleteRecords' low watermark). Errors:
// kerr.UnknownTopicOrPartition, kerr.OffsetOutOfRange (offset above the
// high watermark), kerr.PolicyViolation (cleanup.policy without delete).
func (m *Manager) DeleteRecords(topic string, partition int32, offset int64) (int64, error) {
	t := m.Topic(topic)
	if t == nil {
		return -1, fmt.Errorf("topic %s: %w", topic, kerr.UnknownTopicOrPartition)
	}
	p := t.Partition(partition)
	switch {
	case partition < 0 || partition >= t.PartitionCount():
		return -1, fmt.Errorf("partition %s-%d: %w", topic, partition, kerr.UnknownTopicOrPartition)
	case p == nil:
		return -1, fmt.Errorf("partition %s-%d is not hosted here: %w", topic, partition, kerr.NotLeaderForPartition)
	}
	before := p.Log.LogStartOffset()
	res, err := p.Log.DeleteRecordsBefore(offset)
	if err != nil {
		return -1, fmt.Errorf("delete records of %s-%d: %w", topic, partition, err)
	}
	if res.LogStartOffset != before {
		if err := m.checkpointLogStartOffsets(); err != nil {
			// Kafka checkpoints log start offsets in the background; a
			// crash before the retry only lets records below the new start
			// come back, never loses any.
			m.logger.Warn("cannot write the log start offset checkpoint; retrying every second", zap.Error(err))
			m.lsoCkptPending.Store(true)
		}
	}
	return res.LogStartOffset, nil
}

// checkpointLogStartOffsets rewrites log-start-offset-checkpoint with every
// partition's current log start offset, so a start moved by retention or
// DeleteRecords survives a crash.
func (m *Manager) checkpointLogStartOffsets() error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	start := map[topicPartition]int64{}
	for _, t := range m.Topics() {
		for _, p := range t.Partitions() {
			if p != nil {
				start[topicPartition{Topic: p.Topic, Partition: p.Index}] = p.Log.LogStartOffset()
			}
		}
	}
	return m.writeCheckpoint(logStartOffsetCheckpointFile, start)
}
