package broker

// Throttling a connection over its client quotas (quotas.go), as Kafka
// 4's KafkaApis and SocketServer do (KIP-219): the response goes out at
// once carrying throttle_time_ms, the larger of the bandwidth and the
// request throttle, and then the connection is muted, no request read
// from it, for that long; clients that honour throttle_time_ms also wait
// before they send again. A throttled fetch is answered without records
// (its bytes are taken back from the consumer's rate), as Kafka's
// getThrottledResponse. The controller mutation quota's throttle
// (mutationquota.go) comes in the CreateTopics, DeleteTopics and
// CreatePartitions responses and mutes the same way. Requests on the
// controller listener, which brokers forward, and followers' fetches are
// not throttled, as in Kafka: a forwarded request's throttle time goes
// back in its response for the forwarding node to mute its client.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// quotaClientID is the request's client id, "" for a null one.
func quotaClientID(req *protocol.Request) string {
	if req.ClientID == nil {
		return ""
	}
	return *req.ClientID
}

// quotasApply reports whether this connection's requests are checked
// against client quotas at all.
func (c *conn) quotasApply() bool {
	return !c.svc.controllerListener
}

// requestThrottle records the time the request took to handle (less a
// fetch's long-poll wait, which Kafka spends in purgatory, off its
// request threads) as a request_percentage, Kafka's
// ClientRequestQuotaManager: a percentage of one thread over a second.
func (c *conn) requestThrottle(req *protocol.Request, start, now time.Time) int64 {
	q := c.b.quotas.request
	if !q.enabled() {
		return 0
	}
	busy := now.Sub(start) - c.rc.waited
	return q.record(c.principal, quotaClientID(req), float64(busy.Nanoseconds())*100/float64(time.Second), now)
}

// throttleResponse checks a request other than Fetch against the
// produce and request quotas, takes the controller mutation quota's
// throttle from resp, and returns how long to mute the connection: the
// longest, as Kafka's sendResponseMaybeThrottleWithControllerQuota and,
// for a forwarded request, sendForwardedResponse; resp, when there is
// one, carries the throttle time.
func (c *conn) throttleResponse(req *protocol.Request, start time.Time, resp kmsg.Response) time.Duration {
	if !c.quotasApply() {
		return 0
	}
	mutation := mutationThrottle(resp)
	if mutation == 0 && !c.b.quotas.produce.enabled() && !c.b.quotas.request.enabled() {
		return 0
	}
	now := time.Now()
	var produce int64
	if req.Key == int16(kmsg.Produce) {
		produce = c.b.quotas.produce.record(c.principal, quotaClientID(req), float64(req.BodySize), now)
	}
	var request int64
	if r, ok := req.Body.(*kmsg.ProduceRequest); !ok || r.Acks != 0 {
		// As Kafka, a produce with acks=0 is exempt from the request
		// quota.
		request = c.requestThrottle(req, start, now)
	}
	ms := max(produce, request, mutation)
	switch {
	case ms == 0:
		return 0
	case produce > request && produce >= mutation:
		c.b.quotas.produce.throttled(c.principal, quotaClientID(req), ms, now)
	case mutation > request:
		c.b.quotas.mutation.throttled(c.principal, quotaClientID(req), ms, now)
	default:
		c.b.quotas.request.throttled(c.principal, quotaClientID(req), ms, now)
	}
	if t, ok := resp.(kmsg.SetThrottleResponse); ok {
		t.SetThrottle(int32(ms))
	}
	return time.Duration(ms) * time.Millisecond
}

// mutationThrottle is the controller mutation quota's throttle time a
// CreateTopics, DeleteTopics or CreatePartitions response carries, set by
// this node's handler or by the active controller it was forwarded to;
// 0 for other responses.
func mutationThrottle(resp kmsg.Response) int64 {
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		return int64(r.ThrottleMillis)
	case *kmsg.DeleteTopicsResponse:
		return int64(r.ThrottleMillis)
	case *kmsg.CreatePartitionsResponse:
		return int64(r.ThrottleMillis)
	}
	return 0
}

// fetchThrottle checks a consumer's fetch response of size bytes against
// the fetch and request quotas: the throttle time in ms, 0 for none. A
// throttled response's bytes are taken back.
func (c *conn) fetchThrottle(req *protocol.Request, size int) int64 {
	if !c.quotasApply() || !c.b.quotas.fetch.enabled() && !c.b.quotas.request.enabled() || isFollowerFetch(req) {
		return 0
	}
	now := time.Now()
	client := quotaClientID(req)
	fetch := c.b.quotas.fetch.record(c.principal, client, float64(size), now)
	request := c.requestThrottle(req, c.start, now)
	ms := max(fetch, request)
	if ms == 0 {
		return 0
	}
	c.b.quotas.fetch.unrecord(c.principal, client, float64(size), now)
	if fetch > request {
		c.b.quotas.fetch.throttled(c.principal, client, ms, now)
	} else {
		c.b.quotas.request.throttled(c.principal, client, ms, now)
	}
	c.mute = time.Duration(ms) * time.Millisecond
	return ms
}

// isFollowerFetch reports whether req is a replica's fetch.
func isFollowerFetch(req *protocol.Request) bool {
	r := req.Body.(*kmsg.FetchRequest)
	if req.Version >= 15 {
		return r.ReplicaState.ID >= 0
	}
	return r.ReplicaID >= 0
}

// capFetchToQuota lowers a consumer fetch's max_bytes (and min_bytes with
// it) to what its quota lets one response carry, as Kafka's
// handleFetchRequest does with getMaxValueInQuotaWindow.
func (rc *reqCtx) capFetchToQuota(r *kmsg.FetchRequest) {
	q := rc.svc.quotas.fetch
	if !q.enabled() || rc.svc.controllerListener {
		return
	}
	if most := q.maxValueInWindow(rc.principal, quotaClientID(rc.req)); most < float64(r.MaxBytes) {
		r.MaxBytes = int32(most)
		r.MinBytes = min(r.MinBytes, r.MaxBytes)
	}
}

// waitMuted keeps the connection muted for d: nothing is read from it
// until d has passed or the broker shuts down.
func (c *conn) waitMuted(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.b.shutdown:
	}
}
