package metadata

import (
	"errors"
	"slices"
	"testing"
)

var (
	idA = [16]byte{1}
	idB = [16]byte{2}
)

func str(s string) *string { return &s }

// replay applies records to base, failing the test on a refused one.
func replay(t *testing.T, base *Image, records ...Record) *Image {
	t.Helper()
	d := NewDelta(base)
	for _, r := range records {
		if err := d.Replay(r); err != nil {
			t.Fatalf("replay %#v: %v", r, err)
		}
	}
	return d.Apply()
}

func createTopic(name string, id [16]byte, partitions int, leader int32) []Record {
	rs := []Record{TopicRecord{Name: name, TopicID: id}}
	for p := range partitions {
		rs = append(rs, PartitionRecord{PartitionID: int32(p), TopicID: id, Replicas: []int32{leader}, ISR: []int32{leader}, Leader: leader})
	}
	return rs
}

func TestDeltaCreatesTopicsByNameAndID(t *testing.T) {
	img := replay(t, Empty, append(createTopic("a", idA, 3, 1), ConfigRecord{ResourceType: TopicResource, ResourceName: "a", Name: "cleanup.policy", Value: str("compact")})...)
	ta := img.Topics.ByName("a")
	if ta == nil || img.Topics.ByID(idA) != ta || ta.ID != idA || len(ta.Partitions) != 3 {
		t.Fatalf("topic a = %+v, by id %+v", ta, img.Topics.ByID(idA))
	}
	p, ok := ta.Partition(2)
	if !ok || !p.LeaderIs(1) || p.LeaderIs(2) || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("partition 2 = %+v, %v", p, ok)
	}
	if _, ok := ta.Partition(3); ok {
		t.Fatal("partition 3 exists")
	}
	if got := img.Configs.Of(ConfigResource{Type: TopicResource, Name: "a"}); got["cleanup.policy"] != "compact" {
		t.Fatalf("configs of a = %v", got)
	}
	if Empty.Topics.Len() != 0 || Empty.Topics.ByName("a") != nil {
		t.Fatal("the base image changed")
	}
}

func TestDeltaKeepsTheBaseImage(t *testing.T) {
	base := replay(t, Empty, createTopic("a", idA, 1, 1)...)
	next := replay(t, base, append(createTopic("b", idB, 1, 1),
		PartitionRecord{PartitionID: 1, TopicID: idA, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		PartitionChangeRecord{PartitionID: 0, TopicID: idA, Leader: 2, ISR: []int32{2}})...)
	if base.Topics.Len() != 1 || len(base.Topics.ByName("a").Partitions) != 1 {
		t.Fatalf("base changed: %+v", base.Topics.All())
	}
	if p := base.Topics.ByName("a").Partitions[0]; p.Leader != 1 || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
		t.Fatalf("base partition changed: %+v", p)
	}
	replaced := replay(t, base, PartitionRecord{PartitionID: 0, TopicID: idA, Leader: 5})
	if p := base.Topics.ByName("a").Partitions[0]; p.Leader != 1 || replaced.Topics.ByName("a").Partitions[0].Leader != 5 {
		t.Fatalf("replacing a partition: base %+v, next %+v", p, replaced.Topics.ByName("a").Partitions[0])
	}
	a := next.Topics.ByName("a")
	if len(a.Partitions) != 2 || next.Topics.Len() != 2 {
		t.Fatalf("next topics = %+v", next.Topics.All())
	}
	if p := a.Partitions[0]; p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 1 || !slices.Equal(p.ISR, []int32{2}) || !slices.Equal(p.Replicas, []int32{1}) {
		t.Fatalf("changed partition = %+v", p)
	}
}

func TestDeltaPartitionChangeWithoutNewLeaderKeepsTheLeaderEpoch(t *testing.T) {
	img := replay(t, Empty, createTopic("a", idA, 1, 1)...)
	img = replay(t, img, PartitionChangeRecord{TopicID: idA, Leader: NoLeaderChange, ISR: []int32{}})
	if p := img.Topics.ByName("a").Partitions[0]; p.Leader != 1 || p.LeaderEpoch != 0 || p.PartitionEpoch != 1 || len(p.ISR) != 0 {
		t.Fatalf("partition = %+v", p)
	}
}

