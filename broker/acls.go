package broker

// CreateAcls (key 30), DescribeAcls (29) and DeleteAcls (31), v1-3 as
// Kafka 4 serves them (AclApis, on the KRaft controller's
// AclControlManager). The cluster operation is checked first (ALTER to
// create or delete, DESCRIBE to describe). Without the StandardAuthorizer
// every item is SECURITY_DISABLED with Kafka's message, as a Kafka broker
// without authorizer.class.name. With it, the ACLs are the metadata
// image's (AccessControlEntryRecord): a creation is proposed as one, a
// deletion as RemoveAccessControlEntryRecords of every ACL its filter
// matches (AclBindingFilter), all of one request in one change;
// DescribeAcls lists what this node's image holds. In a cluster a node
// that is not the active controller forwards CreateAcls and DeleteAcls to
// it (forward.go), in an Envelope, so the controller authorizes the
// client.
//
// As Kafka: a request with an UNKNOWN (or unknown) code closes the
// connection (Kafka's request parser refuses it); a creation of type or
// pattern ANY or MATCH, or of operation or permission ANY, fails every
// item of its request with UNKNOWN_SERVER_ERROR (AclBinding's constructor
// throws an IllegalArgumentException); a CLUSTER resource named other than
// kafka-cluster, an empty name or a principal without a colon is
// INVALID_REQUEST for that item; an ACL that exists already is created
// again without a change.

import (
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
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

// aclsKept reports whether this node keeps ACLs: the StandardAuthorizer
// is configured.
func (b *services) aclsKept() bool { return b.cfg.StandardAuthorizer != nil }

// known reports whether code is one of Kafka's codes of its type other
// than UNKNOWN (0): the codes from 1 to last.
func known[T ~int8](code, last T) bool { return code >= 1 && code <= last }

// aclFilter is a request's filter, or an error closing the connection for
// an UNKNOWN element, as Kafka's DescribeAclsRequest and DeleteAclsRequest
// refuse one when they parse.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string,
	op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (metadata.ACLFilter, error) {
	f := metadata.ACLFilter{ResourceType: metadata.ACLResourceType(rt), ResourceName: name, PatternType: metadata.ACLPatternType(pt),
		Principal: principal, Host: host, Operation: metadata.ACLOperation(op), Permission: metadata.ACLPermission(perm)}
	if !known(f.ResourceType, metadata.ACLResourceUser) || !known(f.PatternType, metadata.ACLPatternPrefixed) ||
		!known(f.Operation, metadata.ACLOpTwoPhaseCommit) || !known(f.Permission, metadata.ACLAllow) {
		return f, fmt.Errorf("ACL filter with UNKNOWN elements: resource type %d, pattern type %d, operation %d, permission type %d: %w",
			rt, pt, op, perm, kerr.InvalidRequest)
	}
	return f, nil
}

func handleDescribeACLs(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DescribeACLsRequest)
	f, err := aclFilter(r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrDescribeACLsResponse()
	if !rc.authorizeCluster(OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !rc.svc.aclsKept() {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerDescribe)
		return resp, nil
	}
	type pattern struct {
		rt   metadata.ACLResourceType
		name string
		pt   metadata.ACLPatternType
	}
	at := map[pattern]int{}
	for _, a := range rc.svc.meta.Image().Access.ACLs.Matching(f) {
		p := pattern{a.ResourceType, a.ResourceName, a.PatternType}
		i, ok := at[p]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(p.rt), p.name, kmsg.ACLResourcePatternType(p.pt)
			i = len(resp.Resources)
			at[p] = i
			resp.Resources = append(resp.Resources, res)
		}
		d := kmsg.NewDescribeACLsResponseResourceACL()
		d.Principal, d.Host, d.Operation, d.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, d)
	}
	return resp, nil
}

// aclChangeRefused is what every item of a CreateAcls or DeleteAcls gets
// when the request is refused as a whole, ok false when it is not.
func aclChangeRefused(rc *reqCtx) (code int16, msg *string, refused bool) {
	switch {
	case !rc.authorizeCluster(OpAlter):
		return kerr.ClusterAuthorizationFailed.Code, nil, true
	case !rc.svc.aclsKept():
		return kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerChange), true
	}
	return 0, nil, false
}

