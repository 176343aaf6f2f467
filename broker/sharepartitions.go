package broker

// The share-partition manager, as Kafka 4.4's SharePartitionManager: one
// share.Partition (coordinator/share) per group and topic partition this
// node leads, loaded on first use by ReadShareGroupState from the share
// coordinator, which acquires records read from the local log from its
// next fetch offset and applies acknowledgements; every change it must
// persist goes to the share coordinator as a WriteShareGroupState and
// holds only once that write did, before the request that made it is
// answered. A timer per share-partition, set to its earliest acquisition
// lock, expires locks (Partition.Tick) and persists what that changed.
// Each share-partition runs one operation at a time (its mutex), but
// for the writes it sends, which go without it (persist). Configs: group.share.record.lock.duration.ms,
// group.share.delivery.count.limit and
// group.share.partition.max.record.locks, or the group's
// share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks, read at every fetch;
// share.auto.offset.reset (earliest, latest or by_duration) places a
// share-partition that was never written.
//
// The share coordinator is reached through the share-state client
// (sharepersister.go, Kafka's persister): in process when this node leads
// the key's __share_group_state partition, else over the inter-broker
// listener, with Kafka's retries; a load holds the share-partition's
// mutex through them (nothing can be served before it), a write does not
// (persist). When this node stops leading a partition its share-partitions
// are dropped (resigned, from the publisher), as Kafka's
// SharePartitionManager drops them on a leader change, and one is loaded
// again when its partition's leader epoch changed since it was loaded.
// share.isolation.level read_committed reads up to the last stable
// offset, and the batches of aborted transactions are archived, not
// delivered.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator/share"
	"github.com/strata-io/strata/storage"
)

type sharePartKey struct {
	group string
	tp    shareTP
}

// shareManager is the broker's share-partitions and share sessions.
type shareManager struct {
	clock    clockwork.Clock
	logger   *zap.Logger
	state    *shareStateClient
	sessions *shareSessionCache
	dlq      *shareDLQ // dead-letter writes (sharedlq.go)

	mu     sync.Mutex
	parts  map[sharePartKey]*sharePart
	closed bool // no lock timer runs once set (close)
}

func newShareManager(clock clockwork.Clock, logger *zap.Logger, state *shareStateClient) *shareManager {
	return &shareManager{clock: clock, logger: logger, state: state, sessions: newShareSessionCache(),
		parts: map[sharePartKey]*sharePart{}}
}

// sharePart is one share-partition and what runs it.
type sharePart struct {
	m   *shareManager
	key sharePartKey
	log *storage.Partition

	mu            sync.Mutex
	p             *share.Partition // nil until loaded
	readCommitted bool             // share.isolation.level=read_committed
	timer         clockwork.Timer
	changed       chan struct{} // closed when records may have become available
	writing       chan struct{} // closed when the last write sent is answered; nil before the first
}

// shareError is a share-partition's error code and message.
type shareError struct {
	err *kerr.Error
	msg string
}

func shareErrOf(err *kerr.Error) *shareError { return &shareError{err: err, msg: err.Description} }

func (e *shareError) code() int16 {
	if e == nil {
		return 0
	}
	return e.err.Code
}

// message is the answer's error message: none when msg is empty, as
// Kafka's errors without a message.
func (e *shareError) message() *string {
	if e == nil || e.msg == "" {
		return nil
	}
	return &e.msg
}

// shareConfig is the share-partition config of a group: its own values,
// else the broker's.
func (b *services) shareConfig(group string) (share.Config, shareGroupSettings) {
	own := b.groupConfigs(group)
	get := func(name, broker string) int {
		if v, ok := own[name]; ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
		return int(b.groupBrokerInt(broker))
	}
	cfg := share.Config{
		MaxInFlightRecords: get("share.partition.max.record.locks", "group.share.partition.max.record.locks"),
		DeliveryCountLimit: get("share.delivery.count.limit", "group.share.delivery.count.limit"),
		LockDuration:       time.Duration(get("share.record.lock.duration.ms", "group.share.record.lock.duration.ms")) * time.Millisecond,
		DeadLetterQueue:    b.shareDLQEnabled(own),
	}
	return cfg, shareGroupSettings{reset: own["share.auto.offset.reset"], readCommitted: own["share.isolation.level"] == "read_committed"}
}

