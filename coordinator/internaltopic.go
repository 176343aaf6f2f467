package coordinator

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/storage"
)

// CreateTopic creates a topic of partitions partitions with configs, the
// way every topic is created (the broker proposes it to the metadata
// image, which storage makes durable), and returns it as storage hosts it.
type CreateTopic func(name string, partitions int32, configs map[string]string) (*storage.Topic, error)

// appendTimeout bounds how long a coordinator's write waits for the
// partition's in-sync replicas, as Kafka's offsets.commit.timeout.ms (5000).
const appendTimeout = 5 * time.Second

// internalTopic is one of the coordinators' internal topics
// (__consumer_offsets, __transaction_state). It is opened at start when an
// earlier run created it, and is otherwise created on first need, as Kafka
// creates it on the first FindCoordinator.
type internalTopic struct {
	name       string
	partitions int32             // created with (offsets.topic.num.partitions, ...)
	configs    map[string]string // created with
	logs       *storage.Manager
	create     CreateTopic
	logger     *zap.Logger

	// topic is set once the topic exists; its partitions are looked up
	// in it each time, as a cluster node hosts the ones it is a replica
	// of, which change.
	topic atomic.Pointer[storage.Topic]
	mu    sync.Mutex // makes creation happen once; a failure is retried by the next caller
}

// adopt publishes t as the topic.
func (it *internalTopic) adopt(t *storage.Topic) {
	if n := t.PartitionCount(); n != it.partitions {
		it.logger.Warn("existing "+it.name+" has a different partition count than configured; using the topic's",
			zap.Int32("partitions", n), zap.Int32("configured", it.partitions))
	}
	it.topic.Store(t)
}

// adoptExisting adopts the topic storage holds, unless it is adopted or
// being created here (ensure adopts it then): on a cluster node that did
// not create it, the first partition the image elects it for.
func (it *internalTopic) adoptExisting() {
	if it.topic.Load() != nil || !it.mu.TryLock() {
		return
	}
	defer it.mu.Unlock()
	if t := it.logs.Topic(it.name); t != nil && it.topic.Load() == nil {
		it.adopt(t)
	}
}

// ensure makes sure the topic exists: once, even under concurrent callers.
// A topic created meanwhile by other means (Metadata auto-creation,
// CreateTopics) is adopted.
func (it *internalTopic) ensure() error {
	if it.topic.Load() != nil {
		return nil
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.topic.Load() != nil {
		return nil
	}
	t := it.logs.Topic(it.name)
	if t == nil {
		start := time.Now()
		var err error
		t, err = it.create(it.name, it.partitions, it.configs)
		if err != nil {
			if t = it.logs.Topic(it.name); t == nil {
				return fmt.Errorf("create %s with %d partitions: %w", it.name, it.partitions, err)
			}
		} else {
			it.logger.Info("created "+it.name, zap.Int32("partitions", it.partitions), zap.Duration("duration", time.Since(start)))
		}
	}
	it.adopt(t)
	return nil
}

// current is the topic, nil before it exists.
func (it *internalTopic) current() *storage.Topic { return it.topic.Load() }

// partition is partition i of the topic: of the adopted topic, or of the
// one storage holds while it is being created (its partitions are elected
// before ensure adopts it).
func (it *internalTopic) partition(i int32) (*storage.Partition, error) {
	t := it.current()
	if t == nil {
		t = it.logs.Topic(it.name)
	}
	var p *storage.Partition
	if t != nil {
		p = t.Partition(i)
	}
	if p == nil {
		return nil, fmt.Errorf("%s-%d does not exist or is not hosted here", it.name, i)
	}
	return p, nil
}

// partitionOf is the partition holding key's records: by the topic's
// partition count, or the configured one before the topic exists (the
// count it will be created with).
func (it *internalTopic) partitionOf(key string) int32 {
	var n int32
	if t := it.current(); t != nil {
		n = t.PartitionCount()
	}
	if n == 0 {
		n = it.partitions
	}
	return partitionFor(key, n)
}
