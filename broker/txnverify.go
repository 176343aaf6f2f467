package broker

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// verifyTxnBatch checks a produce payload whose first batch is
// transactional against the transaction coordinator (see produce.go).
// Payloads too short for a batch header are left to storage's validation.
func (b *services) verifyTxnBatch(txnID *string, topic string, partition int32, records []byte) error {
	const (
		offAttributes    = 21
		offProducerID    = 43
		offProducerEpoch = 51
		headerLen        = 61
	)
	if len(records) < headerLen || binary.BigEndian.Uint16(records[offAttributes:])&0x10 == 0 {
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
