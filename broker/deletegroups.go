package broker

// DeleteGroups.
//
// Deletes each Empty group with its committed offsets (tombstones in
// __consumer_offsets); NON_EMPTY_GROUP while it has members,
// GROUP_ID_NOT_FOUND when it does not exist. As in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerDeleteGroups serves DeleteGroups; its versions are here and nowhere else.
func registerDeleteGroups(r *registry) { r.add(kmsg.DeleteGroups, 0, 2, handleDeleteGroups) }

func handleDeleteGroups(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range r.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		if !rc.authorize(OpDelete, ResourceGroup, id) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else if err := b.groups.DeleteGroup(id); err != nil {
			g.ErrorCode = err.Code
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
