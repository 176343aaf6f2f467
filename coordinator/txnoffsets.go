package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Transactional offset commits (TxnOffsetCommit), as Kafka's
// GroupMetadataManager: the offsets are appended to __consumer_offsets at
// once as a transactional batch of the producer, kept pending, and become
// the group's committed offsets when the transaction coordinator writes
// the commit marker to that partition (dropped on abort). Replay on start
// does the same from the batches and markers in the log.

// txnOffsets holds the pending transactional offset commits: group ->
// producer id -> partition -> offset.
type txnOffsets struct {
	mu      sync.Mutex
	pending map[string]map[int64]map[topicPartition]committedOffset
}

func (t *txnOffsets) add(group string, pid int64, tp topicPartition, o committedOffset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = make(map[string]map[int64]map[topicPartition]committedOffset)
	}
	byPid := t.pending[group]
	if byPid == nil {
		byPid = make(map[int64]map[topicPartition]committedOffset)
		t.pending[group] = byPid
	}
	offs := byPid[pid]
	if offs == nil {
		offs = make(map[topicPartition]committedOffset)
		byPid[pid] = offs
	}
	offs[tp] = o
}

// take removes and returns the producer's pending offsets, by group.
func (t *txnOffsets) take(pid int64) map[string]map[topicPartition]committedOffset {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]map[topicPartition]committedOffset)
	for group, byPid := range t.pending {
		if offs, ok := byPid[pid]; ok {
			out[group] = offs
			delete(byPid, pid)
			if len(byPid) == 0 {
				delete(t.pending, group)
			}
		}
	}
	return out
}

// TxnCommitRequest is a TxnOffsetCommit for one group.
type TxnCommitRequest struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	Generation    int32 // -1 when not given (v0-2)
	MemberID      string
	InstanceID    string
	Commits       []Commit
}

