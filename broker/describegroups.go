package broker

// DescribeGroups, versions 0-5.
//
// State, protocol and members of classic groups, as Kafka's
// GroupMetadata.summary: member metadata and assignments only for a Stable
// group, and a group that does not exist described as Dead without an
// error. A KIP-848 consumer group is also described as Dead, as Kafka does
// before v6 (ConsumerGroupDescribe describes it). Authorized operations are
// INT32_MIN (not requested): there are no ACLs. After a restart the members
// come from the group metadata replayed from __consumer_offsets.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleDescribeGroups(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range r.Groups {
		resp.Groups = append(resp.Groups, b.groups.DescribeGroup(id))
	}
	return resp, nil
}
