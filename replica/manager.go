package replica

import (
	"fmt"
	"sync"

	"github.com/strata-io/strata/storage"
)

// Manager holds this node's replica of every partition of a log dir, as
// Kafka's ReplicaManager: every writer finds a partition's replica here.
// Today this node leads every partition and is its only replica.
type Manager struct {
	nodeID int32
	parts  sync.Map // *storage.Partition → *Partition
}

// NewManager makes this node (nodeID) the leader of every partition logs
// holds, which moves each high watermark to its log end offset, as Kafka's
// makeLeader after the logs are loaded.
func NewManager(logs *storage.Manager, nodeID int32) (*Manager, error) {
	m := &Manager{nodeID: nodeID}
	for _, t := range logs.Topics() {
		for _, sp := range t.Partitions() {
			if _, err := m.Partition(sp); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Partition returns this node's replica of sp, making this node its leader
// on first use (a partition created after NewManager).
func (m *Manager) Partition(sp *storage.Partition) (*Partition, error) {
	if v, ok := m.parts.Load(sp); ok {
		return v.(*Partition), nil
	}
	p, err := NewLeader(sp.Log, sp, m.nodeID)
	if err != nil {
		return nil, fmt.Errorf("partition %s-%d: %w", sp.Topic, sp.Index, err)
	}
	v, _ := m.parts.LoadOrStore(sp, p)
	return v.(*Partition), nil
}

// StopReplicas drops this node's replicas of parts, partitions of a deleted
// topic, as Kafka's ReplicaManager.stopReplicas does when one is deleted.
func (m *Manager) StopReplicas(parts []*storage.Partition) {
	for _, sp := range parts {
		m.parts.Delete(sp)
	}
}
