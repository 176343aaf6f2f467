package quorum

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// A Kafka leader learns how far each follower's log reaches from the
// offset its fetches ask for (LeaderState.updateReplicaState); a raft
// leader pushes instead, and hashicorp/raft keeps the follower's match
// index to itself. So the transport raft is given is wrapped: every
// successful AppendEntries reply (heartbeats, plain and pipelined appends)
// records, for the server that sent it, where its log reaches as the
// leader then knows it, when, and whether it had the leader's whole log,
// what DescribeQuorum reports of each voter and observer.

// ReplicaProgress is how far one server of the quorum's configuration has
// replicated the metadata log, as this node knows it in its current term:
// Kafka's DescribeQuorum ReplicaState.
type ReplicaProgress struct {
	ID    int32
	Addr  string // raft's server address: a voter's controller listener
	Voter bool   // false: a raft non-voter, Kafka's observer
	// LogEnd is the offset after its last log entry; -1 until it answers
	// an AppendEntries of this node in this term.
	LogEnd int64
	// LastFetch is when it last answered one; zero while unknown.
	LastFetch time.Time
	// LastCaughtUp is the last time its log reached the end of this
	// node's, by Kafka's rule (LeaderState.ReplicaState.
	// updateFollowerState); zero while it has not in this term.
	LastCaughtUp time.Time
}

// ReplicaProgress is every server of raft's latest configuration, voters
// and non-voters, in its order. This node's own log end is its last index
// + 1, fetched and caught up now, as Kafka reports its leader; the others'
// are what their replies to this node's AppendEntries in its current term
// said: a node that became leader knows nothing of them yet, as in Kafka.
func (s *Store) ReplicaProgress() ([]ReplicaProgress, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("metadata quorum node %d: read the configuration: %w", s.id, err)
	}
	term, now := s.raft.CurrentTerm(), time.Now()
	var out []ReplicaProgress
	for _, srv := range f.Configuration().Servers {
		id, err := strconv.ParseInt(string(srv.ID), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("metadata quorum node %d: server id %q is not a node id: %w", s.id, srv.ID, err)
		}
		p := ReplicaProgress{ID: int32(id), Addr: string(srv.Address), Voter: srv.Suffrage == raft.Voter, LogEnd: -1}
		switch got := s.progress.of(srv.ID, term); {
		case int32(id) == s.id:
			p.LogEnd, p.LastFetch, p.LastCaughtUp = int64(s.raft.LastIndex())+1, now, now
		case got != nil:
			p.LogEnd, p.LastFetch, p.LastCaughtUp = got.logEnd, got.lastFetch, got.lastCaughtUp
		}
		out = append(out, p)
	}
	return out, nil
}

// followerProgress is one server's progress in one term.
type followerProgress struct {
	term         uint64
	logEnd       int64
	lastFetch    time.Time
	lastCaughtUp time.Time
	// fetchLeaderEnd is this node's log end when the request answered at
	// lastFetch was sent: Kafka's lastFetchLeaderLogEndOffset.
	fetchLeaderEnd int64
}

// progressBook is what the AppendEntries replies said, by server.
type progressBook struct {
	log atomic.Value // a lastIndexer, this node's raft once made; before, nothing is recorded

	mu      sync.Mutex
	servers map[raft.ServerID]*followerProgress
}

// lastIndexer is what the book asks of raft.
type lastIndexer interface{ LastIndex() uint64 }

// leaderEnd is this node's log end offset now, 0 before raft is made.
func (b *progressBook) leaderEnd() int64 {
	if l, ok := b.log.Load().(lastIndexer); ok {
		return int64(l.LastIndex()) + 1
	}
	return 0
}

// record notes server id's reply resp to req, sent when this node's log
// ended at leaderEnd, received at now.
func (b *progressBook) record(id raft.ServerID, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, leaderEnd int64, now time.Time) {
	if leaderEnd == 0 || !resp.Success || resp.Term != req.Term {
		return
	}
	// A success means the follower's log matches this one's through the
	// request's last entry (raft's match index). Its LastLog is its last
	// index before it appended them: what a heartbeat, which carries no
	// entries, tells of it; one past this node's own end it cannot match.
	reached := int64(req.PrevLogEntry)
	if n := len(req.Entries); n > 0 {
		reached = int64(req.Entries[n-1].Index)
	}
	reached = max(reached, min(int64(resp.LastLog), leaderEnd-1))
	logEnd := reached + 1

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.servers == nil {
		b.servers = map[raft.ServerID]*followerProgress{}
	}
	p := b.servers[id]
	if p == nil || p.term != req.Term {
		p = &followerProgress{term: req.Term, logEnd: -1}
		b.servers[id] = p
	}
	// Kafka's updateFollowerState: caught up now if it has the leader's
	// end, else at its previous fetch if it now has the end the leader had
	// then.
	switch {
	case logEnd >= leaderEnd:
		p.lastCaughtUp = maxTime(p.lastCaughtUp, now)
	case p.fetchLeaderEnd > 0 && logEnd >= p.fetchLeaderEnd:
		p.lastCaughtUp = maxTime(p.lastCaughtUp, p.lastFetch)
	}
	p.fetchLeaderEnd = leaderEnd
	p.lastFetch = maxTime(p.lastFetch, now)
	// Heartbeats and pipelined appends are answered concurrently, so a
	// reply may arrive after a later one; a log that matches the leader's
	// does not shrink within its term.
	p.logEnd = max(p.logEnd, logEnd)
}

