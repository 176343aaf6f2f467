package metadata

// The records a change is made of, named and shaped as Kafka's metadata
// records (metadata/src/main/resources/common/metadata/*.json), so that a
// replicated log can carry them as they are.

// Record is one metadata record; Delta.Replay applies it.
type Record interface {
	record()
}

// RegisterBrokerRecord registers (or re-registers) a broker. In a
// cluster, BrokerEpoch is the metadata log index the controller wrote the
// record at, as Kafka's broker epoch is the offset of its
// RegisterBrokerRecord, and IncarnationID tells one run of the broker
// process from the next; a single node leaves both zero.
type RegisterBrokerRecord struct {
	BrokerID      int32
	IncarnationID [16]byte
	BrokerEpoch   int64
	Endpoints     []Endpoint
	Rack          string
	Fenced        bool
}

// FenceBrokerRecord fences the registration of BrokerID at BrokerEpoch:
// clients are no longer told of the broker, and its partitions elect other
// leaders in the same change (Kafka's FenceBrokerRecord).
type FenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// UnfenceBrokerRecord unfences the registration of ID at Epoch (Kafka's
// UnfenceBrokerRecord).
type UnfenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// UnregisterBrokerRecord removes a broker's registration.
type UnregisterBrokerRecord struct {
	BrokerID int32
}

// TopicRecord creates a topic; its partitions follow as PartitionRecords.
type TopicRecord struct {
	Name    string
	TopicID [16]byte
}

// PartitionRecord creates a partition of a topic (or replaces it).
type PartitionRecord struct {
	PartitionID      int32
	TopicID          [16]byte
	Replicas         []int32
	ISR              []int32
	AddingReplicas   []int32 // a reassignment's replicas not yet in sync
	RemovingReplicas []int32 // a reassignment's replicas to leave once it completes
	Leader           int32
	LeaderEpoch      int32
	PartitionEpoch   int32
}

// NoLeaderChange is Kafka's LeaderConstants.NO_LEADER_CHANGE: a
// PartitionChangeRecord that keeps the leader.
const NoLeaderChange int32 = -2

// PartitionChangeRecord changes a partition: a new leader (unless
// NoLeaderChange) starts a new leader epoch; non-nil ISR, Replicas,
// AddingReplicas or RemovingReplicas replace them (an empty list clears
// the last two). Any change starts a new partition epoch.
type PartitionChangeRecord struct {
	PartitionID      int32
	TopicID          [16]byte
	Leader           int32
	ISR              []int32
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// RemoveTopicRecord deletes a topic, its partitions and its configs.
type RemoveTopicRecord struct {
	TopicID [16]byte
}

// ConfigRecord sets one config of a resource, or removes it (Value nil).
type ConfigRecord struct {
	ResourceType ConfigResourceType
	ResourceName string
	Name         string
	Value        *string
}

// ProducerIdsRecord records that broker BrokerID was handed the producer
// ids below NextProducerID.
type ProducerIdsRecord struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

func (RegisterBrokerRecord) record()   {}
func (UnregisterBrokerRecord) record() {}
func (FenceBrokerRecord) record()      {}
func (UnfenceBrokerRecord) record()    {}
func (TopicRecord) record()            {}
func (PartitionRecord) record()        {}
func (PartitionChangeRecord) record()  {}
func (RemoveTopicRecord) record()      {}
func (ConfigRecord) record()           {}
func (ProducerIdsRecord) record()      {}
