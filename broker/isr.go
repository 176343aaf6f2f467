package broker

// The leader's ISR changes, as Kafka's Partition.maybeShrinkIsr (checked
// every replica.lag.time.max.ms / 2, as ReplicaManager's isr-expiration
// task) and maybeExpandIsr (on a follower's fetch), each proposed to the
// controller as an AlterPartition request (Config.AlterPartition; by
// default decided on this node's own metadata store by
// metadata.AlterPartition and committed with Update). The new ISR is
// applied when the image carrying it comes back (publisher →
// replica.Partition.UpdateLeadership); a refused or failed proposal is
// forgotten and the next check proposes again.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// AlterPartitionFunc sends an AlterPartition request to the active
// controller and returns its answer.
type AlterPartitionFunc func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)

// storeAlterPartition decides AlterPartition requests on store, as a
// controller does on its latest image.
func storeAlterPartition(store metadata.Store) AlterPartitionFunc {
	return func(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		var resp *kmsg.AlterPartitionResponse
		_, err := store.Update(func(img *metadata.Image) ([]metadata.Record, error) {
			var records []metadata.Record
			resp, records = alterPartition(img, req)
			return records, nil
		})
		return resp, err
	}
}

// alterPartition is metadata.AlterPartition's decision with each accepted
// ISR built into its change by the partition change builder, as Kafka's
// controller builds it: an ISR that now holds every target replica of a
// reassignment completes it (the replicas become the target, a leader it
// dropped hands over). The answer carries the partition as it will be.
func alterPartition(img *metadata.Image, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, []metadata.Record) {
	resp, accepted := metadata.AlterPartition(img, req)
	records := make([]metadata.Record, 0, len(accepted))
	for _, r := range accepted {
		rec := r.(metadata.PartitionChangeRecord)
		t := img.Topics.ByID(rec.TopicID)
		part, _ := t.Partition(rec.PartitionID)
		c := newPartitionChange(img, rec.TopicID, rec.PartitionID, part)
		c.isr = rec.ISR
		built, ok := c.build()
		if !ok {
			continue
		}
		records = append(records, built)
		if built.Leader == metadata.NoLeaderChange && built.ISR != nil {
			continue
		}
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				sp := &resp.Topics[i].Partitions[j]
				if resp.Topics[i].TopidID != t.ID && (req.Version >= 2 || resp.Topics[i].Topic != t.Name) || sp.Partition != rec.PartitionID {
					continue
				}
				if built.Leader != metadata.NoLeaderChange {
					sp.LeaderID, sp.LeaderEpoch = built.Leader, part.LeaderEpoch+1
				}
				if built.ISR != nil {
					sp.ISR = built.ISR
				} else {
					sp.ISR = part.ISR
				}
			}
		}
	}
	return resp, records
}

// isrManager proposes this node's leaders' ISR changes.
type isrManager struct {
	node     int32
	alter    AlterPartitionFunc
	replicas *replica.Manager
	logs     *storage.Manager
	maxLag   time.Duration
	now      func() time.Time // the broker's clock, which followers' fetches are timed on
	logger   *zap.Logger

	done chan struct{}
	wg   sync.WaitGroup
}

// start runs the shrink check until close.
func (m *isrManager) start() {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(max(m.maxLag/2, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-m.done:
				return
			case <-t.C:
				now := m.now()
				m.replicas.Leaders(func(sp *storage.Partition, p *replica.Partition) {
					if c, ok := p.ShrinkISR(now, m.maxLag); ok {
						m.propose(sp, p, c)
					}
				})
			}
		}
	}()
}

// maybeExpand proposes, in the background, the ISR with the followers of
// p that caught up.
func (m *isrManager) maybeExpand(sp *storage.Partition, p *replica.Partition) {
	c, ok := p.ExpandISR()
	if !ok {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.propose(sp, p, c)
	}()
}

// propose sends one ISR change and forgets it when it is not accepted.
func (m *isrManager) propose(sp *storage.Partition, p *replica.Partition, c replica.ISRChange) {
	log := m.logger.With(zap.String("topic", sp.Topic), zap.Int32("partition", sp.Index), zap.Int32s("isr", c.ISR),
		zap.Int32("leader_epoch", c.LeaderEpoch), zap.Int32("partition_epoch", c.PartitionEpoch))
	t := m.logs.Topic(sp.Topic)
	if t == nil {
		p.ISRChangeFailed()
		return
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 3, m.node, -1
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = sp.Topic, t.ID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = sp.Index, c.LeaderEpoch, c.PartitionEpoch
	for _, id := range c.ISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID = id
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := m.alter(ctx, req)
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err == nil && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		err = kerr.UnknownServerError
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		p.ISRChangeFailed()
		log.Warn("the controller did not take the ISR change", zap.Error(err))
		return
	}
	log.Info("ISR changed")
}

// close stops the shrink check and waits for the proposals under way.
func (m *isrManager) close() {
	close(m.done)
	m.wg.Wait()
}
