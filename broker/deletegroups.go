package broker

// DeleteGroups.
//
// Deletes each Empty group with its committed offsets (tombstones in
// __consumer_offsets); NON_EMPTY_GROUP while it has members,
// GROUP_ID_NOT_FOUND when it does not exist. A group named twice is
// answered once, as Kafka's handleDeleteGroupsRequest (distinct). The v3
// ErrorMessage stays null: Kafka sets it only for failures of a whole
// coordinator partition or of a streams group's topology, and answers
// GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP and GROUP_AUTHORIZATION_FAILED without
// one.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerDeleteGroups serves DeleteGroups; its versions are here and nowhere else.
func registerDeleteGroups(r *registry) { r.add(kmsg.DeleteGroups, 0, 3, handleDeleteGroups) }

func handleDeleteGroups(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	answered := make(map[string]bool, len(r.Groups))
	for _, id := range r.Groups {
		if answered[id] {
			continue
		}
		answered[id] = true
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
