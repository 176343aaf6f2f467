package broker

// ListGroups.
//
// Every group but Dead ones, with its state (v4+) and type (v5: "classic",
// or "consumer" for KIP-848 groups, whose protocol type is "consumer" and
// states Empty, Assigning, Reconciling, Stable; "streams" for KIP-1071
// groups, protocol type "streams", states Empty, NotReady, Assigning,
// Reconciling, Stable), filtered by state names
// (v4+, any case) and by type (v5). Until __consumer_offsets is loaded the
// error is COORDINATOR_LOAD_IN_PROGRESS. As in Kafka.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerListGroups serves ListGroups; its versions are here and nowhere else.
func registerListGroups(r *registry) { r.add(kmsg.ListGroups, 0, 5, handleListGroups) }

func handleListGroups(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := kmsg.NewPtrListGroupsResponse()
	groups, err := b.groups.ListGroups(r.StatesFilter, r.TypesFilter)
	if err != nil {
		resp.ErrorCode = err.Code
	}
	// DESCRIBE on the cluster sees every group, else only the groups it may
	// describe, as Kafka.
	if !rc.authorizeCluster(OpDescribe) {
		groups = slices.DeleteFunc(groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return !rc.authorizeQuietly(OpDescribe, ResourceGroup, g.Group)
		})
	}
	resp.Groups = groups
	return resp, nil
}
