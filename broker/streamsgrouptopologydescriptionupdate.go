package broker

// StreamsGroupTopologyDescriptionUpdate (KIP-1071 topology descriptions).
//
// A member pushes its full topology description for a topology
// description plugin to store. Strata has no such plugin, so, as Kafka
// 4.4 without one (group.streams.topology.description.plugin unset), a
// valid request from a reader of the group is UNSUPPORTED_VERSION "The
// broker has no streams group topology description plugin configured.";
// heartbeats never ask for a description (TopologyDescriptionRequired
// false). Group READ is required (GROUP_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerStreamsGroupTopologyDescriptionUpdate serves StreamsGroupTopologyDescriptionUpdate; its versions are here and nowhere else.
func registerStreamsGroupTopologyDescriptionUpdate(r *registry) {
	r.add(kmsg.StreamsGroupTopologyDescriptionUpdate, 0, 0, handleStreamsGroupTopologyDescriptionUpdate)
}

func handleStreamsGroupTopologyDescriptionUpdate(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	resp := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateResponse()
	fail := func(err *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		return fail(kerr.GroupAuthorizationFailed, "")
	}
	return fail(kerr.UnsupportedVersion, "The broker has no streams group topology description plugin configured.")
}
