package broker

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// verifyTxnBatch checks a produce payload whose first batch is
// transactional against the transaction coordinator (see produce.go).
// Payloads too short for a batch header are left to storage's validation.
func (b *services) verifyTxnBatch(txnID *string, topic string, partition int32, records []byte) error {
	const (
		offProducerID    = 43
		offProducerEpoch = 51
	)
	if !isTransactionalBatch(records) {
		return nil
	}
	if txnID == nil {
		return fmt.Errorf("transactional batch without a transactional id: %w", kerr.InvalidTxnState)
	}
	pid := int64(binary.BigEndian.Uint64(records[offProducerID:]))
	epoch := int16(binary.BigEndian.Uint16(records[offProducerEpoch:]))
	if err := b.txns.VerifyPartition(*txnID, pid, epoch, topic, partition); err != nil {
		return fmt.Errorf("transactional id %q, producer %d epoch %d, %s-%d: %w", *txnID, pid, epoch, topic, partition, err)
	}
	return nil
}

// isTransactionalBatch reports whether records starts with a whole batch
// header whose attributes mark it transactional (bit 4).
func isTransactionalBatch(records []byte) bool {
	const (
		offAttributes = 21
		headerLen     = 61
	)
	return len(records) >= headerLen && binary.BigEndian.Uint16(records[offAttributes:])&0x10 != 0
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
