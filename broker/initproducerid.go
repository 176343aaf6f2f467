package broker

// InitProducerId, versions 0-5.
//
// Without a transactional id (idempotent producers) every request gets a
// fresh producer id at epoch 0, even one that carries its current id and
// epoch (v3+, KIP-360): Kafka's TransactionCoordinator.handleInitProducerId
// "blindly accepts" these and allocates a new id, and so does Strata. As in
// KafkaApis, an id of -1 with an epoch other than -1, or the reverse, is
// INVALID_REQUEST, and so is an empty transactional id.
//
// Difference from Kafka: transactions are not served yet (issue 5), so a
// request with a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// and producer id and epoch -1. That is the code Kafka sends when a
// transactional id may not be used on the cluster, and every client treats
// it as fatal, so initTransactions fails at once with a clear error. The
// codes a coordinator sends while unavailable (COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) are retriable and would
// make a transactional producer retry until its timeout; UNSUPPORTED_VERSION
// would wrongly blame the request version, which is served. In practice
// clients stop earlier still: FindCoordinator, which a transactional
// producer sends first, is not in ApiVersions.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/protocol"
)

func handleInitProducerID(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := kmsg.NewPtrInitProducerIDResponse()
	fail := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
		return resp, nil
	}
	switch {
	case (r.ProducerID == -1) != (r.ProducerEpoch == -1):
		return fail(kerr.InvalidRequest.Code)
	case r.TransactionalID == nil:
		id, err := b.pids.Next()
		if err != nil {
			b.logger.Error("allocating a producer id", zap.Error(err))
			return fail(errorCode(err))
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp, nil
	case *r.TransactionalID == "":
		return fail(kerr.InvalidRequest.Code)
	default:
		return fail(kerr.TransactionalIDAuthorizationFailed.Code)
	}
}