// validateTxnCommit is Kafka's OffsetMetadataManager
// .validateTransactionalOffsetCommit: the member fields are optional, so a
// commit naming none is accepted from the transaction alone; one that names
// any is checked as the group type checks commits, a consumer group's
// STALE_MEMBER_EPOCH answered as ILLEGAL_GENERATION.
func (c *Groups) validateTxnCommit(g *group, req TxnCommitRequest) *kerr.Error {
	if g.consumer == nil {
		return g.validateCommit(req.MemberID, req.InstanceID, req.Generation, true)
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == "" {
		return nil
	}
	err := c.validateConsumerCommit(g.consumer, req.MemberID, req.Generation, req.Commits, true, 0)
	if err == kerr.StaleMemberEpoch {
		return kerr.IllegalGeneration
	}
	return err
}

// TxnCommitOffsets serves TxnOffsetCommit: one error per commit (nil for
// success). The member, generation and instance id, when given (v3+), are
// checked as Kafka does; the offsets stay pending until the transaction
// ends.
func (c *Groups) TxnCommitOffsets(req TxnCommitRequest) []*kerr.Error {
	errs := make([]*kerr.Error, len(req.Commits))
	all := func(err *kerr.Error) []*kerr.Error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if err := c.checkGroupID(req.Group); err != nil {
		return all(err)
	}
	g := c.lockGroup(req.Group, req.Generation < 0)
	if g == nil {
		return all(kerr.IllegalGeneration)
	}
	defer g.mu.Unlock()
	if err := c.validateTxnCommit(g, req); err != nil {
		return all(err)
	}
	now := c.now().UnixMilli()
	var recs []kv
	var ok []int
	for i, cm := range req.Commits {
		switch {
		case !c.partitionExists(cm.Topic, cm.Partition):
			errs[i] = kerr.UnknownTopicOrPartition
		case cm.Metadata != nil && len(*cm.Metadata) > maxOffsetMetadata:
			errs[i] = kerr.OffsetMetadataTooLarge
		default:
			o := committedOffset{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch, metadata: deref(cm.Metadata), commitTime: now, expireTime: -1}
			recs = append(recs, kv{key: offsetCommitKey(g.id, cm.Topic, cm.Partition), value: offsetCommitValue(o)})
			ok = append(ok, i)
		}
	}
	if len(recs) == 0 {
		return errs
	}
	b := buildTxnBatch(recs, req.ProducerID, req.ProducerEpoch, c.now())
	p, err := c.replicas.Partition(c.offsets.current()[g.partition]) // exists: checkGroupID created it
	if err == nil {
		_, err = p.AppendCoordinator(b, appendTimeout)
	}
	if err != nil {
		c.logger.Warn("transactional offset commit", zap.String("group", g.id), zap.Int64("producer_id", req.ProducerID), zap.Error(err))
		code := kerr.CoordinatorNotAvailable
		switch {
		case errors.Is(err, kerr.InvalidProducerEpoch):
			code = kerr.InvalidProducerEpoch
		case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
			code = kerr.InvalidCommitOffsetSize
		}
		for _, i := range ok {
			errs[i] = code
		}
		return errs
	}
	for _, i := range ok {
		cm := req.Commits[i]
		c.txn.add(g.id, req.ProducerID, topicPartition{cm.Topic, cm.Partition},
			committedOffset{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch, metadata: deref(cm.Metadata), commitTime: now, expireTime: -1})
	}
	return errs
}

// CompleteTxnOffsets applies the end of a transaction whose marker was just
// written to __consumer_offsets: on commit the producer's pending offsets
// become committed, on abort they are dropped.
func (c *Groups) CompleteTxnOffsets(producerID int64, commit bool) {
	for group, offs := range c.txn.take(producerID) {
		if !commit {
			continue
		}
		g := c.lockGroup(group, true)
		for tp, o := range offs {
			g.offsets[tp] = o
		}
		g.mu.Unlock()
	}
}

// HasPendingTxnOffset reports whether a transactional commit for the
// group's partition awaits its transaction's end (OffsetFetch
// require_stable answers UNSTABLE_OFFSET_COMMIT then).
func (c *Groups) HasPendingTxnOffset(group, topic string, partition int32) bool {
	c.txn.mu.Lock()
	defer c.txn.mu.Unlock()
	for _, offs := range c.txn.pending[group] {
		if _, ok := offs[topicPartition{topic, partition}]; ok {
			return true
		}
	}
	return false
}

// replayTxn applies a record of a transactional batch during load:
// offset commits are pending until the producer's marker.
func (c *Groups) replayTxn(partition int32, b *batchInfo, key, value []byte) error {
	if b.control {
		if len(key) < 4 {
			return fmt.Errorf("control record key of %d bytes", len(key))
		}
		commit := binary.BigEndian.Uint16(key[2:]) == 1
		for group, offs := range c.txn.take(b.producerID) {
			if !commit {
				continue
			}
			g := c.replayGroup(group, partition)
			for tp, o := range offs {
				g.offsets[tp] = o
			}
		}
		return nil
	}
	version, err := keyVersion(key)
	if err != nil {
		return err
	}
	if version > 1 || value == nil {
		return nil // only offset commits are written transactionally
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("transactional offset commit key: %w", err)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("transactional offset commit value of group %s: %w", k.Group, err)
	}
	c.txn.add(k.Group, b.producerID, topicPartition{k.Topic, k.Partition},
		committedOffset{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1})
	return nil
}

// buildTxnBatch is buildBatch as a transactional batch of the producer,
// as Kafka's group coordinator writes TxnOffsetCommit records (sequence 0:
// coordinator appends are not sequence-checked).
func buildTxnBatch(recs []kv, producerID int64, epoch int16, now time.Time) []byte {
	return encodeBatch(recs, batch.Header{Attributes: batch.AttrTransactional, ProducerID: producerID, ProducerEpoch: epoch}, now)
}
