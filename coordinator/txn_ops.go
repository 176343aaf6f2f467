package coordinator

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// InitProducerIDResult is the answer to InitProducerId.
type InitProducerIDResult struct {
	ProducerID int64
	Epoch      int16
	Err        *kerr.Error
}

// InitProducerID serves InitProducerId with a transactional id (see
// txnPartition.initProducerID), creating __transaction_state on first
// need.
func (c *Txns) InitProducerID(id string, timeoutMs int32, reqPid int64, reqEpoch int16) InitProducerIDResult {
	if err := c.Ensure(); err != nil {
		c.logger.Error("transaction coordinator not available", zap.Error(err))
		return InitProducerIDResult{ProducerID: -1, Epoch: -1, Err: kerr.CoordinatorNotAvailable}
	}
	r := c.call(id, kerr.CoordinatorNotAvailable, func(s *txnPartition, now time.Time) txnEffects {
		return s.initProducerID(id, timeoutMs, reqPid, reqEpoch, now)
	})
	return InitProducerIDResult{ProducerID: r.pid, Epoch: r.epoch, Err: r.err}
}

// TxnPartition is a partition to add to a transaction, with its outcome.
type TxnPartition struct {
	Topic     string
	Partition int32
	Err       *kerr.Error
}

// AddPartitions serves AddPartitionsToTxn (and AddOffsetsToTxn, with the
// group's __consumer_offsets partition): the partitions join the
// transaction, which becomes Ongoing. Partitions that do not exist get
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as
// in Kafka; an error of the transaction applies to every partition. tv
// is the transaction.version of the adding request (2 when a partition
// leader adds a KIP-890 client's partition, else 0).
func (c *Txns) AddPartitions(id string, pid int64, epoch int16, parts []TxnPartition, tv int16) {
	setAll := func(err *kerr.Error) {
		for i := range parts {
			parts[i].Err = err
		}
	}
	sh, err := c.shardFor(id)
	if sh != nil {
		sh.mu.Lock()
		err = sh.sm.status()
		sh.mu.Unlock()
	}
	if err != nil {
		setAll(err)
		return
	}
	tps, ok := c.existing(parts)
	if !ok {
		return
	}
	r := c.call(id, kerr.InvalidProducerIDMapping, func(s *txnPartition, now time.Time) txnEffects {
		return s.addPartitions(id, pid, epoch, tps, tv, now)
	})
	setAll(r.err)
}

// existing is parts as the state machine takes them, or false when some
// partition does not exist: those get UNKNOWN_TOPIC_OR_PARTITION, the
// others OPERATION_NOT_ATTEMPTED.
func (c *Txns) existing(parts []TxnPartition) ([]topicPartition, bool) {
	bad := false
	tps := make([]topicPartition, len(parts))
	for i, p := range parts {
		tps[i] = topicPartition{p.Topic, p.Partition}
		if t := c.logs.Topic(p.Topic); t == nil || p.Partition < 0 || p.Partition >= t.PartitionCount() {
			parts[i].Err, bad = kerr.UnknownTopicOrPartition, true
		}
	}
	if bad {
		for i := range parts {
			if parts[i].Err == nil {
				parts[i].Err = kerr.OperationNotAttempted
			}
		}
	}
	return tps, !bad
}

// VerifyPartitions serves a verify_only transaction of AddPartitionsToTxn
// v4+ (Kafka's handleVerifyPartitionsInTransaction): each partition is
// NONE when the producer's ongoing transaction holds it, else
// TRANSACTION_ABORTABLE; a producer id or epoch not the transaction's is
// INVALID_PRODUCER_ID_MAPPING or PRODUCER_FENCED for every partition.
func (c *Txns) VerifyPartitions(id string, pid int64, epoch int16, parts []TxnPartition) {
	if _, ok := c.existing(parts); !ok {
		return
	}
	for i, p := range parts {
		switch err := c.VerifyPartition(id, pid, epoch, p.Topic, p.Partition); err {
		case kerr.InvalidProducerEpoch:
			parts[i].Err = kerr.ProducerFenced
		case kerr.InvalidTxnState:
			parts[i].Err = kerr.TransactionAbortable
		default:
			parts[i].Err = err
		}
	}
}

// AddOffsets serves AddOffsetsToTxn: the group's __consumer_offsets
// partition joins the transaction.
func (c *Txns) AddOffsets(id string, pid int64, epoch int16, group string) *kerr.Error {
	if group == "" {
		return kerr.InvalidGroupID
	}
	if c.groups == nil {
		return kerr.CoordinatorNotAvailable
	}
	if err := c.groups.checkReady(); err != nil {
		return err // the group's partition must exist to get a marker
	}
	parts := []TxnPartition{{Topic: OffsetsTopic, Partition: c.groups.PartitionFor(group)}}
	c.AddPartitions(id, pid, epoch, parts, 0)
	return parts[0].Err
}

// EndTxnResult is the answer to EndTxn: from v5 the producer id and
// epoch to continue with.
type EndTxnResult struct {
	ProducerID int64
	Epoch      int16
	Err        *kerr.Error
}

// EndTxn serves EndTxn at transaction.version tv (2 from EndTxn v5):
// commit or abort the ongoing transaction, writing the markers before
// answering (see txnPartition.endTxn).
func (c *Txns) EndTxn(id string, pid int64, epoch int16, commit bool, tv int16) EndTxnResult {
	r := c.call(id, kerr.InvalidProducerIDMapping, func(s *txnPartition, now time.Time) txnEffects {
		return s.endTxn(id, pid, epoch, commit, tv, now)
	})
	return EndTxnResult{ProducerID: r.pid, Epoch: r.epoch, Err: r.err}
}
