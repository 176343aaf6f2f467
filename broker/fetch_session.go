package broker

// Fetch sessions (KIP-227), as Kafka's FetchSessionCache and FetchSession:
// a full fetch (epoch 0) opens a session holding its partitions' request
// parameters and the high watermark and log start offset last sent for
// each; an incremental fetch (epoch >= 1) names only the partitions whose
// parameters changed and those to forget, and is answered only the
// partitions with records, a changed high watermark or log start offset,
// an error, a preferred read replica or a diverging epoch
// (CachedPartition.maybeUpdateResponseData). The cache is Kafka's: eight
// shards, each holding max.incremental.fetch.session.cache.slots/8
// sessions and the ids of its eighth of [1, 2^31-1); a new session goes
// to the next shard in turn, and when that shard is full it evicts first
// a session unused for longer than minFetchSessionEviction, else the one
// least worth keeping if the new one is worth more: a follower's
// (privileged) over a consumer's, then more partitions over fewer, and
// never a session younger than minFetchSessionEviction unless a follower
// displaces a consumer (FetchSessionCacheShard.tryEvict). Kafka hard-codes
// the eviction age (KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS),
// so it is no config key here either.

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	fetchSessionCacheShards  = 8
	fetchSessionIDRange      = math.MaxInt32 / fetchSessionCacheShards
	minFetchSessionEviction  = 120 * time.Second
	defaultFetchSessionSlots = 1000
)

// nextFetchEpoch is the epoch after prev, as Kafka's
// FetchMetadata.nextEpoch: FINAL stays FINAL, and after 2^31-1 comes 1.
func nextFetchEpoch(prev int32) int32 {
	switch {
	case prev < 0:
		return finalFetchEpoch
	case prev == math.MaxInt32:
		return 1
	}
	return prev + 1
}

// sessionPartKey names a cached partition: by topic id in a session of
// v13+ fetches, by topic name before.
type sessionPartKey struct {
	id        [16]byte
	topic     string
	partition int32
}

// cachedPartition is one partition of a session, as Kafka's
// CachedPartition: the last request parameters, and the high watermark
// and log start offset last sent.
type cachedPartition struct {
	key              sessionPartKey
	topic            string
	topicID          [16]byte
	maxBytes         int32
	fetchOffset      int64
	leaderEpoch      int32
	fetcherLogStart  int64
	lastFetchedEpoch int32
	highWatermark    int64
	localLogStart    int64
	prev, next       *cachedPartition // the session's order
}

func (c *cachedPartition) setRequest(rp *kmsg.FetchRequestTopicPartition) {
	c.maxBytes, c.fetchOffset, c.leaderEpoch = rp.PartitionMaxBytes, rp.FetchOffset, rp.CurrentLeaderEpoch
	c.fetcherLogStart, c.lastFetchedEpoch = rp.LogStartOffset, rp.LastFetchedEpoch
}

// mustRespond reports whether the partition's answer p goes in an
// incremental response, and with update takes p's state into the cache,
// as Kafka's maybeUpdateResponseData. Kafka does not compare the last
// stable offset: it moves only with the high watermark or with records.
func (c *cachedPartition) mustRespond(p *fetchPartition, update bool) bool {
	must := p.chunk.Len() > 0 || p.preferredReadReplica >= 0 || p.diverged
	if c.highWatermark != p.highWatermark {
		must = true
		if update {
			c.highWatermark = p.highWatermark
		}
	}
	if c.localLogStart != p.logStartOffset {
		must = true
		if update {
			c.localLogStart = p.logStartOffset
		}
	}
	if p.errorCode != 0 {
		// The cached high watermark is made invalid so that the partition
		// is sent again once the error is gone.
		must = true
		if update {
			c.highWatermark = -1
		}
	}
	return must
}

// fetchSession is one session. Its cache fields (lastUsed, cachedSize and
// the eviction keys) are guarded by its shard's mu; its partitions and
// epoch by its own mu, which is never held while the shard's is taken.
type fetchSession struct {
	id           int32
	privileged   bool // a follower's
	usesTopicIDs bool
	created      time.Time

	lastUsed      time.Time
	cachedSize    int  // -1: not in the cache
	byAll, byPriv bool // evictable by any new session, by a follower's

	mu    sync.Mutex
	epoch int32
	parts map[sessionPartKey]*cachedPartition
	head  *cachedPartition
	tail  *cachedPartition
}

func (s *fetchSession) pushBack(c *cachedPartition) {
	c.prev, c.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = c
	} else {
		s.head = c
	}
	s.tail = c
}

func (s *fetchSession) unlink(c *cachedPartition) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		s.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		s.tail = c.prev
	}
	c.prev, c.next = nil, nil
}

// add caches a partition at the end, unless it is cached already.
func (s *fetchSession) add(c *cachedPartition) bool {
	if s.parts[c.key] != nil {
		return false
	}
	s.parts[c.key] = c
	s.pushBack(c)
	return true
}

func (s *fetchSession) remove(k sessionPartKey) {
	if c := s.parts[k]; c != nil {
		delete(s.parts, k)
		s.unlink(c)
	}
}

// moveToBack puts c last, as Kafka does with a partition that returned
// records, so the next fetches reach the others first.
func (s *fetchSession) moveToBack(c *cachedPartition) {
	s.unlink(c)
	s.pushBack(c)
}

// fetchSessionShard is one shard of the cache, as Kafka's
// FetchSessionCacheShard.
type fetchSessionShard struct {
	num        int
	maxEntries int
	evictAfter time.Duration
	cache      *fetchSessionCache

	mu         sync.Mutex
	sessions   map[int32]*fetchSession
	partitions int64 // the sessions' cached sizes summed
}

