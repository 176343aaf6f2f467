package broker

// A fetch's context, as Kafka's FetchManager.newContext and its
// FetchContexts: the session epoch decides, whatever the session id.
// FINAL_EPOCH (-1, and every fetch before v7) closes the named session,
// if any, and is served without one (sessionless); INITIAL_EPOCH (0)
// closes it too and opens a new one from the answer (full: session id 0
// when the cache has no room); any other epoch continues the named
// session (incremental): FETCH_SESSION_ID_NOT_FOUND when there is none,
// INVALID_FETCH_SESSION_EPOCH when the epoch is not the session's next,
// FETCH_SESSION_TOPIC_ID_ERROR when the request's version uses topic ids
// and the session's did not, or the other way round (these three with no
// partitions and session id 0). An incremental fetch updates the
// session's partitions with those it names, drops those it forgets
// (closing the session, and answering sessionless, when none remain),
// reads all of the session's partitions in the session's order (a
// partition that returned records goes last) and answers those
// cachedPartition.mustRespond keeps. A throttled answer carries no
// partitions and changes no session: a full fetch then opens none, an
// incremental one keeps its session id.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fetchContextKind uint8

const (
	fetchSessionless fetchContextKind = iota
	fetchFull
	fetchIncremental
	fetchSessionError
)

// fetchContext is how one fetch request uses the session cache.
type fetchContext struct {
	kind       fetchContextKind
	errorCode  int16              // a session error
	read       *kmsg.FetchRequest // the partitions to read, in order
	version    int16
	privileged bool  // a follower's fetch
	reqEpoch   int32 // the request's session epoch
	cache      *fetchSessionCache
	session    *fetchSession // incremental
	// order is the session's partitions as read lists them: the answer's
	// partitions come in the same order, so each finds its cache entry
	// without a lookup.
	order []*cachedPartition
	now   time.Time
}

func partKey(version int16, topic string, id [16]byte, partition int32) sessionPartKey {
	if version >= 13 {
		return sessionPartKey{id: id, partition: partition}
	}
	return sessionPartKey{topic: topic, partition: partition}
}

// newContext decides how r uses the sessions; a nil cache (sessions off,
// or the controller listener) serves every fetch as Kafka's broker with
// no room would: full fetches get session id 0, so none names a session.
func (c *fetchSessionCache) newContext(version int16, r *kmsg.FetchRequest, follower bool, now time.Time) *fetchContext {
	fc := &fetchContext{kind: fetchSessionless, read: r, version: version, privileged: follower,
		reqEpoch: r.SessionEpoch, cache: c, now: now}
	if r.SessionEpoch == finalFetchEpoch || r.SessionEpoch == initialFetchEpoch {
		if r.SessionID != 0 && c != nil {
			if sh := c.shardOf(r.SessionID); sh != nil {
				sh.remove(r.SessionID)
			}
		}
		if r.SessionEpoch == initialFetchEpoch && c != nil {
			fc.kind = fetchFull
		}
		return fc
	}
	fail := func(err *kerr.Error) *fetchContext {
		fc.kind, fc.errorCode, fc.read = fetchSessionError, err.Code, nil
		return fc
	}
	var sh *fetchSessionShard
	if c != nil {
		sh = c.shardOf(r.SessionID)
	}
	if sh == nil {
		return fail(kerr.FetchSessionIDNotFound)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sess := sh.sessions[r.SessionID]
	if sess == nil {
		return fail(kerr.FetchSessionIDNotFound)
	}
	sess.mu.Lock()
	switch {
	case sess.epoch != r.SessionEpoch:
		sess.mu.Unlock()
		return fail(kerr.InvalidFetchSessionEpoch)
	case sess.usesTopicIDs != (version >= 13):
		sess.mu.Unlock()
		return fail(kerr.FetchSessionTopicIDError)
	}
	sess.update(version, r)
	size := len(sess.parts)
	if size == 0 {
		sess.mu.Unlock()
		sh.removeLocked(sess)
		return fc
	}
	fc.kind, fc.session = fetchIncremental, sess
	fc.read, fc.order = sess.readRequest(r)
	sess.epoch = nextFetchEpoch(sess.epoch)
	sess.mu.Unlock()
	sh.touch(sess, now, size)
	return fc
}

// update takes an incremental request's partitions into the session: a
// new one is added last, a known one's parameters replaced; then the
// forgotten ones are removed. s.mu is held.
func (s *fetchSession) update(version int16, r *kmsg.FetchRequest) {
	for i := range r.Topics {
		rt := &r.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			k := partKey(version, rt.Topic, rt.TopicID, rp.Partition)
			c := s.parts[k]
			if c == nil {
				c = &cachedPartition{key: k, topic: rt.Topic, topicID: rt.TopicID, highWatermark: -1, localLogStart: -1}
				s.add(c)
			}
			c.setRequest(rp)
		}
	}
	for _, ft := range r.ForgottenTopics {
		for _, p := range ft.Partitions {
			s.remove(partKey(version, ft.Topic, ft.TopicID, p))
		}
	}
}

