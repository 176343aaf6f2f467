package broker

// Heartbeat.
//
// Resets the member's session timer; REBALANCE_IN_PROGRESS tells it to
// rejoin. Static members are checked against their instance id (v3+,
// FENCED_INSTANCE_ID). As in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerHeartbeat serves Heartbeat; its versions are here and nowhere else.
func registerHeartbeat(r *registry) { r.add(kmsg.Heartbeat, 0, 4, handleHeartbeat) }

func handleHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	resp := kmsg.NewPtrHeartbeatResponse()
	if err := b.groups.Heartbeat(req.Body.(*kmsg.HeartbeatRequest)); err != nil {
		resp.ErrorCode = err.Code
	}
	return resp, nil
}
