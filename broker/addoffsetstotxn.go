package broker

// AddOffsetsToTxn.
//
// The group's __consumer_offsets partition joins the producer's
// transaction, so that EndTxn writes a marker there and the offsets sent
// with TxnOffsetCommit become visible (or are dropped) with it. Errors as
// AddPartitionsToTxn; PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH
// before v2. v4 only tells the broker the client understands
// TRANSACTION_ABORTABLE, which Strata never sends.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerAddOffsetsToTxn serves AddOffsetsToTxn; its versions are here and nowhere else.
func registerAddOffsetsToTxn(r *registry) { r.add(kmsg.AddOffsetsToTxn, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := kmsg.NewPtrAddOffsetsToTxnResponse()
	switch {
	case !rc.authorize(OpWrite, ResourceTransactionalID, r.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case !rc.authorize(OpRead, ResourceGroup, r.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if err := b.txns.AddOffsets(r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group); err != nil {
		resp.ErrorCode = fencedCode(err, req.Version, 2)
	}
	return resp, nil
}
