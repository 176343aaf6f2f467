package broker

// The admin changes handlers decide on the latest metadata image and
// propose to the store (Store.Update), as the KRaft controller's
// ReplicationControlManager and ConfigurationControlManager do; the store
// makes each durable in storage before it publishes (image.go). Messages
// are the ones storage gave when it decided, so clients read the same.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

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
		return fmt.Errorf("topic %s already exists: %w", name, kerr.TopicAlreadyExists)
	}
	unified := strings.ReplaceAll(name, ".", "_")
	var collides []string
	for _, t := range img.Topics.All() {
		if strings.ReplaceAll(t.Name, ".", "_") == unified {
			collides = append(collides, t.Name)
		}
	}
	if len(collides) > 0 {
		return fmt.Errorf("topic %q collides with existing topics: %s: %w", name, strings.Join(collides, ", "), kerr.InvalidTopicException)
	}
	return nil
}

// proposeTopic creates a topic of partitions partitions with configs: a
// TopicRecord with an id unused in the image, its PartitionRecords (node
// the leader and only replica of each) and its ConfigRecords. It returns
// the topic's id.
func proposeTopic(meta metadata.Store, node int32, name string, partitions int32, configs map[string]string) ([16]byte, error) {
	var id [16]byte
	_, err := meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		if err := checkNewTopicName(img, name); err != nil {
			return nil, err
		}
		var err error
		if id, err = img.Topics.NewTopicID(); err != nil {
			return nil, err
		}
		records := []metadata.Record{metadata.TopicRecord{Name: name, TopicID: id}}
		for p := range partitions {
			records = append(records, metadata.PartitionRecord{PartitionID: p, TopicID: id,
				Replicas: []int32{node}, ISR: []int32{node}, Leader: node})
		}
		return append(records, configRecords(metadata.ConfigResource{Type: metadata.TopicResource, Name: name}, nil, configs)...), nil
	})
	return id, err
}

// createTopicNamed is proposeTopic on the broker's store, this node hosting
// the new topic's partitions.
func (b *services) createTopicNamed(name string, partitions int32, configs map[string]string) ([16]byte, error) {
	if b.forward != nil {
		return b.forward.createTopic(b.meta, name, partitions, configs)
	}
	return proposeTopic(b.meta, b.cfg.NodeID, name, partitions, configs)
}

// addPartitions grows a topic to total partitions, this node the leader
// and only replica of each new one.
func (b *services) addPartitions(name string, total int32) error {
	node := b.cfg.NodeID
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		t := img.Topics.ByName(name)
		if t == nil {
			return nil, fmt.Errorf("topic %s: %w", name, kerr.UnknownTopicOrPartition)
		}
		if int(total) <= len(t.Partitions) {
			return nil, fmt.Errorf("topic %s currently has %d partitions, %d would not be an increase: %w",
				name, len(t.Partitions), total, kerr.InvalidPartitions)
		}
		var records []metadata.Record
		for p := int32(len(t.Partitions)); p < total; p++ {
			records = append(records, metadata.PartitionRecord{PartitionID: p, TopicID: t.ID,
				Replicas: []int32{node}, ISR: []int32{node}, Leader: node})
		}
		return records, nil
	})
	return err
}

// removeTopic deletes a topic (Kafka's RemoveTopicRecord).
func (b *services) removeTopic(name string) error {
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		t := img.Topics.ByName(name)
		if t == nil {
			return nil, fmt.Errorf("topic %s: %w", name, kerr.UnknownTopicOrPartition)
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
