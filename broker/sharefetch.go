package broker

// ShareFetch v1-2 (KIP-932), as Kafka 4.4's handleShareFetchRequest and
// SharePartitionManager.fetchMessages: a group id is needed (else
// INVALID_REQUEST), READ on the group (GROUP_AUTHORIZATION_FAILED), a
// member id of 1 to 36 characters; the share session is the epoch's
// (sharesession.go); the request's acknowledgements are applied and
// persisted first, each partition's outcome in its AcknowledgeErrorCode;
// an epoch -1 then closes the session, releasing what the member holds,
// and fetches nothing. Otherwise every partition of the session is read
// from its share-partition's next fetch offset (READ on the topic, else
// TOPIC_AUTHORIZATION_FAILED), waiting up to MaxWaitMs for MinBytes to be
// there to acquire, as DelayedShareFetch, then acquiring at most
// MaxRecords across the response (ShareAcquireMode batch-optimized or
// record-limit, v2), in AcquiredRecords entries of about BatchSize, and
// sending the log batches that hold them. A request opening its session
// answers every partition; a later one only those with records, an error
// or an acknowledgement. v2's IsRenewAck requests only renew locks: such
// a request asking to fetch (MaxBytes, MinBytes, MaxRecords, BatchSize
// or MaxWaitMs not 0) is INVALID_REQUEST. Errors of the whole request
// carry no message, as Kafka's getErrorResponse.
// AcquisitionLockTimeoutMillis is the group's lock duration.
//
// Below share.version 1 ShareFetch and ShareAcknowledge answer
// UNSUPPORTED_VERSION before anything else, as Kafka's (features.go).
//
// A member is not checked against its group, as Kafka does not either.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator/share"
)

// registerShareFetch serves ShareFetch; its versions are here and nowhere
// else.
func registerShareFetch(r *registry) { r.add(kmsg.ShareFetch, 1, 2, handleShareFetch) }

// defaultMaxShareSessions is group.share.max.share.sessions' default.
const defaultMaxShareSessions = 2000

func (b *services) maxShareSessions() int {
	if n := b.groupBrokerInt("group.share.max.share.sessions"); n > 0 {
		return int(n)
	}
	return defaultMaxShareSessions
}

// validShareMember is KafkaApis.isMemberIdValid.
func validShareMember(id *string) bool { return id != nil && *id != "" && len(*id) <= 36 }

// shareFetchError is Kafka's ShareFetchRequest.getErrorResponse: the code
// and no message.
func shareFetchError(resp *kmsg.ShareFetchResponse, err *kerr.Error) *kmsg.ShareFetchResponse {
	resp.ErrorCode = err.Code
	return resp
}

// shareOutcome is one partition of a ShareFetch answer.
type shareOutcome struct {
	err, ackErr *shareError
	acked       bool
	read        shareRead
}

