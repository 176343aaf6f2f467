package broker

// ConsumerGroupDescribe (KIP-848).
//
// Epochs, assignor, state (Empty, Assigning, Reconciling, Stable) and
// members of consumer-protocol groups with their current and target
// assignments (topic ids and names); v1 adds the member type (1, consumer).
// A group that does not exist or is a classic group is GROUP_ID_NOT_FOUND,
// as in Kafka. Authorized operations are computed when asked for, for a
// group described without an error, else INT32_MIN (not requested).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerConsumerGroupDescribe serves ConsumerGroupDescribe; its versions are here and nowhere else.
func registerConsumerGroupDescribe(r *registry) {
	r.add(kmsg.ConsumerGroupDescribe, 0, 1, handleConsumerGroupDescribe)
}

func handleConsumerGroupDescribe(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	for _, id := range r.Groups {
		if !rc.authorize(OpDescribe, ResourceGroup, id) {
			g := kmsg.NewConsumerGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := b.groups.ConsumerGroupDescribe(id, req.Version)
		if r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = rc.authorizedOperations(ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