// shareGroupSettings are a group's share.auto.offset.reset and
// share.isolation.level.
type shareGroupSettings struct {
	reset         string
	readCommitted bool
}

// partition is the share-partition of key, loaded when it is not yet: the
// partition's leader must be this node.
func (b *services) sharePartition(key sharePartKey) (*sharePart, *shareError) {
	t := b.logs.TopicByID(key.tp.topicID)
	if t == nil {
		return nil, shareErrOf(kerr.UnknownTopicOrPartition)
	}
	lp := lookupPartition(t, key.tp.partition)
	if lp == nil {
		return nil, shareErrOf(missingPartition(t, key.tp.partition))
	}
	if b.cfg.Metadata != nil {
		if _, ok := b.replicas.Leader(lp); !ok {
			return nil, shareErrOf(kerr.NotLeaderForPartition)
		}
	}
	m := b.sharing
	m.mu.Lock()
	sp := m.parts[key]
	if sp == nil || sp.log != lp {
		sp = &sharePart{m: m, key: key, log: lp, changed: make(chan struct{})}
		m.parts[key] = sp
	}
	m.mu.Unlock()
	cfg, set := b.shareConfig(key.group)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.readCommitted = set.readCommitted
	if sp.p != nil && sp.p.LeaderEpoch() == max(lp.LeaderEpoch(), 0) {
		sp.p.SetConfig(cfg)
		return sp, nil
	}
	if sp.p != nil {
		// A new leader epoch: this node led the partition before, another
		// node may have written the state since.
		if sp.timer != nil {
			sp.timer.Stop()
			sp.timer = nil
		}
		sp.p = nil
	}
	if err := sp.load(cfg, set.reset); err != nil {
		return nil, err
	}
	return sp, nil
}

// load reads the share-partition's state (SharePartition.maybeInitialize).
func (sp *sharePart) load(cfg share.Config, reset string) *shareError {
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = sp.key.group
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = sp.key.tp.partition, max(sp.log.LeaderEpoch(), 0)
	r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: sp.key.tp.topicID, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{rp}}}
	resp := sp.m.state.read(r)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return shareErrOf(kerr.UnknownServerError)
	}
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 {
		return loadError(got.ErrorCode, got.ErrorMessage)
	}
	st := share.Persisted{StateEpoch: got.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: got.StartOffset}
	for _, b := range got.StateBatches {
		st.Batches = append(st.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	resetOffset := int64(-1)
	if st.StartOffset == -1 {
		var serr *shareError
		if resetOffset, serr = sp.resetOffset(reset); serr != nil {
			return serr
		}
	}
	p, err := share.Load(cfg, st, resetOffset)
	if err != nil {
		sp.m.logger.Warn("share-partition state does not load", zap.String("group", sp.key.group), zap.Error(err))
		return &shareError{err: kerr.UnknownServerError, msg: err.Error()}
	}
	sp.p = p
	sp.sendDeadLetters()
	return nil
}

// resetOffset is where share.auto.offset.reset starts a share-partition
// never written (SharePartition.startOffsetDuringInitialization): the log
// start, the high watermark, or for by_duration the first record at or
// after now less the duration, and OFFSET_NOT_AVAILABLE (no message) when
// no record is that recent, as Kafka's offsetForTimestamp; the next fetch
// tries again.
func (sp *sharePart) resetOffset(reset string) (int64, *shareError) {
	switch strings.ToLower(strings.TrimSpace(reset)) {
	case "earliest":
		return sp.log.Log.LogStartOffset(), nil
	case "", "latest":
		return sp.log.Log.HighWatermark(), nil
	}
	d, ok := shareResetDuration(reset)
	if !ok {
		return sp.log.Log.HighWatermark(), nil
	}
	ts := sp.m.clock.Now().Add(-d).UnixMilli()
	offset, _, found := sp.log.Log.OffsetForTimestamp(ts)
	if !found {
		return 0, &shareError{err: kerr.OffsetNotAvailable}
	}
	return offset, nil
}

// loadError is how SharePartition.maybeInitialize maps a failed read: the
// coordinator moving or loading is COORDINATOR_NOT_AVAILABLE, a fenced
// leader epoch NOT_LEADER_OR_FOLLOWER, the codes a share consumer acts
// on as they are, anything else UNKNOWN_SERVER_ERROR with its message.
func loadError(code int16, msg *string) *shareError {
	err := kerrOf(code)
	switch err {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress:
		return shareErrOf(kerr.CoordinatorNotAvailable)
	case kerr.FencedLeaderEpoch:
		return shareErrOf(kerr.NotLeaderForPartition)
	case kerr.GroupIDNotFound, kerr.UnknownTopicOrPartition, kerr.FencedStateEpoch, kerr.InvalidRequest:
		return &shareError{err: err, msg: stringOr(msg, err.Description)}
	}
	return &shareError{err: kerr.UnknownServerError, msg: stringOr(msg, err.Description)}
}

func stringOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}

