package broker

// AddPartitionsToTxn.
//
// The partitions join the producer's transaction (coordinator/txn_ops.go):
// every partition gets the transaction's error, or, when some partition
// does not exist, UNKNOWN_TOPIC_OR_PARTITION for those and
// OPERATION_NOT_ATTEMPTED for the rest, as in Kafka. PRODUCER_FENCED is
// sent as INVALID_PRODUCER_EPOCH before v2. v4-5 is the batched form
// brokers send the transaction coordinator for their produce and offset
// commit requests, as Kafka's AddPartitionsToTxnManager: it needs
// CLUSTER_ACTION on the cluster (else the top-level error is
// CLUSTER_AUTHORIZATION_FAILED), checks no topic ACL, and answers per
// transaction. A transaction with verify_only is checked, not changed
// (KIP-890 part 1: each partition NONE if the ongoing transaction holds
// it, else TRANSACTION_ABORTABLE; INVALID_PRODUCER_ID_MAPPING,
// PRODUCER_FENCED for the producer); without, its partitions are added,
// at transaction.version 2 from v5 (KIP-890 part 2: a v2 client's produce
// adds its partition implicitly).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerAddPartitionsToTxn serves AddPartitionsToTxn; its versions are here and nowhere else.
func registerAddPartitionsToTxn(r *registry) {
	r.add(kmsg.AddPartitionsToTxn, 0, 5, handleAddPartitionsToTxn)
}

func handleAddPartitionsToTxn(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	if req.Version >= 4 {
		if !rc.authorizeCluster(OpClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		for _, t := range r.Transactions {
			parts := txnPartitionsOf(t.Topics)
			tv := int16(0)
			if req.Version >= 5 {
				tv = 2
			}
			if t.VerifyOnly {
				b.txns.VerifyPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts)
			} else {
				b.txns.AddPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts, tv)
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rt.TransactionalID = t.TransactionalID
			for _, p := range parts {
				if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != p.Topic {
					tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
					tt.Topic = p.Topic
					rt.Topics = append(rt.Topics, tt)
				}
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition = p.Partition
				if p.Err != nil {
					rp.ErrorCode = p.Err.Code
				}
				tt := &rt.Topics[len(rt.Topics)-1]
				tt.Partitions = append(tt.Partitions, rp)
			}
			resp.Transactions = append(resp.Transactions, rt)
		}
		return resp, nil
	}
	var parts []coordinator.TxnPartition
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, coordinator.TxnPartition{Topic: t.Topic, Partition: p})
		}
	}
	if authorizeTxnPartitions(rc, r.TransactionalID, parts) {
		b.txns.AddPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, parts, 0)
	}
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

// txnPartitionsOf flattens a v4+ transaction's topics.
func txnPartitionsOf(topics []kmsg.AddPartitionsToTxnRequestTransactionTopic) []coordinator.TxnPartition {
	var parts []coordinator.TxnPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			parts = append(parts, coordinator.TxnPartition{Topic: t.Topic, Partition: p})
		}
	}
	return parts
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
