package broker

// Replica placement for new topics and partitions: Kafka's
// StripedReplicaPlacer (org.apache.kafka.metadata.placement), which the
// KRaft controller uses. Brokers are grouped by rack; each partition's
// first replica, its preferred leader, is an unfenced broker taken from
// the racks in turn, and its other replicas come one per rack from the
// racks after it, unfenced brokers first, so leaders spread over the
// brokers and a partition's replicas over the racks. The start rack and
// broker are random, and the lists are shuffled once every unfenced
// broker has led a partition, so topics created one after another do not
// all start on the same broker. On a single node this is [node.id] for
// every partition.

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
)

// randomSource is what placement draws from: math/rand/v2's functions,
// or a seeded generator in tests.
type randomSource interface {
	IntN(n int) int
	Shuffle(n int, swap func(i, j int))
}

// mathRandom is math/rand/v2's generator.
type mathRandom struct{}

func (mathRandom) IntN(n int) int                     { return rand.IntN(n) }
func (mathRandom) Shuffle(n int, swap func(i, j int)) { rand.Shuffle(n, swap) }

// brokerList is StripedReplicaPlacer.BrokerList: brokers taken in turn
// from a moving offset, each at most once per iteration epoch.
type brokerList struct {
	brokers       []int32
	index, offset int
	epoch         int
}

func (l *brokerList) initialize(rnd randomSource) {
	if len(l.brokers) > 0 {
		slices.Sort(l.brokers)
		l.offset = rnd.IntN(len(l.brokers))
	}
}

func (l *brokerList) shuffle(rnd randomSource) {
	rnd.Shuffle(len(l.brokers), func(i, j int) { l.brokers[i], l.brokers[j] = l.brokers[j], l.brokers[i] })
}

// next is the next broker of epoch, -1 when every broker was taken in it.
func (l *brokerList) next(epoch int) int32 {
	if len(l.brokers) == 0 {
		return -1
	}
	if l.epoch != epoch {
		l.epoch, l.index = epoch, 0
		l.offset = (l.offset + 1) % len(l.brokers)
	}
	if l.index >= len(l.brokers) {
		return -1
	}
	b := l.brokers[(l.index+l.offset)%len(l.brokers)]
	l.index++
	return b
}

// rack is the fenced and unfenced brokers of one rack.
type rack struct {
	fenced, unfenced brokerList
}

// next is the rack's next broker, unfenced ones first.
func (r *rack) next(epoch int) int32 {
	if b := r.unfenced.next(epoch); b >= 0 {
		return b
	}
	return r.fenced.next(epoch)
}

// rackList is StripedReplicaPlacer.RackList.
type rackList struct {
	rnd             randomSource
	racks           map[string]*rack
	names           []string // sorted; "" (no rack) first
	total, unfenced int
	epoch, offset   int
}

func newRackList(rnd randomSource, brokers []metadata.BrokerRegistration) *rackList {
	l := &rackList{rnd: rnd, racks: map[string]*rack{}}
	for _, b := range brokers {
		r := l.racks[b.Rack]
		if r == nil {
			r = &rack{}
			l.racks[b.Rack] = r
			l.names = append(l.names, b.Rack)
		}
		if b.Fenced {
			r.fenced.brokers = append(r.fenced.brokers, b.ID)
		} else {
			r.unfenced.brokers = append(r.unfenced.brokers, b.ID)
			l.unfenced++
		}
		l.total++
	}
	slices.SortFunc(l.names, cmp.Compare[string])
	for _, name := range l.names {
		l.racks[name].fenced.initialize(rnd)
		l.racks[name].unfenced.initialize(rnd)
	}
	if len(l.names) > 0 {
		l.offset = rnd.IntN(len(l.names))
	}
	return l
}

// place is one partition's replicas.
func (l *rackList) place(rf int) []int32 {
	if l.epoch == l.unfenced && l.unfenced > 1 {
		l.shuffle()
		l.epoch = 0
	}
	if l.offset == len(l.names) {
		l.offset = 0
	}
	out := make([]int32, 0, rf)
	first := l.offset
	for {
		if b := l.racks[l.names[first]].unfenced.next(l.epoch); b >= 0 {
			out = append(out, b)
			break
		}
		first = (first + 1) % len(l.names)
	}
	ri := l.offset
	for len(out) < rf {
		b := int32(-1)
		for b < 0 {
			if ri == first {
				first = -1
			} else {
				b = l.racks[l.names[ri]].next(l.epoch)
			}
			ri = (ri + 1) % len(l.names)
		}
		out = append(out, b)
	}
	l.epoch++
	l.offset++
	return out
}

func (l *rackList) shuffle() {
	l.rnd.Shuffle(len(l.names), func(i, j int) { l.names[i], l.names[j] = l.names[j], l.names[i] })
	// The racks are shuffled in name order (Kafka walks a HashMap, the same
	// order for one-character names), so a seeded source places alike.
	for _, name := range slices.Sorted(maps.Keys(l.racks)) {
		l.racks[name].fenced.shuffle(l.rnd)
		l.racks[name].unfenced.shuffle(l.rnd)
	}
}

// placeReplicas is StripedReplicaPlacer.place: the replicas of partitions
// partitions at replication factor rf over the registered brokers, with
// Kafka's INVALID_REPLICATION_FACTOR messages.
func placeReplicas(rnd randomSource, brokers []metadata.BrokerRegistration, partitions int32, rf int16) ([][]int32, error) {
	l := newRackList(rnd, brokers)
	if rf <= 0 {
		return nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Invalid replication factor %d: the replication factor must be positive.", rf)
	}
	if l.unfenced == 0 {
		return nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): All brokers are currently fenced.", rf)
	}
	if int(rf) > l.total {
		return nil, kafkaerr.New(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): "+
			"The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, rf, l.total)
	}
	out := make([][]int32, partitions)
	for p := range out {
		out[p] = l.place(int(rf))
	}
	return out, nil
}
