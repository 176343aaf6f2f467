package broker

// EndTxn.
//
// Commits or aborts the producer's ongoing transaction. Difference from
// Kafka: the markers are written to every partition of the transaction
// (and the group's pending transactional offsets applied) before the
// answer, rather than in the background after the PrepareCommit/
// PrepareAbort record, so a client never sees CONCURRENT_TRANSACTIONS after
// a successful EndTxn. PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH
// before v2. v5 is KIP-890 part 2, as in Kafka's KafkaApis: the request's
// version picks the flow per transaction (v5: transaction.version 2, the
// epoch bumps with every end and the answer carries the producer id and
// epoch to continue with; below: the KIP-98 flow, whatever is finalized).
// v4 only adds TRANSACTION_ABORTABLE, which Strata never sends.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerEndTxn serves EndTxn; its versions are here and nowhere else.
func registerEndTxn(r *registry) { r.add(kmsg.EndTxn, 0, 5, handleEndTxn) }

func handleEndTxn(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := kmsg.NewPtrEndTxnResponse()
	if !rc.authorize(OpWrite, ResourceTransactionalID, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	tv := int16(0)
	if req.Version >= 5 {
		tv = 2
	}
	res := b.txns.EndTxn(r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, tv)
	resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
	if res.Err != nil {
		resp.ErrorCode = fencedCode(res.Err, req.Version, 2)
	}
	return resp, nil
}
