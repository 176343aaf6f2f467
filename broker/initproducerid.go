package broker

// InitProducerId.
//
// Without a transactional id (idempotent producers) every request gets a
// fresh producer id at epoch 0, even one that carries its current id and
// epoch (v3+, KIP-360): Kafka's TransactionCoordinator.handleInitProducerId
// "blindly accepts" these and allocates a new id, and so does Strata. As in
// KafkaApis, an id of -1 with an epoch other than -1, or the reverse, is
// INVALID_REQUEST, and so is an empty transactional id.
//
// With a transactional id the transaction coordinator answers
// (coordinator/txn_ops.go): a new id gets a producer id at epoch 0, a
// known one its epoch bumped, fencing the previous producer after its
// ongoing transaction is aborted. transaction_timeout_ms must be in
// (0, transaction.max.timeout.ms], else INVALID_TRANSACTION_TIMEOUT. As in
// KafkaApis, PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH before v4.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerInitProducerID serves InitProducerID; its versions are here and nowhere else.
func registerInitProducerID(r *registry) { r.add(kmsg.InitProducerID, 0, 5, handleInitProducerID) }

func handleInitProducerID(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	fail := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
		return resp, nil
	}
	// Authorization first, as Kafka: WRITE on the transactional id, or for
	// an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on
	// some topic.
	switch {
	case r.TransactionalID != nil && !rc.authorize(OpWrite, ResourceTransactionalID, *r.TransactionalID):
		return fail(kerr.TransactionalIDAuthorizationFailed.Code)
	case r.TransactionalID == nil && !rc.authorizeCluster(OpIdempotentWrite) && !rc.authorizeByResourceType(OpWrite, ResourceTopic):
		return fail(kerr.ClusterAuthorizationFailed.Code)
	}
	switch {
	case (r.ProducerID == -1) != (r.ProducerEpoch == -1):
		return fail(kerr.InvalidRequest.Code)
	case r.TransactionalID == nil:
		id, err := b.pids.Next()
		if err != nil {
			return fail(b.errorCode(kmsg.InitProducerID, err))
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp, nil
	case *r.TransactionalID == "":
		return fail(kerr.InvalidRequest.Code)
	default:
		res := b.txns.InitProducerID(*r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch)
		if res.Err != nil {
			return fail(fencedCode(res.Err, req.Version, 4))
		}
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
		return resp, nil
	}
}

// fencedCode is err's code, except that PRODUCER_FENCED becomes
// INVALID_PRODUCER_EPOCH for request versions below since, which predate
// it (KIP-588), as KafkaApis does.
func fencedCode(err *kerr.Error, version, since int16) int16 {
	if err == kerr.ProducerFenced && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return err.Code
}
