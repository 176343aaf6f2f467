package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
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
func (s *groupShard) validateTxnCommit(g *group, req TxnCommitRequest) *kerr.Error {
	if g.consumer == nil && g.streams == nil {
		return g.validateCommit(req.MemberID, req.InstanceID, req.Generation, true)
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == "" {
		return nil
	}
	var err *kerr.Error
	if g.streams != nil {
		err = validateStreamsCommit(g.streams, req.MemberID, req.Generation, req.Commits, true, 0)
	} else {
		err = s.validateConsumerCommit(g.consumer, req.MemberID, req.Generation, req.Commits, true, 0)
	}
	if err == kerr.StaleMemberEpoch {
		return kerr.IllegalGeneration
	}
	return err
}

// txnCommitOffsets is TxnOffsetCommit: one error per commit (nil for
// success), final once the write is done. The member, generation and
// instance id, when given (v3+), are checked as Kafka does; the offsets are
// appended as a transactional batch of the producer and stay pending until
// the transaction ends.
func (s *groupShard) txnCommitOffsets(req TxnCommitRequest) []*kerr.Error {
	errs := make([]*kerr.Error, len(req.Commits))
	all := func(err *kerr.Error) []*kerr.Error { return fill(errs, err) }
	g := s.group(req.Group, req.Generation < 0)
	if g == nil {
		return all(kerr.IllegalGeneration)
	}
	if err := s.validateTxnCommit(g, req); err != nil {
		return all(err)
	}
	now := s.now.UnixMilli()
	var recs []kv
	var ok []int
	for i, cm := range req.Commits {
		switch {
		case !s.partitionExists(cm.Topic, cm.Partition):
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
	b := recordBatch{recs: recs, transactional: true, producerID: req.ProducerID, producerEpoch: req.ProducerEpoch}
	s.eff.writes = append(s.eff.writes, pendingWrite{batch: b, then: func(err error) {
		if err != nil {
			s.logger.Warn("transactional offset commit", zap.String("group", g.id), zap.Int64("producer_id", req.ProducerID), zap.Error(err))
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
			return
		}
		for _, i := range ok {
			cm := req.Commits[i]
			s.offsets.addPending(g.id, req.ProducerID, topicPartition{cm.Topic, cm.Partition},
				committedOffset{offset: cm.Offset, leaderEpoch: cm.LeaderEpoch, metadata: deref(cm.Metadata), commitTime: now, expireTime: -1})
		}
	}})
	return errs
}

// completeTxnOffsets applies the end of a transaction whose marker was
// just written to the shard's partition: on commit the producer's pending
// offsets become committed, on abort they are dropped.
func (s *groupShard) completeTxnOffsets(producerID int64, commit bool) {
	for group, offs := range s.offsets.takePending(producerID) {
		if !commit {
			continue
		}
		g := s.group(group, true)
		for tp, o := range offs {
			s.offsets.put(g.id, tp, o)
		}
	}
}

// replayTxn applies a record of a transactional batch during load:
// offset commits are pending until the producer's marker.
func (s *groupShard) replayTxn(b *batchInfo, key, value []byte) error {
	if b.control {
		if len(key) < 4 {
			return fmt.Errorf("control record key of %d bytes", len(key))
		}
		commit := binary.BigEndian.Uint16(key[2:]) == 1
		for group, offs := range s.offsets.takePending(b.producerID) {
			if !commit {
				continue
			}
			g := s.replayGroup(group)
			for tp, o := range offs {
				s.offsets.put(g.id, tp, o)
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
	s.offsets.addPending(k.Group, b.producerID, topicPartition{k.Topic, k.Partition},
		committedOffset{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1})
	return nil
}

// buildTxnBatch is buildBatch as a transactional batch of the producer,
// as Kafka's group coordinator writes TxnOffsetCommit records (sequence 0:
// coordinator appends are not sequence-checked).
func buildTxnBatch(recs []kv, producerID int64, epoch int16, now time.Time) []byte {
	return encodeBatch(recs, batch.Header{Attributes: batch.AttrTransactional, ProducerID: producerID, ProducerEpoch: epoch}, now)
}
