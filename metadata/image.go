// Package metadata is the cluster's metadata as an immutable image, in
// Kafka's shape (org.apache.kafka.image.MetadataImage): the brokers, the
// topics and their partitions, the dynamic configs, the producer-id
// blocks handed out, who may connect and do what (access.go) and the
// finalized features (features.go). An image
// never changes; a change is a list of records (Kafka's metadata records,
// records.go) replayed onto a Delta, whose Apply makes the next image
// (Kafka's MetadataDelta). A Store (store.go) holds the current image,
// takes proposed records and tells subscribers of each new image.
//
// The package depends on nothing of Strata's: storage, the broker and a
// future controller quorum all speak it.
package metadata

import "sort"

// Image is one version of the cluster's metadata. Every part is immutable:
// its slices and maps are shared between images and must not be modified.
type Image struct {
	Cluster     ClusterImage
	Topics      TopicsImage
	Configs     ConfigsImage
	ProducerIDs ProducerIDsImage
	Access      AccessImage
	Features    FeaturesImage
}

// Empty is the image before any record: no brokers, no topics.
var Empty = &Image{}

// ClusterImage is the registered brokers (Kafka's ClusterImage).
type ClusterImage struct {
	brokers map[int32]BrokerRegistration
}

// Broker is the registration of broker id, ok false if there is none.
func (c ClusterImage) Broker(id int32) (BrokerRegistration, bool) {
	b, ok := c.brokers[id]
	return b, ok
}

// Brokers lists the registered brokers by id.
func (c ClusterImage) Brokers() []BrokerRegistration {
	out := make([]BrokerRegistration, 0, len(c.brokers))
	for _, b := range c.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// BrokerRegistration is one broker as it registered (RegisterBrokerRecord).
type BrokerRegistration struct {
	ID            int32
	IncarnationID [16]byte
	Epoch         int64 // the broker epoch: RegisterBrokerRecord.BrokerEpoch
	Endpoints     []Endpoint
	Rack          string // "" = none
	Fenced        bool
}

// Endpoint is the address of one of a broker's listeners.
type Endpoint struct {
	Listener         string // the listener's name, e.g. PLAINTEXT
	Host             string
	Port             int32
	SecurityProtocol int16 // Kafka's SecurityProtocol id: 0 PLAINTEXT
}

// Endpoint is the broker's endpoint on listener, ok false if it has none.
func (b BrokerRegistration) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// TopicsImage is the topics by name and by id (Kafka's TopicsImage).
type TopicsImage struct {
	byName map[string]*TopicImage
	byID   map[[16]byte]*TopicImage
}

// ByName is the topic called name, nil if there is none.
func (t TopicsImage) ByName(name string) *TopicImage { return t.byName[name] }

// ByID is the topic with id, nil if there is none.
func (t TopicsImage) ByID(id [16]byte) *TopicImage { return t.byID[id] }

// Len is the number of topics.
func (t TopicsImage) Len() int { return len(t.byName) }

// All lists the topics by name.
func (t TopicsImage) All() []*TopicImage {
	out := make([]*TopicImage, 0, len(t.byName))
	for _, ti := range t.byName {
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TopicImage is one topic: its name, id and partitions, index = partition
// id (Strata's partitions are numbered densely from 0, as Kafka creates
// them).
type TopicImage struct {
	Name       string
	ID         [16]byte
	Partitions []PartitionRegistration
}

// Partition is partition p, ok false if the topic has no such partition.
func (t *TopicImage) Partition(p int32) (PartitionRegistration, bool) {
	if p < 0 || int(p) >= len(t.Partitions) {
		return PartitionRegistration{}, false
	}
	return t.Partitions[p], true
}

// PartitionRegistration is one partition's replicas and leadership
// (Kafka's PartitionRegistration): LeaderEpoch grows with each new leader,
// PartitionEpoch with each change of any of it.
type PartitionRegistration struct {
	Replicas []int32
	ISR      []int32
	// AddingReplicas and RemovingReplicas are an ongoing reassignment's
	// (Kafka's): Replicas is then the target replicas followed by the
	// removing ones, until every target replica is in the ISR.
	AddingReplicas   []int32
	RemovingReplicas []int32
	Leader           int32 // NoLeader when offline
	LeaderEpoch      int32
	PartitionEpoch   int32
}

// Reassigning reports whether a reassignment of the partition is ongoing.
func (p PartitionRegistration) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// NoLeader is Kafka's LeaderConstants.NO_LEADER.
const NoLeader int32 = -1

// LeaderIs reports whether node leads the partition.
func (p PartitionRegistration) LeaderIs(node int32) bool { return p.Leader == node && node >= 0 }

// ConfigResourceType is Kafka's ConfigResource.Type id.
type ConfigResourceType int8

const (
	TopicResource         ConfigResourceType = 2
	BrokerResource        ConfigResourceType = 4
	ClientMetricsResource ConfigResourceType = 16
	GroupResource         ConfigResourceType = 32
)

// ConfigResource names what configs are set on: a topic by name, a broker
// by its id in decimal, or "" for the cluster-wide broker default, a group
// by its id, a client metrics subscription (KIP-714) by its name.
type ConfigResource struct {
	Type ConfigResourceType
	Name string
}

// ConfigsImage is the dynamic configs by resource (Kafka's
// ConfigurationsImage).
type ConfigsImage struct {
	byResource map[ConfigResource]map[string]string
}

// Of is the configs set on r; nil when none. The map must not be modified.
func (c ConfigsImage) Of(r ConfigResource) map[string]string { return c.byResource[r] }

// Resources lists the resources that have configs set, by type then name.
func (c ConfigsImage) Resources() []ConfigResource {
	out := make([]ConfigResource, 0, len(c.byResource))
	for r := range c.byResource {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ProducerIDsImage is how far producer id blocks have been handed out
// (Kafka's ProducerIdsImage): no id below NextProducerID may be handed out
// again.
type ProducerIDsImage struct {
	NextProducerID int64
}
