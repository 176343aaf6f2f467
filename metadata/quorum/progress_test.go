package quorum

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap/zaptest"
)

// progressOf is server id's entry in s.ReplicaProgress.
func progressOf(t *testing.T, s *Store, id int32) (ReplicaProgress, bool) {
	t.Helper()
	all, err := s.ReplicaProgress()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if p.ID == id {
			return p, true
		}
	}
	return ReplicaProgress{}, false
}

// leaderEnd is s's log end offset.
func leaderEnd(s *Store) int64 { return int64(s.raft.LastIndex()) + 1 }

// TestQuorumProgressStopsForAStoppedFollower checks that the leader's
// ReplicaProgress follows each follower from its AppendEntries replies:
// both reach the leader's log end and are caught up; once one is stopped
// its log end, last fetch and last caught-up time stay where they were
// while the other's go on with each change, and once restarted it catches
// up again.
func TestQuorumProgressStopsForAStoppedFollower(t *testing.T) {
	c := newCluster(t, 3, testTiming)
	c.create("a")
	li := c.leader()
	l := c.nodes[li].store
	live, stopped := c.nodes[(li+1)%3], c.nodes[(li+2)%3]
	start := time.Now()
	for _, n := range []*node{live, stopped} {
		waitFor(t, fmt.Sprintf("node %d to be caught up", n.id), func() bool {
			p, ok := progressOf(t, l, n.id)
			return ok && p.Voter && p.LogEnd == leaderEnd(l) && p.LastCaughtUp.After(start) && !p.LastFetch.Before(p.LastCaughtUp)
		})
	}
	self, _ := progressOf(t, l, c.nodes[li].id)
	if !self.Voter || self.LogEnd != leaderEnd(l) || time.Since(self.LastFetch) > time.Second || time.Since(self.LastCaughtUp) > time.Second {
		t.Fatalf("the leader's own progress %+v, its log end %d", self, leaderEnd(l))
	}

	c.stop((li + 2) % 3)
	at := time.Now()
	before, _ := progressOf(t, l, stopped.id)
	for _, name := range []string{"b", "c", "d"} {
		if got, _ := c.create(name); got != li {
			t.Skipf("the leadership moved to node %d: progress starts over", c.nodes[got].id)
		}
	}
	waitFor(t, fmt.Sprintf("node %d to follow the leader past node %d's stop", live.id, stopped.id), func() bool {
		p, _ := progressOf(t, l, live.id)
		return p.LogEnd == leaderEnd(l) && p.LastFetch.After(at) && p.LastCaughtUp.After(at)
	})
	p, _ := progressOf(t, l, stopped.id)
	if !p.Voter || p.LogEnd != before.LogEnd || p.LogEnd >= leaderEnd(l) || p.LastFetch.After(at) || p.LastCaughtUp.After(at) {
		t.Fatalf("stopped node %d: progress %+v, at its stop %+v; the leader's log end %d, stopped at %v", stopped.id, p, before, leaderEnd(l), at)
	}

	c.start((li + 2) % 3)
	restarted := time.Now()
	waitFor(t, fmt.Sprintf("restarted node %d to catch up", stopped.id), func() bool {
		p, _ := progressOf(t, l, stopped.id)
		return p.LogEnd == leaderEnd(l) && p.LastCaughtUp.After(restarted)
	})
}