// persist sends a Write to the share coordinator and reports the outcome
// to the share-partition. sp.mu is held on entry and on return but not
// while the write is sent, which may retry for seconds: a
// share-partition's writes are sent one at a time in the order they were
// made (sp.writing), and its other operations go on meanwhile, the
// records the write changes in transition. A share-partition dropped
// meanwhile (resigned, releaseMember) is not told the outcome.
func (sp *sharePart) persist(w *share.Write) *shareError {
	p := sp.p
	if p == nil {
		return shareErrOf(kerr.NotLeaderForPartition)
	}
	r := kmsg.NewPtrWriteShareGroupStateRequest()
	r.GroupID = sp.key.group
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.Partition, wp.StateEpoch, wp.LeaderEpoch = sp.key.tp.partition, w.StateEpoch, w.LeaderEpoch
	wp.StartOffset, wp.DeliveryCompleteCount = w.StartOffset, w.DeliveryCompleteCount
	for _, b := range w.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, int8(b.State), b.DeliveryCount
		wp.StateBatches = append(wp.StateBatches, sb)
	}
	r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: sp.key.tp.topicID, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{wp}}}
	prev, done := sp.writing, make(chan struct{})
	sp.writing = done
	sp.mu.Unlock()
	if prev != nil {
		<-prev
	}
	resp := sp.m.state.write(r)
	close(done)
	sp.mu.Lock()
	var serr *shareError
	switch {
	case len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1:
		serr = shareErrOf(kerr.UnknownServerError)
	case resp.Topics[0].Partitions[0].ErrorCode != 0:
		got := resp.Topics[0].Partitions[0]
		serr = loadError(got.ErrorCode, got.ErrorMessage)
		sp.m.logger.Warn("share-partition state write failed", zap.String("group", sp.key.group),
			zap.Int32("partition", sp.key.tp.partition), zap.String("error", serr.msg))
	}
	if sp.p == p {
		p.WriteDone(w.ID, serr == nil, sp.m.clock.Now())
		sp.sendDeadLetters()
	}
	return serr
}

// settle is what follows every operation, sp.mu held: waiters are woken
// when records may be available again, and the lock timer is set to the
// earliest lock.
func (sp *sharePart) settle(wake bool) {
	if wake {
		close(sp.changed)
		sp.changed = make(chan struct{})
	}
	if sp.p == nil {
		return
	}
	next := sp.p.NextDeadline()
	if sp.timer != nil {
		sp.timer.Stop()
		sp.timer = nil
	}
	if next.IsZero() || sp.m.isClosed() {
		return
	}
	sp.timer = sp.m.clock.AfterFunc(max(sp.m.clock.Until(next), 0), sp.expire)
}

// close stops every lock timer, before the share coordinator closes.
func (m *shareManager) close() {
	m.mu.Lock()
	m.closed = true
	parts := make([]*sharePart, 0, len(m.parts))
	for _, sp := range m.parts {
		parts = append(parts, sp)
	}
	m.mu.Unlock()
	for _, sp := range parts {
		sp.mu.Lock()
		if sp.timer != nil {
			sp.timer.Stop()
			sp.timer = nil
		}
		sp.mu.Unlock()
	}
	if m.dlq != nil {
		m.dlq.stop()
	}
}

