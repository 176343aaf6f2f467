package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/kafkaerr"
)

// maxTopicNameLen is Kafka's Topic.MAX_NAME_LENGTH: a partition directory
// name (<topic>-<partition>) plus the deletion suffix must fit in 255 bytes.
const maxTopicNameLen = 249

// ValidateTopicName applies Kafka's Topic.validate rules:
// kerr.InvalidTopicException with Kafka's message for a name it refuses.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return kafkaerr.New(kerr.InvalidTopicException, "Topic name is invalid: the empty string is not allowed")
	case name == "." || name == "..":
		return kafkaerr.New(kerr.InvalidTopicException, "Topic name is invalid: '%s' is not allowed", name)
	case len(name) > maxTopicNameLen:
		return kafkaerr.New(kerr.InvalidTopicException, "Topic name is invalid: the length of '%s' is longer than the max allowed length %d",
			name, maxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return kafkaerr.New(kerr.InvalidTopicException,
				"Topic name is invalid: '%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// unifyTopicName maps names that collide in metric names: Kafka refuses a
// topic whose name equals an existing one after replacing '.' with '_'.
func unifyTopicName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// CreateTopic creates a topic with the given number of partitions, all empty,
// under a new random id.
// Errors: kerr.InvalidTopicException (bad name, or a name colliding with an
// existing one once '.' is read as '_'), kerr.TopicAlreadyExists,
// kerr.InvalidPartitions (< 1), kerr.InvalidConfig. With validateOnly nothing
// is created and the returned Topic (ID zero, no partitions) only describes
// the request.
func (m *Manager) CreateTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (*Topic, error) {
	return m.createTopic(name, [16]byte{}, partitions, configs, validateOnly, nil)
}

// CreateTopicWithID creates a topic under the id the metadata image gave
// it, as CreateTopic does (the same checks and errors), with logs for the
// partitions hosts accepts (every one when hosts is nil); the id must be
// unused (kerr.InvalidTopicException otherwise) and not zero.
func (m *Manager) CreateTopicWithID(name string, id [16]byte, partitions int32, configs map[string]string, hosts func(int32) bool) (*Topic, error) {
	if id == ([16]byte{}) {
		return nil, fmt.Errorf("topic %s: the zero topic id: %w", name, kerr.InvalidTopicException)
	}
	return m.createTopic(name, id, partitions, configs, false, hosts)
}

// createTopic is CreateTopic under id, or a new one when id is zero,
// hosting the partitions hosts accepts (all when nil).
func (m *Manager) createTopic(name string, id [16]byte, partitions int32, configs map[string]string, validateOnly bool, hosts func(int32) bool) (*Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return nil, err
	}
	if partitions < 1 {
		return nil, fmt.Errorf("topic %s: number of partitions must be larger than 0, got %d: %w", name, partitions, kerr.InvalidPartitions)
	}
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	_, exists := m.topics[name]
	var collides []string
	for other := range m.topics {
		if other != name && unifyTopicName(other) == unifyTopicName(name) {
			collides = append(collides, other)
		}
	}
	m.mu.RUnlock()
	if exists {
		return nil, kafkaerr.New(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	if len(collides) > 0 {
		return nil, kafkaerr.New(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, collides[0])
	}
	switch {
	case validateOnly:
	case id == [16]byte{}:
		var err error
		if id, err = m.newTopicID(); err != nil {
			return nil, err
		}
	case m.TopicByID(id) != nil:
		return nil, fmt.Errorf("topic %s: id %s is taken: %w", name, uuidString(id), kerr.InvalidTopicException)
	}
	t, err := m.newTopic(name, id, configs)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", name, err)
	}
	if validateOnly {
		return t, nil
	}
	parts := make([]*Partition, partitions)
	t.parts.Store(&parts)
	if err := m.addPartitions(t, 0, int(partitions), hosts); err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.topics[name] = t
	m.byID[id] = t
	m.mu.Unlock()
	call(m.events.OnTopicCreated, TopicInfo{Topic: name, ID: id, Partitions: partitions})
	return t, nil
}

// newTopicID draws random ids until one is unused.
func (m *Manager) newTopicID() ([16]byte, error) {
	for {
		id, err := newUUID()
		if err != nil {
			return id, err
		}
		if m.TopicByID(id) == nil {
			return id, nil
		}
	}
}

// addPartitions opens empty logs for the partitions of [from, to) of t
// that hosts accepts (all when nil), whose current snapshot must already
// have length to, then records the new partition count in the registry.
// On failure the new logs are closed and their directories removed. Call
// under adminMu.
func (m *Manager) addPartitions(t *Topic, from, to int, hosts func(int32) bool) error {
	var added []int32
	for i := from; i < to; i++ {
		if hosts == nil || hosts(int32(i)) {
			added = append(added, int32(i))
		}
	}
	for _, i := range added {
		if err := m.claimPartitionDir(t, i); err != nil {
			return err
		}
	}
	opens := make([]partitionOpen, 0, len(added))
	for _, i := range added {
		opens = append(opens, partitionOpen{topic: t, index: i, opts: OpenOptions{RecoveryPoint: 0, CleanShutdown: true}, create: true})
	}
	err := m.openPartitions(opens)
	if err == nil {
		err = m.writeRegistry(m.registryWith(t, to))
		if err != nil {
			m.discardPartitions((*t.parts.Load())[from:to])
		}
	}
	if err != nil {
		for _, i := range added {
			if rerr := m.fsys.RemoveAll(partitionDir(m.dir, t.Name, i)); rerr != nil {
				m.logger.Warn("cleanup after failed create", zap.String("topic", t.Name), zap.Int32("partition", i), zap.Error(rerr))
			}
		}
		return fmt.Errorf("topic %s: %w", t.Name, storageFailure(err))
	}
	return nil
}

// registryWith returns the registry entries of all topics, with t (new or
// existing) at the given partition count.
func (m *Manager) registryWith(t *Topic, partitions int) []registryTopic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	reg := make([]registryTopic, 0, len(m.topics)+1)
	for _, other := range m.topics {
		if t == nil || other.Name != t.Name {
			reg = append(reg, registryEntry(other, int(other.PartitionCount())))
		}
	}
	if t != nil && partitions > 0 {
		reg = append(reg, registryEntry(t, partitions))
	}
	return reg
}

// discardPartitions closes the logs of partitions that never became visible.
func (m *Manager) discardPartitions(parts []*Partition) {
	for _, p := range parts {
		if p == nil {
			continue
		}
		if err := p.Log.Close(); err != nil {
			m.logger.Warn("close discarded partition", zap.String("topic", p.Topic), zap.Int32("partition", p.Index), zap.Error(err))
		}
	}
}

// CreatePartitions grows a topic to total partitions; new partitions start
// empty at offset 0. kerr.UnknownTopicOrPartition if the topic does not
// exist, kerr.InvalidPartitions if total does not exceed the current count.
func (m *Manager) CreatePartitions(name string, total int32, validateOnly bool) error {
	return m.createPartitions(name, total, validateOnly, nil)
}

// CreatePartitionsHosting grows a topic to total partitions as
// CreatePartitions does, with logs for the new partitions hosts accepts.
func (m *Manager) CreatePartitionsHosting(name string, total int32, hosts func(int32) bool) error {
	return m.createPartitions(name, total, false, hosts)
}

func (m *Manager) createPartitions(name string, total int32, validateOnly bool, hosts func(int32) bool) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	t := m.Topic(name)
	if t == nil {
		return fmt.Errorf("topic %s: %w", name, kerr.UnknownTopicOrPartition)
	}
	old := *t.parts.Load()
	if int(total) <= len(old) {
		return fmt.Errorf("topic %s currently has %d partitions, %d would not be an increase: %w",
			name, len(old), total, kerr.InvalidPartitions)
	}
	if validateOnly {
		return nil
	}
	grown := make([]*Partition, total)
	copy(grown, old)
	// Readers keep using old until the grown slice is published below; the
	// new entries are filled in by openPartitions through this pointer.
	staging := &Topic{Name: t.Name, ID: t.ID, Configs: t.ConfigMap(), cfg: t.LogConfig()}
	staging.parts.Store(&grown)
	if err := m.addPartitions(staging, len(old), int(total), hosts); err != nil {
		return err
	}
	t.parts.Store(&grown)
	call(m.events.OnPartitionsAdded, PartitionsAddedInfo{Topic: name, From: len(old), To: total})
	return nil
}

