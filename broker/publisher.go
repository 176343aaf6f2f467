package broker

// The publisher applies each new metadata image to what this node runs,
// as Kafka's BrokerMetadataPublisher.onMetadataUpdate: the partitions it
// now leads, at their leader epoch and with their replicas and ISR, the
// ones another node leads with this node among their replicas, and the
// ones it stopped leading, is no replica of any more, or that were deleted
// (localChanges) go to the replica manager first (applyDelta: makeLeaders,
// makeFollowers, stopReplicas; a deleted topic's replicas are stopped by
// DeleteTopics, which still holds its partitions), then to the follower
// fetchers (fetcher.go; also before anything else, so no fetch answer is
// applied to a partition this node stops following), then,
// for __consumer_offsets, __transaction_state and __share_group_state, to
// the group, transaction and share coordinators (onElection, onResignation);
// the share-partitions of a partition this node stopped leading are
// dropped (sharepartitions.go resigned), as Kafka's SharePartitionManager
// drops them on a leader change. It runs as a
// store subscriber, within the change and under the store's lock, so
// neither it nor what it calls proposes (the coordinators' loads append
// to logs only; producer id blocks are proposed by InitProducerId
// requests alone; ISR changes by the leader's isrManager, isr.go, off the
// publisher); the first image is published once at start. Groups
// replay in the background; a __transaction_state partition is replayed
// within the change, as OpenTxns replayed them before serving. In a
// cluster, storage first follows the image (imageHost, hosting.go); the
// logs of the partitions a replayed metadata log gave this node are
// created, and their changes applied, once it has caught up (caughtUp).
//
// The publisher remembers the last image it applied (seen) and takes each
// new one from there, so the first image, applied once the subscription
// is in place, and the changes that race with it are each applied once,
// in order.

import (
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// publisher is what a metadata image changes on this node.
type publisher struct {
	node     int32
	logs     *storage.Manager
	replicas *replica.Manager
	groups   *coordinator.Groups
	txns     *coordinator.Txns
	shares   *coordinator.ShareCoordinator
	sharing  *shareManager // the share-partitions this node leads
	logger   *zap.Logger
	host     *imageHost       // a cluster node's storage; nil on a single node, whose store commits to storage itself
	fetchers *replicaFetchers // a cluster node's followers' fetchers; nil on a single node

	mu   sync.Mutex
	seen *metadata.Image // the last image applied; metadata.Empty before the first
}

// update applies new, unless it is the image applied last.
func (p *publisher) update(new *metadata.Image) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if new == p.seen {
		return
	}
	old := p.seen
	p.seen = new
	if p.fetchers != nil {
		// Stop fetching what new no longer has this node follow before
		// its replicas and logs change.
		p.fetchers.follow(new)
	}
	if p.host != nil {
		p.host.follow(old, new)
	}
	p.publish(old, new)
}

// localChange is one partition whose part for this node changed.
type localChange struct {
	topic     string
	partition int32
	epoch     int32 // the leader epoch it is now led at, when led or followed
	reg       metadata.PartitionRegistration
	led       bool // this node leads it now
	elected   bool // this node leads it now and did not in old, or at another epoch
	resigned  bool // this node led it in old and does not now
	follow    bool // another node leads it now, this node is one of its replicas
	deleted   bool // its topic is gone
}

// localChanges are the partitions whose leadership or ISR changed for
// this node from old to new, as Kafka's TopicsDelta.localChanges: the ones
// it leads in new and did not in old or led at another epoch (elected),
// the ones it leads at the same epoch with a new partition epoch (an ISR
// or replicas change), the ones another node leads with this node among
// their replicas, led by another node or at another epoch than in old
// (follow), and the ones it led or was a replica of in old and does not
// lead or follow in new (led elsewhere, unassigned, or deleted).
func localChanges(node int32, old, new *metadata.Image) []localChange {
	var out []localChange
	for _, t := range new.Topics.All() {
		before := old.Topics.ByID(t.ID)
		for i, p := range t.Partitions {
			var was metadata.PartitionRegistration
			known := false
			if before != nil {
				was, known = before.Partition(int32(i))
			}
			ledBefore := known && was.LeaderIs(node)
			replicaBefore := known && (ledBefore || slices.Contains(was.Replicas, node))
			c := localChange{topic: t.Name, partition: int32(i), epoch: p.LeaderEpoch, reg: p, resigned: ledBefore}
			switch {
			case p.LeaderIs(node):
				c.led, c.resigned = true, false
				c.elected = !ledBefore || was.LeaderEpoch != p.LeaderEpoch
				if !c.elected && was.PartitionEpoch == p.PartitionEpoch {
					continue
				}
			case slices.Contains(p.Replicas, node):
				c.follow = true
				if !ledBefore && replicaBefore && was.Leader == p.Leader && was.LeaderEpoch == p.LeaderEpoch {
					continue
				}
			case !replicaBefore:
				continue
			}
			out = append(out, c)
		}
	}
	for _, t := range old.Topics.All() {
		if new.Topics.ByID(t.ID) != nil {
			continue
		}
		for i, p := range t.Partitions {
			if p.LeaderIs(node) {
				out = append(out, localChange{topic: t.Name, partition: int32(i), resigned: true, deleted: true})
			}
		}
	}
	return out
}

