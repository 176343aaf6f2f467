package broker

// The controller mutation quota (KIP-599), as Kafka's
// ControllerMutationQuotaManager: controller_mutation_rate bounds the
// partitions a client creates (CreateTopics, CreatePartitions) and deletes
// (DeleteTopics) per second, with the other client quotas' entity
// precedence and sensors (quotas.go). Each sensor measures with Kafka's
// TokenBucket: credits refill at the quota per second up to a burst of
// controller.quota.window.num × controller.quota.window.size.seconds ×
// the quota, a new sensor's bucket is full, each partition takes one,
// and the quota is exceeded while the bucket is below zero; the throttle
// time is how long it needs to refill to zero, -tokens / quota seconds.
//
// The request's version decides the mode, as Kafka's newQuotaFor:
// strict from CreateTopics v6, CreatePartitions v3 and DeleteTopics v5
// (whose clients know THROTTLING_QUOTA_EXCEEDED), permissive below. A
// strict quota refuses a topic's mutations when the bucket is already
// below zero before them (so one request may take it below zero) with
// THROTTLING_QUOTA_EXCEEDED; a permissive one accepts every topic and
// only throttles. Either way the response carries the throttle time,
// less the time since it was measured, and the client's connection is
// muted for it (conn_quota.go).
//
// The quota is charged by the handler, which runs where Kafka's
// ControllerApis does: on a single node locally, in a cluster on the
// active controller, for a forwarded request as the Envelope's principal
// and the inner header's client id (envelope.go), the throttle time
// coming back in the forwarded response for the forwarding node to mute
// its client. As in the KRaft controller, a topic is charged after its
// other checks pass, a validate-only request is charged too, and an
// unauthorized, unknown or invalid topic is not.
//
// Difference from Kafka: topics a node creates on its own (Metadata's
// auto-creation, the coordinators' internal topics) are not charged to
// anyone; Kafka's broker forwards an auto-creation for the client that
// asked, charged to it strictly.

import (
	"math"
	"time"
)

// throttlingQuotaExceeded is Kafka's message for THROTTLING_QUOTA_EXCEEDED
// (Errors.THROTTLING_QUOTA_EXCEEDED), the one a refused topic carries.
const throttlingQuotaExceeded = "The throttling quota has been exceeded."

// Versions from which a request's controller mutation quota is strict.
const (
	strictCreateTopics     = 6
	strictCreatePartitions = 3
	strictDeleteTopics     = 5
)

// tokenBucket is Kafka's TokenBucket stat.
type tokenBucket struct {
	tokens     float64
	lastUpdate int64 // ms; 0 fills a new bucket at its first use
}

// refill adds the credits earned since the last update, as
// TokenBucket.refill.
func (b *tokenBucket) refill(bound, burst float64, now int64) {
	b.tokens = min(burst, b.tokens+bound*float64(now-b.lastUpdate)/1000)
	b.lastUpdate = now
}

// recordMutations charges permits partition mutations to the client's
// bucket at now, as Kafka's Strict- and PermissiveControllerMutationQuota
// record them: strict checks the bucket first and refuses the permits
// (accepted false) when it is below zero, permissive takes them and then
// checks. throttleMs is the time the bucket needs to refill to zero when
// the check found it below, else 0.
func (m *clientQuotaManager) recordMutations(principal, clientID string, permits float64, strict bool, now time.Time) (throttleMs int64, accepted bool) {
	t := m.table.Load()
	if t == nil {
		return 0, true
	}
	tags := t.tags(principalName(principal), clientID)
	bound, ok := t.limit(tags)
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensor(tags, nowMs)
	if !ok {
		s.throttle.recorded += permits
		return 0, true
	}
	burst := float64(m.samples) * float64(m.windowMs) / 1000 * bound
	s.tokens.refill(bound, burst, nowMs)
	if strict && s.tokens.tokens < 0 {
		return refillMs(s.tokens.tokens, bound), false
	}
	s.tokens.tokens = min(burst, s.tokens.tokens-permits)
	s.throttle.recorded += permits
	if s.tokens.tokens < 0 && !strict {
		return refillMs(s.tokens.tokens, bound), true
	}
	return 0, true
}

// refillMs is how long a bucket of tokens below zero takes to refill to
// zero at bound a second, Kafka's ControllerMutationQuotaManager.throttleTimeMs,
// at most what throttle_time_ms holds.
func refillMs(tokens, bound float64) int64 {
	return int64(min(math.Round(-tokens/bound*1000), math.MaxInt32))
}

// mutationQuota is one request's controller mutation quota, Kafka's
// ControllerMutationQuota: the client it charges, its mode, the time its
// topics are charged at, and the last throttle time it measured.
//
// Every topic of a request is charged at the time the request is
// decided, as Kafka's controller decides a request's topics in one
// event before it writes any; Strata writes each topic before it looks
// at the next, which on one node takes a metadata fsync each, and a
// bucket refilling meanwhile would let a request through more topics
// than Kafka does.
type mutationQuota struct {
	m                   *clientQuotaManager // nil: no controller_mutation_rate is set
	principal, clientID string
	strict              bool
	at                  time.Time
	throttleMs          int64
}

// mutationQuota is the request's controller mutation quota, strict from
// version strictSince.
func (rc *reqCtx) mutationQuota(strictSince int16) mutationQuota {
	m := rc.svc.quotas.mutation
	if !m.enabled() {
		return mutationQuota{}
	}
	return mutationQuota{m: m, principal: rc.principal, clientID: quotaClientID(rc.req), strict: rc.req.Version >= strictSince, at: time.Now()}
}

// allow charges a topic's partitions mutations and reports whether they
// may be made; false only for a strict quota already exceeded.
func (q *mutationQuota) allow(partitions int32) bool {
	if q.m == nil {
		return true
	}
	ms, ok := q.m.recordMutations(q.principal, q.clientID, float64(partitions), q.strict, q.at)
	if ms > 0 {
		q.throttleMs = ms
	}
	return ok
}

// throttle is the throttle time to answer with: the last one measured,
// less the time since, as AbstractControllerMutationQuota.throttleTime.
func (q *mutationQuota) throttle() int32 {
	if q.throttleMs == 0 {
		return 0
	}
	return int32(max(0, q.throttleMs-time.Since(q.at).Milliseconds()))
}
