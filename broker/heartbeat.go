package broker

// Heartbeat, versions 0-4.
//
// Resets the member's session timer; REBALANCE_IN_PROGRESS tells it to
// rejoin. Static members are checked against their instance id (v3+,
// FENCED_INSTANCE_ID). As in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleHeartbeat(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	resp := kmsg.NewPtrHeartbeatResponse()
	if err := b.groups.Heartbeat(req.Body.(*kmsg.HeartbeatRequest)); err != nil {
		resp.ErrorCode = err.Code
	}
	return resp, nil
}