// publish applies the change from old to new: the replicas first, then
// the follower fetchers, then the coordinators, as Kafka's publisher. A
// partition whose replica cannot lead is not elected for (its coordinator
// keeps answering NOT_COORDINATOR). The share coordinator then drops the
// deleted topics' share state, as Kafka's publisher tells it.
func (p *publisher) publish(old, new *metadata.Image) {
	p.apply(localChanges(p.node, old, new), new)
	if ids := deletedTopicIDs(old, new); len(ids) > 0 {
		p.shares.OnTopicsDeleted(ids)
	}
}

// caughtUp has storage create the logs the images replayed before this
// node caught up with the quorum left out, and applies them as new's
// changes: the partitions this node leads become elected, the others
// followed.
func (p *publisher) caughtUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if changes := p.host.catchUp(p.seen); len(changes) > 0 {
		p.apply(changes, p.seen)
	}
}

// apply makes changes, to new, on this node.
func (p *publisher) apply(changes []localChange, new *metadata.Image) {
	var elected, resigned []localChange
	for _, c := range changes {
		sp := p.hosted(c)
		switch {
		case c.led && sp == nil && p.host != nil && !p.host.caughtUp.Load():
			// Its log is created once this node has caught up (caughtUp).
		case c.led && sp == nil:
			p.logger.Error("the metadata image makes this node the leader of a partition storage does not host",
				zap.String("topic", c.topic), zap.Int32("partition", c.partition))
		case c.led:
			l := replica.Leadership{Replicas: c.reg.Replicas, ISR: c.reg.ISR, PartitionEpoch: c.reg.PartitionEpoch}
			if err := p.replicas.MakeLeader(sp, c.epoch, l); err != nil {
				p.logger.Error("cannot become the partition's leader", zap.String("topic", c.topic),
					zap.Int32("partition", c.partition), zap.Int32("leader_epoch", c.epoch), zap.Error(err))
				continue
			}
			if c.elected {
				elected = append(elected, c)
			}
		case c.follow && sp != nil:
			p.replicas.MakeFollower(sp, c.epoch)
		case sp != nil && !c.deleted:
			p.replicas.StopReplicas([]*storage.Partition{sp})
		}
		if c.resigned {
			resigned = append(resigned, c)
			if sp != nil && p.sharing != nil {
				p.sharing.resigned(sp)
			}
		}
	}
	if p.fetchers != nil {
		p.fetchers.follow(new)
	}
	gone, led := map[string][]int32{}, map[string][]int32{}
	for _, c := range resigned {
		switch c.topic {
		case coordinator.OffsetsTopic:
			p.groups.OnResigned(c.partition)
		case coordinator.TxnStateTopic:
			p.txns.OnResigned(c.partition)
		case coordinator.ShareStateTopic:
			p.shares.OnResigned(c.partition)
		default:
			continue
		}
		gone[c.topic] = append(gone[c.topic], c.partition)
	}
	for _, c := range elected {
		switch c.topic {
		case coordinator.OffsetsTopic:
			p.groups.OnElected(c.partition, c.epoch)
		case coordinator.TxnStateTopic:
			if err := p.txns.OnElected(c.partition, c.epoch); err != nil {
				p.logger.Error("elected for a "+coordinator.TxnStateTopic+" partition that cannot be loaded; its transactional ids stay COORDINATOR_LOAD_IN_PROGRESS",
					zap.Int32("partition", c.partition), zap.Int32("leader_epoch", c.epoch), zap.Error(err))
			}
		case coordinator.ShareStateTopic:
			p.shares.OnElected(c.partition, c.epoch)
		default:
			continue
		}
		led[c.topic] = append(led[c.topic], c.partition)
	}
	for _, topic := range []string{coordinator.OffsetsTopic, coordinator.TxnStateTopic, coordinator.ShareStateTopic} {
		if len(gone[topic]) > 0 {
			p.logger.Info("resigned as coordinator of "+topic+" partitions", zap.Int32s("partitions", gone[topic]))
		}
		if len(led[topic]) > 0 {
			p.logger.Info("elected coordinator of "+topic+" partitions", zap.Int32s("partitions", led[topic]))
		}
	}
}

// deletedTopicIDs are the ids of the topics of old that new lacks.
func deletedTopicIDs(old, new *metadata.Image) [][16]byte {
	var ids [][16]byte
	for _, t := range old.Topics.All() {
		if new.Topics.ByID(t.ID) == nil {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// hosted is the partition as storage hosts it, nil when it does not (a
// deleted topic's, or one this node is no replica of).
func (p *publisher) hosted(c localChange) *storage.Partition {
	return lookupPartition(p.logs.Topic(c.topic), c.partition)
}
