package broker

// Share sessions (KIP-932), as Kafka 4.4's ShareSessionCache and
// SharePartitionManager.newContext: one session per group and member,
// holding the share-partitions the member fetches. ShareSessionEpoch 0
// opens a session (replacing the member's old one; acknowledgements in
// it are INVALID_REQUEST), any other epoch must be the session's
// (SHARE_SESSION_NOT_FOUND when there is none, else
// INVALID_SHARE_SESSION_EPOCH) and adds the request's partitions and
// forgets ForgottenTopicsData, and -1 closes it after its
// acknowledgements, releasing every record the member holds. The
// connection a session was opened on closing ends it too, as Kafka's
// ClientConnectionDisconnectListener does. group.share.max.share.sessions
// sessions at most (SHARE_SESSION_LIMIT_REACHED past it).

import (
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

const (
	shareSessionOpen  = 0
	shareSessionClose = -1
)

type shareSessionKey struct{ group, member string }

// shareTP is one share-partition of a session: a topic id and partition.
type shareTP struct {
	topicID   [16]byte
	partition int32
}

type shareSession struct {
	key   shareSessionKey
	epoch int32 // the epoch the next request must carry
	parts []shareTP
	conn  *conn
}

func (s *shareSession) has(tp shareTP) bool {
	for _, p := range s.parts {
		if p == tp {
			return true
		}
	}
	return false
}

// shareSessionCache is the broker's share sessions.
type shareSessionCache struct {
	mu       sync.Mutex
	sessions map[shareSessionKey]*shareSession
}

func newShareSessionCache() *shareSessionCache {
	return &shareSessionCache{sessions: map[shareSessionKey]*shareSession{}}
}

// shareContext is what a request's epoch made of its session: the
// partitions to fetch (all the session's), whether it was opened now
// (every partition is answered) or is closing.
type shareContext struct {
	key     shareSessionKey
	parts   []shareTP
	full    bool
	closing bool
}

// nextShareEpoch is ShareRequestMetadata.nextEpoch.
func nextShareEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// fetchContext is newContext for a ShareFetch, with at most limit
// sessions. replaced is the member's session that an epoch 0 ended, whose
// records the caller releases.
func (c *shareSessionCache) fetchContext(key shareSessionKey, epoch int32, add, forget []shareTP, acks bool, cn *conn, limit int) (ctx shareContext, replaced bool, err *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx.key = key
	s := c.sessions[key]
	switch epoch {
	case shareSessionClose:
		if s == nil {
			return ctx, false, kerr.ShareSessionNotFound
		}
		delete(c.sessions, key)
		ctx.closing = true
		return ctx, false, nil
	case shareSessionOpen:
		if acks {
			return ctx, false, kerr.InvalidRequest
		}
		if s != nil {
			delete(c.sessions, key)
			replaced = true
		}
		if len(c.sessions) >= limit {
			return ctx, replaced, kerr.ShareSessionLimitReached
		}
		s = &shareSession{key: key, epoch: 1, conn: cn}
		for _, tp := range add {
			if !s.has(tp) {
				s.parts = append(s.parts, tp)
			}
		}
		c.sessions[key] = s
		ctx.full, ctx.parts = true, append([]shareTP(nil), s.parts...)
		return ctx, replaced, nil
	}
	if s == nil {
		return ctx, false, kerr.ShareSessionNotFound
	}
	if s.epoch != epoch {
		return ctx, false, kerr.InvalidShareSessionEpoch
	}
	for _, tp := range add {
		if !s.has(tp) {
			s.parts = append(s.parts, tp)
		}
	}
	for _, tp := range forget {
		for i, p := range s.parts {
			if p == tp {
				s.parts = append(s.parts[:i], s.parts[i+1:]...)
				break
			}
		}
	}
	s.epoch = nextShareEpoch(s.epoch)
	ctx.parts = append([]shareTP(nil), s.parts...)
	return ctx, false, nil
}

// acknowledgeContext is acknowledgeSessionUpdate for a ShareAcknowledge:
// epoch 0 is INVALID_SHARE_SESSION_EPOCH, -1 closes the session.
func (c *shareSessionCache) acknowledgeContext(key shareSessionKey, epoch int32) (closing bool, err *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[key]
	switch {
	case epoch == shareSessionOpen:
		return false, kerr.InvalidShareSessionEpoch
	case s == nil:
		return false, kerr.ShareSessionNotFound
	case epoch == shareSessionClose:
		delete(c.sessions, key)
		return true, nil
	case s.epoch != epoch:
		return false, kerr.InvalidShareSessionEpoch
	}
	s.epoch = nextShareEpoch(s.epoch)
	return false, nil
}

// groupEmpty reports whether no session of group is left.
func (c *shareSessionCache) groupEmpty(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.sessions {
		if k.group == group {
			return false
		}
	}
	return true
}

// connClosed removes the sessions opened on cn and returns their keys.
func (c *shareSessionCache) connClosed(cn *conn) []shareSessionKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []shareSessionKey
	for k, s := range c.sessions {
		if s.conn == cn {
			delete(c.sessions, k)
			out = append(out, k)
		}
	}
	return out
}
