package broker

// Preferred leaders come back (auto.leader.rebalance.enable): every
// leader.imbalance.check.interval.seconds, a cluster's controller elects
// the preferred replica, the first, of each partition it does not lead
// while it is in sync and unfenced, as the KRaft controller's
// maybeBalancePartitionLeaders, at most maxBalanceElections at a time.
// Every broker runs the check; only the active controller's proposal
// commits (the others are refused NOT_CONTROLLER), and a single node,
// the only replica of every partition, has nothing to balance.

import (
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
)

// maxBalanceElections is Kafka's maxElectionsPerImbalance.
const maxBalanceElections = 1000

// balanceLeaderRecords are the preferred elections the image needs.
func balanceLeaderRecords(img *metadata.Image) []metadata.Record {
	var out []metadata.Record
	for _, t := range img.Topics.All() {
		for p, reg := range t.Partitions {
			if len(reg.Replicas) == 0 || reg.Leader == reg.Replicas[0] {
				continue
			}
			c := newPartitionChange(img, t.ID, int32(p), reg)
			c.election = electionPreferred
			if rec, ok := c.build(); ok && rec.Leader == reg.Replicas[0] {
				out = append(out, rec)
				if len(out) == maxBalanceElections {
					return out
				}
			}
		}
	}
	return out
}

// balanceLeaders proposes balanceLeaderRecords every interval until stop
// is closed.
func balanceLeaders(meta metadata.Store, interval time.Duration, stop <-chan struct{}, logger *zap.Logger) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		var elections int
		_, err := meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
			records := balanceLeaderRecords(img)
			elections = len(records)
			return records, nil
		})
		switch {
		case err != nil:
			logger.Debug("preferred leader elections not proposed", zap.Error(err))
		case elections > 0:
			logger.Info("preferred replicas elected leaders again", zap.Int("partitions", elections))
		}
	}
}
