package quorum

import (
	"fmt"
	"strconv"

	"github.com/hashicorp/raft"
)

// Status is the quorum as this node's raft sees it, what DescribeQuorum
// reports.
type Status struct {
	Leader      bool   // this node leads the quorum
	Term        uint64 // raft's current term: Kafka's leader epoch
	CommitIndex int64  // the last committed entry's index
	LastIndex   int64  // the last entry in this node's log
}

// Status is this node's view of the quorum.
func (s *Store) Status() Status {
	return Status{
		Leader:      s.raft.State() == raft.Leader,
		Term:        s.raft.CurrentTerm(),
		CommitIndex: int64(s.raft.CommitIndex()),
		LastIndex:   int64(s.raft.LastIndex()),
	}
}

// CurrentVoters are the voters of raft's latest configuration, in its
// order.
func (s *Store) CurrentVoters() ([]Voter, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("metadata quorum node %d: read the configuration: %w", s.id, err)
	}
	var out []Voter
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage != raft.Voter {
			continue
		}
		id, err := strconv.ParseInt(string(srv.ID), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("metadata quorum node %d: server id %q is not a node id: %w", s.id, srv.ID, err)
		}
		out = append(out, Voter{ID: int32(id), Addr: string(srv.Address)})
	}
	return out, nil
}

// OnLeaderChange has fn called, on a goroutine of its own, each time this
// node learns that the quorum's leader changed or is lost, until cancel.
// Calls may be merged, never lost after the last change.
func (s *Store) OnLeaderChange(fn func()) (cancel func()) {
	ch := make(chan raft.Observation, 1)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(obs)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				fn()
			case <-done:
				return
			}
		}
	}()
	return func() {
		s.raft.DeregisterObserver(obs)
		close(done)
	}
}