// readRequest is r with the session's partitions, in its order, a topic
// for each run of one topic's partitions, and those partitions. s.mu is
// held.
func (s *fetchSession) readRequest(r *kmsg.FetchRequest) (*kmsg.FetchRequest, []*cachedPartition) {
	read := *r
	read.Topics, read.ForgottenTopics = nil, nil
	order := make([]*cachedPartition, 0, len(s.parts))
	var last *cachedPartition
	for c := s.head; c != nil; c = c.next {
		order = append(order, c)
		if last == nil || c.topic != last.topic || c.topicID != last.topicID {
			read.Topics = append(read.Topics, kmsg.FetchRequestTopic{Topic: c.topic, TopicID: c.topicID})
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = c.key.partition
		rp.PartitionMaxBytes, rp.FetchOffset, rp.CurrentLeaderEpoch = c.maxBytes, c.fetchOffset, c.leaderEpoch
		rp.LogStartOffset, rp.LastFetchedEpoch = c.fetcherLogStart, c.lastFetchedEpoch
		t := &read.Topics[len(read.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
		last = c
	}
	return &read, order
}

// errCode is the response's top-level error code.
func (fc *fetchContext) errCode() int16 {
	if fc.kind == fetchSessionError {
		return fc.errorCode
	}
	return 0
}

// prepare is what an answer of topics carries, the context unchanged: an
// incremental fetch's changed partitions (nothing when the session moved
// on meanwhile, a duplicate request), all of them otherwise. What it
// leaves out is released.
func (fc *fetchContext) prepare(topics []fetchTopic) []fetchTopic {
	if fc.kind != fetchIncremental {
		return topics
	}
	s := fc.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != nextFetchEpoch(fc.reqEpoch) {
		releaseFetch(topics)
		return nil
	}
	kept, next := topics[:0], 0
	var keptOrder []*cachedPartition
	for _, t := range topics {
		parts := t.partitions[:0]
		for _, p := range t.partitions {
			c := fc.order[next]
			next++
			if c.mustRespond(&p, false) {
				parts = append(parts, p)
				keptOrder = append(keptOrder, c)
			} else {
				p.chunk.Release()
			}
		}
		if len(parts) > 0 {
			t.partitions = parts
			kept = append(kept, t)
		}
	}
	fc.order = keptOrder
	return kept
}

// generate takes the answer of topics (as prepare left them) into the
// context: a full fetch opens its session, an incremental one records
// what it sends. It returns the response's session id and error code,
// and false when the answer must go without its partitions (the session
// moved on since prepare).
func (fc *fetchContext) generate(topics []fetchTopic) (int32, int16, bool) {
	switch fc.kind {
	case fetchFull:
		return fc.openSession(topics), 0, true
	case fetchIncremental:
		s := fc.session
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.epoch != nextFetchEpoch(fc.reqEpoch) {
			return s.id, kerr.InvalidFetchSessionEpoch.Code, false
		}
		next := 0
		for _, t := range topics {
			for i := range t.partitions {
				p, c := &t.partitions[i], fc.order[next]
				next++
				c.mustRespond(p, true)
				if p.chunk.Len() > 0 && s.parts[c.key] == c {
					s.moveToBack(c)
				}
			}
		}
		return s.id, 0, true
	}
	return 0, fc.errCode(), true
}

// throttled is the session id and error code of a throttled answer.
func (fc *fetchContext) throttled() (int32, int16) {
	if fc.kind != fetchIncremental {
		return 0, 0
	}
	s := fc.session
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != nextFetchEpoch(fc.reqEpoch) {
		return s.id, kerr.InvalidFetchSessionEpoch.Code
	}
	return s.id, 0
}

// openSession creates the session of a full fetch answered topics, in the
// answer's order; its id, or 0 when the cache has no room.
func (fc *fetchContext) openSession(topics []fetchTopic) int32 {
	asked := map[sessionPartKey]*kmsg.FetchRequestTopicPartition{}
	size := 0
	for i := range fc.read.Topics {
		rt := &fc.read.Topics[i]
		for j := range rt.Partitions {
			k := partKey(fc.version, rt.Topic, rt.TopicID, rt.Partitions[j].Partition)
			if asked[k] == nil {
				asked[k] = &rt.Partitions[j]
				size++
			}
		}
	}
	return fc.cache.nextShard().create(fc.now, fc.privileged, size, fc.version >= 13, func(s *fetchSession) {
		for _, t := range topics {
			for _, p := range t.partitions {
				k := partKey(fc.version, t.name, t.id, p.partition)
				rp := asked[k]
				if rp == nil {
					continue
				}
				c := &cachedPartition{key: k, topic: t.name, topicID: t.id, highWatermark: p.highWatermark, localLogStart: p.logStartOffset}
				c.setRequest(rp)
				s.add(c)
			}
		}
	})
}
