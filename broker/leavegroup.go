package broker

// LeaveGroup.
//
// v0-2 remove one member by id and report its error at the top level; v3+
// remove a batch, each by member id or, with an empty member id, by
// group.instance.id (how an administrator removes a static member), with
// an error per member. Leaving triggers a rebalance of the rest. As in
// Kafka; the v5 reason is only logged by the coordinator's rebalance line.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerLeaveGroup serves LeaveGroup; its versions are here and nowhere else.
func registerLeaveGroup(r *registry) { r.add(kmsg.LeaveGroup, 0, 5, handleLeaveGroup) }

func handleLeaveGroup(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.LeaveGroupRequest)
	resp := kmsg.NewPtrLeaveGroupResponse()
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	leaving := []coordinator.LeaveMember{{MemberID: r.MemberID}}
	if req.Version >= 3 {
		leaving = leaving[:0]
		for _, m := range r.Members {
			leaving = append(leaving, coordinator.LeaveMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)})
		}
	}
	groupErr, errs := b.groups.LeaveGroup(r.Group, leaving)
	if groupErr != nil {
		resp.ErrorCode = groupErr.Code
		return resp, nil
	}
	if req.Version < 3 {
		if errs[0] != nil {
			resp.ErrorCode = errs[0].Code
		}
		return resp, nil
	}
	for i, m := range r.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		if errs[i] != nil {
			rm.ErrorCode = errs[i].Code
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