// TestQuorumProgressOfAnObserver checks that a raft non-voter added with
// AddObserver is in the leader's ReplicaProgress as no voter, and follows
// the leader's log end from its replies, change by change.
func TestQuorumProgressOfAnObserver(t *testing.T) {
	c := newCluster(t, 3, testTiming)
	c.create("a")
	li := c.leader()
	l := c.nodes[li].store

	// The observer is a bare raft node with no configuration of its own,
	// the way a broker-only node joins: the leader's configuration makes
	// it a non-voter.
	_, trans := raft.NewInmemTransport("node-4")
	for _, n := range c.nodes {
		trans.Connect(n.trans.LocalAddr(), n.trans)
		n.trans.Connect(trans.LocalAddr(), trans)
	}
	rc := raft.DefaultConfig()
	rc.LocalID, rc.Logger = serverID(4), raftLogger(zaptest.NewLogger(t))
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = testTiming.HeartbeatTimeout, testTiming.ElectionTimeout, testTiming.HeartbeatTimeout
	logs := raft.NewInmemStore()
	obs, err := raft.NewRaft(rc, newFSM(), logs, logs, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := obs.Shutdown().Error(); err != nil {
			t.Error(err)
		}
	})
	if f := c.nodes[(li+1)%3].store; !f.IsLeader() {
		if err := f.AddObserver(4, "node-4"); !errors.Is(err, ErrNotController) && !f.IsLeader() {
			t.Fatalf("a follower's AddObserver: %v, want ErrNotController", err)
		}
	}
	added := time.Now()
	waitFor(t, "the leader to add the observer", func() bool {
		err := c.nodes[c.leader()].store.AddObserver(4, "node-4")
		if err != nil && !errors.Is(err, ErrNotController) {
			t.Fatal(err)
		}
		return err == nil
	})
	for _, name := range []string{"b", "c"} {
		c.create(name)
		created := time.Now()
		waitFor(t, "the observer to have "+name, func() bool {
			l = c.nodes[c.leader()].store
			p, ok := progressOf(t, l, 4)
			return ok && !p.Voter && p.Addr == "node-4" && p.LogEnd == leaderEnd(l) && p.LastFetch.After(created) && p.LastCaughtUp.After(added)
		})
	}
	var voters int
	all, _ := l.ReplicaProgress()
	for _, p := range all {
		if p.Voter {
			voters++
		}
	}
	if len(all) != 4 || voters != 3 {
		t.Fatalf("progress %+v, want the three voters and the observer", all)
	}
}

// TestQuorumProgressFollowsKafkasCaughtUpRule checks the book's rules on
// replies: a log end is the request's last entry (or a heartbeat's last
// log, never past the leader's end), caught up now when it reaches the
// leader's end, at the previous fetch when it reaches the end the leader
// had then (Kafka's updateFollowerState), never shrinking within a term,
// and nothing carried into the next term.
func TestQuorumProgressFollowsKafkasCaughtUpRule(t *testing.T) {
	var b progressBook
	id := raft.ServerID("2")
	t0 := time.UnixMilli(1_000_000)
	ok := &raft.AppendEntriesResponse{Term: 3, Success: true}
	appendTo := func(last uint64) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{Term: 3, PrevLogEntry: last - 1, Entries: []*raft.Log{{Index: last}}}
	}
	check := func(step string, logEnd int64, fetch, caughtUp time.Time) {
		t.Helper()
		p := b.of(id, 3)
		if p == nil || p.logEnd != logEnd || !p.lastFetch.Equal(fetch) || !p.lastCaughtUp.Equal(caughtUp) {
			t.Fatalf("%s: %+v, want log end %d, last fetch %v, caught up %v", step, p, logEnd, fetch, caughtUp)
		}
	}

	b.record(id, appendTo(10), ok, 21, t0)
	check("behind", 11, t0, time.Time{})
	b.record(id, appendTo(20), ok, 31, t0.Add(time.Second))
	check("reached the end the leader had at its previous fetch", 21, t0.Add(time.Second), t0)
	b.record(id, appendTo(30), ok, 31, t0.Add(2*time.Second))
	check("reached the leader's end", 31, t0.Add(2*time.Second), t0.Add(2*time.Second))
	b.record(id, &raft.AppendEntriesRequest{Term: 3}, &raft.AppendEntriesResponse{Term: 3, Success: true, LastLog: 25}, 41, t0.Add(3*time.Second))
	check("a late heartbeat reply", 31, t0.Add(3*time.Second), t0.Add(2*time.Second))
	b.record(id, &raft.AppendEntriesRequest{Term: 3}, &raft.AppendEntriesResponse{Term: 3, Success: true, LastLog: 90}, 41, t0.Add(4*time.Second))
	check("a heartbeat past the leader's end", 41, t0.Add(4*time.Second), t0.Add(4*time.Second))
	b.record(id, appendTo(50), &raft.AppendEntriesResponse{Term: 3, LastLog: 49}, 51, t0.Add(5*time.Second))
	check("a refused append", 41, t0.Add(4*time.Second), t0.Add(4*time.Second))

	if p := b.of(id, 4); p != nil {
		t.Fatalf("term 4 has term 3's progress %+v", p)
	}
	next := &raft.AppendEntriesRequest{Term: 4, PrevLogEntry: 40}
	b.record(id, next, &raft.AppendEntriesResponse{Term: 4, Success: true, LastLog: 40}, 51, t0.Add(6*time.Second))
	if p := b.of(id, 4); p == nil || p.logEnd != 41 || !p.lastCaughtUp.IsZero() {
		t.Fatalf("term 4: %+v, want log end 41 and not caught up", p)
	}
}

