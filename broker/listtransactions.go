package broker

// ListTransactions.
//
// Every transactional id with its producer id and state, filtered by state
// names (unknown ones are echoed in UnknownStateFilters), producer ids and
// (v1) DurationFilterMillis: only transactions open at least that long.
// v2 (a transactional id regular expression) is not served.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerListTransactions serves ListTransactions; its versions are here and nowhere else.
func registerListTransactions(r *registry) {
	r.add(kmsg.ListTransactions, 0, 1, handleListTransactions)
}

func handleListTransactions(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := kmsg.NewPtrListTransactionsResponse()
	minDuration := time.Duration(-1)
	if req.Version >= 1 && r.DurationFilterMillis >= 0 {
		minDuration = time.Duration(r.DurationFilterMillis) * time.Millisecond
	}
	states, unknown, err := b.txns.ListTransactions(r.StateFilters, r.ProducerIDFilters, minDuration)
	if err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	// Only the transactional ids the principal may describe, as Kafka.
	states = slices.DeleteFunc(states, func(s kmsg.ListTransactionsResponseTransactionState) bool {
		return !rc.authorize(OpDescribe, ResourceTransactionalID, s.TransactionalID)
	})
	resp.TransactionStates, resp.UnknownStateFilters = states, unknown
	return resp, nil
}
