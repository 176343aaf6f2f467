package coordinator

import (
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kvTxnTombstone deletes a transactional id from __transaction_state.
func kvTxnTombstone(id string) kv {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = id
	return kv{key: k.AppendTo(nil)}
}

// VerifyPartition is the check Kafka's KIP-890 part 1 verification makes
// before a transactional batch is appended: the producer's transaction is
// Ongoing and contains the partition. nil means the batch may go on; a
// producer id or epoch the coordinator does not know gets
// INVALID_PRODUCER_EPOCH / INVALID_PRODUCER_ID_MAPPING, a partition not
// added (or no ongoing transaction) INVALID_TXN_STATE.
func (c *Txns) VerifyPartition(id string, pid int64, epoch int16, topic string, partition int32) *kerr.Error {
	if !c.loaded.Load() {
		return kerr.CoordinatorLoadInProgress
	}
	m := c.lock(id, false)
	if m == nil {
		return kerr.InvalidProducerIDMapping
	}
	defer m.mu.Unlock()
	switch {
	case m.pid != pid:
		return kerr.InvalidProducerIDMapping
	case epoch != m.epoch:
		return kerr.InvalidProducerEpoch
	case m.state != txnOngoing:
		return kerr.InvalidTxnState
	}
	if _, ok := m.partitions[txnTP{topic, partition}]; !ok {
		return kerr.InvalidTxnState
	}
	return nil
}

// DescribeTransaction is one entry of DescribeTransactions:
// TRANSACTIONAL_ID_NOT_FOUND for an unknown id.
func (c *Txns) DescribeTransaction(id string) kmsg.DescribeTransactionsResponseTransactionState {
	d := kmsg.NewDescribeTransactionsResponseTransactionState()
	d.TransactionalID = id
	d.ProducerID, d.ProducerEpoch, d.StartTimestamp = -1, -1, -1
	if !c.loaded.Load() {
		d.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return d
	}
	m := c.lock(id, false)
	if m == nil {
		d.ErrorCode = kerr.TransactionalIDNotFound.Code
		return d
	}
	defer m.mu.Unlock()
	if m.pid < 0 {
		d.ErrorCode = kerr.TransactionalIDNotFound.Code
		return d
	}
	d.State = m.state.String()
	d.TimeoutMillis = int32(m.timeout.Milliseconds())
	d.ProducerID, d.ProducerEpoch = m.pid, m.epoch
	if !m.start.IsZero() {
		d.StartTimestamp = m.start.UnixMilli()
	}
	for _, tp := range m.sortedPartitions() {
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.topic {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = tp.topic
			d.Topics = append(d.Topics, t)
		}
		d.Topics[len(d.Topics)-1].Partitions = append(d.Topics[len(d.Topics)-1].Partitions, tp.partition)
	}
	return d
}

// ListTransactions lists the transactional ids, filtered by state names
// (unknown names are returned), producer ids and, when minDuration >= 0,
// transactions running at least that long (ListTransactions v1).
func (c *Txns) ListTransactions(states []string, pids []int64, minDuration time.Duration) (out []kmsg.ListTransactionsResponseTransactionState, unknown []string, err *kerr.Error) {
	if !c.loaded.Load() {
		return nil, nil, kerr.CoordinatorLoadInProgress
	}
	known := map[string]bool{}
	for _, s := range kmsg.TransactionStateStrings() {
		known[strings.ToLower(s)] = true
	}
	wantState := map[string]bool{}
	for _, s := range states {
		if !known[strings.ToLower(s)] {
			unknown = append(unknown, s)
			continue
		}
		wantState[strings.ToLower(s)] = true
	}
	wantPid := map[int64]bool{}
	for _, p := range pids {
		wantPid[p] = true
	}
	now := c.now()
	for _, m := range c.snapshot() {
		m.mu.Lock()
		ok := m.pid >= 0 && m.state != txnDead &&
			(len(states) == 0 || wantState[strings.ToLower(m.state.String())]) &&
			(len(pids) == 0 || wantPid[m.pid]) &&
			(minDuration < 0 || m.state == txnOngoing && now.Sub(m.start) >= minDuration)
		if ok {
			s := kmsg.NewListTransactionsResponseTransactionState()
			s.TransactionalID, s.ProducerID, s.TransactionState = m.id, m.pid, m.state.String()
			out = append(out, s)
		}
		m.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, unknown, nil
}
