package coordinator

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// groupShard is the group coordinator's state machine for one partition of
// __consumer_offsets, as Kafka's GroupMetadataManager is per partition
// (CoordinatorShard): the groups whose ids hash to that partition, their
// committed and pending offsets, and their timers. It has no goroutines,
// no locks and reads no clock: every input (a request, a replayed record,
// Tick) comes with the time, and what it decides to do outside itself is
// returned as effects: records to append (each with what to do once the
// append succeeded or failed), answers to requests waiting on a rebalance
// (by waiter id), and timers armed or cancelled. The driver (Groups) holds
// the lock, appends, arms the clock and answers; the scripted tests in
// testdata/groups drive it directly.
type groupShard struct {
	partition int32
	cfg       GroupConfig
	logger    *zap.Logger
	topics    topicMetadata

	newMemberID func(clientID string) string

	now     time.Time // of the input being handled
	groups  map[string]*group
	offsets offsetStore
	timers  timerQueue

	consumerImages map[string]consumerImage // KIP-848 records read while loading, by group
	streamsImages  map[string]consumerImage // KIP-1071 records read while loading, by group
	shareImages    map[string]consumerImage // KIP-932 records read while loading, by group
	regexTopics    topicsSeen               // when each topic was first seen, for regex refreshes

	eff effects // of the input being handled
}

func newGroupShard(partition int32, cfg GroupConfig, topics topicMetadata, logger *zap.Logger) *groupShard {
	return &groupShard{
		partition: partition,
		cfg:       cfg,
		logger:    logger,
		topics:    topics,

		newMemberID: randomMemberID,

		groups:  make(map[string]*group),
		offsets: newOffsetStore(),
		timers:  newTimerQueue(),
	}
}

// topicMetadata is what the machine reads of the cluster's topics (Kafka
// hands its coordinators the MetadataImage): a topic's id and partition
// count, by name or id, and the list of topics for regex subscriptions.
type topicMetadata interface {
	Topic(name string) (topicMeta, bool)
	TopicByID(id [16]byte) (topicMeta, bool)
	Topics() []topicMeta // every topic, the internal ones included
}

// effects is what handling one input asks the driver to do, in order:
// append each write (calling its then with the append's outcome, which may
// add more effects), then deliver the answers. Timers lists the timers
// armed, cancelled and fired, for the scripted tests; the driver arms its clock
// at nextDeadline.
type effects struct {
	writes []pendingWrite
	joins  []joinAnswer
	syncs  []syncAnswer
	timers []timerChange
}

// pendingWrite is records to append to the shard's partition; then runs
// with the append's error once it is done (nil: durable).
type pendingWrite struct {
	batch recordBatch
	then  func(err error)
}

// recordBatch is one batch for __consumer_offsets: plain, or (for
// TxnOffsetCommit) transactional for the producer.
type recordBatch struct {
	recs          []kv
	transactional bool
	producerID    int64
	producerEpoch int16
}

type joinAnswer struct {
	waiter uint64
	r      joinResult
}

type syncAnswer struct {
	waiter uint64
	r      syncResult
}

type timerChange struct {
	key      timerKey
	deadline time.Time // zero: cancelled, or fired
	fired    bool
}

// begin starts handling an input at now.
func (s *groupShard) begin(now time.Time) {
	s.now = now
	s.eff = effects{}
}

// end returns the effects of the input and clears them.
func (s *groupShard) end() effects {
	e := s.eff
	s.eff = effects{}
	return e
}

// settle carries out the input's writes in order through appendRecords,
// telling each continuation its outcome (a continuation may write more),
// and returns the rest of what the input asked for: answers and timers.
func (s *groupShard) settle(appendRecords func(recordBatch) error) effects {
	var out effects
	for {
		e := s.end()
		out.joins = append(out.joins, e.joins...)
		out.syncs = append(out.syncs, e.syncs...)
		out.timers = append(out.timers, e.timers...)
		if len(e.writes) == 0 {
			return out
		}
		for _, w := range e.writes {
			w.then(appendRecords(w.batch))
		}
	}
}

// write queues records to append; then learns the outcome.
func (s *groupShard) write(recs []kv, then func(error)) {
	s.eff.writes = append(s.eff.writes, pendingWrite{batch: recordBatch{recs: recs}, then: then})
}

func (s *groupShard) schedule(k timerKey, d time.Duration) {
	at := s.now.Add(d)
	s.timers.set(k, at)
	s.eff.timers = append(s.eff.timers, timerChange{key: k, deadline: at})
}

func (s *groupShard) cancel(k timerKey) {
	if s.timers.remove(k) {
		s.eff.timers = append(s.eff.timers, timerChange{key: k})
	}
}

// nextDeadline is the earliest armed timer; ok false when none is.
func (s *groupShard) nextDeadline() (time.Time, bool) { return s.timers.next() }

// tick fires every timer due at s.now, earliest first (ties in key order,
// so a run is reproducible).
func (s *groupShard) tick() {
	for {
		k, ok := s.timers.popDue(s.now)
		if !ok {
			return
		}
		s.eff.timers = append(s.eff.timers, timerChange{key: k, fired: true})
		s.fire(k)
	}
}

