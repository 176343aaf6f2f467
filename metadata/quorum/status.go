package quorum

import "github.com/hashicorp/raft"

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
