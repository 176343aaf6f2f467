package broker

// DeleteGroups, versions 0-2.
//
// Deletes each Empty group with its committed offsets (tombstones in
// __consumer_offsets); NON_EMPTY_GROUP while it has members,
// GROUP_ID_NOT_FOUND when it does not exist. As in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleDeleteGroups(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range r.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = id
		if err := b.groups.DeleteGroup(id); err != nil {
			g.ErrorCode = err.Code
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
