package broker

// EndTxn.
//
// Commits or aborts the producer's ongoing transaction. Difference from
// Kafka: the markers are written to every partition of the transaction
// (and the group's pending transactional offsets applied) before the
// answer, rather than in the background after the PrepareCommit/
// PrepareAbort record, so a client never sees CONCURRENT_TRANSACTIONS after
// a successful EndTxn. PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH
// before v2. v5 (KIP-890 part 2: the epoch bumps with every transaction) is
// not served, nor is the transaction.version feature advertised, so clients
// run transactions in the KIP-98 mode (v4 only adds TRANSACTION_ABORTABLE,
// which Strata never sends).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerEndTxn serves EndTxn; its versions are here and nowhere else.
func registerEndTxn(r *registry) { r.add(kmsg.EndTxn, 0, 4, handleEndTxn) }

func handleEndTxn(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := kmsg.NewPtrEndTxnResponse()
	if !rc.authorize(OpWrite, ResourceTransactionalID, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if err := b.txns.EndTxn(r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit); err != nil {
		resp.ErrorCode = fencedCode(err, req.Version, 2)
	}
	return resp, nil
}
