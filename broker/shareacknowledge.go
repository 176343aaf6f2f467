package broker

// ShareAcknowledge v1-2 (KIP-932), as Kafka 4.4's
// handleShareAcknowledgeRequest: the group id, READ on the group and the
// member id are checked as ShareFetch's (sharefetch.go); the share
// session must exist and the epoch be its next one (0 is
// INVALID_SHARE_SESSION_EPOCH), -1 closing it after the acknowledgements,
// which releases every record the member still holds. Each partition's
// acknowledgements (ACCEPT, RELEASE, REJECT, and v2's RENEW) are applied
// and persisted by the share coordinator before the answer; a partition
// of an unknown topic is UNKNOWN_TOPIC_OR_PARTITION, one not readable
// TOPIC_AUTHORIZATION_FAILED. v2 answers the group's lock duration in
// AcquisitionLockTimeoutMillis.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator/share"
)

// registerShareAcknowledge serves ShareAcknowledge; its versions are here
// and nowhere else.
func registerShareAcknowledge(r *registry) {
	r.add(kmsg.ShareAcknowledge, 1, 2, handleShareAcknowledge)
}

// shareAckError is Kafka's ShareAcknowledgeRequest.getErrorResponse: the
// code and no message.
func shareAckError(resp *kmsg.ShareAcknowledgeResponse, err *kerr.Error) *kmsg.ShareAcknowledgeResponse {
	resp.ErrorCode = err.Code
	return resp
}

func handleShareAcknowledge(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	switch {
	case !rc.svc.shareGroupsEnabled():
		return shareAckError(resp, kerr.UnsupportedVersion), nil
	case r.GroupID == nil || *r.GroupID == "":
		return shareAckError(resp, kerr.InvalidRequest), nil
	case !rc.authorize(OpRead, ResourceGroup, *r.GroupID):
		return shareAckError(resp, kerr.GroupAuthorizationFailed), nil
	case !validShareMember(r.MemberID):
		return shareAckError(resp, kerr.InvalidRequest), nil
	}
	b := rc.svc
	key := shareSessionKey{group: *r.GroupID, member: *r.MemberID}
	closing, serr := b.sharing.sessions.acknowledgeContext(key, r.ShareSessionEpoch)
	if serr != nil {
		return shareAckError(resp, serr), nil
	}
	if rc.req.Version >= 2 {
		cfg, _ := b.shareConfig(key.group)
		resp.AcquisitionLockTimeoutMillis = int32(cfg.LockDuration / time.Millisecond)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			var acks []share.AckBatch
			for _, a := range p.AcknowledgementBatches {
				acks = append(acks, ackBatch(a.FirstOffset, a.LastOffset, a.AcknowledgeTypes))
			}
			err := rc.acknowledgeShare(key, shareTP{t.TopicID, p.Partition}, acks)
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode, rp.ErrorMessage = err.code(), err.message()
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if closing {
		b.sharing.releaseMember(key)
	}
	return resp, nil
}
