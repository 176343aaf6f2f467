package broker

// Heartbeat.
//
// Resets the member's session timer; REBALANCE_IN_PROGRESS tells it to
// rejoin. Static members are checked against their instance id (v3+,
// FENCED_INSTANCE_ID). As in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerHeartbeat serves Heartbeat; its versions are here and nowhere else.
func registerHeartbeat(r *registry) { r.add(kmsg.Heartbeat, 0, 4, handleHeartbeat) }

func handleHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.HeartbeatRequest)
	resp := kmsg.NewPtrHeartbeatResponse()
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if err := b.groups.Heartbeat(r); err != nil {
		resp.ErrorCode = err.Code
	}
	return resp, nil
}
