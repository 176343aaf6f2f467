package broker

// A follower's fetch in a cluster, as Kafka's Partition.fetchRecords for a
// follower: the partition must be led here (else NOT_LEADER_OR_FOLLOWER)
// at the leader epoch the follower names (FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH), and the follower must be one of its replicas
// (NOT_LEADER_OR_FOLLOWER, as Kafka's followerReplicaOrThrow). When the
// follower's last fetched epoch ends elsewhere in the leader's log, or
// before its fetch offset, the answer is that epoch's end
// (DivergingEpoch, KIP-320) and no records, and the fetch offset is not
// recorded; otherwise the records are read up to the leader's log end
// offset (a fetch offset past it is OFFSET_OUT_OF_RANGE) and the fetch
// offset is the follower's log end offset (UpdateFollower: the high
// watermark and the ISR follow). A follower whose offset the leader's ISR
// check finds caught up is proposed for the ISR.

import (
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
		return kerr.UnknownTopicOrPartition
	}
	fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = p.Log.HighWatermark(), p.Log.LastStableOffset(), p.Log.LogStartOffset()
	leader, ok := b.replicas.Leader(p)
	if !ok {
		return kerr.NotLeaderForPartition
	}
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		return err
	}
	if version >= 12 && rp.LastFetchedEpoch >= 0 {
		epoch, end := p.Log.EndOffsetForEpoch(rp.LastFetchedEpoch)
		if epoch < rp.LastFetchedEpoch || end < rp.FetchOffset {
			fp.diverged, fp.divergingEpoch, fp.divergingEnd = true, epoch, end
			return nil
		}
	}
	res, err := p.Log.ReadReplica(rp.FetchOffset, limit, minOne)
	fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = res.HighWatermark, res.LastStable, res.LogStartOffset
	if err != nil {
		return err
	}
	if err := leader.UpdateFollower(replicaID, rp.FetchOffset, b.clock.Now()); err != nil {
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
