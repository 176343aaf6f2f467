package broker

// SyncGroup.
//
// The leader's assignment is stored with the group metadata in
// __consumer_offsets before any member gets its part; followers wait for
// it on their connection. From v5 the protocol type and name, when given,
// must match the group's (INCONSISTENT_GROUP_PROTOCOL), and are echoed.
// As in Kafka otherwise.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerSyncGroup serves SyncGroup; its versions are here and nowhere else.
func registerSyncGroup(r *registry) { r.add(kmsg.SyncGroup, 0, 5, handleSyncGroup) }

func handleSyncGroup(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.SyncGroupRequest)
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return b.groups.SyncGroup(r, req.Version, b.shutdown), nil
}
