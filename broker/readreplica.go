package broker

// KIP-392 fetch from followers. With replica.selector.class set to Kafka's
// RackAwareReplicaSelector, the leader answers a consumer's fetch (v11+,
// which carries the client's rack, client.rack) with a preferred read
// replica and no records when an in-sync follower in the consumer's rack
// holds the fetch offset, as Kafka's ReplicaManager.findPreferredReadReplica
// and RackAwareReplicaSelector: the candidates are the followers in the
// ISR whose last fetch holds the offset (log start <= offset <= log end),
// that are registered, unfenced and on the client listener; the leader is
// chosen (and the consumer reads from it) when the consumer names no rack,
// when no replica is in its rack, or when the leader is; otherwise the
// candidate with the largest log end offset, then the latest caught up,
// then the largest id. The follower serves the consumer from its own log
// up to its high watermark, which the leader's fetch answers carry
// (servesConsumer, fetch.go).

import (
	"slices"

	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// preferredReadReplica is the follower a consumer in rack should fetch
// sp from at fetchOffset; ok is false when it should keep reading from
// this node, the leader.
func (b *services) preferredReadReplica(sp *storage.Partition, leader *replica.Partition, fetchOffset int64, rack string) (id int32, ok bool) {
	if rack == "" {
		return 0, false
	}
	img := b.meta.Image()
	t := img.Topics.ByName(sp.Topic)
	if t == nil {
		return 0, false
	}
	p, found := t.Partition(sp.Index)
	if !found {
		return 0, false
	}
	inRack := func(id int32) bool {
		reg, ok := img.Cluster.Broker(id)
		_, _, listens := b.endpoint(reg)
		return ok && !reg.Fenced && listens && reg.Rack == rack && slices.Contains(p.Replicas, id)
	}
	if inRack(b.cfg.NodeID) {
		return 0, false
	}
	var best replica.FollowerView
	for _, f := range leader.ReadableFollowers(fetchOffset) {
		if inRack(f.ID) && (!ok || moreCaughtUp(f, best)) {
			best, ok = f, true
		}
	}
	return best.ID, ok
}

// moreCaughtUp orders replicas as Kafka's ReplicaView.comparator: by log
// end offset, then by time since last caught up in milliseconds (less is
// more), then by id.
func moreCaughtUp(a, b replica.FollowerView) bool {
	if a.LogEndOffset != b.LogEndOffset {
		return a.LogEndOffset > b.LogEndOffset
	}
	if am, bm := a.LastCaughtUpAt.UnixMilli(), b.LastCaughtUpAt.UnixMilli(); am != bm {
		return am > bm
	}
	return a.ID > b.ID
}
