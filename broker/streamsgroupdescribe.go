package broker

// StreamsGroupDescribe (KIP-1071).
//
// Epochs, state (Empty, NotReady, Assigning, Reconciling, Stable), the
// topology as the members sent it and the members with their process,
// endpoint, client tags, task offsets and current and target tasks. v1
// names the assignor (sticky) and answers a requested topology
// description NOT_STORED (1): Strata has no topology description plugin,
// as Kafka without one. A group that does not exist or is of another type
// is GROUP_ID_NOT_FOUND; group DESCRIBE is required
// (GROUP_AUTHORIZATION_FAILED), and DESCRIBE on the topology's topics
// (TOPIC_AUTHORIZATION_FAILED), as in Kafka. Authorized operations are
// computed when asked for.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerStreamsGroupDescribe serves StreamsGroupDescribe; its versions are here and nowhere else.
func registerStreamsGroupDescribe(r *registry) {
	r.add(kmsg.StreamsGroupDescribe, 0, 1, handleStreamsGroupDescribe)
}

func handleStreamsGroupDescribe(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.StreamsGroupDescribeRequest)
	resp := kmsg.NewPtrStreamsGroupDescribeResponse()
	for _, id := range r.Groups {
		if !rc.authorize(OpDescribe, ResourceGroup, id) {
			g := kmsg.NewStreamsGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := b.groups.StreamsGroupDescribe(id, req.Version, r.IncludeTopologyDescription)
		if g.ErrorCode == 0 && g.Topology != nil && !describableTopology(rc, g.Topology) {
			d := kmsg.NewStreamsGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = id, kerr.TopicAuthorizationFailed.Code
			msg := "The described group uses topics that the client is not authorized to describe."
			d.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, d)
			continue
		}
		if r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = rc.authorizedOperations(ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// describableTopology reports whether every topic of the topology may be
// described.
func describableTopology(rc *reqCtx, t *kmsg.StreamsGroupDescribeResponseGroupTopology) bool {
	for _, st := range t.Subtopologies {
		names := append(append([]string{}, st.SourceTopics...), st.RepartitionSinkTopics...)
		for _, ti := range st.StateChangelogTopics {
			names = append(names, ti.Topic)
		}
		for _, ti := range st.RepartitionSourceTopics {
			names = append(names, ti.Topic)
		}
		for _, n := range names {
			if !rc.authorize(OpDescribe, ResourceTopic, n) {
				return false
			}
		}
	}
	return true
}
