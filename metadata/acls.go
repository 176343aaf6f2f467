package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ACLResourceType is one of Kafka's ACL resource types, by Kafka's code
// (org.apache.kafka.common.resource.ResourceType).
type ACLResourceType int8

// Kafka's resource types. Unknown and Any are only in requests' filters.
const (
	ACLResourceUnknown         ACLResourceType = 0
	ACLResourceAny             ACLResourceType = 1
	ACLResourceTopic           ACLResourceType = 2
	ACLResourceGroup           ACLResourceType = 3
	ACLResourceCluster         ACLResourceType = 4
	ACLResourceTransactionalID ACLResourceType = 5
	ACLResourceDelegationToken ACLResourceType = 6
	ACLResourceUser            ACLResourceType = 7
)

// ACLPatternType is how an ACL's resource name matches, by Kafka's code
// (PatternType). Any and Match are only in filters.
type ACLPatternType int8

// Kafka's pattern types.
const (
	ACLPatternUnknown  ACLPatternType = 0
	ACLPatternAny      ACLPatternType = 1
	ACLPatternMatch    ACLPatternType = 2
	ACLPatternLiteral  ACLPatternType = 3
	ACLPatternPrefixed ACLPatternType = 4
)

// ACLOperation is one of Kafka's ACL operations, by Kafka's code
// (AclOperation).
type ACLOperation int8

// Kafka's operations. Unknown and Any are only in filters.
const (
	ACLOpUnknown         ACLOperation = 0
	ACLOpAny             ACLOperation = 1
	ACLOpAll             ACLOperation = 2
	ACLOpRead            ACLOperation = 3
	ACLOpWrite           ACLOperation = 4
	ACLOpCreate          ACLOperation = 5
	ACLOpDelete          ACLOperation = 6
	ACLOpAlter           ACLOperation = 7
	ACLOpDescribe        ACLOperation = 8
	ACLOpClusterAction   ACLOperation = 9
	ACLOpDescribeConfigs ACLOperation = 10
	ACLOpAlterConfigs    ACLOperation = 11
	ACLOpIdempotentWrite ACLOperation = 12
	ACLOpCreateTokens    ACLOperation = 13
	ACLOpDescribeTokens  ACLOperation = 14
	ACLOpTwoPhaseCommit  ACLOperation = 15
)

// ACLPermission is whether an ACL allows or denies, by Kafka's code
// (AclPermissionType). Unknown and Any are only in filters.
type ACLPermission int8

// Kafka's permission types.
const (
	ACLPermissionUnknown ACLPermission = 0
	ACLPermissionAny     ACLPermission = 1
	ACLDeny              ACLPermission = 2
	ACLAllow             ACLPermission = 3
)

// Kafka's wildcards: the resource name (with LITERAL), the host, and the
// principal every principal matches.
const (
	ACLWildcard          = "*"
	ACLWildcardPrincipal = "User:*"
)

// AccessControlEntryRecord adds ACL ID (Kafka's AccessControlEntryRecord).
type AccessControlEntryRecord struct {
	ID             [16]byte
	ResourceType   ACLResourceType
	ResourceName   string
	PatternType    ACLPatternType
	Principal      string
	Host           string
	Operation      ACLOperation
	PermissionType ACLPermission
}

// RemoveAccessControlEntryRecord removes ACL ID (Kafka's
// RemoveAccessControlEntryRecord).
type RemoveAccessControlEntryRecord struct {
	ID [16]byte
}

func (AccessControlEntryRecord) record()             {}
func (RemoveAccessControlEntryRecord) record()       {}
func (AccessControlEntryRecord) accessRecord()       {}
func (RemoveAccessControlEntryRecord) accessRecord() {}

// ACL is one access control entry on one resource pattern (Kafka's
// StandardAcl, an AclBinding).
type ACL struct {
	ResourceType ACLResourceType
	ResourceName string
	PatternType  ACLPatternType
	Principal    string // KafkaPrincipal string form, Type:name
	Host         string
	Operation    ACLOperation
	Permission   ACLPermission
}

// ACLWithID is an ACL and its id.
type ACLWithID struct {
	ID [16]byte
	ACL
}

func (r AccessControlEntryRecord) acl() ACL {
	return ACL{ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}
}

