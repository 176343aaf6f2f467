package broker

// DescribeTransactions, version 0.
//
// The state, producer id and epoch, timeout, start time (-1 unless a
// transaction is open) and partitions of each transactional id, for
// kafka-transactions.sh describe; TRANSACTIONAL_ID_NOT_FOUND for an
// unknown id, as in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleDescribeTransactions(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := kmsg.NewPtrDescribeTransactionsResponse()
	for _, id := range r.TransactionalIDs {
		resp.TransactionStates = append(resp.TransactionStates, b.txns.DescribeTransaction(id))
	}
	return resp, nil
}
