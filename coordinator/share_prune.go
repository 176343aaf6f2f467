package coordinator

import "go.uber.org/zap"

// The share coordinator's background work: its two timers, as Kafka's ShareCoordinatorService
// sets them up: every share.coordinator.state.topic.prune.interval.ms the
// records of each partition of __share_group_state below its
// share-partitions' last snapshots are deleted (the topic is not
// compacted: this is what keeps it small), and every
// share.coordinator.cold.partition.snapshot.interval.ms the share-partitions
// not snapshotted for that long get a snapshot of their state, so their
// old ShareUpdates can go too.

// runTimers runs both timers until Close.
func (c *ShareCoordinator) runTimers() {
	defer c.wg.Done()
	prune := c.clock.NewTicker(c.cfg.PruneInterval)
	defer prune.Stop()
	cold := c.clock.NewTicker(c.cfg.ColdSnapshotInterval)
	defer cold.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-prune.Chan():
			c.pruneRecords()
		case <-cold.Chan():
			c.snapshotColdPartitions()
		}
	}
}

// pruneRecords is performRecordPruning for every loaded partition: the
// log start moves to the partition's redundant offset unless it was
// pruned there already. A failure is retried at the next tick.
func (c *ShareCoordinator) pruneRecords() {
	for _, sl := range c.sortedSlots() {
		sl.mu.Lock()
		offset, ok := sl.sm.redundantOffset()
		live := !sl.loading && !sl.resigned
		sl.mu.Unlock()
		if !ok || !live || c.pruned[sl.partition] == offset {
			continue
		}
		start, err := c.logs.DeleteRecords(ShareStateTopic, sl.partition, offset)
		if err != nil {
			c.logger.Warn("pruning "+ShareStateTopic+" failed; retrying at the next interval",
				zap.Int32("partition", sl.partition), zap.Int64("offset", offset), zap.Error(err))
			continue
		}
		c.pruned[sl.partition] = offset
		c.logger.Debug("pruned "+ShareStateTopic, zap.Int32("partition", sl.partition), zap.Int64("log_start_offset", start))
	}
}

// snapshotColdPartitions appends each loaded partition's cold snapshots
// (shareStateShard.coldSnapshots) in one batch.
func (c *ShareCoordinator) snapshotColdPartitions() {
	for _, sl := range c.sortedSlots() {
		c.snapshotCold(sl)
	}
}

func (c *ShareCoordinator) snapshotCold(sl *shareSlot) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.loading || sl.resigned {
		return
	}
	now := c.clock.Now()
	recs := sl.sm.coldSnapshots(now, c.cfg.ColdSnapshotInterval)
	if len(recs) == 0 {
		return
	}
	if err := c.appendState(sl, recs, now); err != nil {
		c.logger.Warn("cold-partition snapshots of "+ShareStateTopic+" failed; retrying at the next interval",
			zap.Int32("partition", sl.partition), zap.Error(err))
	}
}

// OnTopicsDeleted removes the state of the deleted topics' share-partitions
// from every partition this node leads, as Kafka's onTopicsDeleted, in the
// background: the metadata publisher that calls it does not wait for the
// appends.
func (c *ShareCoordinator) OnTopicsDeleted(ids [][16]byte) {
	deleted := make(map[[16]byte]bool, len(ids))
	for _, id := range ids {
		deleted[id] = true
	}
	slots := c.sortedSlots()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for _, sl := range slots {
			c.cleanupTopics(sl, deleted)
		}
	}()
}

func (c *ShareCoordinator) cleanupTopics(sl *shareSlot, deleted map[[16]byte]bool) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.loading || sl.resigned {
		return
	}
	recs := sl.sm.cleanupTopics(deleted)
	if len(recs) == 0 {
		return
	}
	if err := c.appendState(sl, recs, c.clock.Now()); err != nil {
		c.logger.Warn("removing the share state of deleted topics from "+ShareStateTopic+" failed",
			zap.Int32("partition", sl.partition), zap.Int("records", len(recs)), zap.Error(err))
	}
}
