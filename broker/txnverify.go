package broker

import (
	"fmt"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// verifyTxnBatch checks a produce payload whose first batch is
// transactional against the transaction coordinator (see produce.go).
// Payloads too short for a batch header are left to storage's validation.
// Difference from Kafka: on a cluster node that is not the id's
// coordinator the batch is not verified (Kafka asks the coordinator with
// AddPartitionsToTxn v4, which Strata does not send), as Kafka with
// transaction.partition.verification.enable=false.
func (b *services) verifyTxnBatch(txnID *string, topic string, partition int32, records []byte) error {
	if !isTransactionalBatch(records) {
		return nil
	}
	h := batch.DecodeHeader(records)
	if txnID == nil {
		return fmt.Errorf("transactional batch without a transactional id: %w", kerr.InvalidTxnState)
	}
	pid, epoch := h.ProducerID, h.ProducerEpoch
	if b.cfg.Metadata != nil && !b.coordinatesHere(*txnID) {
		return nil
	}
	if err := b.txns.VerifyPartition(*txnID, pid, epoch, topic, partition); err != nil {
		return fmt.Errorf("transactional id %q, producer %d epoch %d, %s-%d: %w", *txnID, pid, epoch, topic, partition, err)
	}
	return nil
}

// coordinatesHere reports whether the image has this node lead the
// __transaction_state partition of txnID, or no such topic exist yet.
func (b *services) coordinatesHere(txnID string) bool {
	img := b.meta.Image()
	ti := img.Topics.ByName(coordinator.TxnStateTopic)
	if ti == nil {
		return true
	}
	reg, ok := ti.Partition(b.txns.PartitionFor(txnID))
	return ok && reg.LeaderIs(b.cfg.NodeID)
}

// isTransactionalBatch reports whether records starts with a whole batch
// header whose attributes mark it transactional.
func isTransactionalBatch(records []byte) bool {
	if len(records) < batch.HeaderSize {
		return false
	}
	h := batch.DecodeHeader(records)
	return h.Transactional()
}

// producesTransactionally is Kafka's RequestUtils.hasTransactionalRecords:
// some partition's first batch is transactional.
func producesTransactionally(r *kmsg.ProduceRequest) bool {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if isTransactionalBatch(p.Records) {
				return true
			}
		}
	}
	return false
}