// of is server id's progress in term, nil when it has none.
func (b *progressBook) of(id raft.ServerID, term uint64) *followerProgress {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.servers[id]; p != nil && p.term == term {
		c := *p
		return &c
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// withProgress wraps t so that b records the replies to its
// AppendEntries. Raft asks its transport for the optional WithPreVote and
// WithClose (api.go, raft.go, future.go) and quietly does without what it
// lacks, so the wrapper has exactly those of t, and WithPeers too, which
// the tests' in-memory transport has.
func withProgress(t raft.Transport, b *progressBook) raft.Transport {
	pt := &progressTransport{Transport: t, book: b}
	pv, preVote := t.(raft.WithPreVote)
	cl, closes := t.(raft.WithClose)
	pe, peers := t.(raft.WithPeers)
	switch {
	case preVote && closes && peers:
		return struct {
			*progressTransport
			raft.WithPreVote
			raft.WithClose
			raft.WithPeers
		}{pt, pv, cl, pe}
	case preVote && closes:
		return struct {
			*progressTransport
			raft.WithPreVote
			raft.WithClose
		}{pt, pv, cl}
	case preVote && peers:
		return struct {
			*progressTransport
			raft.WithPreVote
			raft.WithPeers
		}{pt, pv, pe}
	case closes && peers:
		return struct {
			*progressTransport
			raft.WithClose
			raft.WithPeers
		}{pt, cl, pe}
	case preVote:
		return struct {
			*progressTransport
			raft.WithPreVote
		}{pt, pv}
	case closes:
		return struct {
			*progressTransport
			raft.WithClose
		}{pt, cl}
	case peers:
		return struct {
			*progressTransport
			raft.WithPeers
		}{pt, pe}
	}
	return pt
}

// progressTransport is a raft.Transport whose AppendEntries replies its
// book records.
type progressTransport struct {
	raft.Transport
	book *progressBook
}

func (t *progressTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	end := t.book.leaderEnd()
	if err := t.Transport.AppendEntries(id, target, args, resp); err != nil {
		return err
	}
	t.book.record(id, args, resp, end, time.Now())
	return nil
}

// AppendEntriesPipeline's error is t's own: raft falls back to plain
// AppendEntries on raft.ErrPipelineReplicationNotSupported.
func (t *progressTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return newProgressPipeline(p, id, t.book), nil
}

// progressPipeline passes each of its pipeline's answered futures on to
// raft, once its book has recorded the reply.
type progressPipeline struct {
	raft.AppendPipeline
	id   raft.ServerID
	book *progressBook
	out  chan raft.AppendFuture
	done chan struct{}
	once sync.Once

	mu sync.Mutex
	// sentAt is the leader's log end when each request in flight was sent,
	// by request: a future's Request is the request it was given.
	sentAt map[*raft.AppendEntriesRequest]int64
}

func newProgressPipeline(p raft.AppendPipeline, id raft.ServerID, b *progressBook) *progressPipeline {
	pp := &progressPipeline{
		AppendPipeline: p, id: id, book: b,
		out:    make(chan raft.AppendFuture, cap(p.Consumer())),
		done:   make(chan struct{}),
		sentAt: map[*raft.AppendEntriesRequest]int64{},
	}
	go pp.forward()
	return pp
}

func (p *progressPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	// Noted before the send: the answer may be consumed before the send
	// returns.
	p.mu.Lock()
	p.sentAt[args] = p.book.leaderEnd()
	p.mu.Unlock()
	f, err := p.AppendPipeline.AppendEntries(args, resp)
	if err != nil {
		p.mu.Lock()
		delete(p.sentAt, args)
		p.mu.Unlock()
	}
	return f, err
}

func (p *progressPipeline) Consumer() <-chan raft.AppendFuture { return p.out }

func (p *progressPipeline) Close() error {
	p.once.Do(func() { close(p.done) })
	return p.AppendPipeline.Close()
}

// forward records each answered future and hands it to raft, until the
// pipeline is closed. Raft reads a future's response without waiting on
// its Error (replication.go pipelineDecode); an unanswered one is no
// Success.
func (p *progressPipeline) forward() {
	in := p.AppendPipeline.Consumer()
	for {
		select {
		case f := <-in:
			req := f.Request()
			p.mu.Lock()
			end, ok := p.sentAt[req]
			delete(p.sentAt, req)
			p.mu.Unlock()
			if ok {
				p.book.record(p.id, req, f.Response(), end, time.Now())
			}
			select {
			case p.out <- f:
			case <-p.done:
				return
			}
		case <-p.done:
			return
		}
	}
}
