package broker

// DescribeGroups.
//
// State, protocol and members of classic groups, as Kafka's
// GroupMetadata.summary: member metadata and assignments only for a Stable
// group, and a group that does not exist described as Dead without an
// error. A KIP-848 consumer group is also described as Dead, as Kafka does
// before v6 (ConsumerGroupDescribe describes it). Authorized operations are
// computed when asked for (v3+), for a group described without an error,
// else INT32_MIN (not requested). After a restart the members
// come from the group metadata replayed from __consumer_offsets.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerDescribeGroups serves DescribeGroups; its versions are here and nowhere else.
func registerDescribeGroups(r *registry) { r.add(kmsg.DescribeGroups, 0, 5, handleDescribeGroups) }

func handleDescribeGroups(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range r.Groups {
		if !rc.authorize(OpDescribe, ResourceGroup, id) {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := b.groups.DescribeGroup(id)
		if r.IncludeAuthorizedOperations && req.Version >= 3 && g.ErrorCode == 0 {
			g.AuthorizedOperations = rc.authorizedOperations(ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
