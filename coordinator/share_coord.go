package coordinator

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/strata-io/strata/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareStateShard is the share coordinator's state machine for one
// partition of __share_group_state, as Kafka 4.4's ShareCoordinatorShard:
// the persisted state of every share-partition whose key hashes there.
// Initialize, Write, Read, ReadSummary and Delete (one share-partition
// each, as Kafka's ShareCoordinatorService splits the requests) return the
// record to append and the answer to send once it is durable; the driver
// appends the record and replays it, which is the only way the state
// changes, so a restart that replays the log ends where the last append
// left it. A write becomes a ShareUpdate, the state batches it changed,
// until share.coordinator.snapshot.update.records.per.snapshot updates
// followed the last ShareSnapshot; the next one is a whole new snapshot.
// No goroutine, lock or clock: every request takes the time.
type shareStateShard struct {
	perSnapshot int
	// partitions is the metadata image: how many partitions the topic
	// has, 0 when it does not exist.
	partitions func(topicID [16]byte) int32
	states     map[sharePartKey]*shareOffset
	leader     map[sharePartKey]int32 // highest leader epoch seen
	stateEpoch map[sharePartKey]int32 // highest state epoch seen
	updates    map[sharePartKey]int   // ShareUpdates since the last snapshot
	// snapshotAt is the offset of each share-partition's last ShareSnapshot
	// (its tombstone's until the next replay), and lastRedundant the offset
	// below which no record is needed any more: Kafka's
	// ShareCoordinatorOffsetsManager, which record pruning reads.
	snapshotAt    map[sharePartKey]int64
	lastRedundant int64
}

type sharePartKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

// shareOffset is ShareGroupOffset: a share-partition's state.
type shareOffset struct {
	snapshotEpoch, stateEpoch, leaderEpoch int32
	startOffset                            int64
	deliveryCompleteCount                  int32
	batches                                []share.StateBatch
	created, written                       int64
}

// defaultSnapshotUpdateRecords is
// share.coordinator.snapshot.update.records.per.snapshot's default.
const defaultSnapshotUpdateRecords = 500

func newShareStateShard(perSnapshot int, partitions func([16]byte) int32) *shareStateShard {
	return &shareStateShard{
		perSnapshot: perSnapshot, partitions: partitions,
		states: map[sharePartKey]*shareOffset{}, leader: map[sharePartKey]int32{},
		stateEpoch: map[sharePartKey]int32{}, updates: map[sharePartKey]int{},
		snapshotAt: map[sharePartKey]int64{}, lastRedundant: math.MaxInt64,
	}
}

// shareError is an error of one share-partition: Kafka's code and message.
type shareError struct {
	err *kerr.Error
	msg string
}

// shareErr is err with msg, or with Kafka's message for the code
// (Errors.message(), which for FENCED_LEADER_EPOCH ends with a period
// kerr's description lacks).
func shareErr(err *kerr.Error, msg string) *shareError {
	switch {
	case msg != "":
	case err == kerr.FencedLeaderEpoch:
		msg = "The leader epoch in the request is older than the epoch on the broker."
	default:
		msg = err.Description
	}
	return &shareError{err: err, msg: msg}
}

const (
	msgNegativePartition   = "The partition id cannot be a negative number."
	msgNegativeLeaderEpoch = "The leader epoch cannot be a negative number."
	msgNegativeStateEpoch  = "The state epoch cannot be a negative number."
	msgWriteUninitialized  = "Write operation on uninitialized share partition not allowed."
	msgReadUninitialized   = "Read operation on uninitialized share partition not allowed."
)

// known is the metadata check every request ends its validation with.
func (s *shareStateShard) known(k sharePartKey) *shareError {
	if s.partitions == nil || s.partitions(k.topicID) <= k.partition {
		return shareErr(kerr.UnknownTopicOrPartition, "")
	}
	return nil
}

// initializeState starts a share-partition's state at a state epoch and
// start offset (-1: the share-partition decides on its first read, by
// share.auto.offset.reset), replacing any state it had.
func (s *shareStateShard) initializeState(k sharePartKey, stateEpoch int32, startOffset int64, now time.Time) ([]kv, *shareError) {
	switch {
	case k.partition < 0:
		return nil, shareErr(kerr.InvalidRequest, msgNegativePartition)
	case stateEpoch < 0:
		return nil, shareErr(kerr.InvalidRequest, msgNegativeStateEpoch)
	}
	if e, ok := s.stateEpoch[k]; ok && e > stateEpoch {
		return nil, shareErr(kerr.FencedStateEpoch, "")
	}
	if err := s.known(k); err != nil {
		return nil, err
	}
	v := shareSnapshotValue{stateEpoch: stateEpoch, startOffset: startOffset, deliveryCompleteCount: 0,
		createTimestamp: now.UnixMilli(), writeStamp: now.UnixMilli()}
	if startOffset == -1 {
		v.deliveryCompleteCount = -1
	}
	if cur := s.states[k]; cur != nil {
		v.snapshotEpoch = cur.snapshotEpoch + 1
	}
	return []kv{{key: shareKey{typ: shareSnapshotType, group: k.group, topicID: k.topicID, partition: k.partition}.encode(), value: v.encode()}}, nil
}

