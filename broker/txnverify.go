package broker

// Transactional produce checks (Kafka's ReplicaManager.handleProduceAppend
// and AddPartitionsToTxnManager). Before a transactional batch is
// appended the transaction coordinator is asked about its partition: a
// client at Produce v12+ (KIP-890 part 2) has it added to its transaction
// implicitly, an older one has it verified (KIP-890 part 1, when
// transaction.partition.verification.enable): the producer's transaction
// must be Ongoing and hold the partition. The coordinator is asked in
// process when this node leads the id's partition of __transaction_state
// (or it does not exist yet), else with AddPartitionsToTxn v5 (add) or v4
// (verify_only) over the inter-broker listener. As Kafka, PRODUCER_FENCED
// is answered INVALID_PRODUCER_EPOCH, a partition not in the transaction
// INVALID_TXN_STATE (Strata never sends TRANSACTION_ABORTABLE), and the
// coordinator's retriable errors (CONCURRENT_TRANSACTIONS,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR, a failed connection) NOT_ENOUGH_REPLICAS, which every
// client retries without a metadata refresh.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/internal/batch"
)

// txnCheckTimeout bounds one AddPartitionsToTxn to the coordinator.
const txnCheckTimeout = 10 * time.Second

// verifyTxnBatch checks a produce payload whose first batch is
// transactional against the transaction coordinator, at Produce version
// (see above). Payloads too short for a batch header are left to
// storage's validation.
func (b *services) verifyTxnBatch(version int16, txnID *string, topic string, partition int32, records []byte) error {
	if !isTransactionalBatch(records) {
		return nil
	}
	h := batch.DecodeHeader(records)
	if txnID == nil {
		return fmt.Errorf("transactional batch without a transactional id: %w", kerr.InvalidTxnState)
	}
	add := version >= 12
	if !add && b.cfg.NoTxnVerification {
		return nil
	}
	pid, epoch := h.ProducerID, h.ProducerEpoch
	err, cause := b.checkTxnPartition(*txnID, pid, epoch, topic, partition, add)
	if err == nil {
		return nil
	}
	switch err {
	case kerr.ProducerFenced:
		err = kerr.InvalidProducerEpoch
	case kerr.TransactionAbortable:
		err = kerr.InvalidTxnState
	case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
		return fmt.Errorf("Unable to verify the partition has been added to the transaction. Underlying error: %s: %w", err.Message, kerr.NotEnoughReplicas)
	}
	if err == kerr.InvalidTxnState {
		return fmt.Errorf("Partition was not added to the transaction: %w", err)
	}
	if cause != nil {
		return fmt.Errorf("transactional id %q, producer %d epoch %d, %s-%d: %w: %w", *txnID, pid, epoch, topic, partition, err, cause)
	}
	return fmt.Errorf("transactional id %q, producer %d epoch %d, %s-%d: %w", *txnID, pid, epoch, topic, partition, err)
}

// checkTxnPartition has the id's transaction coordinator add the
// partition to the producer's transaction (at transaction.version 2), or
// verify that it holds it, in process or over the network; the error is
// the coordinator's (PRODUCER_FENCED, TRANSACTION_ABORTABLE, ...), cause
// why it could not be asked.
func (b *services) checkTxnPartition(id string, pid int64, epoch int16, topic string, partition int32, add bool) (*kerr.Error, error) {
	if b.cfg.Metadata != nil && !b.coordinatesHere(id) {
		return b.askTxnCoordinator(id, pid, epoch, topic, partition, add)
	}
	parts := []coordinator.TxnPartition{{Topic: topic, Partition: partition}}
	if add {
		b.txns.AddPartitions(id, pid, epoch, parts, 2)
	} else {
		b.txns.VerifyPartitions(id, pid, epoch, parts)
	}
	return parts[0].Err, nil
}

// askTxnCoordinator sends the id's coordinator AddPartitionsToTxn for one
// partition: v5 adding it, or v4 verify_only. A coordinator this node
// cannot reach is COORDINATOR_NOT_AVAILABLE, with the cause.
func (b *services) askTxnCoordinator(id string, pid int64, epoch int16, topic string, partition int32, add bool) (*kerr.Error, error) {
	addr, err := b.txnCoordinatorAddr(id)
	if err != nil || b.peers == nil {
		return kerr.CoordinatorNotAvailable, err
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if add {
		req.Version = 5
	}
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, !add
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, []int32{partition}
	t.Topics = append(t.Topics, tt)
	req.Transactions = append(req.Transactions, t)
	kresp, err := b.peers.roundTrip(addr, req, txnCheckTimeout)
	if err != nil {
		return kerr.CoordinatorNotAvailable, fmt.Errorf("AddPartitionsToTxn to %s: %w", addr, err)
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error), fmt.Errorf("AddPartitionsToTxn to %s", addr)
	}
	for _, rt := range resp.Transactions {
		for _, rtt := range rt.Topics {
			for _, rp := range rtt.Partitions {
				if rt.TransactionalID == id && rtt.Topic == topic && rp.Partition == partition {
					if rp.ErrorCode == 0 {
						return nil, nil
					}
					return kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error), nil
				}
			}
		}
	}
	return kerr.CoordinatorNotAvailable, fmt.Errorf("AddPartitionsToTxn to %s: no answer for %s-%d", addr, topic, partition)
}

// txnCoordinatorAddr is the inter-broker endpoint of the leader of id's
// partition of __transaction_state.
func (b *services) txnCoordinatorAddr(id string) (string, error) {
	img := b.meta.Image()
	ti := img.Topics.ByName(coordinator.TxnStateTopic)
	if ti == nil {
		return "", errors.New("no transaction state topic")
	}
	p := b.txns.PartitionFor(id)
	reg, ok := ti.Partition(p)
	if !ok || reg.Leader < 0 {
		return "", fmt.Errorf("%s-%d has no leader", coordinator.TxnStateTopic, p)
	}
	br, ok := img.Cluster.Broker(reg.Leader)
	listener := withReplicationDefaults(b.cfg.Cluster).InterBrokerListener
	ep, hasEP := br.Endpoint(listener)
	if !ok || !hasEP {
		return "", fmt.Errorf("coordinator %d has no endpoint on listener %s", reg.Leader, listener)
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
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
