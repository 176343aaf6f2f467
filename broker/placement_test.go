package broker

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/metadata"
)

// kafkaMockRandom is java.util.Random driven as Kafka's test MockRandom
// (seed 17, its own next), with Random.nextInt(bound) and
// Collections.shuffle's draws, so the placements below are the ones
// StripedReplicaPlacerTest expects of Kafka's placer.
type kafkaMockRandom struct{ state int64 }

func newKafkaMockRandom() *kafkaMockRandom { return &kafkaMockRandom{state: 17} }

func (r *kafkaMockRandom) next(bits int) int32 {
	r.state = r.state*2862933555777941757 + 3037000493
	return int32(uint64(r.state) >> (64 - bits))
}

func (r *kafkaMockRandom) IntN(bound int) int {
	b := int32(bound)
	x := r.next(31)
	m := b - 1
	if b&m == 0 {
		return int(int32((int64(b) * int64(x)) >> 31))
	}
	for u := x; ; u = r.next(31) {
		x = u % b
		if u-x+m >= 0 { // int32 overflow marks a biased draw, as in Java
			return int(x)
		}
	}
}

func (r *kafkaMockRandom) Shuffle(n int, swap func(i, j int)) {
	for i := n; i > 1; i-- {
		swap(i-1, r.IntN(i))
	}
}

func usable(id int32, rack string, fenced bool) metadata.BrokerRegistration {
	return metadata.BrokerRegistration{ID: id, Rack: rack, Fenced: fenced}
}

// TestPlacementIsKafkas checks placeReplicas against the expectations of
// Kafka's StripedReplicaPlacerTest, drawing as its MockRandom does.
func TestPlacementIsKafkas(t *testing.T) {
	cases := []struct {
		name       string
		brokers    []metadata.BrokerRegistration
		partitions int32
		rf         int16
		want       [][]int32
	}{
		{"testMultiPartitionTopicPlacementOnSingleUnfencedBroker",
			[]metadata.BrokerRegistration{usable(0, "", false), usable(1, "", true)}, 3, 1,
			[][]int32{{0}, {0}, {0}}},
		{"testSuccessfulPlacement",
			[]metadata.BrokerRegistration{usable(0, "", false), usable(3, "", false), usable(2, "", false), usable(1, "", false)}, 5, 3,
			[][]int32{{2, 3, 0}, {3, 0, 1}, {0, 1, 2}, {1, 2, 3}, {1, 0, 2}}},
		{"testPlacementOnFencedReplicaOnSingleRack",
			[]metadata.BrokerRegistration{usable(3, "", false), usable(1, "", true), usable(2, "", false)}, 4, 3,
			[][]int32{{3, 2, 1}, {2, 3, 1}, {3, 2, 1}, {2, 3, 1}}},
		{"testRackListWithMultipleRacks",
			[]metadata.BrokerRegistration{usable(11, "1", false), usable(10, "1", false), usable(30, "3", false),
				usable(31, "3", false), usable(21, "2", false), usable(20, "2", true)}, 3, 4,
			[][]int32{{11, 21, 31, 10}, {21, 30, 10, 20}, {31, 11, 21, 30}}},
	}
	for _, c := range cases {
		got, err := placeReplicas(newKafkaMockRandom(), c.brokers, c.partitions, c.rf)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.EqualFunc(got, c.want, slices.Equal[[]int32]) {
			t.Errorf("%s: placed %v, Kafka places %v", c.name, got, c.want)
		}
	}

	// testEvenDistribution: 200 partitions at RF 2 over 4 brokers.
	got, err := placeReplicas(newKafkaMockRandom(), []metadata.BrokerRegistration{usable(0, "", false), usable(1, "", false),
		usable(2, "", false), usable(3, "", false)}, 200, 2)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range got {
		counts[fmt.Sprint(r)]++
	}
	want := map[string]int{"[0 1]": 14, "[0 2]": 22, "[0 3]": 14, "[1 0]": 17, "[1 2]": 17, "[1 3]": 16,
		"[2 0]": 13, "[2 1]": 17, "[2 3]": 20, "[3 0]": 20, "[3 1]": 19, "[3 2]": 11}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("testEvenDistribution: %s placed %d times, Kafka %d (all: %v)", k, counts[k], n, counts)
		}
	}
}

// TestPlacementRefusals checks Kafka's INVALID_REPLICATION_FACTOR cases and
// messages.
func TestPlacementRefusals(t *testing.T) {
	for _, c := range []struct {
		brokers []metadata.BrokerRegistration
		rf      int16
		msg     string
	}{
		{[]metadata.BrokerRegistration{usable(11, "1", true), usable(10, "1", true)}, 1,
			"Unable to replicate the partition 1 time(s): All brokers are currently fenced."},
		{[]metadata.BrokerRegistration{usable(1, "", false), usable(2, "", false)}, 3,
			"Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."},
		{[]metadata.BrokerRegistration{usable(1, "", false)}, 0,
			"Invalid replication factor 0: the replication factor must be positive."},
	} {
		_, err := placeReplicas(newKafkaMockRandom(), c.brokers, 1, c.rf)
		if !errors.Is(err, kerr.InvalidReplicationFactor) || err.Error() != c.msg {
			t.Errorf("rf %d over %v: %v, want INVALID_REPLICATION_FACTOR %q", c.rf, c.brokers, err, c.msg)
		}
	}
}
