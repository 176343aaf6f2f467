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
// seen is INVALID_PRODUCER_EPOCH. v5 (KIP-890 part 2) and v6 (topic
// ids) are not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerTxnOffsetCommit serves TxnOffsetCommit; its versions are here and nowhere else.
func registerTxnOffsetCommit(r *registry) { r.add(kmsg.TxnOffsetCommit, 0, 4, handleTxnOffsetCommit) }

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
	var allowed map[string]bool
	if refused == nil {
		names := make([]string, len(r.Topics))
		for i, t := range r.Topics {
			names[i] = t.Topic
		}
		allowed = rc.authorizedTopics(OpRead, names)
	}
	for _, t := range r.Topics {
		if !allowed[t.Topic] {
			continue
		}
		for _, p := range t.Partitions {
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = p.LeaderEpoch
			}
			cr.Commits = append(cr.Commits, coordinator.Commit{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: epoch, Metadata: p.Metadata, ExpireTime: -1})
		}
	}
	var errs []*kerr.Error
	if refused == nil {
		errs = b.groups.TxnCommitOffsets(cr)
	}
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	i := 0
	for _, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case refused != nil:
				rp.ErrorCode = refused.Code
			case !allowed[t.Topic]:
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
