package broker

// OffsetCommit.
//
// Commits are checked against the group as Kafka's
// ClassicGroup.validateOffsetCommit does: generation -1 commits to a group
// without members (simple commits, which create the group); to a group with
// members a commit with generation -1 and no member id (what kadm,
// AdminClient.alterConsumerGroupOffsets and kafka-consumer-groups
// --reset-offsets send) is UNKNOWN_MEMBER_ID. A commit naming a member, a
// generation or an instance id must come from a member (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID v7+) at the group's generation (ILLEGAL_GENERATION),
// and a group completing a rebalance answers REBALANCE_IN_PROGRESS. A
// commit with a generation to a group that does not exist is
// ILLEGAL_GENERATION, from v9 GROUP_ID_NOT_FOUND. The offsets are appended
// to __consumer_offsets as OffsetCommit records and answered once the
// append succeeded. v9 names the member epoch of KIP-848
// consumer groups in the generation field; for classic groups it is the
// generation. A consumer group takes commits from its members at their
// member epoch (STALE_MEMBER_EPOCH otherwise; the previous epoch is also
// accepted for partitions the member still holds, as Kafka 4.3) and only
// with v9+ (UNSUPPORTED_VERSION), and epoch -1 commits while it has no
// members (with members, UNKNOWN_MEMBER_ID). The v2-4 retention time,
// when set, becomes the record's expire timestamp (value v1), as in Kafka.
// Metadata longer than 4096 bytes (offset.metadata.max.bytes) is
// OFFSET_METADATA_TOO_LARGE; partitions that do not exist are
// UNKNOWN_TOPIC_OR_PARTITION. v10 (KIP-848) names topics by id, answered by
// id: an id the metadata image does not know is UNKNOWN_TOPIC_ID for each
// of its partitions, as Kafka's handleOffsetCommitRequest.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerOffsetCommit serves OffsetCommit; its versions are here and nowhere else.
func registerOffsetCommit(r *registry) { r.add(kmsg.OffsetCommit, 2, 10, handleOffsetCommit) }

func handleOffsetCommit(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.OffsetCommitRequest)
	cr := coordinator.CommitRequest{Group: r.Group, Generation: r.Generation, MemberID: r.MemberID, InstanceID: deref(r.InstanceID),
		Version: req.Version}
	expire := int64(-1)
	if req.Version <= 4 && r.RetentionTimeMillis >= 0 {
		expire = b.clock.Now().UnixMilli() + r.RetentionTimeMillis
	}
	// READ on the group, then on each topic; refused topics are not
	// committed (Kafka's handleOffsetCommitRequest).
	groupOK := rc.authorize(OpRead, ResourceGroup, r.Group)
	names := make([]string, len(r.Topics))
	for i, t := range r.Topics {
		names[i] = t.Topic
	}
	byID := req.Version >= 10
	if byID {
		names = topicNamesByID(b, r.Topics, func(t kmsg.OffsetCommitRequestTopic) [16]byte { return t.TopicID })
	}
	unknownID := func(ti int) bool { return byID && names[ti] == "" }
	var allowed map[string]bool
	if groupOK {
		known := make([]string, 0, len(names))
		for ti, n := range names {
			if !unknownID(ti) {
				known = append(known, n)
			}
		}
		allowed = rc.authorizedTopics(OpRead, known)
	}
	for ti, t := range r.Topics {
		if unknownID(ti) || !allowed[names[ti]] {
			continue
		}
		for _, p := range t.Partitions {
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = p.LeaderEpoch
			}
			cr.Commits = append(cr.Commits, coordinator.Commit{Topic: names[ti], Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: epoch, Metadata: p.Metadata, ExpireTime: expire})
		}
	}
	var errs []*kerr.Error
	if groupOK {
		errs = b.groups.CommitOffsets(cr)
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	i := 0
	for ti, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !groupOK:
				rp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			case unknownID(ti):
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

// topicNamesByID is the name of each topic a v10 OffsetCommit or
// OffsetFetch names by id, "" for an id the metadata image does not know
// (or the zero id), as Kafka's metadataCache.getTopicName.
func topicNamesByID[T any](b *services, topics []T, id func(T) [16]byte) []string {
	img := b.meta.Image()
	names := make([]string, len(topics))
	for i, t := range topics {
		if ti := img.Topics.ByID(id(t)); ti != nil && id(t) != [16]byte{} {
			names[i] = ti.Name
		}
	}
	return names
}
