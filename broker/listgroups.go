package broker

// ListGroups, versions 0-5.
//
// Every group but Dead ones, with its state (v4+) and type (v5: "classic",
// or "consumer" for KIP-848 groups, whose protocol type is "consumer" and
// states Empty, Assigning, Reconciling, Stable), filtered by state names
// (v4+, any case) and by type (v5). Until __consumer_offsets is loaded the
// error is COORDINATOR_LOAD_IN_PROGRESS. As in Kafka.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleListGroups(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := kmsg.NewPtrListGroupsResponse()
	groups, err := b.groups.ListGroups(r.StatesFilter, r.TypesFilter)
	if err != nil {
		resp.ErrorCode = err.Code
	}
	resp.Groups = groups
	return resp, nil
}
