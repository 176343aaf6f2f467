package broker

// CreateAcls (key 30), DescribeAcls (29) and DeleteAcls (31), v1-3 as
// Kafka 4 serves them, answered as a Kafka broker without
// authorizer.class.name answers them (AclApis): the cluster operation is
// checked first (ALTER to create or delete, DESCRIBE to describe), then
// every item is SECURITY_DISABLED with Kafka's message. Strata keeps no
// ACLs yet, so kafka-acls gets what it gets from an unsecured Kafka.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's messages for the ACL APIs with no authorizer configured.
const (
	noAuthorizerDescribe = "No Authorizer is configured on the broker"
	noAuthorizerChange   = "No Authorizer is configured."
)

// registerACLs serves the ACL APIs; their versions are here and nowhere else.
func registerACLs(r *registry) {
	r.add(kmsg.DescribeACLs, 1, 3, handleDescribeACLs)
	r.add(kmsg.CreateACLs, 1, 3, handleCreateACLs)
	r.add(kmsg.DeleteACLs, 1, 3, handleDeleteACLs)
}

func handleDescribeACLs(rc *reqCtx) (kmsg.Response, error) {
	resp := kmsg.NewPtrDescribeACLsResponse()
	if !rc.authorizeCluster(OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerDescribe)
	return resp, nil
}

// aclChangeError is what every item of a CreateAcls or DeleteAcls gets.
func aclChangeError(rc *reqCtx) (int16, *string) {
	if !rc.authorizeCluster(OpAlter) {
		return kerr.ClusterAuthorizationFailed.Code, nil
	}
	return kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerChange)
}

func handleCreateACLs(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.CreateACLsRequest)
	resp := kmsg.NewPtrCreateACLsResponse()
	code, msg := aclChangeError(rc)
	for range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func handleDeleteACLs(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DeleteACLsRequest)
	resp := kmsg.NewPtrDeleteACLsResponse()
	code, msg := aclChangeError(rc)
	for range r.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = code, msg
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