// TestQuorumProgressTransportKeepsRaftsOptionalInterfaces checks that the
// wrapped transport has exactly the optional interfaces raft looks for
// that the transport it wraps has: without WithPreVote raft quietly drops
// pre-vote, without WithClose it leaves the transport open.
func TestQuorumProgressTransportKeepsRaftsOptionalInterfaces(t *testing.T) {
	_, inmem := raft.NewInmemTransport("")
	// Only the type is asked, so a nil one will do.
	var network *raft.NetworkTransport
	type closeOnly struct {
		raft.Transport
		raft.WithClose
	}
	for name, tr := range map[string]raft.Transport{
		"in-memory":       inmem,
		"network":         network,
		"bare":            struct{ raft.Transport }{inmem},
		"with close only": closeOnly{inmem, inmem},
		"with pre-vote only": struct {
			raft.Transport
			raft.WithPreVote
		}{inmem, inmem},
	} {
		w := withProgress(tr, &progressBook{})
		_, pv := tr.(raft.WithPreVote)
		_, cl := tr.(raft.WithClose)
		_, pe := tr.(raft.WithPeers)
		_, wpv := w.(raft.WithPreVote)
		_, wcl := w.(raft.WithClose)
		_, wpe := w.(raft.WithPeers)
		if pv != wpv || cl != wcl || pe != wpe {
			t.Errorf("%s: pre-vote, close, peers %v %v %v; wrapped %v %v %v", name, pv, cl, pe, wpv, wcl, wpe)
		}
	}
}

// lastIndex is a leader's log that ends at its value.
type lastIndex uint64

func (l lastIndex) LastIndex() uint64 { return uint64(l) }

// TestQuorumProgressRecordsPlainAndPipelinedReplies checks that the
// wrapped transport records the replies of both ways raft sends
// AppendEntries, over raft's in-memory transport to a peer that answers:
// a heartbeat through AppendEntries, appends through a pipeline, whose
// futures still reach its consumer.
func TestQuorumProgressRecordsPlainAndPipelinedReplies(t *testing.T) {
	var b progressBook
	b.log.Store(lastIndexer(lastIndex(20)))
	_, inner := raft.NewInmemTransport("leader")
	peerAddr, peer := raft.NewInmemTransport("peer")
	inner.Connect(peerAddr, peer)
	defer inner.Close()
	defer peer.Close()
	tr := withProgress(inner, &b)
	follower := uint64(10) // the peer's last index
	go func() {
		for rpc := range peer.Consumer() {
			req := rpc.Command.(*raft.AppendEntriesRequest)
			resp := &raft.AppendEntriesResponse{Term: req.Term, LastLog: follower, Success: true}
			if n := len(req.Entries); n > 0 {
				follower = req.Entries[n-1].Index
			}
			rpc.Respond(resp, nil)
		}
	}()
	id := raft.ServerID("2")
	var hb raft.AppendEntriesResponse
	if err := tr.AppendEntries(id, peerAddr, &raft.AppendEntriesRequest{Term: 1}, &hb); err != nil || !hb.Success {
		t.Fatalf("heartbeat: %v %+v", err, hb)
	}
	if p := b.of(id, 1); p == nil || p.logEnd != 11 || !p.lastCaughtUp.IsZero() {
		t.Fatalf("after a heartbeat: %+v, want log end 11, not caught up", p)
	}

	pipe, err := tr.AppendEntriesPipeline(id, peerAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	for _, last := range []uint64{15, 20} {
		req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: last - 5}
		for i := last - 4; i <= last; i++ {
			req.Entries = append(req.Entries, &raft.Log{Index: i, Term: 1})
		}
		if _, err := pipe.AppendEntries(req, new(raft.AppendEntriesResponse)); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-pipe.Consumer():
			if f.Request() != req || !f.Response().Success {
				t.Fatalf("append through %d: future of %+v, %+v", last, f.Request(), f.Response())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("append through %d: no future on the pipeline's consumer", last)
		}
		if p := b.of(id, 1); p == nil || p.logEnd != int64(last)+1 {
			t.Fatalf("after the append through %d: %+v", last, p)
		}
	}
	if p := b.of(id, 1); p.lastCaughtUp.IsZero() {
		t.Fatalf("having the leader's last entry 20: %+v, not caught up", p)
	}
}
