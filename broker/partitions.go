package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage"
)

// lookupPartition returns partition i of t, or nil when either is unknown
// or this node hosts no log of it.
func lookupPartition(t *storage.Topic, i int32) *storage.Partition {
	if t == nil {
		return nil
	}
	return t.Partition(i)
}

// missingPartition is the error for partition i of t when lookupPartition
// finds none, as Kafka's ReplicaManager.getPartitionOrError: a partition
// of a known topic this node holds no log of (it is no replica of it) is
// NOT_LEADER_OR_FOLLOWER, so clients refresh their metadata; one that does
// not exist is UNKNOWN_TOPIC_OR_PARTITION.
func missingPartition(t *storage.Topic, i int32) *kerr.Error {
	if t != nil && i >= 0 && i < t.PartitionCount() {
		return kerr.NotLeaderForPartition
	}
	return kerr.UnknownTopicOrPartition
}

// checkLeaderEpoch compares the epoch a client believes current with ours:
// -1 skips the check, a newer one means we are behind, an older one that the
// client is.
func checkLeaderEpoch(p *storage.Partition, clientEpoch int32) error {
	ours := p.LeaderEpoch()
	switch {
	case clientEpoch == -1 || clientEpoch == ours:
		return nil
	case clientEpoch > ours:
		return kerr.UnknownLeaderEpoch
	default:
		return kerr.FencedLeaderEpoch
	}
}
