package broker

// In a cluster, the metadata image is decided by the controller quorum,
// not by this node's files: storage follows it, as Kafka's
// BrokerMetadataPublisher has the LogManager hold the logs of the
// partitions whose replicas include this node. imageHost runs as the
// first step of each publication (publisher.go): it creates the logs of
// the partitions this node becomes a replica of (a new topic, added
// partitions, a reassignment adding it; a replica being added is among a
// partition's replicas), once this node has caught up with the quorum
// (Kafka's broker publishes no image before; catchUp creates what the
// replay left out, so a restart does not recreate a log the replayed
// history later moved away), applies the topics' and this node's dynamic
// configs, deletes the logs of a topic the image removed, and deletes the
// log of a partition this node stopped being a replica of (a completed
// reassignment moved it away: Kafka's ReplicaManager.applyDelta stops the
// replica and LogManager.asyncDelete renames the directory
// <topic>-<p>.<uuid>-delete and removes it). That deletion is made only
// for a change seen once this node has caught up with the quorum: a log
// found at start, or during the replay of the metadata log that follows,
// for a partition whose replicas exclude this node is what Kafka's
// LogManager.isStrayKraftReplica calls a stray, which Kafka moves aside
// (-stray) and does not delete; Strata keeps it where it is, unserved,
// and reports it once caught up (reportStrays), with the topics the image
// never knew: nothing this node cannot account for is deleted.
//
// Storage's refusals are logged: the quorum has already committed the
// change, so there is no client to answer; the log of the partition stays
// as it was (Kafka marks the log dir offline).

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// imageHost makes storage hold what an image gives this node.
type imageHost struct {
	logs   *storage.Manager
	node   int32
	logger *zap.Logger
	// stopReplicas drops the replicas of partitions before storage
	// deletes their logs.
	stopReplicas func([]*storage.Partition)
	// caughtUp is set once this node has caught up with the quorum (at
	// once when the image is not replayed from a metadata log): from then
	// on a partition joining this node has its log created, and one
	// leaving it has its log deleted.
	caughtUp atomic.Bool

	mu     sync.Mutex
	strays map[string]bool // the stray topics and partitions reported
}

// follow takes storage from old's topics and configs to new's; old is
// metadata.Empty for the first image after start, when the logs storage
// opened are matched to the image.
func (h *imageHost) follow(old, new *metadata.Image) {
	for _, t := range new.Topics.All() {
		was := old.Topics.ByID(t.ID)
		if was != nil && slices.Equal(h.replicaOf(was), h.replicaOf(t)) &&
			maps.Equal(topicConfigsOf(old, t.Name), topicConfigsOf(new, t.Name)) {
			continue // nothing storage keeps changed (a leader or an ISR did)
		}
		h.host(was, t, new)
	}
	for _, t := range old.Topics.All() {
		if new.Topics.ByID(t.ID) == nil {
			h.remove(t)
		}
	}
	h.followBrokerConfigs(new)
}

// replicaOf says, by partition, whether this node is among t's replicas.
func (h *imageHost) replicaOf(t *metadata.TopicImage) []bool {
	out := make([]bool, len(t.Partitions))
	for i, p := range t.Partitions {
		out[i] = slices.Contains(p.Replicas, h.node)
	}
	return out
}

// catchUp is called with the image applied last once this node has
// caught up: it creates the logs of the partitions img has this node be a
// replica of that storage lacks (those of the images replayed), returns
// them as the changes the publisher applies, and reports the strays.
func (h *imageHost) catchUp(img *metadata.Image) []localChange {
	h.caughtUp.Store(true)
	var out []localChange
	for _, t := range img.Topics.All() {
		var missing []int32
		for i, p := range t.Partitions {
			if slices.Contains(p.Replicas, h.node) && lookupPartition(h.logs.TopicByID(t.ID), int32(i)) == nil {
				missing = append(missing, int32(i))
			}
		}
		if len(missing) == 0 {
			continue
		}
		h.host(nil, t, img)
		st := h.logs.TopicByID(t.ID)
		for _, i := range missing {
			if lookupPartition(st, i) == nil {
				continue // storage refused it, and host logged why
			}
			p := t.Partitions[i]
			led := p.LeaderIs(h.node)
			out = append(out, localChange{topic: t.Name, partition: i, epoch: p.LeaderEpoch, reg: p, led: led, elected: led, follow: !led})
		}
	}
	h.reportStrays(img)
	return out
}

// reportStrays logs, once each, the topics of the log dir that img, a
// caught-up image, does not have and the partitions this node hosts a log
// of without being among their replicas: the metadata log replayed after
// a restart goes through images older than the log dir, so only an image
// the controller counts as caught up can tell.
func (h *imageHost) reportStrays(img *metadata.Image) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.strays == nil {
		h.strays = map[string]bool{}
	}
	for _, st := range h.logs.Topics() {
		t := img.Topics.ByID(st.ID)
		if t == nil {
			if key := metadata.TopicIDString(st.ID); !h.strays[key] {
				h.strays[key] = true
				h.logger.Warn("a topic of the log dir is not in the cluster's metadata; its logs are kept and not served",
					zap.String("topic", st.Name), zap.String("topic_id", metadata.TopicIDString(st.ID)))
			}
			continue
		}
		for _, sp := range st.Partitions() {
			key := metadata.TopicIDString(st.ID) + "-" + strconv.Itoa(int(sp.Index))
			if p, ok := t.Partition(sp.Index); ok && !slices.Contains(p.Replicas, h.node) && !h.strays[key] {
				h.strays[key] = true
				h.logger.Warn("the log dir holds a log of a partition this node is not a replica of (a stray, as Kafka calls it); it is kept and not served",
					zap.String("topic", st.Name), zap.Int32("partition", sp.Index), zap.Int32s("replicas", p.Replicas))
			}
		}
	}
}

