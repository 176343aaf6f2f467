package broker

// In a cluster, the metadata image is decided by the controller quorum,
// not by this node's files: storage follows it, as Kafka's
// BrokerMetadataPublisher has the LogManager create the logs a new image
// gives this node and delete the ones of a removed topic. imageHost runs
// as the first step of each publication (publisher.go): it opens the logs
// of every topic of the image (this step of the cluster hosts a log of
// every partition on every node, replica or not; only replicas are ever
// written), grows the partitions it has fewer of, applies the topics' and
// this node's dynamic configs, and deletes the logs of a topic the image
// removed. A log whose topic the image never knew is left alone and
// reported once this node has caught up (reportStrays), as Kafka's stray
// logs are found: nothing this node cannot account for is deleted.
//
// Storage's refusals are logged: the quorum has already committed the
// change, so there is no client to answer; the log of the partition stays
// as it was (Kafka marks the log dir offline).

import (
	"maps"
	"strconv"
	"sync"

	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// imageHost makes storage hold what an image gives this node.
type imageHost struct {
	logs   *storage.Manager
	node   int32
	logger *zap.Logger
	// stopReplicas drops the replicas of a deleted topic's partitions
	// before storage deletes their logs.
	stopReplicas func([]*storage.Partition)

	mu     sync.Mutex
	strays map[[16]byte]bool // the stray topics reported
}

// follow takes storage from old's topics and configs to new's; old is
// metadata.Empty for the first image after start, when the logs storage
// opened are matched to the image.
func (h *imageHost) follow(old, new *metadata.Image) {
	for _, t := range new.Topics.All() {
		if was := old.Topics.ByID(t.ID); was != nil && len(was.Partitions) == len(t.Partitions) &&
			maps.Equal(topicConfigsOf(old, t.Name), topicConfigsOf(new, t.Name)) {
			continue // nothing storage keeps changed (a leader or an ISR did)
		}
		h.host(t, new)
	}
	for _, t := range old.Topics.All() {
		if new.Topics.ByID(t.ID) == nil {
			h.remove(t)
		}
	}
	h.followBrokerConfigs(new)
}

// reportStrays logs the topics of the log dir that img, a caught-up image,
// does not have, once each: the metadata log replayed after a restart
// goes through images older than the log dir, so only an image the
// controller counts as caught up can tell.
func (h *imageHost) reportStrays(img *metadata.Image) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, st := range h.logs.Topics() {
		if img.Topics.ByID(st.ID) == nil && !h.strays[st.ID] {
			if h.strays == nil {
				h.strays = map[[16]byte]bool{}
			}
			h.strays[st.ID] = true
			h.logger.Warn("a topic of the log dir is not in the cluster's metadata; its logs are kept and not served",
				zap.String("topic", st.Name), zap.String("topic_id", metadata.TopicIDString(st.ID)))
		}
	}
}

// host opens t's logs, adds the partitions storage lacks and sets its
// configs to the image's.
func (h *imageHost) host(t *metadata.TopicImage, img *metadata.Image) {
	configs := topicConfigsOf(img, t.Name)
	st := h.logs.TopicByID(t.ID)
	if st == nil {
		if other := h.logs.Topic(t.Name); other != nil {
			h.logger.Error("the cluster's metadata has a topic this log dir holds under another topic id; the log dir's is kept and the cluster's not hosted",
				zap.String("topic", t.Name), zap.String("topic_id", metadata.TopicIDString(t.ID)),
				zap.String("log_dir_topic_id", metadata.TopicIDString(other.ID)))
			return
		}
		if _, err := h.logs.CreateTopicWithID(t.Name, t.ID, int32(len(t.Partitions)), maps.Clone(configs)); err != nil {
			h.logger.Error("cannot open the logs of a topic of the cluster's metadata", zap.String("topic", t.Name), zap.Error(err))
		}
		return
	}
	if n := len(st.Partitions()); n < len(t.Partitions) {
		if err := h.logs.CreatePartitions(t.Name, int32(len(t.Partitions)), false); err != nil {
			h.logger.Error("cannot open the logs of a topic's new partitions", zap.String("topic", t.Name),
				zap.Int("partitions", len(t.Partitions)), zap.Error(err))
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