// check refuses an ACL no valid CreateAcls makes (AclControlManager's
// validateNewAcl): a record that carries one would be matched by nothing
// or by everything.
func (a ACL) check() error {
	switch {
	case a.ResourceType < ACLResourceTopic || a.ResourceType > ACLResourceUser:
		return fmt.Errorf("resource type %d", a.ResourceType)
	case a.PatternType != ACLPatternLiteral && a.PatternType != ACLPatternPrefixed:
		return fmt.Errorf("pattern type %d", a.PatternType)
	case a.Operation < ACLOpAll || a.Operation > ACLOpTwoPhaseCommit:
		return fmt.Errorf("operation %d", a.Operation)
	case a.Permission != ACLDeny && a.Permission != ACLAllow:
		return fmt.Errorf("permission type %d", a.Permission)
	case a.ResourceName == "":
		return fmt.Errorf("empty resource name")
	case !strings.Contains(a.Principal, ":"):
		return fmt.Errorf("principal %q is not Type:name", a.Principal)
	}
	return nil
}

// ACLsImage is the ACLs (Kafka's AclsImage), with the index the
// authorizer looks them up in (authorizer.go).
type ACLsImage struct {
	byID  map[[16]byte]ACL
	index *aclIndex
}

// aclIndex finds the ACLs of a resource without a scan: per resource
// type, the literal ones by name, the prefixed ones by prefix (with the
// prefix lengths there are, so that a name's prefixes are looked up only
// at those), the literal wildcard ones; and each ACL's id.
type aclIndex struct {
	types    map[ACLResourceType]*typeACLs
	existing map[ACL][16]byte
}

type typeACLs struct {
	literal    map[string][]ACL
	prefixed   map[string][]ACL
	prefixLens []int // ascending
	wildcard   []ACL
	all        []ACL // every ACL of the type, for AuthorizeByResourceType
}

func buildACLIndex(byID map[[16]byte]ACL) *aclIndex {
	idx := &aclIndex{types: map[ACLResourceType]*typeACLs{}, existing: make(map[ACL][16]byte, len(byID))}
	for _, id := range slices.SortedFunc(maps.Keys(byID), compareIDs) {
		a := byID[id]
		idx.existing[a] = id
		t := idx.types[a.ResourceType]
		if t == nil {
			t = &typeACLs{literal: map[string][]ACL{}, prefixed: map[string][]ACL{}}
			idx.types[a.ResourceType] = t
		}
		t.all = append(t.all, a)
		switch {
		case a.PatternType == ACLPatternLiteral && a.ResourceName == ACLWildcard:
			t.wildcard = append(t.wildcard, a)
		case a.PatternType == ACLPatternLiteral:
			t.literal[a.ResourceName] = append(t.literal[a.ResourceName], a)
		default:
			if _, had := t.prefixed[a.ResourceName]; !had {
				if n := len(a.ResourceName); !slices.Contains(t.prefixLens, n) {
					t.prefixLens = append(t.prefixLens, n)
				}
			}
			t.prefixed[a.ResourceName] = append(t.prefixed[a.ResourceName], a)
		}
	}
	for _, t := range idx.types {
		slices.Sort(t.prefixLens)
	}
	return idx
}

func compareIDs(a, b [16]byte) int { return slices.Compare(a[:], b[:]) }

// Len is the number of ACLs.
func (a ACLsImage) Len() int { return len(a.byID) }

// ACL is the ACL of id, ok false if there is none.
func (a ACLsImage) ACL(id [16]byte) (ACL, bool) {
	acl, ok := a.byID[id]
	return acl, ok
}

// ID is the id of an ACL equal to acl, ok false if there is none.
func (a ACLsImage) ID(acl ACL) ([16]byte, bool) {
	if a.index == nil {
		return [16]byte{}, false
	}
	id, ok := a.index.existing[acl]
	return id, ok
}

