package broker

import "github.com/strata-io/strata/metadata"

// partitionRacks is the racks of a partition's replicas in the metadata
// image, those of brokers registered with a broker.rack, in replica order:
// what Kafka's KRaftCoordinatorMetadataImage.partitionRacks gives the group
// coordinator for a consumer group's MetadataHash (KIP-1101).
func partitionRacks(meta interface{ Image() *metadata.Image }) func(topic [16]byte, partition int32) []string {
	return func(topic [16]byte, partition int32) []string {
		img := meta.Image()
		t := img.Topics.ByID(topic)
		if t == nil {
			return nil
		}
		p, ok := t.Partition(partition)
		if !ok {
			return nil
		}
		var racks []string
		for _, id := range p.Replicas {
			if b, ok := img.Cluster.Broker(id); ok && b.Rack != "" {
				racks = append(racks, b.Rack)
			}
		}
		return racks
	}
}
