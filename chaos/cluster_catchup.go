package chaos

// After a run that killed controllers, each voter of the metadata quorum
// must have come back and replicated the whole metadata log, and in the
// split layout each broker too (an observer: Kafka's brokers fetch the
// log, Strata's are raft non-voters): DescribeQuorum, answered by the
// active controller, must list every one with the leader's log end
// offset. The log grows while partitions change (and, on Kafka, by a
// NoOpRecord every metadata.max.idle.interval.ms), so the check is
// polled until one answer shows them all at the leader's end.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// QuorumState is one DescribeQuorum answer: the leader, its epoch and
// log end offset, and each voter's and observer's log end offset.
type QuorumState struct {
	Leader    int32
	Epoch     int32
	LogEnd    int64           // the leader's
	Voters    map[int32]int64 // log end offset by node id, -1 unknown
	Observers map[int32]int64
}

func (q QuorumState) String() string {
	return fmt.Sprintf("leader %d epoch %d log end %d, voters %s, observers %s",
		q.Leader, q.Epoch, q.LogEnd, offsetsString(q.Voters), offsetsString(q.Observers))
}

func offsetsString(m map[int32]int64) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d:%d", id, m[id]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func quorumState(p kmsg.DescribeQuorumResponseTopicPartition) QuorumState {
	q := QuorumState{Leader: p.LeaderID, Epoch: p.LeaderEpoch, LogEnd: -1, Voters: map[int32]int64{}, Observers: map[int32]int64{}}
	for _, v := range p.CurrentVoters {
		q.Voters[v.ReplicaID] = v.LogEndOffset
		if v.ReplicaID == p.LeaderID {
			q.LogEnd = v.LogEndOffset
		}
	}
	for _, o := range p.Observers {
		q.Observers[o.ReplicaID] = o.LogEndOffset
	}
	return q
}

// lagging says which controllers (as voters) and, in the split layout,
// which brokers (as observers) q does not show at the leader's log end.
func (c *Cluster) lagging(q QuorumState) []string {
	var behind []string
	if q.LogEnd < 0 {
		return []string{fmt.Sprintf("leader %d not among the voters", q.Leader)}
	}
	check := func(ids []int32, m map[int32]int64, as string) {
		for _, id := range ids {
			end, ok := m[id]
			switch {
			case !ok:
				behind = append(behind, fmt.Sprintf("%d not listed as %s", id, as))
			case end != q.LogEnd:
				behind = append(behind, fmt.Sprintf("%s %d at %d", as, id, end))
			}
		}
	}
	check(c.ControllerIDs(), q.Voters, "voter")
	if c.Split() {
		check(c.IDs(), q.Observers, "observer")
	}
	return behind
}

// QuorumCaughtUp waits until DescribeQuorum shows every controller as a
// voter and, in the split layout, every broker as an observer, each at the
// leader's log end offset, and returns that answer.
func (c *Cluster) QuorumCaughtUp(ctx context.Context, timeout time.Duration) (QuorumState, error) {
	var q QuorumState
	err := waitFor(ctx, timeout, "every voter and observer at the quorum leader's log end", func(ctx context.Context) (bool, string) {
		p, err := c.describeQuorum(ctx)
		if err != nil {
			return false, err.Error()
		}
		q = quorumState(p)
		behind := c.lagging(q)
		return len(behind) == 0, fmt.Sprintf("%v: %s", q, strings.Join(behind, ", "))
	})
	return q, err
}

// nodeIDs is every node's id: the controllers' and the brokers', each
// once.
func (c *Cluster) nodeIDs() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		ids = append(ids, n.id)
	}
	return ids
}
