package broker

// ListTransactions.
//
// Every transactional id with its producer id and state, filtered by state
// names (unknown ones are echoed in UnknownStateFilters), producer ids and
// (v1) DurationFilterMillis: only transactions open at least that long,
// and (v2, KIP-1152) TransactionalIdPattern: only the ids the regular
// expression matches whole, as Kafka's TransactionStateManager matches
// them with RE2/J (Go's regexp is RE2 too); null or empty matches every id,
// and one that does not compile is INVALID_REGULAR_EXPRESSION.

import (
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerListTransactions serves ListTransactions; its versions are here and nowhere else.
func registerListTransactions(r *registry) {
	r.add(kmsg.ListTransactions, 0, 2, handleListTransactions)
}

func handleListTransactions(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := kmsg.NewPtrListTransactionsResponse()
	minDuration := time.Duration(-1)
	if req.Version >= 1 && r.DurationFilterMillis >= 0 {
		minDuration = time.Duration(r.DurationFilterMillis) * time.Millisecond
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && r.TransactionalIDPattern != nil && *r.TransactionalIDPattern != "" {
		// Validated alone first: wrapped, "a)|(b" would compile.
		_, err := regexp.Compile(*r.TransactionalIDPattern)
		re, werr := regexp.Compile(`^(?:` + *r.TransactionalIDPattern + `)$`)
		if err != nil || werr != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		pattern = re
	}
	states, unknown, err := b.txns.ListTransactions(r.StateFilters, r.ProducerIDFilters, minDuration)
	if err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	// Only the transactional ids the principal may describe, as Kafka.
	states = slices.DeleteFunc(states, func(s kmsg.ListTransactionsResponseTransactionState) bool {
		return pattern != nil && !pattern.MatchString(s.TransactionalID) ||
			!rc.authorize(OpDescribe, ResourceTransactionalID, s.TransactionalID)
	})
	resp.TransactionStates, resp.UnknownStateFilters = states, unknown
	return resp, nil
}