func handleShareFetch(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ShareFetchRequest)
	resp := kmsg.NewPtrShareFetchResponse()
	switch {
	case !rc.svc.shareGroupsEnabled():
		return shareFetchError(resp, kerr.UnsupportedVersion), nil
	case r.GroupID == nil || *r.GroupID == "":
		return shareFetchError(resp, kerr.InvalidRequest), nil
	case !rc.authorize(OpRead, ResourceGroup, *r.GroupID):
		return shareFetchError(resp, kerr.GroupAuthorizationFailed), nil
	case !validShareMember(r.MemberID):
		return shareFetchError(resp, kerr.InvalidRequest), nil
	case rc.req.Version >= 2 && r.IsRenewAck && (r.MaxBytes != 0 || r.MinBytes != 0 || r.MaxRecords != 0 || r.BatchSize != 0 || r.MaxWaitMillis != 0):
		return shareFetchError(resp, kerr.InvalidRequest), nil
	}
	b := rc.svc
	key := shareSessionKey{group: *r.GroupID, member: *r.MemberID}

	var add, forget []shareTP
	acks := map[shareTP][]share.AckBatch{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			add = append(add, tp)
			for _, a := range p.AcknowledgementBatches {
				acks[tp] = append(acks[tp], ackBatch(a.FirstOffset, a.LastOffset, a.AcknowledgeTypes))
			}
		}
	}
	for _, t := range r.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, shareTP{t.TopicID, p})
		}
	}
	ctx, replaced, serr := b.sharing.sessions.fetchContext(key, r.ShareSessionEpoch, add, forget, len(acks) > 0, rc.conn, b.maxShareSessions())
	if replaced {
		b.sharing.releaseMember(key)
	}
	if serr != nil {
		return shareFetchError(resp, serr), nil
	}
	cfg, _ := b.shareConfig(key.group)
	resp.AcquisitionLockTimeoutMillis = int32(cfg.LockDuration / time.Millisecond)

	out := map[shareTP]*shareOutcome{}
	outcome := func(tp shareTP) *shareOutcome {
		if out[tp] == nil {
			out[tp] = &shareOutcome{}
		}
		return out[tp]
	}
	for _, tp := range add {
		if a, ok := acks[tp]; ok && !outcome(tp).acked {
			o := outcome(tp)
			o.acked = true
			o.ackErr = rc.acknowledgeShare(key, tp, a)
		}
	}
	order := add
	if ctx.closing {
		b.sharing.releaseMember(key)
	} else if !r.IsRenewAck {
		order = ctx.parts
		rc.shareFetch(r, key, ctx.parts, outcome)
	}

	byTopic := map[[16]byte]int{}
	seen := map[shareTP]bool{}
	for _, tp := range order {
		o := out[tp]
		if seen[tp] || o == nil && !ctx.full {
			continue
		}
		seen[tp] = true
		if o == nil {
			o = &shareOutcome{}
		}
		if !ctx.full && o.err == nil && !o.acked && len(o.read.acquired) == 0 {
			continue
		}
		i, ok := byTopic[tp.topicID]
		if !ok {
			i = len(resp.Topics)
			byTopic[tp.topicID] = i
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = tp.topicID
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = tp.partition
		rp.ErrorCode, rp.ErrorMessage = o.err.code(), o.err.message()
		rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = o.ackErr.code(), o.ackErr.message()
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		// Kafka's PartitionData.Records is not nullable (its clients fail
		// the whole response on a null): empty when nothing was read.
		rp.Records = o.read.records
		if rp.Records == nil {
			rp.Records = []byte{} // non-nullable: Kafka's clients refuse a null (MemoryRecords.EMPTY)
		}
		for _, a := range o.read.acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

func ackBatch(first, last int64, types []int8) share.AckBatch {
	a := share.AckBatch{First: first, Last: last}
	for _, t := range types {
		a.Types = append(a.Types, share.AckType(t))
	}
	return a
}

// shareTopic checks a share-partition's topic: known, and READ on it.
func (rc *reqCtx) shareTopic(tp shareTP) *shareError {
	t := rc.svc.logs.TopicByID(tp.topicID)
	switch {
	case t == nil:
		return shareErrOf(kerr.UnknownTopicOrPartition)
	case !rc.authorize(OpRead, ResourceTopic, t.Name):
		return shareErrOf(kerr.TopicAuthorizationFailed)
	}
	return nil
}

// acknowledgeShare applies one partition's acknowledgements.
func (rc *reqCtx) acknowledgeShare(key shareSessionKey, tp shareTP, acks []share.AckBatch) *shareError {
	if err := rc.shareTopic(tp); err != nil {
		return err
	}
	sp, err := rc.svc.sharePartition(sharePartKey{group: key.group, tp: tp})
	if err != nil {
		return err
	}
	return sp.acknowledge(key.member, acks)
}

// shareFetch reads the session's partitions once MinBytes can be acquired
// or MaxWaitMs passed, and acquires what it read.
func (rc *reqCtx) shareFetch(r *kmsg.ShareFetchRequest, key shareSessionKey, parts []shareTP, outcome func(shareTP) *shareOutcome) {
	b := rc.svc
	var ready []shareTP
	sps := map[shareTP]*sharePart{}
	for _, tp := range parts {
		err := rc.shareTopic(tp)
		if err == nil {
			sps[tp], err = b.sharePartition(sharePartKey{group: key.group, tp: tp})
		}
		if err != nil {
			outcome(tp).err = err
			continue
		}
		ready = append(ready, tp)
	}
	deadline := b.clock.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	for len(ready) == len(parts) && len(ready) > 0 {
		var waits []<-chan struct{}
		total := 0
		for _, tp := range ready {
			waits = append(waits, sps[tp].log.Log.Wait(), sps[tp].wait())
			total += sps[tp].available(int(r.MaxBytes) - total)
		}
		if total >= int(r.MinBytes) || total > 0 && total >= int(r.MaxBytes) || !b.clock.Now().Before(deadline) {
			break
		}
		start := time.Now()
		woken := b.waitAny(waits, b.clock.Until(deadline))
		rc.waited += time.Since(start)
		if !woken {
			break
		}
	}
	mode := share.BatchOptimized
	if rc.req.Version >= 2 && r.ShareAcquireMode == 1 {
		mode = share.RecordLimit
	}
	records, bytesLeft := int(r.MaxRecords), int(r.MaxBytes)
	minOne := true
	for _, tp := range ready {
		if records <= 0 || bytesLeft <= 0 {
			break
		}
		read, err := sps[tp].fetch(share.Acquire{Member: key.member, Mode: mode, BatchSize: int(r.BatchSize), MaxRecords: records}, bytesLeft, minOne)
		if err != nil {
			outcome(tp).err = shareErrOf(kerrOf(b.errorCode(kmsg.ShareFetch, err)))
			continue
		}
		if len(read.acquired) == 0 {
			continue
		}
		outcome(tp).read = read
		records -= read.count
		bytesLeft -= len(read.records)
		minOne = false
	}
}

func kerrOf(code int16) *kerr.Error {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e
	}
	return kerr.UnknownServerError
}