func (m *shareManager) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// expire releases the locks that expired and persists what changed.
func (sp *sharePart) expire() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.m.isClosed() || sp.p == nil {
		return
	}
	writes := sp.p.Tick(sp.m.clock.Now())
	for _, w := range writes {
		sp.persist(w)
	}
	sp.settle(len(writes) > 0)
}

// wait is the channel closed when records may next become available.
func (sp *sharePart) wait() <-chan struct{} {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.changed
}

// acknowledge applies a member's acknowledgements and persists them.
func (sp *sharePart) acknowledge(member string, acks []share.AckBatch) *shareError {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p == nil {
		return shareErrOf(kerr.NotLeaderForPartition)
	}
	w, perr := sp.p.Acknowledge(member, acks, sp.m.clock.Now())
	if perr != nil {
		return &shareError{err: perr.Err, msg: perr.Message}
	}
	var serr *shareError
	if w != nil {
		serr = sp.persist(w)
	}
	sp.settle(w != nil)
	return serr
}

// release makes every record member holds available again.
func (sp *sharePart) release(member string) *shareError {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p == nil {
		return nil
	}
	w, perr := sp.p.ReleaseMember(member, sp.m.clock.Now())
	if perr != nil {
		return &shareError{err: perr.Err, msg: perr.Message}
	}
	var serr *shareError
	if w != nil {
		serr = sp.persist(w)
	}
	sp.settle(w != nil)
	return serr
}

// releaseMember releases what member holds on every loaded share-partition
// of its group (releaseSession); once the group has no session left its
// share-partitions are dropped, to be loaded again from the share
// coordinator (ShareGroupListener.onGroupEmpty).
func (m *shareManager) releaseMember(key shareSessionKey) {
	m.mu.Lock()
	var parts []*sharePart
	for k, sp := range m.parts {
		if k.group == key.group {
			parts = append(parts, sp)
		}
	}
	m.mu.Unlock()
	for _, sp := range parts {
		if err := sp.release(key.member); err != nil {
			m.logger.Warn("share session release failed", zap.String("group", key.group), zap.String("member", key.member), zap.String("error", err.msg))
		}
	}
	if !m.sessions.groupEmpty(key.group) {
		return
	}
	m.mu.Lock()
	for _, sp := range parts {
		if m.parts[sp.key] == sp {
			delete(m.parts, sp.key)
		}
	}
	m.mu.Unlock()
	for _, sp := range parts {
		sp.retire()
	}
}

// resigned drops the share-partitions of a partition this node no longer
// leads, as SharePartitionManager drops them on a leader change, so that
// its next leader loads them from the share coordinator. The publisher
// calls it within a metadata change: they leave the map at once, and
// retire on a goroutine each, as one may be loading.
func (m *shareManager) resigned(log *storage.Partition) {
	m.mu.Lock()
	var gone []*sharePart
	for k, sp := range m.parts {
		if sp.log == log {
			delete(m.parts, k)
			gone = append(gone, sp)
		}
	}
	m.mu.Unlock()
	if len(gone) > 0 {
		m.logger.Info("dropped the share-partitions of a partition this node no longer leads", zap.String("topic", log.Topic),
			zap.Int32("partition", log.Index), zap.Int("share_partitions", len(gone)))
	}
	for _, sp := range gone {
		go sp.retire()
	}
}

// retire unloads a share-partition dropped from the map: its lock timer
// stops and its waiters wake, to find it gone.
func (sp *sharePart) retire() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.timer != nil {
		sp.timer.Stop()
		sp.timer = nil
	}
	sp.p = nil
	close(sp.changed)
	sp.changed = make(chan struct{})
}

// connClosed ends the share sessions opened on cn (the
// ClientConnectionDisconnectListener).
func (m *shareManager) connClosed(cn *conn) {
	for _, k := range m.sessions.connClosed(cn) {
		m.releaseMember(k)
	}
}

// shareRead is what one share-partition gave a fetch.
type shareRead struct {
	records  []byte
	acquired []share.AcquiredRecords
	count    int
}

// available is how many bytes a fetch would read now, acquiring nothing
// (DelayedShareFetch.tryComplete's check against MinBytes).
func (sp *sharePart) available(maxBytes int) int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p == nil || !sp.p.CanAcquire() {
		return 0
	}
	res, err := sp.log.Log.ReadIsolated(sp.p.NextFetchOffset(), maxBytes, true, sp.readCommitted)
	if err != nil {
		return 0
	}
	defer res.Chunk.Release()
	return res.Chunk.Len()
}

