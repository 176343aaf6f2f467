package broker

// ShareGroupDescribe (KIP-932), v1.
//
// A share group's state (Empty or Stable), group and assignment epochs,
// assignor ("simple") and members with their subscriptions and assigned
// partitions (topic ids and names). A group that does not exist or is of
// another type is GROUP_ID_NOT_FOUND, as in Kafka. Authorized operations
// are computed when asked for, for a group described without an error,
// else INT32_MIN. Below share.version 1 every group is UNSUPPORTED_VERSION
// (no message), as Kafka's getErrorResponse (features.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerShareGroupDescribe serves ShareGroupDescribe; its versions are here and nowhere else.
func registerShareGroupDescribe(r *registry) {
	r.add(kmsg.ShareGroupDescribe, 1, 1, handleShareGroupDescribe)
}

func handleShareGroupDescribe(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	for _, id := range r.GroupIDs {
		if !b.shareGroupsEnabled() {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = id, kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if !rc.authorize(OpDescribe, ResourceGroup, id) {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := b.groups.ShareGroupDescribe(id)
		if r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = rc.authorizedOperations(ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