// creationACL is the ACL a creation asks for. An UNKNOWN element is an
// error closing the connection; an ANY one (or MATCH) fails the request.
func creationACL(c kmsg.CreateACLsRequestCreation) (a metadata.ACL, anyElement bool, err error) {
	a = metadata.ACL{ResourceType: metadata.ACLResourceType(c.ResourceType), ResourceName: c.ResourceName,
		PatternType: metadata.ACLPatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
		Operation: metadata.ACLOperation(c.Operation), Permission: metadata.ACLPermission(c.PermissionType)}
	if !known(a.ResourceType, metadata.ACLResourceUser) || !known(a.PatternType, metadata.ACLPatternPrefixed) ||
		!known(a.Operation, metadata.ACLOpTwoPhaseCommit) || !known(a.Permission, metadata.ACLAllow) {
		return a, false, fmt.Errorf("ACL creation with UNKNOWN elements: resource type %d, pattern type %d, operation %d, permission type %d: %w",
			c.ResourceType, c.ResourcePatternType, c.Operation, c.PermissionType, kerr.InvalidRequest)
	}
	anyElement = a.ResourceType == metadata.ACLResourceAny || a.PatternType == metadata.ACLPatternAny || a.PatternType == metadata.ACLPatternMatch ||
		a.Operation == metadata.ACLOpAny || a.Permission == metadata.ACLPermissionAny
	return a, anyElement, nil
}

// checkNewACL is AclApis' and AclControlManager.validateNewAcl's checks
// that the codes leave.
func checkNewACL(a metadata.ACL) error {
	switch {
	case a.ResourceType == metadata.ACLResourceCluster && a.ResourceName != clusterName:
		return kafkaerr.New(kerr.InvalidRequest, "The only valid name for the CLUSTER resource is %s", clusterName)
	case a.ResourceName == "":
		return kafkaerr.New(kerr.InvalidRequest, "Invalid empty resource name")
	case !strings.Contains(a.Principal, ":"):
		return kafkaerr.New(kerr.InvalidRequest, "Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", a.Principal)
	}
	return nil
}

func handleCreateACLs(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.CreateACLsRequest)
	resp := kmsg.NewPtrCreateACLsResponse()
	acls := make([]metadata.ACL, len(r.Creations))
	anyElement := false
	for i, c := range r.Creations {
		a, isAny, err := creationACL(c)
		if err != nil {
			return nil, err
		}
		acls[i], anyElement = a, anyElement || isAny
	}
	code, msg, refused := aclChangeRefused(rc)
	if !refused && anyElement {
		code, refused = kerr.UnknownServerError.Code, true
	}
	if refused {
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	errs := make([]error, len(acls))
	_, err := rc.svc.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		var records []metadata.Record
		adding := map[metadata.ACL]bool{}
		for i, a := range acls {
			if errs[i] = checkNewACL(a); errs[i] != nil {
				continue
			}
			if _, exists := img.Access.ACLs.ID(a); exists || adding[a] {
				continue
			}
			adding[a] = true
			id, err := newACLID(img, records)
			if err != nil {
				return nil, err
			}
			records = append(records, metadata.AccessControlEntryRecord{ID: id, ResourceType: a.ResourceType, ResourceName: a.ResourceName,
				PatternType: a.PatternType, Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.Permission})
		}
		return records, nil
	})
	for i := range acls {
		res := kmsg.NewCreateACLsResponseResult()
		e := errs[i]
		if e == nil {
			e = err
		}
		res.ErrorCode, res.ErrorMessage = rc.svc.errorCode(kmsg.CreateACLs, e), errorMessage(e)
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// newACLID is a random id no ACL of img or of records has, as Kafka's
// AclControlManager.newAclId.
func newACLID(img *metadata.Image, records []metadata.Record) ([16]byte, error) {
	for {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return id, fmt.Errorf("ACL id: %w", err)
		}
		taken := id == [16]byte{}
		if _, ok := img.Access.ACLs.ACL(id); ok {
			taken = true
		}
		for _, r := range records {
			if r.(metadata.AccessControlEntryRecord).ID == id {
				taken = true
			}
		}
		if !taken {
			return id, nil
		}
	}
}

func handleDeleteACLs(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DeleteACLsRequest)
	resp := kmsg.NewPtrDeleteACLsResponse()
	filters := make([]metadata.ACLFilter, len(r.Filters))
	for i, q := range r.Filters {
		f, err := aclFilter(q.ResourceType, q.ResourceName, q.ResourcePatternType, q.Principal, q.Host, q.Operation, q.PermissionType)
		if err != nil {
			return nil, err
		}
		filters[i] = f
	}
	if code, msg, refused := aclChangeRefused(rc); refused {
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	matched := make([][]metadata.ACLWithID, len(filters))
	_, err := rc.svc.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		var records []metadata.Record
		removing := map[[16]byte]bool{}
		for i, f := range filters {
			matched[i] = img.Access.ACLs.Matching(f)
			for _, a := range matched[i] {
				if !removing[a.ID] {
					removing[a.ID] = true
					records = append(records, metadata.RemoveAccessControlEntryRecord{ID: a.ID})
				}
			}
		}
		return records, nil
	})
	for i := range filters {
		res := kmsg.NewDeleteACLsResponseResult()
		if err != nil {
			res.ErrorCode, res.ErrorMessage = rc.svc.errorCode(kmsg.DeleteACLs, err), errorMessage(err)
		} else {
			for _, a := range matched[i] {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
				m.Principal, m.Host = a.Principal, a.Host
				m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