// DeleteTopic removes a topic: it leaves the registry first, listed as
// deleted (so a crash can neither resurrect it nor lose track of its
// directories), then its logs are closed and each partition directory is
// renamed to <topic>-<p>.<hex>-delete, as Kafka does, and removed; last the
// registry forgets it. kerr.UnknownTopicOrPartition if there is no such
// topic.
func (m *Manager) DeleteTopic(name string) error {
	m.adminMu.Lock()
	defer m.adminMu.Unlock()
	if err := m.ensureOpen(); err != nil {
		return err
	}
	t := m.Topic(name)
	if t == nil {
		return fmt.Errorf("topic %s: %w", name, kerr.UnknownTopicOrPartition)
	}
	entry := registryEntry(t, int(t.PartitionCount()))
	m.deleting = append(m.deleting, entry)
	if err := m.writeRegistry(m.registryWith(t, 0)); err != nil {
		m.deleting = m.deleting[:len(m.deleting)-1]
		return fmt.Errorf("delete topic %s: %w", name, storageFailure(err))
	}
	m.mu.Lock()
	delete(m.topics, name)
	delete(m.byID, t.ID)
	m.mu.Unlock()
	var errs []error
	if err := m.dropFromCheckpoints(name); err != nil {
		errs = append(errs, err)
	}
	for _, p := range t.Partitions() {
		if err := p.Log.Close(); err != nil {
			m.logger.Warn("close deleted partition", zap.String("topic", p.Topic), zap.Int32("partition", p.Index), zap.Error(err))
		}
		if err := m.removePartitionDir(p.Topic, p.Index); err != nil {
			errs = append(errs, err)
		}
	}
	if err := m.fsys.SyncDir(m.dir); err != nil {
		errs = append(errs, fmt.Errorf("delete topic %s: %w", name, err))
	}
	if len(errs) == 0 {
		m.deleting = slices.DeleteFunc(m.deleting, func(d registryTopic) bool { return d.ID == entry.ID })
		if err := m.writeRegistry(m.registryWith(nil, 0)); err != nil {
			m.logger.Warn("cannot drop a finished deletion from the topic registry; the next start does", zap.String("topic", name), zap.Error(err))
		}
	}
	call(m.events.OnTopicDeleted, TopicInfo{Topic: name, ID: t.ID})
	return storageFailure(errors.Join(errs...))
}

// dropFromCheckpoints removes a deleted topic from the offset checkpoint
// files, as Kafka does, so that a topic later created with the same name can
// not inherit its recovery point after a crash.
func (m *Manager) dropFromCheckpoints(topic string) error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	for _, name := range []string{recoveryPointCheckpointFile, logStartOffsetCheckpointFile, cleanerCheckpointFile} {
		path := filepath.Join(m.dir, name)
		cp, err := readOffsetCheckpoint(m.fsys, path)
		if err != nil {
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
		n := len(cp)
		for tp := range cp {
			if tp.Topic == topic {
				delete(cp, tp)
			}
		}
		if len(cp) == n {
			continue
		}
		if err := writeOffsetCheckpoint(m.fsys, path, cp); err != nil {
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
	}
	return nil
}