// shareWrite is one share-partition's WriteShareGroupState.
type shareWrite struct {
	stateEpoch, leaderEpoch int32
	startOffset             int64
	deliveryCompleteCount   int32
	batches                 []share.StateBatch
}

func writeFromRequest(p *kmsg.WriteShareGroupStateRequestTopicPartition) shareWrite {
	w := shareWrite{stateEpoch: p.StateEpoch, leaderEpoch: p.LeaderEpoch, startOffset: p.StartOffset, deliveryCompleteCount: p.DeliveryCompleteCount}
	for _, b := range p.StateBatches {
		w.batches = append(w.batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	return w
}

// writeState records a share-partition's changed state batches, start
// offset and delivery-complete count, refusing a writer whose leader or
// state epoch is older than one already seen.
func (s *shareStateShard) writeState(k sharePartKey, w shareWrite, now time.Time) ([]kv, *shareError) {
	switch {
	case k.partition < 0:
		return nil, shareErr(kerr.InvalidRequest, msgNegativePartition)
	case w.leaderEpoch < 0:
		return nil, shareErr(kerr.InvalidRequest, msgNegativeLeaderEpoch)
	case w.stateEpoch < 0:
		return nil, shareErr(kerr.InvalidRequest, msgNegativeStateEpoch)
	case s.states[k] == nil:
		return nil, shareErr(kerr.InvalidRequest, msgWriteUninitialized)
	}
	if e, ok := s.leader[k]; ok && e > w.leaderEpoch {
		return nil, shareErr(kerr.FencedLeaderEpoch, "")
	}
	if e, ok := s.stateEpoch[k]; ok && e > w.stateEpoch {
		return nil, shareErr(kerr.FencedStateEpoch, "")
	}
	if err := s.known(k); err != nil {
		return nil, err
	}
	return []kv{s.stateRecord(k, w, false, now)}, nil
}

// stateRecord is generateShareStateRecord: a ShareUpdate of the write's
// batches, or, once enough updates followed the last snapshot, a new
// snapshot of the state with the write folded in. As in Kafka only a read
// records its leader epoch (updateLeader): a write keeps the state's, so
// a write is fenced by the epoch of the last read, not of the last write.
func (s *shareStateShard) stateRecord(k sharePartKey, w shareWrite, updateLeader bool, now time.Time) kv {
	cur := s.states[k]
	leader := cur.leaderEpoch
	if updateLeader {
		leader = w.leaderEpoch
	}
	start := max(w.startOffset, cur.startOffset)
	complete := cur.deliveryCompleteCount
	switch {
	case w.startOffset == cur.startOffset:
		complete = max(w.deliveryCompleteCount, cur.deliveryCompleteCount)
	case w.startOffset > cur.startOffset:
		complete = w.deliveryCompleteCount
	}
	if s.updates[k] >= s.perSnapshot {
		v := shareSnapshotValue{snapshotEpoch: cur.snapshotEpoch + 1, stateEpoch: cur.stateEpoch, leaderEpoch: leader,
			startOffset: start, deliveryCompleteCount: complete, createTimestamp: now.UnixMilli(), writeStamp: now.UnixMilli(),
			batches: recordBatches(share.Combine(cur.batches, w.batches, start))}
		return kv{key: shareKey{typ: shareSnapshotType, group: k.group, topicID: k.topicID, partition: k.partition}.encode(), value: v.encode()}
	}
	v := shareUpdateValue{snapshotEpoch: cur.snapshotEpoch, leaderEpoch: leader, startOffset: start,
		deliveryCompleteCount: complete, batches: recordBatches(share.Combine(nil, w.batches, start))}
	return kv{key: shareKey{typ: shareUpdateType, group: k.group, topicID: k.topicID, partition: k.partition}.encode(), value: v.encode()}
}

func recordBatches(bs []share.StateBatch) []shareStateBatch {
	out := make([]shareStateBatch, 0, len(bs))
	for _, b := range bs {
		out = append(out, shareStateBatch{first: b.First, last: b.Last, deliveryState: int8(b.State), deliveryCount: b.DeliveryCount})
	}
	return out
}

func stateBatches(bs []shareStateBatch) []share.StateBatch {
	out := make([]share.StateBatch, 0, len(bs))
	for _, b := range bs {
		out = append(out, share.StateBatch{First: b.first, Last: b.last, State: share.RecordState(b.deliveryState), DeliveryCount: b.deliveryCount})
	}
	return out
}

// readState is readStateAndMaybeUpdateLeaderEpoch: the share-partition's
// state for a share-partition leader; a leader epoch not seen before is
// recorded (the returned record) before the answer.
func (s *shareStateShard) readState(k sharePartKey, leaderEpoch int32, now time.Time) ([]kv, *share.Persisted, *shareError) {
	switch {
	case k.partition < 0:
		return nil, nil, shareErr(kerr.InvalidRequest, msgNegativePartition)
	case leaderEpoch < 0:
		return nil, nil, shareErr(kerr.InvalidRequest, msgNegativeLeaderEpoch)
	case s.states[k] == nil:
		return nil, nil, shareErr(kerr.InvalidRequest, msgReadUninitialized)
	}
	if e, ok := s.leader[k]; ok && e > leaderEpoch {
		return nil, nil, shareErr(kerr.FencedLeaderEpoch, "")
	}
	if err := s.known(k); err != nil {
		return nil, nil, err
	}
	cur := s.states[k]
	st := &share.Persisted{StateEpoch: cur.stateEpoch, LeaderEpoch: leaderEpoch, StartOffset: cur.startOffset,
		Batches: append([]share.StateBatch(nil), cur.batches...)}
	if e, ok := s.leader[k]; ok && e == leaderEpoch {
		return nil, st, nil
	}
	rec := s.stateRecord(k, shareWrite{stateEpoch: cur.stateEpoch, leaderEpoch: leaderEpoch, startOffset: cur.startOffset,
		deliveryCompleteCount: cur.deliveryCompleteCount}, true, now)
	return []kv{rec}, st, nil
}

// shareSummary is ReadShareGroupStateSummary's answer for one partition.
type shareSummary struct {
	stateEpoch, leaderEpoch int32
	startOffset             int64
	deliveryCompleteCount   int32
}

// readStateSummary is the start offset and delivery-complete count (the
// lag DescribeShareGroupOffsets shows); an uninitialized share-partition
// has start offset -1.
func (s *shareStateShard) readStateSummary(k sharePartKey) (shareSummary, *shareError) {
	if k.partition < 0 {
		return shareSummary{}, shareErr(kerr.InvalidRequest, msgNegativePartition)
	}
	if err := s.known(k); err != nil {
		return shareSummary{}, err
	}
	cur := s.states[k]
	if cur == nil {
		return shareSummary{startOffset: -1, deliveryCompleteCount: -1}, nil
	}
	return shareSummary{stateEpoch: cur.stateEpoch, leaderEpoch: cur.leaderEpoch, startOffset: cur.startOffset,
		deliveryCompleteCount: cur.deliveryCompleteCount}, nil
}

// deleteState removes a share-partition's state: the snapshot key's
// tombstone (nothing for one without state).
func (s *shareStateShard) deleteState(k sharePartKey) ([]kv, *shareError) {
	if k.partition < 0 {
		return nil, shareErr(kerr.InvalidRequest, msgNegativePartition)
	}
	if err := s.known(k); err != nil {
		return nil, err
	}
	if s.states[k] == nil {
		return nil, nil
	}
	return []kv{{key: shareKey{typ: shareSnapshotType, group: k.group, topicID: k.topicID, partition: k.partition}.encode()}}, nil
}

// cleanupTopics is Kafka's maybeCleanupShareState: the tombstones of the
// state of every share-partition of the deleted topics.
func (s *shareStateShard) cleanupTopics(deleted map[[16]byte]bool) []kv {
	var recs []kv
	for _, k := range s.sortedKeys() {
		if deleted[k.topicID] {
			recs = append(recs, kv{key: shareKey{typ: shareSnapshotType, group: k.group, topicID: k.topicID, partition: k.partition}.encode()})
		}
	}
	return recs
}

// replay applies the record at offset of __share_group_state, written by
// this shard or read back on load.
func (s *shareStateShard) replay(offset int64, key, value []byte) error {
	sk, err := decodeShareKey(key)
	if err != nil {
		return err
	}
	k := sharePartKey{group: sk.group, topicID: sk.topicID, partition: sk.partition}
	if sk.typ == shareSnapshotType {
		if value == nil {
			delete(s.states, k)
			delete(s.leader, k)
			delete(s.stateEpoch, k)
			delete(s.updates, k)
			s.snapshotAt[k] = offset
			s.findRedundant(offset)
			delete(s.snapshotAt, k)
			return nil
		}
		v, err := decodeShareSnapshot(value)
		if err != nil {
			return err
		}
		s.seeLeader(k, v.leaderEpoch)
		if e, ok := s.stateEpoch[k]; !ok || e < v.stateEpoch {
			s.stateEpoch[k] = v.stateEpoch
		}
		s.states[k] = &shareOffset{snapshotEpoch: v.snapshotEpoch, stateEpoch: v.stateEpoch, leaderEpoch: v.leaderEpoch,
			startOffset: v.startOffset, deliveryCompleteCount: v.deliveryCompleteCount, batches: stateBatches(v.batches),
			created: v.createTimestamp, written: v.writeStamp}
		if n, ok := s.updates[k]; ok && n >= s.perSnapshot {
			s.updates[k] = 0
		}
		s.snapshotAt[k] = offset
		s.findRedundant(offset)
		return nil
	}
	if value == nil {
		return nil // Kafka writes no ShareUpdate tombstones
	}
	v, err := decodeShareUpdate(value)
	if err != nil {
		return err
	}
	s.seeLeader(k, v.leaderEpoch)
	cur := s.states[k]
	if cur == nil {
		s.states[k] = &shareOffset{snapshotEpoch: v.snapshotEpoch, leaderEpoch: v.leaderEpoch, startOffset: v.startOffset,
			deliveryCompleteCount: v.deliveryCompleteCount, batches: stateBatches(v.batches)}
	} else {
		start := v.startOffset
		if start == -1 {
			start = cur.startOffset
		}
		leader := v.leaderEpoch
		if leader == -1 {
			leader = cur.leaderEpoch
		}
		s.states[k] = &shareOffset{snapshotEpoch: cur.snapshotEpoch, stateEpoch: cur.stateEpoch, leaderEpoch: leader,
			startOffset: start, deliveryCompleteCount: v.deliveryCompleteCount,
			batches: share.Combine(cur.batches, stateBatches(v.batches), start), created: cur.created, written: cur.written}
	}
	s.updates[k]++
	return nil
}

func (s *shareStateShard) seeLeader(k sharePartKey, epoch int32) {
	if e, ok := s.leader[k]; !ok || e < epoch {
		s.leader[k] = epoch
	}
}

// findRedundant is ShareCoordinatorOffsetsManager.updateState once a
// snapshot (or tombstone) at offset was recorded: every share-partition's
// state is whole from its last snapshot on, so the records below the
// lowest of them are redundant.
func (s *shareStateShard) findRedundant(offset int64) {
	low := min(s.lastRedundant, offset)
	if len(s.snapshotAt) > 0 {
		low = math.MaxInt64
		for _, o := range s.snapshotAt {
			low = min(low, o)
		}
	}
	s.lastRedundant = low
}

// redundantOffset is Kafka's lastRedundantOffset: the offset of
// __share_group_state's partition below which its records may be
// deleted, ok false while there is none.
func (s *shareStateShard) redundantOffset() (offset int64, ok bool) {
	if s.lastRedundant <= 0 || s.lastRedundant == math.MaxInt64 {
		return 0, false
	}
	return s.lastRedundant, true
}

// coldSnapshots is Kafka's snapshotColdPartitions: unless every
// share-partition's last snapshot already is such a copy (its write
// timestamp differs from its create timestamp), each one not snapshotted
// for interval gets a new ShareSnapshot of its state, so that the
// ShareUpdates before it can be pruned.
func (s *shareStateShard) coldSnapshots(now time.Time, interval time.Duration) []kv {
	copied := 0
	for _, st := range s.states {
		if st.created != st.written {
			copied++
		}
	}
	if copied == len(s.states) {
		return nil
	}
	var recs []kv
	for _, k := range s.sortedKeys() {
		st := s.states[k]
		if now.UnixMilli()-st.written < interval.Milliseconds() {
			continue
		}
		v := shareSnapshotValue{snapshotEpoch: st.snapshotEpoch + 1, stateEpoch: st.stateEpoch, leaderEpoch: st.leaderEpoch,
			startOffset: st.startOffset, deliveryCompleteCount: st.deliveryCompleteCount, createTimestamp: st.created,
			writeStamp: now.UnixMilli(), batches: recordBatches(st.batches)}
		recs = append(recs, kv{key: shareKey{typ: shareSnapshotType, group: k.group, topicID: k.topicID, partition: k.partition}.encode(), value: v.encode()})
	}
	return recs
}

// sortedKeys are the share-partitions in a fixed order (Kafka's follows
// its hash map), so the records are the same from run to run.
func (s *shareStateShard) sortedKeys() []sharePartKey {
	keys := make([]sharePartKey, 0, len(s.states))
	for k := range s.states {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b sharePartKey) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		if c := bytes.Compare(a.topicID[:], b.topicID[:]); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return keys
}
