package quorum

// A killed process closes its sockets at once: when the leader's raft
// connection to a follower closes and the leader's controller listener
// then refuses a connection, its process is gone, and waiting out the
// heartbeat timeout (the only way raft knows a leader is lost) would keep
// the quorum without a controller for up to twice that timeout. The
// follower instead lowers its heartbeat and election timeouts to
// leaderGoneTimeout through raft's own ReloadConfig, which fires raft's
// heartbeat check at once, so raft's own pre-vote and election run a few
// hundred milliseconds after the kill; once a leader is known again, the
// configured timeouts come back. A paused or partitioned leader refuses
// nothing (its dial times out): raft's heartbeat timeout still decides.

import (
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

const (
	// leaderGoneTimeout is raft's heartbeat and election timeout while the
	// leader's listener refuses connections; it also bounds the leader
	// lease, which raft requires to be no longer than the heartbeat
	// timeout.
	leaderGoneTimeout = 200 * time.Millisecond
	// leaderProbeTimeout bounds the dial that asks whether the leader's
	// listener is still there.
	leaderProbeTimeout = 250 * time.Millisecond
	// leaderGoneRestore bounds the lowered timeouts when no new leader
	// shows up (no quorum is left, say).
	leaderGoneRestore = 5 * time.Second
)

// RaftConnClosed is told that a raft connection from another voter
// closed (ControllerListener.NotifyRaftConnClosed): on a follower, it asks
// whether the leader's listener still accepts connections, and hurries
// the election when it refuses them.
func (s *Store) RaftConnClosed() {
	if s.raft.State() != raft.Follower || s.raft.ReloadableConfig().HeartbeatTimeout <= leaderGoneTimeout {
		return
	}
	leader := s.LeaderAddr()
	if leader == "" || !s.probing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.probing.Store(false)
		if leaderGone(leader) && s.LeaderAddr() == leader {
			s.hurryElection(leader)
		}
	}()
}

// leaderGone reports whether the listener at addr belongs to a process
// that is gone: it refuses the connection, or, dying, it took it into its
// backlog and resets it, during the dial or after (a process's sockets
// close one by one as it exits). A live controller listener waits for the
// first bytes.
func leaderGone(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, leaderProbeTimeout)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(leaderProbeTimeout))
	var b [1]byte
	_, err = c.Read(b[:])
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// hurryElection lowers raft's timeouts until a leader other than gone is
// known, or leaderGoneRestore passed.
func (s *Store) hurryElection(gone string) {
	configured := s.raft.ReloadableConfig()
	fast := configured
	fast.HeartbeatTimeout, fast.ElectionTimeout = leaderGoneTimeout, leaderGoneTimeout
	leaders := make(chan raft.Observation, 4)
	obs := raft.NewObserver(leaders, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(obs)
	defer s.raft.DeregisterObserver(obs)
	if err := s.raft.ReloadConfig(fast); err != nil {
		s.logger.Warn("cannot hurry the election after the leader's listener refused", zap.Error(err))
		return
	}
	s.logger.Info("the quorum leader's listener refuses connections: hurrying the election", zap.String("leader", gone))
	defer func() {
		if err := s.raft.ReloadConfig(configured); err != nil {
			s.logger.Warn("cannot restore raft's timeouts", zap.Error(err))
		}
	}()
	restore := time.After(leaderGoneRestore)
	for {
		select {
		case o := <-leaders:
			if l := o.Data.(raft.LeaderObservation); l.LeaderAddr != "" && string(l.LeaderAddr) != gone {
				return
			}
		case <-restore:
			return
		}
	}
}
