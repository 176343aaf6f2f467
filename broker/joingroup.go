package broker

// JoinGroup.
//
// Served by the group coordinator (coordinator.Groups) as Kafka's classic
// protocol: MEMBER_ID_REQUIRED from v4 (KIP-394), static membership with
// group.instance.id from v5 (KIP-345, FENCED_INSTANCE_ID), the protocol
// voted across members, the rebalance timeout (the session timeout before
// v1), and group.initial.rebalance.delay.ms for a group that was empty. The
// request blocks this connection until the rebalance completes, as Kafka
// holds the response; a shutdown answers it with NOT_COORDINATOR. A static
// leader rejoining a Stable group gets SkipAssignment at v9 (KIP-814).
// group.max.size is enforced with Kafka's rule (GROUP_MAX_SIZE_REACHED; see
// coordinator.acceptJoiningMember).

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerJoinGroup serves JoinGroup; its versions are here and nowhere else.
func registerJoinGroup(r *registry) { r.add(kmsg.JoinGroup, 0, 9, handleJoinGroup) }

func handleJoinGroup(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.JoinGroupRequest)
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		// Kafka's JoinGroupRequest.getErrorResponse: no member id, leader
		// or generation.
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
		return resp, nil
	}
	return b.groups.JoinGroup(r, req.Version, requestClient(rc), b.shutdown), nil
}

// requestClient is the client id and host Kafka records for a member.
func requestClient(rc *reqCtx) coordinator.Client {
	cl := coordinator.Client{Host: "/" + rc.clientAddr}
	if host, _, err := net.SplitHostPort(rc.clientAddr); err == nil {
		cl.Host = "/" + host
	}
	if rc.req.ClientID != nil {
		cl.ID = *rc.req.ClientID
	}
	return cl
}
