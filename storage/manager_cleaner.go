package storage

import (
	"errors"
	"time"

	"go.uber.org/zap"
)

// logCleaner is the Manager's one background cleaner goroutine (Kafka's
// LogCleaner with log.cleaner.threads=1): every log.cleaner.backoff.ms it
// cleans each compacted partition that is dirty enough.
type logCleaner struct {
	stop chan struct{}
	done chan struct{}
}

// startCleaner starts the cleaner goroutine unless log.cleaner.enable is
// false (Config.CleanerDisable in the Manager's defaults).
func (m *Manager) startCleaner() {
	if m.defaults.CleanerDisable {
		return
	}
	backoff := time.Duration(m.defaults.CleanerBackoffMs) * time.Millisecond
	if backoff <= 0 {
		backoff = 15 * time.Second
	}
	c := &logCleaner{stop: make(chan struct{}), done: make(chan struct{})}
	m.cleaner = c
	go func() {
		defer close(c.done)
		t := m.clock.NewTicker(backoff)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.Chan():
			}
			m.cleanPass(c.stop)
		}
	}()
}

// stopCleaner stops the goroutine and waits for it; a pass in progress is
// cut short (closing logs aborts their cleaning too).
func (m *Manager) stopCleaner() {
	if m.cleaner == nil {
		return
	}
	close(m.cleaner.stop)
	for _, t := range m.Topics() {
		for _, p := range t.Partitions() {
			if p != nil {
				p.Log.closing.Store(true) // abort a cleaning in progress; the logs close next
			}
		}
	}
	<-m.cleaner.done
	m.cleaner = nil
}

// CleanNow runs one cleaning pass over every compacted partition in the
// calling goroutine, as the background cleaner does on each tick, and
// returns the number of logs cleaned. For tests and admin tooling.
func (m *Manager) CleanNow() int {
	return m.cleanPass(nil)
}

// cleanPass cleans the compacted partitions that are dirty enough and
// checkpoints the cleaner offsets if anything was cleaned.
func (m *Manager) cleanPass(stop <-chan struct{}) int {
	m.cleanMu.Lock()
	defer m.cleanMu.Unlock()
	cleaned := 0
	for _, t := range m.Topics() {
		if !t.LogConfig().Compact {
			continue
		}
		for _, p := range t.Partitions() {
			select {
			case <-stop:
				return cleaned
			default:
			}
			if p == nil {
				continue
			}
			st, err := p.Log.Clean(false)
			switch {
			case errors.Is(err, errCleanAborted):
			case err != nil:
				m.logger.Error("log cleaning failed", zap.String("topic", p.Topic), zap.Int32("partition", p.Index), zap.Error(err))
			case st.Cleaned:
				cleaned++
			}
		}
	}
	if cleaned > 0 {
		if err := m.writeCheckpoint(cleanerCheckpointFile, m.cleanerOffsets()); err != nil {
			m.logger.Warn("cannot write the cleaner offset checkpoint", zap.Error(err))
		}
	}
	return cleaned
}

// cleanerOffsets returns the first dirty offset of every compacted partition.
func (m *Manager) cleanerOffsets() map[topicPartition]int64 {
	out := map[topicPartition]int64{}
	for _, t := range m.Topics() {
		if !t.LogConfig().Compact {
			continue
		}
		for _, p := range t.Partitions() {
			if p != nil {
				out[topicPartition{Topic: p.Topic, Partition: p.Index}] = p.Log.FirstDirtyOffset()
			}
		}
	}
	return out
}
