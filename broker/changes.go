package broker

// The admin changes handlers decide on the latest metadata image and
// propose to the store (Store.Update), as the KRaft controller's
// ReplicationControlManager and ConfigurationControlManager do; the store
// makes each durable in storage before it publishes (image.go). Messages
// are the ones storage gave when it decided, so clients read the same.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// checkNewTopicName refuses a new topic's name: Kafka's name rules, a
// topic of that name, or one whose name equals it once '.' is read as '_'
// (they would collide in metric names), as Kafka's controller refuses.
func checkNewTopicName(img *metadata.Image, name string) error {
	if err := storage.ValidateTopicName(name); err != nil {
		return err
	}
	if img.Topics.ByName(name) != nil {
		return kafkaerr.New(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	unified := strings.ReplaceAll(name, ".", "_")
	var collides []string
	for _, t := range img.Topics.All() {
		if strings.ReplaceAll(t.Name, ".", "_") == unified {
			collides = append(collides, t.Name)
		}
	}
	if len(collides) > 0 {
		return kafkaerr.New(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, collides[0])
	}
	return nil
}

// replicaLayout is where a new topic's or new partitions' replicas go:
// partitions placed at replication factor rf (placement.go), or a manual
// assignment, the replicas of each partition in order, already checked
// against the image (checkReplicas).
type replicaLayout struct {
	partitions int32
	rf         int16
	manual     [][]int32
}

// placementRandom is where placement draws its start brokers from.
var placementRandom randomSource = mathRandom{}

// partitionRecords are the PartitionRecords of partitions start.. of the
// topic id laid out as l, as the KRaft controller builds them: the ISR is
// the replicas that are unfenced, the first of them the leader, at leader
// and partition epoch 0.
func partitionRecords(img *metadata.Image, id [16]byte, start int32, l replicaLayout) ([]metadata.Record, error) {
	assignment := l.manual
	if assignment == nil {
		var err error
		if assignment, err = placeReplicas(placementRandom, img.Cluster.Brokers(), l.partitions, l.rf); err != nil {
			return nil, err
		}
	}
	records := make([]metadata.Record, 0, len(assignment))
	for i, replicas := range assignment {
		var isr []int32
		for _, r := range replicas {
			if reg, ok := img.Cluster.Broker(r); ok && !reg.Fenced {
				isr = append(isr, r)
			}
		}
		p := start + int32(i)
		switch {
		case len(isr) == 0 && l.manual != nil:
			return nil, kafkaerr.New(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", p)
		case len(isr) == 0:
			return nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", l.rf)
		}
		records = append(records, metadata.PartitionRecord{PartitionID: p, TopicID: id,
			Replicas: slices.Clone(replicas), ISR: isr, Leader: isr[0]})
	}
	return records, nil
}

// proposeTopic creates a topic laid out as l with configs: a TopicRecord
// with an id unused in the image, its PartitionRecords and its
// ConfigRecords. It returns the topic's id.
func proposeTopic(meta metadata.Store, name string, l replicaLayout, configs map[string]string) ([16]byte, error) {
	var id [16]byte
	_, err := meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		if err := checkNewTopicName(img, name); err != nil {
			return nil, err
		}
		var err error
		if id, err = img.Topics.NewTopicID(); err != nil {
			return nil, err
		}
		parts, err := partitionRecords(img, id, 0, l)
		if err != nil {
			return nil, err
		}
		records := append([]metadata.Record{metadata.TopicRecord{Name: name, TopicID: id}}, parts...)
		return append(records, configRecords(metadata.ConfigResource{Type: metadata.TopicResource, Name: name}, nil, configs)...), nil
	})
	return id, err
}

// defaultReplicationFactor is the replication factor of a topic created
// without one: on a single node 1; in a cluster the internal topics'
// offsets.topic.replication.factor,
// transaction.state.log.replication.factor and
// share.coordinator.state.topic.replication.factor, and default.replication.factor
// for the others.
func defaultReplicationFactor(cfg *Config, name string) int16 {
	switch {
	case cfg.Metadata == nil:
		return 1
	case name == coordinator.OffsetsTopic:
		return cfg.Cluster.OffsetsTopicReplicationFactor
	case name == coordinator.TxnStateTopic:
		return cfg.Cluster.TxnStateReplicationFactor
	case name == coordinator.ShareStateTopic:
		return cfg.Cluster.ShareStateReplicationFactor
	}
	return cfg.Cluster.DefaultReplicationFactor
}

// createTopicNamed creates a topic of partitions partitions at the default
// replication factor (auto-creation, the coordinators' internal topics).
func (b *services) createTopicNamed(name string, partitions int32, configs map[string]string) ([16]byte, error) {
	layout := replicaLayout{partitions: partitions, rf: defaultReplicationFactor(b.cfg, name)}
	if b.forward != nil {
		return b.forward.createTopic(b.meta, name, layout, configs)
	}
	return proposeTopic(b.meta, name, layout, configs)
}

// addPartitions grows a topic to total partitions, placed at the topic's
// replication factor (its first partition's), or as manual gives them.
func (b *services) addPartitions(name string, total int32, manual [][]int32) error {
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		t := img.Topics.ByName(name)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition
		}
		if int(total) <= len(t.Partitions) {
			return nil, kafkaerr.New(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.",
				name, len(t.Partitions), total)
		}
		current := int32(len(t.Partitions))
		l := replicaLayout{partitions: total - current, rf: int16(len(t.Partitions[0].Replicas)), manual: manual}
		return partitionRecords(img, t.ID, current, l)
	})
	return err
}

// removeTopic deletes a topic (Kafka's RemoveTopicRecord).
func (b *services) removeTopic(name string) error {
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		t := img.Topics.ByName(name)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition // Kafka's message is the code's description
		}
		return []metadata.Record{metadata.RemoveTopicRecord{TopicID: t.ID}}, nil
	})
	return err
}

// replaceConfigsOf replaces res's whole set of dynamic configs with
// configs once check passes on the image; with validateOnly it only
// checks.
func (b *services) replaceConfigsOf(res metadata.ConfigResource, configs map[string]string, validateOnly bool, check func(img *metadata.Image) error) error {
	if validateOnly {
		return check(b.meta.Image())
	}
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		if err := check(img); err != nil {
			return nil, err
		}
		return configRecords(res, img.Configs.Of(res), configs), nil
	})
	return err
}
