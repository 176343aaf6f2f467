package metadata

// Kafka's StandardAuthorizer's decisions on an ACLsImage
// (StandardAuthorizerData.authorize, Authorizer.authorizeByResourceType)
// and AclBindingFilter's matching (DescribeAcls, DeleteAcls). A decision
// looks up the resource's literal ACLs by name, its prefixed ones at each
// prefix length some ACL has, and the literal wildcard ones: no scan of
// the other ACLs and no allocation.

import "strings"

// StandardAuthorizer decides as Kafka's StandardAuthorizer configured
// with super.users and allow.everyone.if.no.acl.found.
type StandardAuthorizer struct {
	SuperUsers           map[string]bool // principals, Type:name
	AllowEveryoneIfNoACL bool
}

// Authorize reports whether principal, connected from host (an IP
// address), may do op on the resource of type rt named name. A super user
// may do anything. Otherwise a DENY ACL that matches wins over an ALLOW
// one; with neither, the resource's having no ACL at all (of any
// principal) allows it only with AllowEveryoneIfNoACL.
func (s *StandardAuthorizer) Authorize(acls *ACLsImage, principal, host string, op ACLOperation, rt ACLResourceType, name string) bool {
	if s.SuperUsers[principal] {
		return true
	}
	switch acls.find(principal, host, op, rt, name) {
	case aclAllowed:
		return true
	case aclNone:
		return s.AllowEveryoneIfNoACL
	}
	return false
}

// aclResult is what a resource's ACLs say of one action.
type aclResult int8

const (
	aclNone    aclResult = iota // the resource has no ACL
	aclDenied                   // a DENY matches, or the resource has ACLs and no ALLOW matches
	aclAllowed                  // an ALLOW matches and no DENY
)

func (a *ACLsImage) find(principal, host string, op ACLOperation, rt ACLResourceType, name string) aclResult {
	if a.index == nil {
		return aclNone
	}
	t := a.index.types[rt]
	if t == nil {
		return aclNone
	}
	var m aclMatch
	if m.scan(t.literal[name], principal, host, op) {
		return aclDenied
	}
	for _, n := range t.prefixLens {
		if n > len(name) {
			break
		}
		if m.scan(t.prefixed[name[:n]], principal, host, op) {
			return aclDenied
		}
	}
	if m.scan(t.wildcard, principal, host, op) {
		return aclDenied
	}
	switch {
	case m.allowed:
		return aclAllowed
	case m.found:
		return aclDenied
	}
	return aclNone
}

// aclMatch gathers what a resource's ACLs say (Kafka's
// MatchingRuleBuilder).
type aclMatch struct {
	found   bool // some ACL is on the resource
	allowed bool
}

// scan matches acls, all on the resource; it reports a DENY.
func (m *aclMatch) scan(acls []ACL, principal, host string, op ACLOperation) (denied bool) {
	for i := range acls {
		m.found = true
		switch acls[i].result(principal, host, op) {
		case aclDenied:
			return true
		case aclAllowed:
			m.allowed = true
		}
	}
	return false
}

// result is what one ACL on the resource says of op by principal from
// host (StandardAuthorizerData.findResult): aclNone when it does not
// apply. An ALLOW of READ, WRITE, DELETE or ALTER allows DESCRIBE too, one
// of ALTER_CONFIGS allows DESCRIBE_CONFIGS; a DENY denies only its own
// operation; ALL is every operation.
func (a *ACL) result(principal, host string, op ACLOperation) aclResult {
	if a.Principal != principal && a.Principal != ACLWildcardPrincipal {
		return aclNone
	}
	if a.Host != ACLWildcard && a.Host != host {
		return aclNone
	}
	if a.Operation != ACLOpAll && a.Operation != op && !(a.Permission == ACLAllow && implies(a.Operation, op)) {
		return aclNone
	}
	if a.Permission == ACLAllow {
		return aclAllowed
	}
	return aclDenied
}

// implies reports whether an ALLOW of granted allows op as well.
func implies(granted, op ACLOperation) bool {
	switch op {
	case ACLOpDescribe:
		return granted == ACLOpRead || granted == ACLOpWrite || granted == ACLOpDelete || granted == ACLOpAlter
	case ACLOpDescribeConfigs:
		return granted == ACLOpAlterConfigs
	}
	return false
}

