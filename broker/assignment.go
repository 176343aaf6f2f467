package broker

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// createAssignedTopic creates a topic with CreateTopics' manual replica
// assignment, as Kafka's ReplicationControlManager does: each partition's
// ISR is its unfenced replicas, in assignment order, and its leader the
// first of them; a partition with every replica fenced is refused
// (INVALID_REPLICA_ASSIGNMENT). A cluster node's: on one node the only
// valid assignment is this node, which is what proposeTopic creates.
func (b *services) createAssignedTopic(name string, assignment []kmsg.CreateTopicsRequestTopicReplicaAssignment, configs map[string]string) ([16]byte, error) {
	var id [16]byte
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		if err := checkNewTopicName(img, name); err != nil {
			return nil, err
		}
		var err error
		if id, err = img.Topics.NewTopicID(); err != nil {
			return nil, err
		}
		records := []metadata.Record{metadata.TopicRecord{Name: name, TopicID: id}}
		sorted := slices.Clone(assignment)
		slices.SortFunc(sorted, func(a, b kmsg.CreateTopicsRequestTopicReplicaAssignment) int {
			return int(a.Partition) - int(b.Partition)
		})
		for _, a := range sorted {
			isr := slices.DeleteFunc(slices.Clone(a.Replicas), func(n int32) bool {
				reg, ok := img.Cluster.Broker(n)
				return !ok || reg.Fenced
			})
			if len(isr) == 0 {
				return nil, fmt.Errorf("all brokers specified in the partition assignment of partition %d are fenced: %w", a.Partition, kerr.InvalidReplicaAssignment)
			}
			records = append(records, metadata.PartitionRecord{PartitionID: a.Partition, TopicID: id,
				Replicas: slices.Clone(a.Replicas), ISR: isr, Leader: isr[0]})
		}
		return append(records, configRecords(metadata.ConfigResource{Type: metadata.TopicResource, Name: name}, nil, configs)...), nil
	})
	return id, err
}
