package metadata

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlterPartition checks the controller's decision on a leader's ISR
// change: an accepted one is a PartitionChangeRecord of the new ISR that
// keeps the leader, answered with the next partition epoch; each of
// Kafka's refusals has its code and no record.
func TestAlterPartition(t *testing.T) {
	id := [16]byte{7}
	d := NewDelta(Empty)
	for _, r := range []Record{
		RegisterBrokerRecord{BrokerID: 1}, RegisterBrokerRecord{BrokerID: 2}, RegisterBrokerRecord{BrokerID: 3, Fenced: true},
		RegisterBrokerRecord{BrokerID: 4},
		TopicRecord{Name: "t", TopicID: id},
		PartitionRecord{TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 5},
	} {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	img := d.Apply()
	for _, tc := range []struct {
		name                        string
		broker                      int32
		topic                       [16]byte
		partition                   int32
		leaderEpoch, partitionEpoch int32
		isr                         []int32
		want                        error
	}{
		{"shrink", 1, id, 0, 2, 5, []int32{1, 2}, nil},
		{"another order", 1, id, 0, 2, 5, []int32{2, 1}, nil},
		{"older leader epoch", 1, id, 0, 1, 5, []int32{1, 2}, kerr.FencedLeaderEpoch},
		{"newer leader epoch", 1, id, 0, 3, 5, []int32{1, 2}, kerr.NotController},
		{"not the leader", 2, id, 0, 2, 5, []int32{1, 2}, kerr.InvalidRequest},
		{"older partition epoch", 1, id, 0, 2, 4, []int32{1, 2}, kerr.InvalidUpdateVersion},
		{"newer partition epoch", 1, id, 0, 2, 6, []int32{1, 2}, kerr.NotController},
		{"without the leader", 1, id, 0, 2, 5, []int32{2}, kerr.InvalidRequest},
		{"a replica twice", 1, id, 0, 2, 5, []int32{1, 2, 2}, kerr.InvalidRequest},
		{"a fenced replica", 1, id, 0, 2, 5, []int32{1, 3}, kerr.IneligibleReplica},
		{"not a replica", 1, id, 0, 2, 5, []int32{1, 4}, kerr.IneligibleReplica},
		{"unregistered", 1, id, 0, 2, 5, []int32{1, 9}, kerr.IneligibleReplica},
		{"unknown topic id", 1, [16]byte{8}, 0, 2, 5, []int32{1}, kerr.UnknownTopicID},
		{"unknown partition", 1, id, 1, 2, 5, []int32{1}, kerr.UnknownTopicOrPartition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrAlterPartitionRequest()
			req.Version, req.BrokerID = 3, tc.broker
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.TopicID = tc.topic
			rp := kmsg.NewAlterPartitionRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = tc.partition, tc.leaderEpoch, tc.partitionEpoch
			for _, b := range tc.isr {
				e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
				e.BrokerID = b
				rp.NewEpochISR = append(rp.NewEpochISR, e)
			}
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, records := AlterPartition(img, req)
			got := resp.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(got.ErrorCode); err != tc.want {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				if len(records) != 0 {
					t.Fatalf("a refused change gave records %+v", records)
				}
				return
			}
			want := PartitionChangeRecord{TopicID: id, Leader: NoLeaderChange, ISR: tc.isr}
			if len(records) != 1 || !slices.Equal(records[0].(PartitionChangeRecord).ISR, tc.isr) ||
				records[0].(PartitionChangeRecord).Leader != NoLeaderChange || records[0].(PartitionChangeRecord).TopicID != id {
				t.Fatalf("records %+v, want %+v", records, want)
			}
			if got.LeaderID != 1 || got.LeaderEpoch != 2 || got.PartitionEpoch != 6 || !slices.Equal(got.ISR, tc.isr) {
				t.Fatalf("answer %+v, want leader 1 at epoch 2, ISR %v, partition epoch 6", got, tc.isr)
			}
		})
	}
}
