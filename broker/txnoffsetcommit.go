package broker

// TxnOffsetCommit.
//
// Offsets committed inside a transaction (coordinator/txnoffsets.go): they
// are appended to __consumer_offsets at once as a transactional batch of
// the producer and become the group's committed offsets only when the
// transaction commits (its marker on that partition), as in Kafka. The
// member fields (v3+) are optional, as in Kafka's
// validateTransactionalOffsetCommit: a commit with generation -1 and no
// member or instance id is accepted whatever the group's members; one
// naming any is checked as OffsetCommit checks it (classic groups: member,
// instance id, generation; KIP-848 groups: member and member epoch, a stale
// epoch answered ILLEGAL_GENERATION), except that a rebalance in progress
// does not refuse it. A producer epoch older than the one the partition has
// seen is INVALID_PRODUCER_EPOCH. From v5 (KIP-890 part 2) the group's
// __consumer_offsets partition is added to the producer's transaction
// first, at transaction.version 2, as the partition leader does for
// Produce v12 (txnverify.go): a v2 client sends no AddOffsetsToTxn. Below
// v5 it is verified to be in the transaction when
// transaction.partition.verification.enable (else INVALID_TXN_STATE). v6
// names topics by id: an id no topic has is UNKNOWN_TOPIC_ID for its
// partitions, which are not committed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
)

// registerTxnOffsetCommit serves TxnOffsetCommit; its versions are here and nowhere else.
func registerTxnOffsetCommit(r *registry) { r.add(kmsg.TxnOffsetCommit, 0, 6, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	cr := coordinator.TxnCommitRequest{Group: r.Group, ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch,
		Generation: -1, MemberID: r.MemberID, InstanceID: deref(r.InstanceID)}
	if req.Version >= 3 {
		cr.Generation = r.Generation
	}
	// WRITE on the transactional id, READ on the group, then on each
	// topic; refused topics are not committed (Kafka's
	// handleTxnOffsetCommitRequest).
	var refused *kerr.Error
	switch {
	case !rc.authorize(OpWrite, ResourceTransactionalID, r.TransactionalID):
		refused = kerr.TransactionalIDAuthorizationFailed
	case !rc.authorize(OpRead, ResourceGroup, r.Group):
		refused = kerr.GroupAuthorizationFailed
	}
	names := make([]string, len(r.Topics))
	img := b.meta.Image()
	for i, t := range r.Topics {
		names[i] = t.Topic
		if req.Version >= 6 {
			names[i] = ""
			if ti := img.Topics.ByID(t.TopicID); ti != nil {
				names[i] = ti.Name
			}
		}
	}
	var allowed map[string]bool
	if refused == nil {
		allowed = rc.authorizedTopics(OpRead, names)
		refused = b.addOffsetsPartition(req.Version, r)
	}
	for ti, t := range r.Topics {
		if names[ti] == "" || !allowed[names[ti]] {
			continue
		}
		for _, p := range t.Partitions {
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = p.LeaderEpoch
			}
			cr.Commits = append(cr.Commits, coordinator.Commit{Topic: names[ti], Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: epoch, Metadata: p.Metadata, ExpireTime: -1})
		}
	}
	var errs []*kerr.Error
	if refused == nil {
		errs = b.groups.TxnCommitOffsets(cr)
	}
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	i := 0
	for ti, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = names[ti], t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case refused != nil:
				rp.ErrorCode = refused.Code
			case names[ti] == "":
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case !allowed[names[ti]]:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				if errs[i] != nil {
					rp.ErrorCode = errs[i].Code
				}
				i++
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// addOffsetsPartition has the transaction coordinator add the group's
// __consumer_offsets partition to the producer's transaction (v5+), or
// verify it holds it (below v5, when verification is on). Its error, as
// the producer sees it, applies to every partition.
func (b *services) addOffsetsPartition(version int16, r *kmsg.TxnOffsetCommitRequest) *kerr.Error {
	add := version >= 5
	if !add && b.cfg.NoTxnVerification {
		return nil
	}
	err, cause := b.checkTxnPartition(r.TransactionalID, r.ProducerID, r.ProducerEpoch,
		coordinator.OffsetsTopic, b.groups.PartitionFor(r.Group), add)
	if cause != nil {
		b.logger.Warn("asking the transaction coordinator", zap.String("transactional_id", r.TransactionalID), zap.Error(cause))
	}
	switch err {
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.TransactionAbortable:
		return kerr.InvalidTxnState
	}
	return err
}
