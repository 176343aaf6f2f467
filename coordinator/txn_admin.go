package coordinator

import (
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// VerifyPartition is the check Kafka's KIP-890 part 1 verification makes
// before a transactional batch is appended (see txnPartition.verify); nil
// means the batch may go on.
func (c *Txns) VerifyPartition(id string, pid int64, epoch int16, topic string, partition int32) *kerr.Error {
	sh, err := c.shardFor(id)
	switch {
	case err != nil:
		return err
	case sh == nil:
		return kerr.InvalidProducerIDMapping
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for {
		err, wait := sh.sm.verify(id, pid, epoch, topicPartition{topic, partition})
		if !wait {
			return err
		}
		sh.cond.Wait()
	}
}

// DescribeTransaction is one entry of DescribeTransactions:
// TRANSACTIONAL_ID_NOT_FOUND for an unknown id.
func (c *Txns) DescribeTransaction(id string) kmsg.DescribeTransactionsResponseTransactionState {
	sh, err := c.shardFor(id)
	if sh == nil {
		d := kmsg.NewDescribeTransactionsResponseTransactionState()
		d.TransactionalID = id
		d.ProducerID, d.ProducerEpoch, d.StartTimestamp = -1, -1, -1
		d.ErrorCode = kerr.TransactionalIDNotFound.Code
		if err != nil {
			d.ErrorCode = err.Code
		}
		return d
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for {
		d, wait := sh.sm.describe(id)
		if !wait {
			return d
		}
		sh.cond.Wait()
	}
}

// ListTransactions lists the transactional ids, filtered by state names
// (unknown names are returned), producer ids and, when minDuration >= 0,
// transactions running at least that long (ListTransactions v1).
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads, as in Kafka.
func (c *Txns) ListTransactions(states []string, pids []int64, minDuration time.Duration) (out []kmsg.ListTransactionsResponseTransactionState, unknown []string, err *kerr.Error) {
	if c.state.current() == nil && !c.groupsLoaded() {
		return nil, nil, kerr.CoordinatorLoadInProgress
	}
	known := map[string]bool{}
	for _, s := range kmsg.TransactionStateStrings() {
		known[strings.ToLower(s)] = true
	}
	f := txnListFilter{minDuration: minDuration}
	if len(states) > 0 {
		f.states = map[string]bool{}
	}
	for _, s := range states {
		if !known[strings.ToLower(s)] {
			unknown = append(unknown, s)
			continue
		}
		f.states[strings.ToLower(s)] = true
	}
	if len(pids) > 0 {
		f.pids = map[int64]bool{}
	}
	for _, p := range pids {
		f.pids[p] = true
	}
	now := c.clock.Now()
	for _, sh := range c.snapshot() {
		sh.mu.Lock()
		part, err := sh.sm.list(f, now)
		sh.mu.Unlock()
		if err == kerr.CoordinatorLoadInProgress {
			return nil, nil, err
		}
		out = append(out, part...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, unknown, nil
}