// fire runs timer k, which was due.
func (s *groupShard) fire(k timerKey) {
	if k.kind == timerOffsetExpiry {
		s.expireOffsets()
		s.schedule(k, s.cfg.RetentionCheckInterval)
		return
	}
	g := s.groups[k.group]
	if g == nil {
		return
	}
	switch k.kind {
	case timerJoin:
		s.onJoinTimer(g)
	case timerSync:
		s.onSyncTimer(g)
	case timerHeartbeat:
		s.onHeartbeatTimer(g, k.member)
	case timerPendingMember:
		if _, ok := g.pending[k.member]; ok {
			delete(g.pending, k.member)
			s.tryCompleteJoin(g)
		}
	case timerConsumerSession:
		if m := g.consumerMember(k.member); m != nil {
			s.fenceConsumerMember(g, m, "session timeout of "+s.consumerSessionTimeout(g.id).String()+" expired")
			s.persistConsumer(g, func(error) {})
		}
	case timerConsumerJoin, timerConsumerSync:
		s.onClassicMemberTimeout(g, k)
	case timerConsumerRevoke:
		if m := g.consumerMember(k.member); m != nil && m.state == cmemberUnrevoked {
			s.fenceConsumerMember(g, m, "partitions not revoked within the rebalance timeout of "+s.revokeTimeout(m).String())
			s.persistConsumer(g, func(error) {})
		}
	case timerConsumerRegex:
		s.refreshRegexes(g)
	case timerStreamsSession, timerStreamsRevoke:
		s.onStreamsTimer(g, k)
	case timerShareSession:
		s.onShareSessionTimeout(g, k.member)
	}
}

// group returns the group, creating it (Empty) when create is set; nil
// when it does not exist.
func (s *groupShard) group(id string, create bool) *group {
	g := s.groups[id]
	if g == nil && create {
		g = newGroup(id, s.partition, s.now)
		s.groups[id] = g
	}
	return g
}

// deleteGroup marks g Dead and drops it with its offsets and timers.
func (s *groupShard) deleteGroup(g *group) {
	g.transition(stateDead, s.now)
	if s.groups[g.id] == g {
		delete(s.groups, g.id)
	}
	s.offsets.dropGroup(g.id)
	// An Empty group has no member timers; only its own can be armed.
	s.cancel(timerKey{kind: timerJoin, group: g.id})
	s.cancel(timerKey{kind: timerSync, group: g.id})
	for _, id := range sortedKeys(g.pending) {
		s.cancel(timerKey{kind: timerPendingMember, group: g.id, member: id})
	}
}

// storeGroup persists g's metadata (Kafka's storeGroup).
func (s *groupShard) storeGroup(g *group, then func(error)) {
	s.write([]kv{{key: groupMetadataKey(g.id), value: groupMetadataValue(g, s.now)}}, then)
}

// answerJoin answers m's waiting JoinGroup, if any.
func (s *groupShard) answerJoin(m *member, r joinResult) {
	if m.joinWaiter != 0 {
		s.eff.joins = append(s.eff.joins, joinAnswer{waiter: m.joinWaiter, r: r})
		m.joinWaiter = 0
	}
}

// answerSync answers m's waiting SyncGroup, if any.
func (s *groupShard) answerSync(m *member, r syncResult) {
	if m.syncWaiter != 0 {
		s.eff.syncs = append(s.eff.syncs, syncAnswer{waiter: m.syncWaiter, r: r})
		m.syncWaiter = 0
	}
}

// activate starts the shard's periodic work once its partition is loaded:
// the members' session timers and the offset retention check.
func (s *groupShard) activate() {
	s.activateConsumerGroups()
	s.activateStreamsGroups()
	s.activateShareGroups()
	for _, id := range s.sortedGroupIDs() {
		g := s.groups[id]
		for _, m := range g.sortedMembers() {
			s.scheduleHeartbeat(g, m)
		}
		if len(g.members) == 0 && s.offsets.count(g.id) == 0 && g.generation == 0 && g.consumer == nil && g.streams == nil && g.share == nil {
			delete(s.groups, g.id)
		}
		if g.stateTime.After(s.now) {
			g.stateTime = s.now
		}
	}
	s.schedule(timerKey{kind: timerOffsetExpiry}, s.cfg.RetentionCheckInterval)
}

// resign answers every waiting request with NOT_COORDINATOR: the
// partition moved away and its groups with it.
func (s *groupShard) resign() {
	for _, id := range s.sortedGroupIDs() {
		for _, m := range s.groups[id].sortedMembers() {
			s.answerJoin(m, joinResult{err: kerr.NotCoordinator, memberID: m.id})
			s.answerSync(m, syncResult{err: kerr.NotCoordinator})
		}
	}
	for _, k := range s.sortedTimers() {
		s.cancel(k)
	}
}

// sortedGroupIDs and sortedTimers give walks a fixed order, so the same
// inputs give the same effects.
func (s *groupShard) sortedGroupIDs() []string {
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (s *groupShard) sortedTimers() []timerKey { return s.timers.keys() }
