package replica

import (
	"fmt"
	"sync"
	"time"

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
	maxLag      time.Duration       // replica.lag.time.max.ms; 0 on one node
	now         func() time.Time    // nil on one node
	eligible    func(id int32) bool // whether a broker's replica may be in an ISR; nil: every one

	// mu serializes changes of parts and followed, so a first use never
	// leads a partition another node was just given.
	mu sync.Mutex
	// followed are the partitions another node leads, this node's replica
	// of each a follower: writers are refused NOT_LEADER_OR_FOLLOWER.
	followed map[*storage.Partition]*Partition
}

// NewManager makes this node (nodeID) the leader of every partition logs
// holds, which moves each high watermark to its log end offset, as Kafka's
// makeLeader after the logs are loaded.
func NewManager(logs *storage.Manager, nodeID int32) (*Manager, error) {
	m := &Manager{nodeID: nodeID, leadUnnamed: true, followed: map[*storage.Partition]*Partition{}}
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
// for its controller's word. Its leaders count a follower as caught up
// within maxLag (replica.lag.time.max.ms) of now, the clock followers'
// fetches are timed on.
func NewClusterManager(nodeID int32, maxLag time.Duration, now func() time.Time) *Manager {
	return &Manager{nodeID: nodeID, followed: map[*storage.Partition]*Partition{}, maxLag: maxLag, now: now}
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
	if m.followed[sp] != nil || !m.leadUnnamed {
		return nil, fmt.Errorf("partition %s-%d is led by another broker: %w", sp.Topic, sp.Index, kerr.NotLeaderForPartition)
	}
	p, err := NewLeader(sp.Log, sp, m.nodeID)
	if err != nil {
		return nil, fmt.Errorf("partition %s-%d: %w", sp.Topic, sp.Index, err)
	}
	m.parts.Store(sp, p)
	return p, nil
}

// SetISREligible sets whether a broker's replica may be in an ISR (Kafka's
// isReplicaIsrEligible: a fenced broker's may not), for the partitions
// this node leads from now on; it is called before any.
func (m *Manager) SetISREligible(eligible func(id int32) bool) {
	m.mu.Lock()
	m.eligible = eligible
	m.mu.Unlock()
}

// MakeLeader makes this node sp's leader at epoch with the image's
// replicas and ISR (l; none, or a single node: this node alone), as Kafka's
// Partition.makeLeader: a newer epoch is recorded in the log's
// leader-epoch-checkpoint from its end offset on and stamped on what is
// appended from now; the followers' states start over. A replica that
// already leads is kept: at epoch it takes the image's ISR
// (UpdateLeadership), at a newer epoch it leads again (LeadAgain). In a
// cluster the replica enforces the topic's min.insync.replicas.
func (m *Manager) MakeLeader(sp *storage.Partition, epoch int32, l Leadership) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(l.Replicas) == 0 || m.leadUnnamed {
		// A single node is the only replica of every partition.
		l.Replicas, l.ISR = []int32{m.nodeID}, []int32{m.nodeID}
	}
	v, leading := m.parts.Load(sp)
	if leading && epoch == sp.LeaderEpoch() {
		return v.(*Partition).UpdateLeadership(l)
	}
	if epoch > sp.LeaderEpoch() || sp.Log.LatestEpoch() < epoch {
		if err := sp.Log.AssignLeaderEpoch(epoch); err != nil {
			return fmt.Errorf("partition %s-%d: leader epoch %d: %w", sp.Topic, sp.Index, epoch, err)
		}
		sp.SetLeaderEpoch(epoch)
	}
	if leading {
		return v.(*Partition).LeadAgain(l)
	}
	var minISR func() int
	if !m.leadUnnamed {
		minISR = sp.Log.MinInSyncReplicas
	}
	p, err := NewLeaderOf(sp.Log, sp, m.nodeID, l, minISR)
	if err != nil {
		return fmt.Errorf("partition %s-%d: %w", sp.Topic, sp.Index, err)
	}
	p.maxLag, p.now, p.eligible = m.maxLag, m.now, m.eligible
	delete(m.followed, sp)
	m.parts.Store(sp, p)
	return nil
}

// MakeFollower records that another node leads sp at epoch, as Kafka's
// Partition.makeFollower: writers are refused from now on, and this
// node's replica of it (Follower) takes the leader's batches. The log
// stays as it is: the fetcher truncates it where it diverges.
func (m *Manager) MakeFollower(sp *storage.Partition, epoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch > sp.LeaderEpoch() {
		sp.SetLeaderEpoch(epoch)
	}
	if m.followed[sp] == nil {
		m.followed[sp] = NewFollower(sp.Log, m.nodeID)
	}
	if v, ok := m.parts.LoadAndDelete(sp); ok {
		v.(*Partition).Resign()
	}
}

// Follower is this node's replica of sp as a follower, ok false when this
// node does not follow it.
func (m *Manager) Follower(sp *storage.Partition) (*Partition, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.followed[sp]
	return p, p != nil
}

// Leader is this node's replica of sp as its leader, ok false when this
// node does not lead it (unlike Partition, it never makes a leader).
func (m *Manager) Leader(sp *storage.Partition) (*Partition, bool) {
	v, ok := m.parts.Load(sp)
	if !ok {
		return nil, false
	}
	return v.(*Partition), true
}

// StopReplicas drops this node's replicas of parts, partitions of a deleted
// topic or no longer assigned to this node, as Kafka's
// ReplicaManager.stopReplicas.
func (m *Manager) StopReplicas(parts []*storage.Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sp := range parts {
		if v, ok := m.parts.LoadAndDelete(sp); ok {
			v.(*Partition).Resign()
		}
		delete(m.followed, sp)
	}
}

// Leaders calls fn with each partition this node leads and its replica.
func (m *Manager) Leaders(fn func(sp *storage.Partition, p *Partition)) {
	m.parts.Range(func(k, v any) bool {
		fn(k.(*storage.Partition), v.(*Partition))
		return true
	})
}
