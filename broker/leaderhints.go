package broker

// KIP-951 leader hints: a partition answered NOT_LEADER_OR_FOLLOWER names
// its current leader and leader epoch, and the response lists those
// leaders' endpoints, so a client moves to the new leader without first
// refreshing its metadata, as Kafka's Produce (v10+) and Fetch (v16+,
// also for FENCED_LEADER_EPOCH) answer.

import (
	"slices"

	"github.com/strata-io/strata/metadata"
)

// leaderHints collects the leaders named in one response.
type leaderHints struct {
	b       *services
	img     *metadata.Image
	leaders []int32
}

// add sets *id and *epoch to the live leader of topic's partition, when
// the image knows one.
func (h *leaderHints) add(id, epoch *int32, topic string, partition int32) {
	if h.img == nil {
		h.img = h.b.meta.Image()
	}
	t := h.img.Topics.ByName(topic)
	if t == nil {
		return
	}
	p, ok := t.Partition(partition)
	if !ok || p.Leader == metadata.NoLeader {
		return
	}
	reg, ok := h.img.Cluster.Broker(p.Leader)
	if _, _, listens := h.b.endpoint(reg); !ok || reg.Fenced || !listens {
		return
	}
	*id, *epoch = p.Leader, p.LeaderEpoch
	if !slices.Contains(h.leaders, p.Leader) {
		h.leaders = append(h.leaders, p.Leader)
	}
}

// brokers are the registrations of the leaders named, by id.
func (h *leaderHints) brokers() []metadata.BrokerRegistration {
	slices.Sort(h.leaders)
	out := make([]metadata.BrokerRegistration, 0, len(h.leaders))
	for _, id := range h.leaders {
		reg, _ := h.img.Cluster.Broker(id)
		out = append(out, reg)
	}
	return out
}
