package broker

import (
	"fmt"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// verifyTxnBatch checks a produce payload whose first batch is
// transactional against the transaction coordinator (see produce.go).
// Payloads too short for a batch header are left to storage's validation.
func (b *Broker) verifyTxnBatch(txnID *string, topic string, partition int32, records []byte) error {
	if len(records) < batch.HeaderSize {
		return nil
	}
	h := batch.DecodeHeader(records)
	if !h.Transactional() {
		return nil
	}
	if txnID == nil {
		return fmt.Errorf("transactional batch without a transactional id: %w", kerr.InvalidTxnState)
	}
	pid, epoch := h.ProducerID, h.ProducerEpoch
	if err := b.txns.VerifyPartition(*txnID, pid, epoch, topic, partition); err != nil {
		return fmt.Errorf("transactional id %q, producer %d epoch %d, %s-%d: %w", *txnID, pid, epoch, topic, partition, err)
	}
	return nil
}