// fetch reads the log from the next fetch offset and acquires what it read
// for member.
func (sp *sharePart) fetch(a share.Acquire, maxBytes int, minOne bool) (shareRead, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p == nil {
		return shareRead{}, kerr.NotLeaderForPartition
	}
	sp.p.UpdateLogStart(sp.log.Log.LogStartOffset())
	if !sp.p.CanAcquire() || a.MaxRecords <= 0 {
		return shareRead{}, nil
	}
	off := sp.p.NextFetchOffset()
	res, err := sp.log.Log.ReadIsolated(off, maxBytes, minOne, sp.readCommitted)
	if err == kerr.OffsetOutOfRange {
		return shareRead{}, nil
	}
	if err != nil {
		return shareRead{}, err
	}
	var buf bytes.Buffer
	buf.Grow(res.Chunk.Len())
	_, err = res.Chunk.WriteTo(&buf)
	res.Chunk.Release()
	if err != nil {
		return shareRead{}, fmt.Errorf("share fetch read: %w", err)
	}
	raw := buf.Bytes()
	batches, spans := logBatches(raw)
	if len(batches) == 0 {
		return shareRead{}, nil
	}
	a.FetchOffset, a.Batches, a.ReadCommitted = off, batches, sp.readCommitted
	if sp.readCommitted {
		for _, t := range sp.log.Log.AbortedTransactions(off, res.NextOffset) {
			a.Aborted = append(a.Aborted, share.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset})
		}
	}
	acquired, n := sp.p.Acquire(a, sp.m.clock.Now())
	sp.settle(false)
	return shareRead{records: sliceAcquired(raw, batches, spans, acquired), acquired: acquired, count: n}, nil
}

// logBatches is the batches of a read: their offsets, producers and
// positions in raw.
func logBatches(raw []byte) ([]share.LogBatch, [][2]int) {
	var out []share.LogBatch
	var spans [][2]int
	for pos := 0; pos+61 <= len(raw); {
		base := int64(binary.BigEndian.Uint64(raw[pos:]))
		n := int(binary.BigEndian.Uint32(raw[pos+8:])) + 12
		if pos+n > len(raw) {
			break
		}
		attrs := binary.BigEndian.Uint16(raw[pos+21:])
		delta := int64(binary.BigEndian.Uint32(raw[pos+23:]))
		pid := int64(binary.BigEndian.Uint64(raw[pos+43:]))
		out = append(out, share.LogBatch{Base: base, Last: base + delta, ProducerID: pid, Transactional: attrs&0x10 != 0,
			Abort: attrs&0x20 != 0 && abortMarker(raw[pos+61:pos+n])})
		spans = append(spans, [2]int{pos, pos + n})
		pos += n
	}
	return out, spans
}

// abortMarker reports whether a control batch's first record is an ABORT
// marker: its key is a version and type 0.
func abortMarker(records []byte) bool {
	pos := 0
	varint := func() int64 {
		v, n := binary.Varint(records[pos:])
		if n <= 0 {
			pos = len(records)
			return -1
		}
		pos += n
		return v
	}
	varint() // record length
	if pos >= len(records) {
		return false
	}
	pos++ // attributes
	varint()
	varint()
	if k := varint(); k < 4 || pos+4 > len(records) {
		return false
	}
	return binary.BigEndian.Uint16(records[pos+2:]) == 0
}

// sliceAcquired is the bytes of the batches from the first holding an
// acquired record to the last (ShareFetchUtils.maybeSliceFetchRecords).
func sliceAcquired(raw []byte, batches []share.LogBatch, spans [][2]int, acquired []share.AcquiredRecords) []byte {
	if len(acquired) == 0 {
		return nil
	}
	first, last := acquired[0].First, acquired[len(acquired)-1].Last
	from, to := -1, -1
	for i, b := range batches {
		if b.Last >= first && b.Base <= last {
			if from < 0 {
				from = spans[i][0]
			}
			to = spans[i][1]
		}
	}
	if from < 0 {
		return nil
	}
	return raw[from:to]
}