// All lists the ACLs, by resource type, pattern type, resource name,
// principal, host, operation and permission.
func (a ACLsImage) All() []ACLWithID {
	out := make([]ACLWithID, 0, len(a.byID))
	for id, acl := range a.byID {
		out = append(out, ACLWithID{ID: id, ACL: acl})
	}
	slices.SortFunc(out, func(x, y ACLWithID) int {
		return cmp.Or(cmp.Compare(x.ResourceType, y.ResourceType), cmp.Compare(x.PatternType, y.PatternType),
			strings.Compare(x.ResourceName, y.ResourceName), strings.Compare(x.Principal, y.Principal),
			strings.Compare(x.Host, y.Host), cmp.Compare(x.Operation, y.Operation), cmp.Compare(x.Permission, y.Permission),
			compareIDs(x.ID, y.ID))
	})
	return out
}

func (a ACLsImage) records() []Record {
	var out []Record
	for _, acl := range a.All() {
		out = append(out, AccessControlEntryRecord{ID: acl.ID, ResourceType: acl.ResourceType, ResourceName: acl.ResourceName,
			PatternType: acl.PatternType, Principal: acl.Principal, Host: acl.Host, Operation: acl.Operation, PermissionType: acl.Permission})
	}
	return out
}

// aclsDelta is the changed ACLs; a nil value is a removed one.
type aclsDelta struct {
	changed map[[16]byte]*ACL
}

// has reports whether base with the delta holds id, and acl if it does.
func (d *aclsDelta) has(base ACLsImage, id [16]byte) (ACL, bool) {
	if a, changed := d.changed[id]; changed {
		if a == nil {
			return ACL{}, false
		}
		return *a, true
	}
	a, ok := base.byID[id]
	return a, ok
}

// holdsACL reports whether base with the delta holds an ACL equal to acl,
// as Kafka's existingAcls.
func (d *aclsDelta) holdsACL(base ACLsImage, acl ACL) bool {
	if id, ok := base.ID(acl); ok {
		if _, still := d.has(base, id); still {
			return true
		}
	}
	for _, a := range d.changed {
		if a != nil && *a == acl {
			return true
		}
	}
	return false
}

func (d *aclsDelta) put(base ACLsImage, r AccessControlEntryRecord) error {
	acl := r.acl()
	if err := acl.check(); err != nil {
		return fmt.Errorf("%w: ACL %x: %w", ErrInvalidRecord, r.ID, err)
	}
	if _, ok := d.has(base, r.ID); ok {
		return fmt.Errorf("%w: an ACL with id %x exists", ErrInvalidRecord, r.ID)
	}
	if d.holdsACL(base, acl) {
		return fmt.Errorf("%w: ACL %x: an equal ACL exists", ErrInvalidRecord, r.ID)
	}
	if d.changed == nil {
		d.changed = map[[16]byte]*ACL{}
	}
	d.changed[r.ID] = &acl
	return nil
}

func (d *aclsDelta) remove(base ACLsImage, r RemoveAccessControlEntryRecord) error {
	if _, ok := d.has(base, r.ID); !ok {
		return fmt.Errorf("%w: remove unknown ACL %x", ErrInvalidRecord, r.ID)
	}
	if d.changed == nil {
		d.changed = map[[16]byte]*ACL{}
	}
	d.changed[r.ID] = nil
	return nil
}

func (d *aclsDelta) apply(base ACLsImage) ACLsImage {
	if d.changed == nil {
		return base
	}
	byID := maps.Clone(base.byID)
	if byID == nil {
		byID = map[[16]byte]ACL{}
	}
	for id, a := range d.changed {
		if a == nil {
			delete(byID, id)
		} else {
			byID[id] = *a
		}
	}
	return ACLsImage{byID: byID, index: buildACLIndex(byID)}
}

var (
	aclResourceNames   = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	aclPatternNames    = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	aclOperationNames  = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT"}
	aclPermissionNames = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

// aclName is Kafka's name of code among names, UNKNOWN for another code.
func aclName(names []string, code int8) string {
	if code < 0 || int(code) >= len(names) {
		return "UNKNOWN"
	}
	return names[code]
}

func (t ACLResourceType) String() string { return aclName(aclResourceNames, int8(t)) }
func (t ACLPatternType) String() string  { return aclName(aclPatternNames, int8(t)) }
func (o ACLOperation) String() string    { return aclName(aclOperationNames, int8(o)) }
func (p ACLPermission) String() string   { return aclName(aclPermissionNames, int8(p)) }
