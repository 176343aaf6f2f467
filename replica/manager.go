package replica

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage"
)

// Manager holds this node's replica of every partition of a log dir, as
// Kafka's ReplicaManager: every writer finds a partition's replica here.
// The metadata image decides which partitions this node leads and at
// which leader epoch (MakeLeader, MakeFollower: the broker's publisher
// tells it of each change, as Kafka's applyDelta). On a single node
// (NewManager) a partition no change named yet is led by this node from
// its first use; in a cluster (NewClusterManager) only the image makes a
// leader.
type Manager struct {
	nodeID int32
	parts  sync.Map // *storage.Partition → *Partition; read without mu
	// leadUnnamed makes this node the leader of a partition on its first
	// use: on one node, the only replica of every partition.
	leadUnnamed bool

	// mu serializes changes of parts and followed, so a first use never
	// leads a partition another node was just given.
	mu sync.Mutex
	// followed are the partitions another node leads: writers are refused
	// NOT_LEADER_OR_FOLLOWER.
	followed map[*storage.Partition]bool
}

// NewManager makes this node (nodeID) the leader of every partition logs
// holds, which moves each high watermark to its log end offset, as Kafka's
// makeLeader after the logs are loaded.
func NewManager(logs *storage.Manager, nodeID int32) (*Manager, error) {
	m := &Manager{nodeID: nodeID, leadUnnamed: true, followed: map[*storage.Partition]bool{}}
	for _, t := range logs.Topics() {
		for _, sp := range t.Partitions() {
			if _, err := m.Partition(sp); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// NewClusterManager leads nothing until the metadata image makes this
// node a partition's leader (MakeLeader), as a broker of a cluster waits
// for its controller's word.
func NewClusterManager(nodeID int32) *Manager {
	return &Manager{nodeID: nodeID, followed: map[*storage.Partition]bool{}}
}

// Partition returns this node's replica of sp as its leader, on a single
// node making this node its leader on first use (a partition created
// after NewManager); kerr.NotLeaderForPartition when another node leads
// it, or, in a cluster, when no image made this node its leader.
func (m *Manager) Partition(sp *storage.Partition) (*Partition, error) {
	if v, ok := m.parts.Load(sp); ok {
		return v.(*Partition), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.parts.Load(sp); ok {
		return v.(*Partition), nil
	}
	if m.followed[sp] || !m.leadUnnamed {
		return nil, fmt.Errorf("partition %s-%d is led by another broker: %w", sp.Topic, sp.Index, kerr.NotLeaderForPartition)
	}
	p, err := NewLeader(sp.Log, sp, m.nodeID)
	if err != nil {
		return nil, fmt.Errorf("partition %s-%d: %w", sp.Topic, sp.Index, err)
	}
	m.parts.Store(sp, p)
	return p, nil
}

// MakeLeader makes this node sp's leader at epoch, as Kafka's
// Partition.makeLeader: a newer epoch is recorded in the log's
// leader-epoch-checkpoint from its end offset on and stamped on what is
// appended from now; the high watermark moves to the log end offset. A
// replica that already leads at epoch is kept.
func (m *Manager) MakeLeader(sp *storage.Partition, epoch int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.parts.Load(sp); ok && epoch == sp.LeaderEpoch() {
		return nil
	}
	if epoch > sp.LeaderEpoch() {
		if err := sp.Log.AssignLeaderEpoch(epoch); err != nil {
			return fmt.Errorf("partition %s-%d: leader epoch %d: %w", sp.Topic, sp.Index, epoch, err)
		}
		sp.SetLeaderEpoch(epoch)
	}
	p, err := NewLeader(sp.Log, sp, m.nodeID)
	if err != nil {
		return fmt.Errorf("partition %s-%d: %w", sp.Topic, sp.Index, err)
	}
	delete(m.followed, sp)
	m.parts.Store(sp, p)
	return nil
}

// MakeFollower records that another node leads sp, as Kafka's
// Partition.makeFollower: writers are refused from now on. The log stays
// as it is (no fetcher follows the leader yet).
func (m *Manager) MakeFollower(sp *storage.Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.followed[sp] = true
	m.parts.Delete(sp)
}

// StopReplicas drops this node's replicas of parts, partitions of a deleted
// topic, as Kafka's ReplicaManager.stopReplicas does when one is deleted.
func (m *Manager) StopReplicas(parts []*storage.Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sp := range parts {
		m.parts.Delete(sp)
		delete(m.followed, sp)
	}
}
