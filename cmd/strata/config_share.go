package main

import (
	"math"

	"github.com/strata-io/strata/coordinator"
)

// shareKeys are the share coordinator's keys that a single node reads too,
// with Kafka 4.4's ranges (ShareCoordinatorConfig). Its replication factor
// is a cluster key (clusterKeys). The other share.coordinator.* keys tune
// Kafka's coordinator runtime (threads, buffers, linger, compression) and
// are ignored.
var shareKeys = []string{
	"share.coordinator.state.topic.num.partitions", "share.coordinator.state.topic.segment.bytes",
	"share.coordinator.state.topic.min.isr", "share.coordinator.snapshot.update.records.per.snapshot",
	"share.coordinator.write.timeout.ms", "share.coordinator.state.topic.prune.interval.ms",
	"share.coordinator.cold.partition.snapshot.interval.ms",
}

// loadShareSettings reads shareKeys into s.Shares; a key left out keeps
// Kafka's default.
func loadShareSettings(p *propReader, s *settings) {
	c := &s.Shares
	if n, ok := p.bounded("share.coordinator.state.topic.num.partitions", 1, math.MaxInt32); ok {
		c.StatePartitions = int32(n)
	}
	if n, ok := p.bounded("share.coordinator.state.topic.segment.bytes", 1, math.MaxInt32); ok {
		c.StateSegmentBytes = int32(n)
	}
	if n, ok := p.bounded("share.coordinator.state.topic.min.isr", 1, math.MaxInt16); ok {
		c.StateMinISR = int(n)
	}
	if n, ok := p.bounded("share.coordinator.snapshot.update.records.per.snapshot", 0, 500); ok {
		c.SnapshotUpdateRecords = int(n)
		if n == 0 {
			c.SnapshotUpdateRecords = coordinator.SnapshotEveryWrite
		}
	}
	p.millis(&c.WriteTimeout, "share.coordinator.write.timeout.ms", 1, math.MaxInt32)
	p.millis(&c.PruneInterval, "share.coordinator.state.topic.prune.interval.ms", 1, math.MaxInt32)
	p.millis(&c.ColdSnapshotInterval, "share.coordinator.cold.partition.snapshot.interval.ms", 1, math.MaxInt32)
}