// host creates the logs of t's partitions this node is a replica of and
// storage lacks, deletes the ones of the partitions it stopped being a
// replica of since was (nil when old had no such topic) once caught up,
// and sets t's configs to the image's.
func (h *imageHost) host(was, t *metadata.TopicImage, img *metadata.Image) {
	configs := topicConfigsOf(img, t.Name)
	replica := h.replicaOf(t)
	st := h.logs.TopicByID(t.ID)
	if st == nil {
		if other := h.logs.Topic(t.Name); other != nil {
			h.logger.Error("the cluster's metadata has a topic this log dir holds under another topic id; the log dir's is kept and the cluster's not hosted",
				zap.String("topic", t.Name), zap.String("topic_id", metadata.TopicIDString(t.ID)),
				zap.String("log_dir_topic_id", metadata.TopicIDString(other.ID)))
			return
		}
		if _, err := h.logs.CreateTopicWithID(t.Name, t.ID, int32(len(t.Partitions)), maps.Clone(configs), func(p int32) bool { return replica[p] && h.caughtUp.Load() }); err != nil {
			h.logger.Error("cannot open the logs of a topic of the cluster's metadata", zap.String("topic", t.Name), zap.Error(err))
		}
		return
	}
	if n := st.PartitionCount(); int(n) < len(t.Partitions) {
		if err := h.logs.CreatePartitionsHosting(t.Name, int32(len(t.Partitions)), func(p int32) bool { return replica[p] && h.caughtUp.Load() }); err != nil {
			h.logger.Error("cannot open the logs of a topic's new partitions", zap.String("topic", t.Name),
				zap.Int("partitions", len(t.Partitions)), zap.Error(err))
		}
	}
	var wasReplica []bool
	if was != nil {
		wasReplica = h.replicaOf(was)
	}
	for i := range t.Partitions {
		p := int32(i)
		sp := st.Partition(p)
		switch {
		case replica[i] && sp == nil && h.caughtUp.Load():
			if err := h.logs.HostPartition(t.Name, p); err != nil {
				h.logger.Error("cannot open the log of a partition this node became a replica of", zap.String("topic", t.Name),
					zap.Int32("partition", p), zap.Error(err))
			}
		case !replica[i] && sp != nil && i < len(wasReplica) && wasReplica[i] && h.caughtUp.Load():
			h.stopReplicas([]*storage.Partition{sp})
			if err := h.logs.DropPartition(t.Name, p); err != nil {
				h.logger.Error("cannot delete the log of a partition this node is no longer a replica of", zap.String("topic", t.Name),
					zap.Int32("partition", p), zap.Error(err))
				continue
			}
			h.logger.Info("deleted the log of a partition this node is no longer a replica of", zap.String("topic", t.Name),
				zap.Int32("partition", p), zap.Int32s("replicas", t.Partitions[i].Replicas))
		}
	}
	if have := st.ConfigMap(); !maps.Equal(have, configs) {
		if err := h.logs.AlterTopicConfigs(t.Name, maps.Clone(configs), false); err != nil {
			h.logger.Error("cannot apply a topic's configs", zap.String("topic", t.Name), zap.Error(err))
		}
	}
}

// topicConfigsOf is the dynamic configs img sets on topic name.
func topicConfigsOf(img *metadata.Image, name string) map[string]string {
	return img.Configs.Of(metadata.ConfigResource{Type: metadata.TopicResource, Name: name})
}

// remove deletes the logs of a topic the image removed.
func (h *imageHost) remove(t *metadata.TopicImage) {
	st := h.logs.TopicByID(t.ID)
	if st == nil {
		return
	}
	h.stopReplicas(st.Partitions())
	if err := h.logs.DeleteTopic(st.Name); err != nil {
		h.logger.Error("cannot delete the logs of a deleted topic", zap.String("topic", st.Name), zap.Error(err))
	}
}

// followBrokerConfigs sets the cluster-wide and this node's dynamic broker
// configs to the image's.
func (h *imageHost) followBrokerConfigs(img *metadata.Image) {
	clusterDefault, own := h.logs.BrokerConfigs()
	for _, c := range []struct {
		name string
		have map[string]string
	}{{"", clusterDefault}, {strconv.Itoa(int(h.node)), own}} {
		want := img.Configs.Of(metadata.ConfigResource{Type: metadata.BrokerResource, Name: c.name})
		if maps.Equal(want, c.have) || len(want) == 0 && len(c.have) == 0 {
			continue
		}
		if err := h.logs.AlterBrokerConfigs(maps.Clone(want), c.name != "", false); err != nil {
			h.logger.Error("cannot apply the dynamic broker configs", zap.String("broker", c.name), zap.Error(err))
		}
	}
}
