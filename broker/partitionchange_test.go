package broker

import (
	"slices"
	"testing"

	"github.com/strata-io/strata/metadata"
)

// imageWithBrokers is an image of brokers 1..n, those in fenced fenced.
func imageWithBrokers(t *testing.T, n int32, fenced ...int32) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.Empty)
	for id := int32(1); id <= n; id++ {
		if err := d.Replay(metadata.RegisterBrokerRecord{BrokerID: id, Fenced: slices.Contains(fenced, id)}); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

// TestPartitionChangeIsKafkas checks partitionChange's decisions against
// Kafka's PartitionChangeBuilder: the leader kept while it may lead, a new
// one from the ISR when it may not, an unclean one only when asked, a
// reassignment completed (and the leader epoch bumped) once the ISR holds
// every target replica, and no record when nothing changes.
func TestPartitionChangeIsKafkas(t *testing.T) {
	part := metadata.PartitionRegistration{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}
	cases := []struct {
		name   string
		fenced []int32
		part   metadata.PartitionRegistration
		set    func(c *partitionChange)
		want   metadata.PartitionChangeRecord
		ok     bool
	}{
		{"nothing changes", nil, part, func(*partitionChange) {}, metadata.PartitionChangeRecord{}, false},
		{"an ISR shrink keeps the leader", nil, part, func(c *partitionChange) { c.isr = []int32{1, 3} },
			metadata.PartitionChangeRecord{Leader: metadata.NoLeaderChange, ISR: []int32{1, 3}}, true},
		{"the leader leaves the ISR", nil, part, func(c *partitionChange) { c.isr = []int32{2, 3} },
			metadata.PartitionChangeRecord{Leader: 2, ISR: []int32{2, 3}}, true},
		{"a fenced leader hands over", []int32{1}, part, func(*partitionChange) {},
			metadata.PartitionChangeRecord{Leader: 2}, true},
		{"no valid leader", []int32{1}, part, func(c *partitionChange) { c.isr = []int32{1} },
			metadata.PartitionChangeRecord{Leader: metadata.NoLeader, ISR: []int32{1}}, true},
		{"a preferred election", nil, metadata.PartitionRegistration{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2},
			func(c *partitionChange) { c.election = electionPreferred }, metadata.PartitionChangeRecord{Leader: 1}, true},
		{"an unclean election", []int32{1}, metadata.PartitionRegistration{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: metadata.NoLeader},
			func(c *partitionChange) { c.election = electionUnclean }, metadata.PartitionChangeRecord{Leader: 2, ISR: []int32{2}}, true},
		{"no unclean election unless asked", []int32{1}, metadata.PartitionRegistration{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: metadata.NoLeader},
			func(*partitionChange) {}, metadata.PartitionChangeRecord{}, false},
		{"a reassignment that only removes completes at once", nil, part, func(c *partitionChange) { c.removing = []int32{3} },
			metadata.PartitionChangeRecord{Leader: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2}}, true},
		{"a reassignment waits for its added replica", nil, metadata.PartitionRegistration{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
			func(c *partitionChange) { c.replicas, c.adding = []int32{1, 2, 3}, []int32{3} },
			metadata.PartitionChangeRecord{Leader: metadata.NoLeaderChange, Replicas: []int32{1, 2, 3}, AddingReplicas: []int32{3}}, true},
	}
	for _, tc := range cases {
		img := imageWithBrokers(t, 3, tc.fenced...)
		c := newPartitionChange(img, [16]byte{1}, 0, tc.part)
		tc.set(c)
		got, ok := c.build()
		tc.want.TopicID = [16]byte{1}
		if !tc.ok {
			tc.want = got
		}
		if ok != tc.ok || got.Leader != tc.want.Leader || !slices.Equal(got.ISR, tc.want.ISR) || !slices.Equal(got.Replicas, tc.want.Replicas) ||
			!slices.Equal(got.AddingReplicas, tc.want.AddingReplicas) || !slices.Equal(got.RemovingReplicas, tc.want.RemovingReplicas) {
			t.Errorf("%s: %+v (%v), want %+v (%v)", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFenceAndUnfenceChanges checks the changes of fencing a broker and of
// unfencing it, as Kafka's handleBrokerFenced and handleBrokerUnfenced:
// the fenced broker leaves every ISR but as its last member, the
// partitions it led get the next in-sync leader or none, and unfenced it
// leads the leaderless partitions whose ISR holds it.
func TestFenceAndUnfenceChanges(t *testing.T) {
	id := [16]byte{7}
	d := metadata.NewDelta(imageWithBrokers(t, 3))
	for _, r := range []metadata.Record{
		metadata.TopicRecord{Name: "t", TopicID: id},
		metadata.PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
		metadata.PartitionRecord{PartitionID: 1, TopicID: id, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1},
		metadata.PartitionRecord{PartitionID: 2, TopicID: id, Replicas: []int32{2, 3}, ISR: []int32{2, 3}, Leader: 2},
	} {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	img := d.Apply()
	never := func(string) bool { return false }
	fenced := fenceChanges(img, 1, never)
	want := []metadata.PartitionChangeRecord{
		{PartitionID: 0, TopicID: id, Leader: 2, ISR: []int32{2, 3}},
		{PartitionID: 1, TopicID: id, Leader: metadata.NoLeader},
	}
	if len(fenced) != len(want) {
		t.Fatalf("fencing: %+v", fenced)
	}
	for i, r := range fenced {
		got := r.(metadata.PartitionChangeRecord)
		if got.PartitionID != want[i].PartitionID || got.Leader != want[i].Leader || !slices.Equal(got.ISR, want[i].ISR) {
			t.Errorf("fencing, change %d: %+v, want %+v", i, got, want[i])
		}
	}
	d = metadata.NewDelta(img)
	for _, r := range append(fenced, metadata.RegisterBrokerRecord{BrokerID: 1, Fenced: true}) {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	img = d.Apply()
	unfenced := unfenceChanges(img, 1, never)
	if len(unfenced) != 1 {
		t.Fatalf("unfencing: %+v", unfenced)
	}
	if got := unfenced[0].(metadata.PartitionChangeRecord); got.PartitionID != 1 || got.Leader != 1 || got.ISR != nil {
		t.Fatalf("unfencing: %+v, want partition 1 led by 1", got)
	}
	if got := fenceChanges(img, 3, func(string) bool { return true }); len(got) != 2 {
		t.Fatalf("fencing 3 with unclean elections: %+v", got)
	}
}