// fetchSessionCache is the broker's fetch sessions.
type fetchSessionCache struct {
	shards    []*fetchSessionShard
	next      atomic.Uint32
	evictions atomic.Int64
}

// newFetchSessionCache makes the cache for slots sessions (Kafka's
// max.incremental.fetch.session.cache.slots, split evenly over the shards:
// fewer than eight slots hold none).
func newFetchSessionCache(slots int, evictAfter time.Duration) *fetchSessionCache {
	c := &fetchSessionCache{}
	for i := range fetchSessionCacheShards {
		c.shards = append(c.shards, &fetchSessionShard{num: i, maxEntries: slots / fetchSessionCacheShards,
			evictAfter: evictAfter, cache: c, sessions: map[int32]*fetchSession{}})
	}
	return c
}

// shardOf is the shard that hands out id, or nil for an id no shard does
// (Kafka indexes past its shards and fails the request).
func (c *fetchSessionCache) shardOf(id int32) *fetchSessionShard {
	n := int(id) / fetchSessionIDRange
	if id <= 0 || n >= len(c.shards) {
		return nil
	}
	return c.shards[n]
}

// nextShard is the shard a new session goes to, in turn.
func (c *fetchSessionCache) nextShard() *fetchSessionShard {
	return c.shards[int((c.next.Add(1)-1)&math.MaxInt32)%len(c.shards)]
}

// Stats are the cache's metrics: Kafka's NumIncrementalFetchSessions,
// NumIncrementalFetchPartitionsCached and the count behind
// IncrementalFetchSessionEvictionsPerSec.
func (c *fetchSessionCache) Stats() (sessions, partitions, evictions int64) {
	for _, s := range c.shards {
		s.mu.Lock()
		sessions += int64(len(s.sessions))
		partitions += s.partitions
		s.mu.Unlock()
	}
	return sessions, partitions, c.evictions.Load()
}

// newSessionID is a random id of this shard's range not in use.
func (s *fetchSessionShard) newSessionID() int32 {
	lo, hi := max(1, s.num*fetchSessionIDRange), (s.num+1)*fetchSessionIDRange
	for {
		id := int32(lo + rand.IntN(hi-lo))
		if s.sessions[id] == nil {
			return id
		}
	}
}

// create adds a session with the partitions parts makes, if there is room
// or room can be made; its id, or 0 for none.
func (s *fetchSessionShard) create(now time.Time, privileged bool, size int, usesTopicIDs bool, parts func(*fetchSession)) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= s.maxEntries && !s.tryEvict(privileged, size, now) {
		return 0
	}
	sess := &fetchSession{id: s.newSessionID(), privileged: privileged, usesTopicIDs: usesTopicIDs, created: now,
		cachedSize: -1, epoch: nextFetchEpoch(initialFetchEpoch), parts: make(map[sessionPartKey]*cachedPartition, size)}
	parts(sess)
	s.sessions[sess.id] = sess
	s.touch(sess, now, len(sess.parts))
	return sess.id
}

// evictLess orders sessions by what they are worth keeping, as Kafka's
// EvictableKey: a consumer's before a follower's, then by size, then id.
func evictLess(aPriv bool, aSize int, aID int32, bPriv bool, bSize int, bID int32) bool {
	if aPriv != bPriv {
		return !aPriv
	}
	if aSize != bSize {
		return aSize < bSize
	}
	return aID < bID
}

// tryEvict removes a session to make room for a new one, as Kafka's
// tryEvict: the least recently used if it is stale, else the least worth
// keeping of those the new session may evict, if that is worth no more.
func (s *fetchSessionShard) tryEvict(privileged bool, size int, now time.Time) bool {
	var lru, least *fetchSession
	for _, sess := range s.sessions {
		if lru == nil || sess.lastUsed.Before(lru.lastUsed) || sess.lastUsed.Equal(lru.lastUsed) && sess.id < lru.id {
			lru = sess
		}
		if eligible := sess.byAll || privileged && sess.byPriv; eligible && (least == nil ||
			evictLess(sess.privileged, sess.cachedSize, sess.id, least.privileged, least.cachedSize, least.id)) {
			least = sess
		}
	}
	switch {
	case lru == nil:
		return false
	case now.Sub(lru.lastUsed) > s.evictAfter:
		s.removeLocked(lru)
	case least == nil || evictLess(privileged, size, 0, least.privileged, least.cachedSize, least.id):
		return false
	default:
		s.removeLocked(least)
	}
	s.cache.evictions.Add(1)
	return true
}

// remove drops the session id; whether there was one.
func (s *fetchSessionShard) remove(id int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return false
	}
	s.removeLocked(sess)
	return true
}

func (s *fetchSessionShard) removeLocked(sess *fetchSession) {
	delete(s.sessions, sess.id)
	s.partitions -= int64(sess.cachedSize)
	sess.cachedSize = -1
}

// touch records a use of sess, which holds size partitions: its last
// use, and its size and whether it may be evicted, which, as in Kafka,
// are what they were at its last use. s.mu is held.
func (s *fetchSessionShard) touch(sess *fetchSession, now time.Time, size int) {
	sess.lastUsed = now
	if sess.cachedSize >= 0 {
		s.partitions -= int64(sess.cachedSize)
	}
	sess.cachedSize = size
	s.partitions += int64(size)
	old := now.Sub(sess.created) > s.evictAfter
	sess.byPriv = !sess.privileged || old
	sess.byAll = old
}