// TestDeltaTracksReassignments checks that a partition's adding and
// removing replicas are set by PartitionRecord, changed only by a
// PartitionChangeRecord that names them, and cleared by an empty list.
func TestDeltaTracksReassignments(t *testing.T) {
	img := replay(t, Empty, TopicRecord{Name: "a", TopicID: idA},
		PartitionRecord{TopicID: idA, Replicas: []int32{3, 1, 2}, ISR: []int32{1, 2}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{2}, Leader: 1})
	if p := img.Topics.ByName("a").Partitions[0]; !p.Reassigning() || !slices.Equal(p.AddingReplicas, []int32{3}) || !slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("partition = %+v", p)
	}
	img = replay(t, img, PartitionChangeRecord{TopicID: idA, Leader: NoLeaderChange, ISR: []int32{1, 2, 3}})
	if p := img.Topics.ByName("a").Partitions[0]; !slices.Equal(p.AddingReplicas, []int32{3}) || !slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("a change not naming them kept %+v", p)
	}
	img = replay(t, img, PartitionChangeRecord{TopicID: idA, Leader: NoLeaderChange, Replicas: []int32{3, 1}, ISR: []int32{1, 3},
		AddingReplicas: []int32{}, RemovingReplicas: []int32{}})
	if p := img.Topics.ByName("a").Partitions[0]; p.Reassigning() || p.AddingReplicas != nil || !slices.Equal(p.Replicas, []int32{3, 1}) {
		t.Fatalf("completed reassignment = %+v", p)
	}
}

func TestDeltaRemovesTopicsWithTheirConfigs(t *testing.T) {
	res := ConfigResource{Type: TopicResource, Name: "a"}
	base := replay(t, Empty, append(createTopic("a", idA, 2, 1), ConfigRecord{ResourceType: TopicResource, ResourceName: "a", Name: "retention.ms", Value: str("1")})...)
	img := replay(t, base, RemoveTopicRecord{TopicID: idA})
	if img.Topics.ByName("a") != nil || img.Topics.ByID(idA) != nil || img.Topics.Len() != 0 || img.Configs.Of(res) != nil {
		t.Fatalf("after removal: %+v, configs %v", img.Topics.All(), img.Configs.Of(res))
	}
	// The name is free again, for a new id, within one delta too.
	img = replay(t, base, append([]Record{RemoveTopicRecord{TopicID: idA}}, createTopic("a", idB, 1, 1)...)...)
	if a := img.Topics.ByName("a"); a == nil || a.ID != idB || img.Topics.ByID(idA) != nil || len(a.Partitions) != 1 {
		t.Fatalf("recreated a = %+v", a)
	}
}

func TestDeltaConfigRecordSetsAndRemoves(t *testing.T) {
	node := ConfigResource{Type: BrokerResource, Name: "1"}
	img := replay(t, Empty, ConfigRecord{ResourceType: BrokerResource, ResourceName: "1", Name: "log.retention.ms", Value: str("5")},
		ConfigRecord{ResourceType: BrokerResource, ResourceName: "", Name: "log.retention.ms", Value: str("7")})
	if img.Configs.Of(node)["log.retention.ms"] != "5" || img.Configs.Of(ConfigResource{Type: BrokerResource})["log.retention.ms"] != "7" {
		t.Fatalf("configs: %v", img.Configs.byResource)
	}
	img = replay(t, img, ConfigRecord{ResourceType: BrokerResource, ResourceName: "1", Name: "log.retention.ms"})
	if img.Configs.Of(node) != nil || img.Configs.Of(ConfigResource{Type: BrokerResource}) == nil {
		t.Fatalf("after removal: %v", img.Configs.byResource)
	}
}

