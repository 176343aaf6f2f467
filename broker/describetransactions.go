package broker

// DescribeTransactions.
//
// The state, producer id and epoch, timeout, start time (-1 unless a
// transaction is open) and partitions of each transactional id, for
// kafka-transactions.sh describe; TRANSACTIONAL_ID_NOT_FOUND for an
// unknown id, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"slices"
)

// registerDescribeTransactions serves DescribeTransactions; its versions are here and nowhere else.
func registerDescribeTransactions(r *registry) {
	r.add(kmsg.DescribeTransactions, 0, 0, handleDescribeTransactions)
}

func handleDescribeTransactions(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	for _, id := range r.TransactionalIDs {
		if !rc.authorize(OpDescribe, ResourceTransactionalID, id) {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st := b.txns.DescribeTransaction(id)
		// Only the topics the principal may describe, as Kafka.
		st.Topics = slices.DeleteFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
			return !rc.authorize(OpDescribe, ResourceTopic, t.Topic)
		})
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
