package broker

// ConsumerGroupHeartbeat (KIP-848).
//
// The consumer group protocol: members heartbeat their subscription and
// owned partitions, and the coordinator answers with their member epoch
// and assignment, computed by a server-side assignor (uniform or range,
// chosen with ServerAssignor; the group uses the most requested one). v1
// has client-generated member ids and topic regexes (RE2 syntax, as
// Kafka's RE2/J, matched against whole names, internal topics excluded).
// Revocation happens before reassignment: a partition goes to its new
// owner only after the previous owner's heartbeat no longer lists it. The
// session timeout is group.consumer.session.timeout.ms and the heartbeat
// interval group.consumer.heartbeat.interval.ms. Member epoch -1 leaves,
// -2 is a static member leaving until its session expires. See
// coordinator/consumer.go. Differences from Kafka: membership is not
// persisted (members rejoin after a broker restart; offsets are kept), a
// non-empty classic group is not migrated (GROUP_ID_NOT_FOUND), and
// group.consumer.assignors and per-group configs are not configurable.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerConsumerGroupHeartbeat serves ConsumerGroupHeartbeat; its versions are here and nowhere else.
func registerConsumerGroupHeartbeat(r *registry) {
	r.add(kmsg.ConsumerGroupHeartbeat, 0, 1, handleConsumerGroupHeartbeat)
}

func handleConsumerGroupHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return b.groups.ConsumerGroupHeartbeat(r, req.Version, requestClient(rc)), nil
}