// AuthorizeByResourceType reports whether principal may do op on some
// resource of type rt, as Kafka's Authorizer.authorizeByResourceType: if
// it may on a resource named "hardcode" (a super user, or no ACL and
// AllowEveryoneIfNoACL), or some ALLOW of op (or ALL) for it, literal or
// prefixed, is not shadowed by a DENY of the same literal name or of a
// prefix of it; a DENY of the literal wildcard denies.
func (s *StandardAuthorizer) AuthorizeByResourceType(acls *ACLsImage, principal, host string, op ACLOperation, rt ACLResourceType) bool {
	if s.Authorize(acls, principal, host, op, rt, "hardcode") {
		return true
	}
	if acls.index == nil || acls.index.types[rt] == nil {
		return false
	}
	all := acls.index.types[rt].all
	applies := func(a *ACL) bool {
		return (a.Host == host || a.Host == ACLWildcard) && (a.Principal == principal || a.Principal == ACLWildcardPrincipal) &&
			(a.Operation == op || a.Operation == ACLOpAll)
	}
	denied := func(literal string, prefixedOnly bool) bool {
		for i := range all {
			d := &all[i]
			if d.Permission != ACLDeny || !applies(d) {
				continue
			}
			if d.PatternType == ACLPatternPrefixed && strings.HasPrefix(literal, d.ResourceName) ||
				!prefixedOnly && d.PatternType == ACLPatternLiteral && d.ResourceName == literal {
				return true
			}
		}
		return false
	}
	for i := range all {
		a := &all[i]
		if a.Permission == ACLDeny && applies(a) && a.PatternType == ACLPatternLiteral && a.ResourceName == ACLWildcard {
			return false
		}
	}
	for i := range all {
		a := &all[i]
		if a.Permission == ACLAllow && applies(a) && a.PatternType == ACLPatternLiteral && a.ResourceName == ACLWildcard {
			return true
		}
	}
	for i := range all {
		a := &all[i]
		if a.Permission != ACLAllow || !applies(a) || a.ResourceName == ACLWildcard && a.PatternType == ACLPatternLiteral {
			continue
		}
		if !denied(a.ResourceName, a.PatternType == ACLPatternPrefixed) {
			return true
		}
	}
	return false
}

// ACLFilter selects ACLs as Kafka's AclBindingFilter: a nil name,
// principal or host matches any, as do the Any type, pattern, operation
// and permission; pattern type Match selects the ACLs that would apply to
// the literal resource Name (itself, the wildcard, its prefixes).
type ACLFilter struct {
	ResourceType ACLResourceType
	ResourceName *string
	PatternType  ACLPatternType
	Principal    *string
	Host         *string
	Operation    ACLOperation
	Permission   ACLPermission
}

// Matches reports whether the filter selects a.
func (f ACLFilter) Matches(a ACL) bool {
	return f.matchesPattern(a) && (f.Principal == nil || *f.Principal == a.Principal) && (f.Host == nil || *f.Host == a.Host) &&
		(f.Operation == ACLOpAny || f.Operation == a.Operation) && (f.Permission == ACLPermissionAny || f.Permission == a.Permission)
}

// matchesPattern is ResourcePatternFilter.matches.
func (f ACLFilter) matchesPattern(a ACL) bool {
	if f.ResourceType != ACLResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != ACLPatternAny && f.PatternType != ACLPatternMatch && f.PatternType != a.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType == ACLPatternAny || f.PatternType == a.PatternType {
		return name == a.ResourceName
	}
	if a.PatternType == ACLPatternLiteral {
		return name == a.ResourceName || a.ResourceName == ACLWildcard
	}
	return strings.HasPrefix(name, a.ResourceName)
}

// Matching lists the ACLs f selects, in All's order.
func (a ACLsImage) Matching(f ACLFilter) []ACLWithID {
	var out []ACLWithID
	for _, acl := range a.All() {
		if f.Matches(acl.ACL) {
			out = append(out, acl)
		}
	}
	return out
}
