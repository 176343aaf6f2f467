package quorum

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
)

func TestQuorumReplicatesEachChangeToEveryNodeInOrder(t *testing.T) {
	c := newCluster(t, 3, testTiming)
	var (
		names []string
		l     int
		img   *metadata.Image
	)
	for i := range 5 {
		name := fmt.Sprintf("t%d", i)
		names = append(names, name)
		l, img = c.create(name)
		if !hasExactly(img, names) || c.nodes[l].store.Image() != img {
			t.Fatalf("after %s the leader's image has %v", name, topicNames(img))
		}
	}
	c.waitConverged(names...)
	for _, n := range c.nodes {
		changes := n.log.all()
		if len(changes) != len(names) {
			t.Fatalf("node %d was told of %d changes, want %d", n.id, len(changes), len(names))
		}
		for i, ch := range changes {
			if !hasExactly(ch[0], names[:i]) || !hasExactly(ch[1], names[:i+1]) {
				t.Fatalf("node %d change %d: %v -> %v", n.id, i, topicNames(ch[0]), topicNames(ch[1]))
			}
		}
		if n.store.Image() != changes[len(changes)-1][1] {
			t.Fatalf("node %d: the image is not the last one published", n.id)
		}
	}

	follower := c.nodes[(l+1)%3]
	img, err := follower.store.Propose(createTopic("x")...)
	var nc *NotControllerError
	if !errors.Is(err, ErrNotController) || !errors.As(err, &nc) || nc.LeaderID != c.nodes[l].id || nc.LeaderAddr != c.voters[l].Addr {
		t.Fatalf("propose on a follower = %v", err)
	}
	if img.Topics.ByName("x") != nil {
		t.Fatal("a follower's refused proposal changed its image")
	}
}

func TestQuorumUpdateDecidesOnTheLeadersLatestImage(t *testing.T) {
	c := newCluster(t, 3, testTiming)
	s := c.nodes[c.leader()].store
	// Each decide reads the producer ids the previous one committed, as
	// the controller hands out producer id blocks.
	for want := int64(0); want < 5000; want += 1000 {
		img, err := s.Update(func(img *metadata.Image) ([]metadata.Record, error) {
			if got := img.ProducerIDs.NextProducerID; got != want {
				return nil, fmt.Errorf("decide saw next producer id %d, want %d", got, want)
			}
			return []metadata.Record{metadata.ProducerIdsRecord{NextProducerID: want + 1000}}, nil
		})
		if err != nil || img.ProducerIDs.NextProducerID != want+1000 {
			t.Fatalf("update: %v, %d", err, img.ProducerIDs.NextProducerID)
		}
	}
	refusal := errors.New("no")
	if _, err := s.Update(func(*metadata.Image) ([]metadata.Record, error) { return nil, refusal }); err != refusal {
		t.Fatalf("a decide's error came back as %v", err)
	}
}

func TestQuorumRefusedBatchChangesNothingOnAnyNode(t *testing.T) {
	c := newCluster(t, 3, testTiming)
	l, _ := c.create("a")
	s := c.nodes[l].store
	// A topic, then a partition of a topic that does not exist: the whole
	// batch is refused, the topic too.
	bad := append(createTopic("b"), metadata.PartitionRecord{TopicID: [16]byte{9}})
	img, err := s.Propose(bad...)
	if !errors.Is(err, metadata.ErrInvalidRecord) || !hasExactly(img, []string{"a"}) || !hasExactly(s.Image(), []string{"a"}) {
		t.Fatalf("propose of a bad batch = %v, topics %v, the leader's image has %v", err, topicNames(img), topicNames(s.Image()))
	}
	c.create("c")
	c.waitConverged("a", "c")
	for _, n := range c.nodes {
		for _, ch := range n.log.all() {
			if ch[1].Topics.ByName("b") != nil {
				t.Fatalf("node %d published an image with topic b", n.id)
			}
		}
		if got := len(n.log.all()); got != 2 {
			t.Fatalf("node %d was told of %d changes, want 2", n.id, got)
		}
	}
}

