package broker

// JoinGroup, versions 0-9.
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

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/protocol"
)

func handleJoinGroup(b *Broker, c *conn, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.JoinGroupRequest)
	return b.groups.JoinGroup(r, req.Version, requestClient(c, req), b.shutdown), nil
}

// requestClient is the client id and host Kafka records for a member.
func requestClient(c *conn, req *protocol.Request) coordinator.Client {
	cl := coordinator.Client{Host: "/" + c.remote}
	if host, _, err := net.SplitHostPort(c.remote); err == nil {
		cl.Host = "/" + host
	}
	if req.ClientID != nil {
		cl.ID = *req.ClientID
	}
	return cl
}
