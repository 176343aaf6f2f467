package broker

// DescribeGroups.
//
// State, protocol and members of classic groups, as Kafka's
// GroupMetadataManager.describeGroups: member metadata and assignments only
// for a Stable group. A group that does not exist, a KIP-848 consumer
// group (ConsumerGroupDescribe describes it) or a KIP-1071 streams group
// (StreamsGroupDescribe), is described as Dead without
// an error before v6; from v6 (KIP-1043) as Dead with GROUP_ID_NOT_FOUND and
// Kafka's message ("Group g not found." / "Group g is not a classic
// group."). Authorized operations are computed when asked for (v3+), for a
// group described without an error, else INT32_MIN (not requested). After a
// restart the members come from the group metadata replayed from
// __consumer_offsets.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerDescribeGroups serves DescribeGroups; its versions are here and nowhere else.
func registerDescribeGroups(r *registry) { r.add(kmsg.DescribeGroups, 0, 6, handleDescribeGroups) }

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
		if req.Version >= 6 && g.ErrorCode == 0 && g.State == "Dead" {
			msg := fmt.Sprintf("Group %s not found.", id)
			if b.groups.ConsumerGroupDescribe(id, 0).ErrorCode == 0 {
				msg = fmt.Sprintf("Group %s is not a classic group.", id)
			}
			g.ErrorCode, g.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		}
		if r.IncludeAuthorizedOperations && req.Version >= 3 && g.ErrorCode == 0 {
			g.AuthorizedOperations = rc.authorizedOperations(ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