func TestQuorumElectsANewLeaderAndLosesNothingCommitted(t *testing.T) {
	c := newCluster(t, 3, testTiming)
	old, _ := c.create("a")
	c.stop(old)
	l := c.leader()
	if l == old {
		t.Fatal("the stopped node still leads")
	}
	if !hasExactly(c.nodes[l].store.Image(), []string{"a"}) {
		// Committed on a majority, so on the new leader once it applied the
		// entries of its term.
		waitFor(t, "the new leader to apply a", func() bool { return hasExactly(c.nodes[l].store.Image(), []string{"a"}) })
	}
	c.create("b")
	c.waitConverged("a", "b")
	c.start(old)
	c.waitConverged("a", "b")
}

func TestQuorumRestartedNodesCatchUpFromSnapshotsAndTheLog(t *testing.T) {
	cfg := testTiming
	cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 4, 2, testTiming.HeartbeatTimeout
	c := newCluster(t, 3, cfg)
	l := c.leader()
	lagging := (l + 1) % 3
	c.stop(lagging)
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("t%02d", i))
		l, _ = c.create(names[i])
	}
	// Raft snapshots every few entries on its own (SnapshotThreshold); one
	// more now makes the newest hold at least these 20 topics.
	if err := c.nodes[l].store.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	states, _ := filepath.Glob(filepath.Join(c.nodes[l].dir, "snapshots", "*-*-*", "state.bin"))
	if _, err := os.Stat(filepath.Join(c.nodes[l].dir, "raft.db")); err != nil || len(states) == 0 {
		t.Fatalf("the leader's dir holds raft.db (%v) and snapshots %v", err, states)
	}
	// Push the log past the snapshot's trailing entries.
	for i := 20; i < 30; i++ {
		names = append(names, fmt.Sprintf("t%02d", i))
		l, _ = c.create(names[i])
	}
	// The lagging node's entries are compacted away on the leader: it gets
	// the leader's snapshot, then the log after it.
	c.start(lagging)
	c.waitConverged(names...)
	if ch := c.nodes[lagging].log.all(); ch[0][1].Topics.Len() < 20 {
		t.Fatalf("the lagging node caught up without installing a snapshot: its first change has %d topics", ch[0][1].Topics.Len())
	}

	// Every node stopped, one started alone restores its own snapshot.
	want := c.nodes[l].store.Image()
	for i := range c.nodes {
		c.stop(i)
	}
	c.start(lagging)
	if c.nodes[lagging].store.Image().Topics.Len() == 0 {
		t.Fatal("a restarted node did not restore its snapshot")
	}
	for i := range c.nodes {
		if i != lagging {
			c.start(i)
		}
	}
	c.waitConverged(names...)
	for _, n := range c.nodes {
		if !sameImage(n.store.Image(), want) {
			t.Fatalf("node %d after restart: %v", n.id, metadata.ImageRecords(n.store.Image()))
		}
	}
}

func TestQuorumOverTCP(t *testing.T) {
	var voters []Voter
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		voters = append(voters, Voter{ID: int32(i + 1), Addr: ln.Addr().String()})
		ln.Close()
	}
	base := t.TempDir()
	var stores []*Store
	for _, v := range voters {
		cfg := testTiming
		cfg.NodeID, cfg.Voters, cfg.Dir = v.ID, voters, filepath.Join(base, fmt.Sprint(v.ID), DirName)
		cfg.Logger = zaptest.NewLogger(t)
		s, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	// Proposed on whichever node leads, again while leadership settles.
	var err error
	waitFor(t, "a proposal to be committed", func() bool {
		for _, s := range stores {
			if id, ok := s.Leader(); ok && id == s.id {
				_, err = s.Propose(createTopic("a")...)
				return !errors.Is(err, ErrNotController)
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		waitFor(t, fmt.Sprintf("node %d to have topic a", s.id), func() bool {
			return slices.Equal(topicNames(s.Image()), []string{"a"})
		})
	}
}

func TestQuorumOpenRefusesABusyDirAndAStranger(t *testing.T) {
	c := newCluster(t, 1, testTiming)
	n := c.nodes[0]
	_, trans := raft.NewInmemTransport("other")
	defer trans.Close()
	cfg := Config{NodeID: n.id, Dir: n.dir, Voters: c.voters, Transport: trans}
	if s, err := Open(cfg); err == nil {
		s.Close()
		t.Fatal("a second node opened a dir in use")
	}
	cfg.NodeID, cfg.Dir = 7, t.TempDir()
	if s, err := Open(cfg); err == nil {
		s.Close()
		t.Fatal("a node that is not a voter opened")
	}
	// The node that holds the dir still works, alone a quorum of one.
	c.create("a")
}
