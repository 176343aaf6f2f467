package quorum

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
)

// cluster is n quorum nodes in one process, on raft's in-memory transport,
// each with its own dir.
type cluster struct {
	t      *testing.T
	cfg    Config // the timing and compaction every node gets
	voters []Voter
	nodes  []*node
}

type node struct {
	id    int32
	dir   string
	trans *raft.InmemTransport
	store *Store // nil while stopped
	log   *recorder
}

// recorder records what a node's subscriber was told.
type recorder struct {
	mu      sync.Mutex
	changes [][2]*metadata.Image
}

func (r *recorder) record(old, new *metadata.Image) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, [2]*metadata.Image{old, new})
}

func (r *recorder) all() [][2]*metadata.Image {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][2]*metadata.Image(nil), r.changes...)
}

func newCluster(t *testing.T, n int, cfg Config) *cluster {
	c := &cluster{t: t, cfg: cfg}
	for i := range n {
		c.voters = append(c.voters, Voter{ID: int32(i + 1), Addr: fmt.Sprintf("node-%d", i+1)})
	}
	base := t.TempDir()
	for _, v := range c.voters {
		c.nodes = append(c.nodes, &node{id: v.ID, dir: filepath.Join(base, fmt.Sprint(v.ID), DirName)})
	}
	for i := range c.nodes {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

// start opens node i from its dir, on a new transport connected to every
// running node's.
func (c *cluster) start(i int) {
	c.t.Helper()
	n := c.nodes[i]
	_, n.trans = raft.NewInmemTransport(raft.ServerAddress(c.voters[i].Addr))
	for _, o := range c.nodes {
		if o != n && o.store != nil {
			n.trans.Connect(o.trans.LocalAddr(), o.trans)
			o.trans.Connect(n.trans.LocalAddr(), n.trans)
		}
	}
	cfg := c.cfg
	cfg.NodeID, cfg.Dir, cfg.Voters, cfg.Transport = n.id, n.dir, c.voters, n.trans
	cfg.Logger = zaptest.NewLogger(c.t)
	s, err := Open(cfg)
	if err != nil {
		c.t.Fatalf("open node %d: %v", n.id, err)
	}
	n.store, n.log = s, &recorder{}
	s.Subscribe(n.log.record)
}

// stop shuts node i down and cuts it off.
func (c *cluster) stop(i int) {
	c.t.Helper()
	n := c.nodes[i]
	if n.store == nil {
		return
	}
	if err := n.store.Close(); err != nil {
		c.t.Errorf("close node %d: %v", n.id, err)
	}
	n.store = nil
	for _, o := range c.nodes {
		if o.trans != nil && o != n {
			o.trans.Disconnect(n.trans.LocalAddr())
		}
	}
	n.trans.Close()
}

// leader waits for a running node to lead and returns its index.
func (c *cluster) leader() int {
	c.t.Helper()
	leader := -1
	waitFor(c.t, "a leader", func() bool {
		leader = -1
		for i, n := range c.nodes {
			if n.store != nil && n.store.raft.State() == raft.Leader {
				leader = i
			}
		}
		return leader >= 0
	})
	return leader
}

// waitFor polls cond until it holds, failing the test after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitConverged waits until every running node's image has the topics
// named, and no other.
func (c *cluster) waitConverged(names ...string) {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.store == nil {
			continue
		}
		waitFor(c.t, fmt.Sprintf("node %d to have topics %v", n.id, names), func() bool {
			return hasExactly(n.store.Image(), names)
		})
	}
}

func hasExactly(img *metadata.Image, names []string) bool {
	if img.Topics.Len() != len(names) {
		return false
	}
	for _, name := range names {
		if img.Topics.ByName(name) == nil {
			return false
		}
	}
	return true
}

func topicNames(img *metadata.Image) []string {
	var out []string
	for _, t := range img.Topics.All() {
		out = append(out, t.Name)
	}
	return out
}

// createTopic is the records of a topic with one partition led by 1.
func createTopic(name string) []metadata.Record {
	id := [16]byte{15: 1}
	copy(id[:], name)
	return []metadata.Record{
		metadata.TopicRecord{Name: name, TopicID: id},
		metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
	}
}

// testTiming is raft's timing shortened so that an election takes a few
// hundred milliseconds, slack enough for a loaded machine under -race.
var testTiming = Config{HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond, ApplyTimeout: 10 * time.Second}

// create commits topic name through whichever node leads, again if
// leadership moves while it does; it returns the leader's index and the
// image the change made. A retry refused because the first attempt was
// committed after all counts as committed.
func (c *cluster) create(name string) (int, *metadata.Image) {
	c.t.Helper()
	var (
		l   int
		img *metadata.Image
		err error
	)
	waitFor(c.t, "topic "+name+" to be committed", func() bool {
		l = c.leader()
		img, err = c.nodes[l].store.Propose(createTopic(name)...)
		if errors.Is(err, metadata.ErrInvalidRecord) && img.Topics.ByName(name) != nil {
			err = nil
		}
		return !errors.Is(err, ErrNotController)
	})
	if err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
	return l, img
}

// TestNextIndexIsTheChangesIndex checks that NextIndex, read in decide,
// is the log index the change is committed at (a broker's epoch), and that
// IsLeader, LeaderAddr and AppliedIndex say where the quorum is.
func TestNextIndexIsTheChangesIndex(t *testing.T) {
	c := newCluster(t, 3, testTiming)
	li := c.leader()
	l := c.nodes[li].store
	var wants []int64
	for i := range 3 {
		var want int64
		if _, err := l.Update(func(*metadata.Image) ([]metadata.Record, error) {
			want = l.NextIndex()
			return []metadata.Record{metadata.RegisterBrokerRecord{BrokerID: int32(i), BrokerEpoch: want}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if got := l.AppliedIndex(); got < want {
			t.Fatalf("change %d: NextIndex %d in decide, applied only up to %d once committed", i, want, got)
		}
		wants = append(wants, want)
	}
	if !l.IsLeader() {
		t.Fatal("the leader does not say it leads")
	}
	addr := c.voters[c.leader()].Addr
	for _, n := range c.nodes {
		if n.store == l {
			continue
		}
		if n.store.IsLeader() {
			t.Errorf("follower %d says it leads", n.id)
		}
		waitFor(t, fmt.Sprintf("node %d to know the leader", n.id), func() bool { return n.store.LeaderAddr() == addr })
	}
	// In the leader's log, each change is the entry at its NextIndex.
	dir := c.nodes[li].dir
	c.stop(li)
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	for i, want := range wants {
		var e raft.Log
		if err := bolt.GetLog(uint64(want), &e); err != nil {
			t.Fatalf("change %d: log entry %d: %v", i, want, err)
		}
		recs, err := metadata.DecodeBatch(e.Data)
		if e.Type != raft.LogCommand || err != nil || len(recs) != 1 {
			t.Fatalf("change %d: log entry %d is type %v, records %v (%v)", i, want, e.Type, recs, err)
		}
		if r, ok := recs[0].(metadata.RegisterBrokerRecord); !ok || r.BrokerID != int32(i) {
			t.Fatalf("change %d: log entry %d holds %#v", i, want, recs[0])
		}
	}
}

// TestFollowersApplyACommitAtOnce checks that every follower applies a
// change once the leader committed it without waiting for raft's commit
// timeout (50-100 ms by default, a minute here, so that only the change
// itself can carry the commit): a client that created a topic through one
// node and asks another at once must find it there, as on Kafka, whose
// followers learn a new high watermark from the fetch they have pending.
func TestFollowersApplyACommitAtOnce(t *testing.T) {
	cfg := testTiming
	cfg.CommitTimeout = time.Minute
	c := newCluster(t, 3, cfg)
	for i := range 3 {
		name := fmt.Sprintf("t%d", i)
		l, _ := c.create(name)
		committed := time.Now()
		for j, n := range c.nodes {
			for j != l && n.store.Image().Topics.ByName(name) == nil {
				if time.Since(committed) > 10*time.Second {
					t.Fatalf("node %d had not applied topic %s %v after the leader committed it", n.id, name, time.Since(committed).Round(time.Millisecond))
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}
