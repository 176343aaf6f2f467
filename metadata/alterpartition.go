package metadata

// AlterPartition is the controller's decision on a partition leader's ISR
// change (Kafka's AlterPartition, KIP-497), as
// ReplicationControlManager.alterPartition validates it: a pure function
// of the image, so whichever controller runs it commits the records it
// returns. Strata's brokers register no epoch, so the request's broker
// epochs are not checked (Kafka's STALE_BROKER_EPOCH).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartition answers req on img and returns the PartitionChangeRecords
// of the changes it accepts. A partition is refused, with Kafka's code,
// when the topic or partition is unknown (UNKNOWN_TOPIC_ID,
// UNKNOWN_TOPIC_OR_PARTITION), the leader epoch is older than the image's
// (FENCED_LEADER_EPOCH) or newer (NOT_CONTROLLER: this controller is
// behind), the requester does not lead it (INVALID_REQUEST), the partition
// epoch is older (INVALID_UPDATE_VERSION) or newer (NOT_CONTROLLER), the
// new ISR is empty, repeats a replica or lacks the leader (INVALID_REQUEST),
// or holds a replica that is not assigned, not registered or fenced
// (INELIGIBLE_REPLICA). An accepted partition answers the ISR it will have
// and the partition epoch after the change.
func AlterPartition(img *Image, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, []Record) {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.Version = req.Version
	var records []Record
	for _, rt := range req.Topics {
		t := img.Topics.ByID(rt.TopicID)
		if req.Version < 2 {
			t = img.Topics.ByName(rt.Topic)
		}
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			isr := rp.NewISR
			if req.Version >= 3 {
				isr = make([]int32, 0, len(rp.NewEpochISR))
				for _, e := range rp.NewEpochISR {
					isr = append(isr, e.BrokerID)
				}
			}
			rec, code := alterPartition(img, t, req.BrokerID, rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, isr, req.Version)
			sp.ErrorCode = code
			if code == 0 {
				p := t.Partitions[rp.Partition]
				sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = p.Leader, p.LeaderEpoch, rec.ISR, p.PartitionEpoch+1
				records = append(records, rec)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, records
}

func alterPartition(img *Image, t *TopicImage, broker, partition, leaderEpoch, partitionEpoch int32, isr []int32, version int16) (PartitionChangeRecord, int16) {
	if t == nil {
		if version >= 2 {
			return PartitionChangeRecord{}, kerr.UnknownTopicID.Code
		}
		return PartitionChangeRecord{}, kerr.UnknownTopicOrPartition.Code
	}
	p, ok := t.Partition(partition)
	if !ok {
		return PartitionChangeRecord{}, kerr.UnknownTopicOrPartition.Code
	}
	switch {
	case leaderEpoch > p.LeaderEpoch:
		return PartitionChangeRecord{}, kerr.NotController.Code
	case leaderEpoch < p.LeaderEpoch:
		return PartitionChangeRecord{}, kerr.FencedLeaderEpoch.Code
	case broker != p.Leader:
		return PartitionChangeRecord{}, kerr.InvalidRequest.Code
	case partitionEpoch > p.PartitionEpoch:
		return PartitionChangeRecord{}, kerr.NotController.Code
	case partitionEpoch < p.PartitionEpoch:
		return PartitionChangeRecord{}, kerr.InvalidUpdateVersion.Code
	}
	if len(isr) == 0 || !slices.Contains(isr, p.Leader) {
		return PartitionChangeRecord{}, kerr.InvalidRequest.Code
	}
	for i, id := range isr {
		if slices.Contains(isr[:i], id) {
			return PartitionChangeRecord{}, kerr.InvalidRequest.Code
		}
		b, registered := img.Cluster.Broker(id)
		if !slices.Contains(p.Replicas, id) || !registered || b.Fenced {
			return PartitionChangeRecord{}, kerr.IneligibleReplica.Code
		}
	}
	return PartitionChangeRecord{TopicID: t.ID, PartitionID: partition, Leader: NoLeaderChange, ISR: slices.Clone(isr)}, 0
}
