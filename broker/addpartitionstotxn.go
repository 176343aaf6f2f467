package broker

// AddPartitionsToTxn.
//
// The partitions join the producer's transaction (coordinator/txn_ops.go):
// every partition gets the transaction's error, or, when some partition
// does not exist, UNKNOWN_TOPIC_OR_PARTITION for those and
// OPERATION_NOT_ATTEMPTED for the rest, as in Kafka. PRODUCER_FENCED is
// sent as INVALID_PRODUCER_EPOCH before v2. Difference from Kafka: v4-5,
// the batched verify_only form brokers send each other for KIP-890
// verification, is not served (clients send v3 at most; Strata verifies
// transactional produce in-process, see produce.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerAddPartitionsToTxn serves AddPartitionsToTxn; its versions are here and nowhere else.
func registerAddPartitionsToTxn(r *registry) {
	r.add(kmsg.AddPartitionsToTxn, 0, 3, handleAddPartitionsToTxn)
}

func handleAddPartitionsToTxn(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	var parts []coordinator.TxnPartition
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, coordinator.TxnPartition{Topic: t.Topic, Partition: p})
		}
	}
	if authorizeTxnPartitions(rc, r.TransactionalID, parts) {
		b.txns.AddPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, parts)
	}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	for _, p := range parts {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != p.Topic {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = p.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
		rp.Partition = p.Partition
		if p.Err != nil {
			rp.ErrorCode = fencedCode(p.Err, req.Version, 2)
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp, nil
}

// authorizeTxnPartitions is Kafka's check of a client's AddPartitionsToTxn
// (v3 and below): WRITE on the transactional id, else every partition
// fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then WRITE on each
// topic, and if one is refused the transaction adds nothing: refused
// topics TOPIC_AUTHORIZATION_FAILED, missing partitions
// UNKNOWN_TOPIC_OR_PARTITION, the rest OPERATION_NOT_ATTEMPTED. Kafka
// refuses internal topics here whatever the ACLs; Strata asks the
// authorizer, as it adds them with no authorizer. It reports whether the
// partitions may be added; if not, each has its error.
func authorizeTxnPartitions(rc *reqCtx, id string, parts []coordinator.TxnPartition) bool {
	if !rc.authorize(OpWrite, ResourceTransactionalID, id) {
		for i := range parts {
			parts[i].Err = kerr.TransactionalIDAuthorizationFailed
		}
		return false
	}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.Topic
	}
	allowed := rc.authorizedTopics(OpWrite, names)
	if len(allowed) == len(distinct(names)) {
		return true
	}
	for i, p := range parts {
		switch t := rc.svc.logs.Topic(p.Topic); {
		case !allowed[p.Topic]:
			parts[i].Err = kerr.TopicAuthorizationFailed
		case t == nil || p.Partition < 0 || p.Partition >= t.PartitionCount():
			parts[i].Err = kerr.UnknownTopicOrPartition
		default:
			parts[i].Err = kerr.OperationNotAttempted
		}
	}
	return false
}
