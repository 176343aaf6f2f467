package broker

// The metadata image handlers read (package metadata): this node's
// registration, the topics and dynamic configs that storage keeps in the
// log dir's files (strata-topics.json, strata-broker-configs.json, as
// before) and the producer id blocks the coordinator's producer-ids file
// records. Every admin change storage makes is proposed to the store as
// Kafka's metadata records (storage.ManagerOptions.OnChange), within the
// change, so a client that was answered sees it in the image.

import (
	"maps"
	"slices"
	"strconv"

	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// imageFollower proposes what storage changed to the metadata store.
type imageFollower struct {
	store  metadata.Store
	node   int32
	logger *zap.Logger
}

// follow proposes the records that make the image match storage's topics
// and dynamic broker configs. They are the difference from the current
// image, so a refused proposal (a bug, logged) is made good by the next.
func (f *imageFollower) follow(topics []*storage.Topic, clusterDefault, node map[string]string) {
	img := f.store.Image()
	records := topicRecords(img, f.node, topics)
	for name, configs := range map[string]map[string]string{"": clusterDefault, strconv.Itoa(int(f.node)): node} {
		res := metadata.ConfigResource{Type: metadata.BrokerResource, Name: name}
		records = append(records, configRecords(res, img.Configs.Of(res), configs)...)
	}
	if len(records) == 0 {
		return
	}
	if _, err := f.store.Propose(records...); err != nil {
		f.logger.Error("the metadata image cannot follow the log dir's topics", zap.Error(err))
	}
}

// producerIDs records that the ids below end are handed out.
func (f *imageFollower) producerIDs(end int64) {
	if _, err := f.store.Propose(metadata.ProducerIdsRecord{BrokerID: f.node, NextProducerID: end}); err != nil {
		f.logger.Error("the metadata image cannot follow the producer id blocks", zap.Int64("end", end), zap.Error(err))
	}
}

// registerRecord registers this node with its advertised endpoint on the
// client listener.
func registerRecord(node int32, listener, host string, port int32) metadata.RegisterBrokerRecord {
	return metadata.RegisterBrokerRecord{BrokerID: node,
		Endpoints: []metadata.Endpoint{{Listener: listener, Host: host, Port: port, SecurityProtocol: 0}}}
}

// topicRecords are the records taking img's topics to topics: removals
// first (a name may have been freed and taken again), then new topics,
// partitions and leader epochs, and topic configs. This node leads, and is
// the only replica of, every partition.
func topicRecords(img *metadata.Image, node int32, topics []*storage.Topic) []metadata.Record {
	var out []metadata.Record
	live := make(map[[16]byte]bool, len(topics))
	for _, t := range topics {
		live[t.ID] = true
	}
	for _, ti := range img.Topics.All() {
		if !live[ti.ID] {
			out = append(out, metadata.RemoveTopicRecord{TopicID: ti.ID})
		}
	}
	for _, t := range topics {
		ti := img.Topics.ByID(t.ID)
		if ti == nil {
			out = append(out, metadata.TopicRecord{Name: t.Name, TopicID: t.ID})
		}
		for _, p := range t.Partitions() {
			rec := metadata.PartitionRecord{PartitionID: p.Index, TopicID: t.ID, Replicas: []int32{node}, ISR: []int32{node},
				Leader: node, LeaderEpoch: p.LeaderEpoch()}
			if ti != nil {
				if reg, ok := ti.Partition(p.Index); ok {
					if reg.LeaderEpoch == rec.LeaderEpoch {
						continue
					}
					rec.PartitionEpoch = reg.PartitionEpoch + 1
				}
			}
			out = append(out, rec)
		}
		res := metadata.ConfigResource{Type: metadata.TopicResource, Name: t.Name}
		var had map[string]string
		if ti != nil {
			had = img.Configs.Of(res)
		}
		out = append(out, configRecords(res, had, t.ConfigMap())...)
	}
	return out
}

// configRecords are the ConfigRecords taking res's configs from had to want.
func configRecords(res metadata.ConfigResource, had, want map[string]string) []metadata.Record {
	var out []metadata.Record
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := had[k]; !ok || v != want[k] {
			out = append(out, metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k, Value: new(want[k])})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(had)) {
		if _, ok := want[k]; !ok {
			out = append(out, metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k})
		}
	}
	return out
}

// endpoint is broker's address on the client listener; ok is false when
// it has none there (Kafka leaves such brokers out of its answers).
func (b *services) endpoint(reg metadata.BrokerRegistration) (host string, port int32, ok bool) {
	e, ok := reg.Endpoint(b.listener)
	return e.Host, e.Port, ok
}

// liveBrokers are the registered, unfenced brokers with an endpoint on the
// client listener, by id: the brokers clients are told of.
func (b *services) liveBrokers(img *metadata.Image) []metadata.BrokerRegistration {
	var out []metadata.BrokerRegistration
	for _, reg := range img.Cluster.Brokers() {
		if _, _, ok := b.endpoint(reg); ok && !reg.Fenced {
			out = append(out, reg)
		}
	}
	return out
}

// controllerID is what Metadata and DescribeCluster report as the
// controller: Kafka's brokers name a random live broker, Strata the lowest
// (on one node, itself); -1 when none is live.
func (b *services) controllerID(img *metadata.Image) int32 {
	if live := b.liveBrokers(img); len(live) > 0 {
		return live[0].ID
	}
	return -1
}
