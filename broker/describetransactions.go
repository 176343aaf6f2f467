package broker

// DescribeTransactions.
//
// The state, producer id and epoch, timeout, start time (-1 unless a
// transaction is open) and partitions of each transactional id, for
// kafka-transactions.sh describe; TRANSACTIONAL_ID_NOT_FOUND for an
// unknown id, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
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
		resp.TransactionStates = append(resp.TransactionStates, b.txns.DescribeTransaction(id))
	}
	return resp, nil
}
