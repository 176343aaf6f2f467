package broker

import (
	"slices"
	"testing"

	"github.com/strata-io/strata/metadata"
)

type fixedImage struct{ img *metadata.Image }

func (f fixedImage) Image() *metadata.Image { return f.img }

// TestPartitionRacks: a partition's racks are those of its replicas'
// brokers that registered one, in replica order; none for a topic or
// partition the image lacks.
func TestPartitionRacks(t *testing.T) {
	id := [16]byte{1}
	d := metadata.NewDelta(metadata.Empty)
	for _, r := range []metadata.Record{
		metadata.RegisterBrokerRecord{BrokerID: 1, Rack: "r-b"},
		metadata.RegisterBrokerRecord{BrokerID: 2},
		metadata.RegisterBrokerRecord{BrokerID: 3, Rack: "r-a"},
		metadata.TopicRecord{Name: "t", TopicID: id},
		metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1},
		metadata.PartitionRecord{PartitionID: 1, TopicID: id, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
	} {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	racks := partitionRacks(fixedImage{d.Apply()})
	if got := racks(id, 0); !slices.Equal(got, []string{"r-b", "r-a"}) {
		t.Errorf("t-0 racks %v, want [r-b r-a]", got)
	}
	if got := racks(id, 1); len(got) != 0 {
		t.Errorf("t-1 racks %v, want none", got)
	}
	if got, none := racks(id, 2), racks([16]byte{9}, 0); len(got) != 0 || len(none) != 0 {
		t.Errorf("racks of a missing partition %v, of a missing topic %v", got, none)
	}
}
