package broker

// A follower's fetch in a cluster, as Kafka's Partition.fetchRecords for a
// follower: the partition must be led here (else NOT_LEADER_OR_FOLLOWER)
// at the leader epoch the follower names (FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH), and the follower must be one of its replicas
// (else, as Kafka's followerReplicaOrThrow, UNKNOWN_LEADER_EPOCH when the
// fetch names a leader epoch, NOT_LEADER_OR_FOLLOWER when not). When the
// follower's last fetched epoch ends elsewhere in the leader's log, or
// before its fetch offset, the answer is that epoch's end
// (DivergingEpoch, KIP-320) and no records, and the fetch offset is not
// recorded; as Kafka's readRecords, an epoch whose end the leader cannot
// tell, or a fetch offset below its log start offset, is
// OFFSET_OUT_OF_RANGE first; otherwise the records are read up to the leader's log end
// offset (a fetch offset past it is OFFSET_OUT_OF_RANGE) and the fetch
// offset is the follower's log end offset (UpdateFollower: the high
// watermark and the ISR follow). A follower whose offset the leader's ISR
// check finds caught up is proposed for the ISR.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

func (b *services) readReplicaPartition(t *storage.Topic, version int16, rp *kmsg.FetchRequestTopicPartition, replicaID int32, limit int, minOne bool, fp *fetchPartition) error {
	if t == nil && version >= 13 {
		return kerr.UnknownTopicID
	}
	p := lookupPartition(t, rp.Partition)
	if p == nil {
		return missingPartition(t, rp.Partition)
	}
	fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = p.Log.HighWatermark(), p.Log.LastStableOffset(), p.Log.LogStartOffset()
	leader, ok := b.replicas.Leader(p)
	if !ok {
		return kerr.NotLeaderForPartition
	}
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		return err
	}
	if !leader.IsReplica(replicaID) {
		if rp.CurrentLeaderEpoch >= 0 {
			// The epoch is this leader's and the replica not yet one of
			// its own (a reassignment the image has not brought here): the
			// follower retries, as Kafka's followerReplicaOrThrow.
			return kerr.UnknownLeaderEpoch
		}
		return kerr.NotLeaderForPartition
	}
	if version >= 12 && rp.LastFetchedEpoch >= 0 {
		epoch, end := p.Log.EndOffsetForEpoch(rp.LastFetchedEpoch)
		switch {
		case epoch < 0 || end < 0:
			return fmt.Errorf("the end of the follower's last fetched epoch %d is not known: %w", rp.LastFetchedEpoch, kerr.OffsetOutOfRange)
		case rp.FetchOffset < fp.logStartOffset:
			return fmt.Errorf("fetch offset %d below the log start offset %d: %w", rp.FetchOffset, fp.logStartOffset, kerr.OffsetOutOfRange)
		case epoch < rp.LastFetchedEpoch || end < rp.FetchOffset:
			fp.diverged, fp.divergingEpoch, fp.divergingEnd = true, epoch, end
			return nil
		}
	}
	res, err := p.Log.ReadReplica(rp.FetchOffset, limit, minOne)
	fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = res.HighWatermark, res.LastStable, res.LogStartOffset
	if err != nil {
		return err
	}
	if err := leader.UpdateFollower(replicaID, rp.FetchOffset, rp.LogStartOffset, b.clock.Now()); err != nil {
		res.Chunk.Release()
		return err
	}
	if b.isr != nil {
		b.isr.maybeExpand(p, leader)
	}
	// The high watermark this fetch may have moved: the follower holds
	// what is below its fetch offset, and takes it up to there.
	fp.highWatermark, fp.lastStableOffset = p.Log.HighWatermark(), p.Log.LastStableOffset()
	fp.chunk = res.Chunk
	return nil
}