func TestDeltaBrokersAndProducerIDs(t *testing.T) {
	ep := Endpoint{Listener: "PLAINTEXT", Host: "h", Port: 9092}
	img := replay(t, Empty, RegisterBrokerRecord{BrokerID: 2, Endpoints: []Endpoint{ep}}, RegisterBrokerRecord{BrokerID: 1, Rack: "r"},
		ProducerIdsRecord{BrokerID: 1, NextProducerID: 1000})
	if bs := img.Cluster.Brokers(); len(bs) != 2 || bs[0].ID != 1 || bs[0].Rack != "r" || bs[1].ID != 2 {
		t.Fatalf("brokers = %+v", bs)
	}
	b, _ := img.Cluster.Broker(2)
	if e, ok := b.Endpoint("PLAINTEXT"); !ok || e != ep {
		t.Fatalf("endpoint = %+v, %v", e, ok)
	}
	if img.ProducerIDs.NextProducerID != 1000 {
		t.Fatalf("next producer id = %d", img.ProducerIDs.NextProducerID)
	}
	img = replay(t, img, UnregisterBrokerRecord{BrokerID: 2})
	if _, ok := img.Cluster.Broker(2); ok || len(img.Cluster.Brokers()) != 1 {
		t.Fatalf("brokers after unregister = %+v", img.Cluster.Brokers())
	}
}

func TestDeltaRefusesRecordsThatDoNotFit(t *testing.T) {
	base := replay(t, Empty, append(createTopic("a", idA, 1, 1), ProducerIdsRecord{NextProducerID: 10})...)
	for name, r := range map[string]Record{
		"same name":                 TopicRecord{Name: "a", TopicID: idB},
		"same id":                   TopicRecord{Name: "b", TopicID: idA},
		"zero id":                   TopicRecord{Name: "b"},
		"partition of unknown":      PartitionRecord{TopicID: idB},
		"partition gap":             PartitionRecord{TopicID: idA, PartitionID: 2},
		"negative partition":        PartitionRecord{TopicID: idA, PartitionID: -1},
		"change of unknown":         PartitionChangeRecord{TopicID: idA, PartitionID: 1, Leader: 1},
		"remove unknown":            RemoveTopicRecord{TopicID: idB},
		"unregister unknown broker": UnregisterBrokerRecord{BrokerID: 3},
		"producer ids back":         ProducerIdsRecord{NextProducerID: 9},
	} {
		d := NewDelta(base)
		if err := d.Replay(r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: Replay = %v, want ErrInvalidRecord", name, err)
		}
		if img := d.Apply(); img.Topics.Len() != 1 || len(img.Topics.ByName("a").Partitions) != 1 || img.ProducerIDs.NextProducerID != 10 {
			t.Errorf("%s: a refused record changed the image: %+v", name, img.Topics.All())
		}
	}
}

func TestDeltaFencesAndUnfencesARegistrationAtItsEpoch(t *testing.T) {
	img := replay(t, Empty, RegisterBrokerRecord{BrokerID: 2, IncarnationID: [16]byte{7}, BrokerEpoch: 10, Fenced: true})
	if b, _ := img.Cluster.Broker(2); !b.Fenced || b.Epoch != 10 || b.IncarnationID != [16]byte{7} {
		t.Fatalf("registered %+v", b)
	}
	img = replay(t, img, UnfenceBrokerRecord{ID: 2, Epoch: 10})
	if b, _ := img.Cluster.Broker(2); b.Fenced || b.Epoch != 10 {
		t.Fatalf("unfenced %+v", b)
	}
	fenced := replay(t, img, FenceBrokerRecord{ID: 2, Epoch: 10})
	if b, _ := fenced.Cluster.Broker(2); !b.Fenced {
		t.Fatalf("fenced %+v", b)
	}
	if b, _ := img.Cluster.Broker(2); b.Fenced {
		t.Fatal("fencing changed the base image")
	}
	for _, r := range []Record{FenceBrokerRecord{ID: 2, Epoch: 9}, UnfenceBrokerRecord{ID: 2, Epoch: 11}, FenceBrokerRecord{ID: 3, Epoch: 10}} {
		if err := NewDelta(img).Replay(r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("replay %#v = %v, want ErrInvalidRecord", r, err)
		}
	}
}
