package quorum

// A killed process closes its sockets at once: when the leader's raft
// connection to a follower closes and the leader's controller listener
// then refuses a connection, its process is gone, and waiting out the
// heartbeat timeout (the only way raft knows a leader is lost; raft's
// timer fires between one and two of them after the last check) keeps the
// quorum without a controller for up to twice that timeout. The follower
// instead waits until it has heard nothing from the leader for half the
// heartbeat timeout (the leader lease, which raft requires to be no longer
// than any heartbeat timeout it is given) and a random part of an eighth
// more, then lowers its heartbeat and election timeouts to that half
// through raft's own ReloadConfig, which runs raft's heartbeat check at
// once: raft's own pre-vote and election start then. Once a leader is
// known again, the configured timeouts come back. A paused or partitioned
// leader refuses nothing (the dial times out): raft's heartbeat timeout
// still decides.

import (
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

const (
	// leaderProbeTimeout bounds the dial that asks whether the leader's
	// listener is still there.
	leaderProbeTimeout = 250 * time.Millisecond
	// leaderGoneRestore bounds the lowered timeouts when no new leader
	// shows up (no quorum is left, say).
	leaderGoneRestore = 10 * time.Second
)

// leaderLease is the leader lease of heartbeat timeout hb, raft's default
// ratio; a follower whose leader is gone elects after it.
func leaderLease(hb time.Duration) time.Duration { return hb / 2 }

// RaftConnClosed is told that a raft connection from another voter
// closed (ControllerListener.NotifyRaftConnClosed): on a follower, it asks
// whether the leader's listener still accepts connections, and hurries
// the election when it does not.
func (s *Store) RaftConnClosed() {
	if s.raft.State() != raft.Follower {
		return
	}
	leader := s.LeaderAddr()
	if leader == "" || !s.hurrying.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.hurrying.Store(false)
		if ListenerGone(leader, leaderProbeTimeout) && s.LeaderAddr() == leader {
			s.hurryElection(leader)
		}
	}()
}

// ListenerGone reports whether the controller listener at addr belongs to
// a process that is gone: it refuses the connection, or, dying, it took it
// into its backlog and resets it, during the dial or after (a process's
// sockets close one by one as it exits). A live controller listener, even
// a paused one's, leaves the connection open waiting for its first bytes;
// timeout bounds the dial and that wait.
func ListenerGone(addr string, timeout time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(timeout))
	var b [1]byte
	_, err = c.Read(b[:])
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// hurryElection elects once the leader has been silent for a lease, and
// keeps raft's timeouts at a lease until a leader other than gone is
// known, or leaderGoneRestore passed.
func (s *Store) hurryElection(gone string) {
	configured := s.raft.ReloadableConfig()
	lease := leaderLease(configured.HeartbeatTimeout)
	fast := configured
	fast.HeartbeatTimeout, fast.ElectionTimeout = lease, lease
	leaders := make(chan raft.Observation, 4)
	obs := raft.NewObserver(leaders, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(obs)
	defer s.raft.DeregisterObserver(obs)
	newLeader := func(o raft.Observation) bool {
		l := o.Data.(raft.LeaderObservation)
		return l.LeaderAddr != "" && string(l.LeaderAddr) != gone
	}
	// Raft's check after the reload elects only if the leader has been
	// silent for the lowered timeout by then. The jitter keeps the
	// followers, which heard the leader last at the same moment when its
	// last append reached both, from standing at once and splitting the
	// vote, as raft's random timeouts do.
	jitter := rand.N(lease / 4)
	select {
	case <-time.After(time.Until(s.raft.LastContact().Add(lease + jitter))):
	case o := <-leaders:
		if newLeader(o) {
			return
		}
	}
	if err := s.raft.ReloadConfig(fast); err != nil {
		s.logger.Warn("cannot hurry the election after the leader's listener refused", zap.Error(err))
		return
	}
	s.logger.Info("the quorum leader's listener refuses connections: electing", zap.String("leader", gone))
	defer func() {
		if err := s.raft.ReloadConfig(configured); err != nil {
			s.logger.Warn("cannot restore raft's timeouts", zap.Error(err))
		}
	}()
	restore := time.After(leaderGoneRestore)
	for {
		select {
		case o := <-leaders:
			if newLeader(o) {
				return
			}
		case <-restore:
			return
		}
	}
}
