package rt

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// TopicMeta is what one Metadata answer (or a client's describe of the topic) says
// about a topic: the broker IDs it lists and each partition's leader (-1: none).
// Brokers is nil when the client's call does not list the brokers.
type TopicMeta struct {
	Brokers []int32
	Leaders []int32
}

// readyWait bounds WaitReady (the orchestrator kills a runner at 60 s);
// a topic of more than manyPartitions partitions (fetch_sessions', whose
// runs get longer) gets three times as long: a loaded machine's Kafka
// cluster takes tens of seconds to lead 200 partitions of three replicas.
const (
	readyWait      = 20 * time.Second
	manyPartitions = 50
)

// WaitReady polls every 200 ms, for up to 20 s (60 s for many partitions) or until ctx ends, until the topic is ready:
// metadata shows exactly partitions partitions, each led by a broker the same answer lists,
// and then served (nil: skipped) succeeds, a ListOffsets of every partition that its
// leader answers only once it holds the partition (Kafka publishes Metadata before its
// replica manager has created the partitions, and a produce in between gets
// NOT_LEADER_OR_FOLLOWER). An error of either (e.g. UNKNOWN_TOPIC_OR_PARTITION right
// after a create) means not yet.
func WaitReady(ctx context.Context, topic string, partitions int, metadata func(context.Context) (TopicMeta, error), served func(context.Context) error) error {
	wait := readyWait
	if partitions > manyPartitions {
		wait *= 3
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last string
	for {
		m, err := metadata(ctx)
		if err != nil {
			last = err.Error()
		} else if last = notReady(m, partitions); last == "" {
			if served == nil {
				return nil
			}
			if err := served(ctx); err != nil {
				last = "leaders do not serve it yet: " + err.Error()
			} else {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s never had %d partitions with a leader serving them: %s", topic, partitions, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// notReady says why m is not a ready topic of n partitions ("" when it is).
func notReady(m TopicMeta, n int) string {
	if len(m.Leaders) != n {
		return fmt.Sprintf("%d partitions", len(m.Leaders))
	}
	for p, l := range m.Leaders {
		if l < 0 {
			return fmt.Sprintf("partition %d has no leader", p)
		}
		if m.Brokers != nil && !slices.Contains(m.Brokers, l) {
			return fmt.Sprintf("partition %d: leader %d is not among the brokers %v", p, l, m.Brokers)
		}
	}
	return ""
}

// CheckReplicas is describe_topic's check of one partition on a topic created with the
// runner's replication factor rf: rf distinct replicas, the leader among them, and the
// ISR the same set (every replica caught up on a freshly created, idle topic).
func CheckReplicas(leader int32, replicas, isr []int32, rf int) error {
	bad := func() error {
		return fmt.Errorf("leader %d replicas %v isr %v (want %d replicas, the leader among them, ISR = replicas)", leader, replicas, isr, rf)
	}
	if leader < 0 || len(replicas) != rf || len(isr) != rf || !slices.Contains(replicas, leader) {
		return bad()
	}
	seen := map[int32]bool{}
	for _, r := range replicas {
		if seen[r] {
			return bad()
		}
		seen[r] = true
	}
	for _, r := range isr {
		if !seen[r] {
			return bad()
		}
	}
	return nil
}
