package quorum

// Changing the voters (KIP-853's AddRaftVoter and RemoveRaftVoter) on
// hashicorp/raft's AddVoter and RemoveServer. As Kafka's leader does, a
// node becomes a voter only once it has caught up: it is made a non-voter
// first (raft's leader then sends it the log), and a voter when its log
// has reached the leader's (ReplicaProgress's LastCaughtUp), else the
// change times out and it stays an observer. One change at a time, on the
// leader, as raft requires.

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// ErrDuplicateVoter is AddVoter of a voter (Kafka's DUPLICATE_VOTER);
// ErrVoterNotFound is RemoveVoter of a node that is not one
// (VOTER_NOT_FOUND); ErrCatchUpTimeout is a new voter that did not catch
// up in time (REQUEST_TIMED_OUT).
var (
	ErrDuplicateVoter = errors.New("the node is already a voter")
	ErrVoterNotFound  = errors.New("the node is not a voter")
	ErrCatchUpTimeout = errors.New("the node did not catch up with the leader's log in time")
)

// catchUpPoll is how often AddVoter looks at the new voter's progress.
const catchUpPoll = 10 * time.Millisecond

// suffrage is node id's part in raft's latest configuration; ok is false
// when it is not in it.
func (s *Store) suffrage(id int32) (_ raft.ServerSuffrage, ok bool, err error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, false, s.raftError(err)
	}
	for _, srv := range f.Configuration().Servers {
		if srv.ID == serverID(id) {
			return srv.Suffrage, true, nil
		}
	}
	return 0, false, nil
}

// IsVoter reports whether node id is a voter of raft's latest
// configuration.
func (s *Store) IsVoter(id int32) bool {
	sf, ok, err := s.suffrage(id)
	return err == nil && ok && sf == raft.Voter
}

// AddVoter makes node id, reached at addr, a voter once it has caught up,
// waiting at most timeout for it.
func (s *Store) AddVoter(id int32, addr string, timeout time.Duration) error {
	if !s.IsLeader() {
		return s.notController()
	}
	if s.IsVoter(id) {
		return fmt.Errorf("node %d: %w", id, ErrDuplicateVoter)
	}
	start := time.Now()
	if err := s.AddObserver(id, addr); err != nil {
		return err
	}
	for !s.caughtUpSince(id, start) {
		if time.Since(start) > timeout {
			return fmt.Errorf("node %d at %s, after %v: %w", id, addr, timeout, ErrCatchUpTimeout)
		}
		time.Sleep(catchUpPoll)
	}
	left := max(timeout-time.Since(start), s.timeout)
	if err := s.raft.AddVoter(serverID(id), raft.ServerAddress(addr), 0, left).Error(); err != nil {
		return fmt.Errorf("add voter %d at %s: %w", id, addr, s.raftError(err))
	}
	s.logger.Info("a new voter of the metadata quorum", zap.Int32("voter", id), zap.String("addr", addr), zap.Duration("took", time.Since(start)))
	return nil
}

// caughtUpSince reports whether node id's log reached the leader's after
// t.
func (s *Store) caughtUpSince(id int32, t time.Time) bool {
	progress, err := s.ReplicaProgress()
	if err != nil {
		return false
	}
	for _, p := range progress {
		if p.ID == id {
			return p.LastCaughtUp.After(t)
		}
	}
	return false
}

// RemoveVoter takes node id out of the voters, and out of raft's
// configuration.
func (s *Store) RemoveVoter(id int32, timeout time.Duration) error {
	if !s.IsLeader() {
		return s.notController()
	}
	if !s.IsVoter(id) {
		return fmt.Errorf("node %d: %w", id, ErrVoterNotFound)
	}
	if err := s.raft.RemoveServer(serverID(id), 0, max(timeout, s.timeout)).Error(); err != nil {
		return fmt.Errorf("remove voter %d: %w", id, s.raftError(err))
	}
	s.logger.Info("a voter left the metadata quorum", zap.Int32("voter", id))
	return nil
}

// RemoveObserver takes node id, a non-voter, out of raft's configuration,
// so the leader stops sending it the log; a voter or an unknown node is
// left alone.
func (s *Store) RemoveObserver(id int32) error {
	sf, ok, err := s.suffrage(id)
	if err != nil || !ok || sf != raft.Nonvoter {
		return err
	}
	if err := s.raft.RemoveServer(serverID(id), 0, s.timeout).Error(); err != nil {
		return fmt.Errorf("remove observer %d: %w", id, s.raftError(err))
	}
	return nil
}
