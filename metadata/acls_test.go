package metadata_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/strata-io/strata/metadata"
)

// acl is an ACL from Kafka's StandardAcl constructor arguments.
func acl(rt metadata.ACLResourceType, name string, pt metadata.ACLPatternType, principal, host string, op metadata.ACLOperation, perm metadata.ACLPermission) metadata.ACL {
	return metadata.ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func aclRecord(id int, a metadata.ACL) metadata.AccessControlEntryRecord {
	return metadata.AccessControlEntryRecord{ID: [16]byte{byte(id), byte(id >> 8)}, ResourceType: a.ResourceType, ResourceName: a.ResourceName, PatternType: a.PatternType,
		Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.Permission}
}

// aclsImage is the image of acls, ids 1, 2, ...
func aclsImage(t testing.TB, acls ...metadata.ACL) *metadata.ACLsImage {
	d := metadata.NewDelta(metadata.Empty)
	for i, a := range acls {
		if err := d.Replay(aclRecord(i+1, a)); err != nil {
			t.Fatal(err)
		}
	}
	return &d.Apply().Access.ACLs
}

const (
	topic, group, cluster                 = metadata.ACLResourceTopic, metadata.ACLResourceGroup, metadata.ACLResourceCluster
	literal, prefixed                     = metadata.ACLPatternLiteral, metadata.ACLPatternPrefixed
	allow, deny                           = metadata.ACLAllow, metadata.ACLDeny
	opAll, read, write, create, del       = metadata.ACLOpAll, metadata.ACLOpRead, metadata.ACLOpWrite, metadata.ACLOpCreate, metadata.ACLOpDelete
	alter, describe                       = metadata.ACLOpAlter, metadata.ACLOpDescribe
	describeConfigs, alterConfigs, action = metadata.ACLOpDescribeConfigs, metadata.ACLOpAlterConfigs, metadata.ACLOpClusterAction
)

// TestACLsReplay checks ACLs come and go by id, an equal ACL or a taken id
// is refused, as are an unknown removal and an ACL no CreateAcls makes,
// each with nothing changed, and the image's records rebuild it.
func TestACLsReplay(t *testing.T) {
	fooRead := acl(topic, "foo", literal, "User:alice", "*", read, allow)
	fooWrite := acl(topic, "foo", prefixed, "User:alice", "*", write, allow)
	img := replayAll(t, []metadata.Record{aclRecord(1, fooRead), aclRecord(2, fooWrite)})
	if got, ok := img.Access.ACLs.ACL([16]byte{1}); !ok || got != fooRead {
		t.Fatalf("ACL 1 = %+v, %v", got, ok)
	}
	d := metadata.NewDelta(img)
	for name, r := range map[string]metadata.Record{
		"an equal ACL":          aclRecord(3, fooRead),
		"a taken id":            aclRecord(1, acl(group, "g", literal, "User:bob", "*", read, allow)),
		"an unknown removal":    metadata.RemoveAccessControlEntryRecord{ID: [16]byte{9}},
		"pattern type ANY":      aclRecord(4, acl(topic, "x", metadata.ACLPatternAny, "User:bob", "*", read, allow)),
		"resource type ANY":     aclRecord(4, acl(metadata.ACLResourceAny, "x", literal, "User:bob", "*", read, allow)),
		"operation ANY":         aclRecord(4, acl(topic, "x", literal, "User:bob", "*", metadata.ACLOpAny, allow)),
		"permission ANY":        aclRecord(4, acl(topic, "x", literal, "User:bob", "*", read, metadata.ACLPermissionAny)),
		"an empty name":         aclRecord(4, acl(topic, "", literal, "User:bob", "*", read, allow)),
		"a principal not Type:": aclRecord(4, acl(topic, "x", literal, "bob", "*", read, allow)),
	} {
		if err := d.Replay(r); !errors.Is(err, metadata.ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", name, err)
		}
	}
	if err := d.Replay(metadata.RemoveAccessControlEntryRecord{ID: [16]byte{1}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Replay(metadata.RemoveAccessControlEntryRecord{ID: [16]byte{1}}); !errors.Is(err, metadata.ErrInvalidRecord) {
		t.Fatalf("second removal: %v", err)
	}
	if err := d.Replay(aclRecord(5, fooRead)); err != nil {
		t.Fatalf("re-adding a removed ACL: %v", err)
	}
	after := d.Apply()
	if got := after.Access.ACLs.All(); len(got) != 2 || got[0].ACL != fooRead || got[0].ID != [16]byte{5} || got[1].ACL != fooWrite {
		t.Fatalf("ACLs = %+v", got)
	}
	if id, ok := after.Access.ACLs.ID(fooRead); !ok || id != [16]byte{5} {
		t.Fatalf("ID of foo's READ = %x, %v", id, ok)
	}
	if _, ok := img.Access.ACLs.ACL([16]byte{1}); !ok || img.Access.ACLs.Len() != 2 {
		t.Fatal("the base image changed")
	}
	if !sameImage(after, replayAll(t, metadata.ImageRecords(after))) {
		t.Fatal("the image's records do not rebuild its ACLs")
	}
}

// check is one authorization and its expected result.
type check struct {
	principal, host string
	op              metadata.ACLOperation
	rt              metadata.ACLResourceType
	name            string
	want            bool
}

// TestStandardAuthorizer is Kafka's StandardAuthorizerTest's cases, each
// named after its test.
func TestStandardAuthorizer(t *testing.T) {
	const localhost = "127.0.0.1"
	alice, bob := "User:alice", "User:bob"
	fooACL := func(op metadata.ACLOperation, perm metadata.ACLPermission) metadata.ACL {
		return acl(topic, "foo_", prefixed, bob, "*", op, perm)
	}
	barACL := func(op metadata.ACLOperation, perm metadata.ACLPermission) metadata.ACL {
		return acl(group, "bar", literal, "User:*", "*", op, perm)
	}
	// testFindResultImplication, one ACL at a time.
	for _, tc := range []struct {
		granted metadata.ACL
		op      metadata.ACLOperation
		want    bool
	}{
		{fooACL(describe, allow), describe, true}, {fooACL(read, allow), describe, true},
		{fooACL(write, allow), describe, true}, {fooACL(del, allow), describe, true},
		{fooACL(alter, allow), describe, true},
		{fooACL(create, allow), describe, false},
		{fooACL(read, deny), describe, false}, {fooACL(write, deny), describe, false},
		{fooACL(del, deny), describe, false}, {fooACL(alter, deny), describe, false},
		{fooACL(describe, deny), describe, false},
		{fooACL(describeConfigs, allow), describeConfigs, true}, {fooACL(alterConfigs, allow), describeConfigs, true},
		{fooACL(alterConfigs, deny), describeConfigs, false},
		{fooACL(alterConfigs, deny), alterConfigs, false},
	} {
		// With allow.everyone, an ACL that does not apply leaves the
		// default: the resource has ACLs, so it is denied all the same.
		s := &metadata.StandardAuthorizer{AllowEveryoneIfNoACL: true}
		if got := s.Authorize(aclsImage(t, tc.granted), bob, localhost, tc.op, topic, "foo_bar"); got != tc.want {
			t.Errorf("implication: %+v for %v: %v, want %v", tc.granted, tc.op, got, tc.want)
		}
	}

	many := []metadata.ACL{
		acl(topic, "green2", literal, "User:*", "*", read, allow),
		acl(topic, "green", prefixed, bob, "*", read, allow),
		acl(topic, "betamax4", literal, bob, "*", read, allow),
		acl(topic, "betamax", literal, bob, "*", read, allow),
		acl(topic, "beta", prefixed, "User:*", "*", read, allow),
		acl(topic, "alpha", prefixed, "User:*", "*", read, allow),
		acl(topic, "alp", prefixed, bob, "*", read, deny),
		acl(group, "*", literal, bob, "*", write, allow),
		acl(group, "wheel", literal, "User:*", "*", write, deny),
	}
	for _, tc := range []struct {
		name   string
		acls   []metadata.ACL
		s      metadata.StandardAuthorizer
		checks []check
	}{
		{"testAllowEveryoneIfNoAclFoundConfigEnabled", []metadata.ACL{acl(topic, "topic1", literal, alice, "*", read, allow)},
			metadata.StandardAuthorizer{AllowEveryoneIfNoACL: true}, []check{
				{bob, localhost, read, topic, "topic1", false},
				{bob, localhost, read, topic, "topic2", true},
			}},
		{"testAllowEveryoneIfNoAclFoundConfigDisabled", []metadata.ACL{acl(topic, "topic1", literal, alice, "*", read, allow)},
			metadata.StandardAuthorizer{}, []check{
				{bob, localhost, read, topic, "topic1", false},
				{bob, localhost, read, topic, "topic2", false},
			}},
		{"testFindResultPrincipalMatching", []metadata.ACL{fooACL(read, allow), barACL(read, deny)}, metadata.StandardAuthorizer{}, []check{
			{bob, localhost, read, topic, "foo_bar", true},
			{alice, localhost, read, topic, "foo_bar", false},
			{alice, localhost, read, group, "bar", false},
		}},
		{"testSimpleAuthorizations", []metadata.ACL{fooACL(read, allow), fooACL(write, allow), barACL(describeConfigs, allow), barACL(alterConfigs, allow)},
			metadata.StandardAuthorizer{}, []check{
				{bob, localhost, read, topic, "foo_", true},
				{"User:fred", localhost, alterConfigs, group, "bar", true},
			}},
		{"testDenyPrecedenceWithOperationAll", []metadata.ACL{
			acl(topic, "foo", literal, alice, "*", opAll, deny),
			acl(topic, "foo", prefixed, alice, "*", read, allow),
			acl(topic, "foo", literal, "User:*", "*", opAll, deny),
			acl(topic, "foo", prefixed, "User:*", "*", describe, allow),
		}, metadata.StandardAuthorizer{}, []check{
			{alice, localhost, write, topic, "foo", false},
			{alice, localhost, read, topic, "foo", false},
			{alice, localhost, describe, topic, "foo", false},
			{alice, localhost, read, topic, "foobar", true},
			{bob, localhost, describe, topic, "foo", false},
			{bob, localhost, read, topic, "foo", false},
			{bob, localhost, write, topic, "foo", false},
			{bob, localhost, describe, topic, "foobaz", true},
			{bob, localhost, read, topic, "foobaz", false},
		}},
		{"testTopicAclWithOperationAll", []metadata.ACL{
			acl(topic, "foo", literal, "User:*", "*", opAll, allow),
			acl(topic, "bar", prefixed, alice, "*", opAll, allow),
			acl(topic, "baz", literal, bob, "*", opAll, allow),
		}, metadata.StandardAuthorizer{}, []check{
			{alice, localhost, write, topic, "foo", true},
			{alice, localhost, describeConfigs, topic, "bar", true},
			{alice, localhost, describe, topic, "baz", false},
			{bob, localhost, write, topic, "foo", true},
			{bob, localhost, read, topic, "bar", false},
			{bob, localhost, describe, topic, "baz", true},
			{"User:malory", localhost, describe, topic, "foo", true},
			{"User:malory", localhost, write, topic, "bar", false},
			{"User:malory", localhost, read, topic, "baz", false},
		}},
		{"testHostAddressAclValidation", []metadata.ACL{
			acl(topic, "foo", literal, alice, "192.168.1.1", read, deny),
			acl(topic, "foo", literal, alice, "*", read, allow),
			acl(topic, "bar", literal, bob, "192.168.1.2", read, allow),
			acl(topic, "bar", literal, "User:*", localhost, describe, allow),
		}, metadata.StandardAuthorizer{}, []check{
			{alice, localhost, read, topic, "foo", true}, {alice, localhost, read, topic, "bar", false}, {alice, localhost, describe, topic, "bar", true},
			{alice, "192.168.1.1", read, topic, "foo", false}, {alice, "192.168.1.1", read, topic, "bar", false}, {alice, "192.168.1.1", describe, topic, "bar", false},
			{alice, "192.168.1.2", read, topic, "foo", true}, {alice, "192.168.1.2", read, topic, "bar", false}, {alice, "192.168.1.2", describe, topic, "bar", false},
			{bob, localhost, read, topic, "foo", false}, {bob, localhost, read, topic, "bar", false}, {bob, localhost, describe, topic, "bar", true},
			{bob, "192.168.1.1", read, topic, "foo", false}, {bob, "192.168.1.1", read, topic, "bar", false}, {bob, "192.168.1.1", describe, topic, "bar", false},
			{bob, "192.168.1.2", read, topic, "foo", false}, {bob, "192.168.1.2", read, topic, "bar", true}, {bob, "192.168.1.2", describe, topic, "bar", true},
		}},
		{"testAuthorizationWithManyAcls", many, metadata.StandardAuthorizer{}, []check{
			{bob, localhost, read, topic, "green1", true},
			{bob, localhost, write, group, "wheel", false},
			{bob, localhost, read, topic, "alpha", false},
			{bob, localhost, write, group, "arbitrary", true},
			{bob, localhost, read, topic, "ala", false},
		}},
		{"testPrefixAcls", []metadata.ACL{
			acl(topic, "fooa", prefixed, alice, "*", opAll, allow),
			acl(topic, "foobar", literal, bob, "*", opAll, allow),
			acl(topic, "f", prefixed, bob, "*", opAll, allow),
		}, metadata.StandardAuthorizer{}, []check{
			{bob, localhost, write, topic, "foobarr", true},
			{bob, localhost, read, topic, "goobar", false},
			{bob, localhost, read, topic, "fooa", true},
			{alice, localhost, describe, topic, "fooa", true},
			{alice, localhost, write, topic, "bar", false},
			{alice, localhost, read, topic, "baz", false},
		}},
		{"super users are allowed over a DENY", []metadata.ACL{acl(topic, "*", literal, "User:*", "*", opAll, deny)},
			metadata.StandardAuthorizer{SuperUsers: map[string]bool{"User:admin": true}}, []check{
				{"User:admin", localhost, alter, cluster, "kafka-cluster", true},
				{"User:admin", localhost, write, topic, "t", true},
				{alice, localhost, write, topic, "t", false},
			}},
		{"a principal of another type matches only its own and User:*", []metadata.ACL{
			acl(topic, "t", literal, "Group:ops", "*", read, allow),
			acl(topic, "u", literal, "User:*", "*", read, allow),
			acl(topic, "v", literal, "User:ops", "*", read, allow),
		}, metadata.StandardAuthorizer{}, []check{
			{"Group:ops", localhost, read, topic, "t", true},
			{"Group:ops", localhost, read, topic, "u", true},
			{"Group:ops", localhost, read, topic, "v", false},
			{"User:ops", localhost, read, topic, "t", false},
		}},
		{"a literal ACL is not a prefix one, the wildcard is per type", []metadata.ACL{
			acl(topic, "foo", literal, alice, "*", read, allow),
			acl(group, "*", literal, alice, "*", read, allow),
		}, metadata.StandardAuthorizer{}, []check{
			{alice, localhost, read, topic, "foo", true},
			{alice, localhost, read, topic, "foobar", false},
			{alice, localhost, read, topic, "fo", false},
			{alice, localhost, read, group, "anything", true},
			{alice, localhost, action, cluster, "kafka-cluster", false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := aclsImage(t, tc.acls...)
			for _, c := range tc.checks {
				if got := tc.s.Authorize(img, c.principal, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("%s from %s: %v on %v %q = %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

// TestAuthorizeByResourceType is Kafka's AuthorizerTest cases of
// authorizeByResourceType: an ALLOW on some resource of the type, not
// shadowed by a DENY of its literal name or a prefix of it.
func TestAuthorizeByResourceType(t *testing.T) {
	const host = "127.0.0.1"
	alice := "User:alice"
	for _, tc := range []struct {
		name string
		acls []metadata.ACL
		s    metadata.StandardAuthorizer
		want bool
	}{
		{"no ACL", nil, metadata.StandardAuthorizer{}, false},
		{"no ACL, allow everyone", nil, metadata.StandardAuthorizer{AllowEveryoneIfNoACL: true}, true},
		{"super user", nil, metadata.StandardAuthorizer{SuperUsers: map[string]bool{alice: true}}, true},
		{"a literal allow", []metadata.ACL{acl(topic, "t", literal, alice, "*", write, allow)}, metadata.StandardAuthorizer{}, true},
		{"an allow of another op", []metadata.ACL{acl(topic, "t", literal, alice, "*", read, allow)}, metadata.StandardAuthorizer{}, false},
		{"ALL", []metadata.ACL{acl(topic, "t", literal, alice, "*", opAll, allow)}, metadata.StandardAuthorizer{}, true},
		{"another principal's", []metadata.ACL{acl(topic, "t", literal, "User:bob", "*", write, allow)}, metadata.StandardAuthorizer{}, false},
		{"another host's", []metadata.ACL{acl(topic, "t", literal, alice, "10.0.0.1", write, allow)}, metadata.StandardAuthorizer{}, false},
		{"another type's", []metadata.ACL{acl(group, "t", literal, alice, "*", write, allow)}, metadata.StandardAuthorizer{}, false},
		{"denied by the same literal", []metadata.ACL{acl(topic, "t", literal, alice, "*", write, allow), acl(topic, "t", literal, alice, "*", write, deny)},
			metadata.StandardAuthorizer{}, false},
		{"denied by a prefix", []metadata.ACL{acl(topic, "tx", literal, alice, "*", write, allow), acl(topic, "t", prefixed, "User:*", "*", write, deny)},
			metadata.StandardAuthorizer{}, false},
		{"a prefixed allow under a literal deny", []metadata.ACL{acl(topic, "t", prefixed, alice, "*", write, allow), acl(topic, "t", literal, alice, "*", write, deny)},
			metadata.StandardAuthorizer{}, true},
		{"one allow shadowed, another not", []metadata.ACL{acl(topic, "a", literal, alice, "*", write, allow), acl(topic, "b", literal, alice, "*", write, allow),
			acl(topic, "a", literal, alice, "*", write, deny)}, metadata.StandardAuthorizer{}, true},
		{"a wildcard deny", []metadata.ACL{acl(topic, "t", literal, alice, "*", write, allow), acl(topic, "*", literal, alice, "*", write, deny)},
			metadata.StandardAuthorizer{}, false},
		{"a wildcard allow", []metadata.ACL{acl(topic, "*", literal, alice, "*", write, allow), acl(topic, "t", prefixed, alice, "*", write, deny)},
			metadata.StandardAuthorizer{}, true},
	} {
		if got := tc.s.AuthorizeByResourceType(aclsImage(t, tc.acls...), alice, host, write, topic); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestACLFilter is AclBindingFilter's matching: ANY, MATCH (the ACLs that
// apply to a literal name), exact pattern types, nil fields.
func TestACLFilter(t *testing.T) {
	acls := []metadata.ACL{
		acl(topic, "foo", literal, "User:alice", "*", read, allow),
		acl(topic, "*", literal, "User:alice", "*", read, allow),
		acl(topic, "fo", prefixed, "User:bob", "10.0.0.1", write, deny),
		acl(topic, "foobar", prefixed, "User:bob", "*", write, allow),
		acl(group, "foo", literal, "User:alice", "*", read, allow),
	}
	img := aclsImage(t, acls...)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name   string
		filter metadata.ACLFilter
		want   []int // indexes into acls
	}{
		{"ANY", metadata.ACLFilter{ResourceType: metadata.ACLResourceAny, PatternType: metadata.ACLPatternAny, Operation: metadata.ACLOpAny, Permission: metadata.ACLPermissionAny}, []int{0, 1, 2, 3, 4}},
		{"topic foo, ANY pattern: exactly that name", metadata.ACLFilter{ResourceType: topic, ResourceName: str("foo"), PatternType: metadata.ACLPatternAny, Operation: metadata.ACLOpAny, Permission: metadata.ACLPermissionAny}, []int{0}},
		{"topic foo, MATCH: the literal, the wildcard, the prefixes", metadata.ACLFilter{ResourceType: topic, ResourceName: str("foo"), PatternType: metadata.ACLPatternMatch, Operation: metadata.ACLOpAny, Permission: metadata.ACLPermissionAny}, []int{0, 1, 2}},
		{"topic fo, PREFIXED", metadata.ACLFilter{ResourceType: topic, ResourceName: str("fo"), PatternType: prefixed, Operation: metadata.ACLOpAny, Permission: metadata.ACLPermissionAny}, []int{2}},
		{"LITERAL with no name", metadata.ACLFilter{ResourceType: metadata.ACLResourceAny, PatternType: literal, Operation: metadata.ACLOpAny, Permission: metadata.ACLPermissionAny}, []int{0, 1, 4}},
		{"principal, host, operation, permission", metadata.ACLFilter{ResourceType: metadata.ACLResourceAny, PatternType: metadata.ACLPatternAny,
			Principal: str("User:bob"), Host: str("10.0.0.1"), Operation: write, Permission: deny}, []int{2}},
		{"operation READ", metadata.ACLFilter{ResourceType: topic, PatternType: metadata.ACLPatternAny, Operation: read, Permission: metadata.ACLPermissionAny}, []int{0, 1}},
	} {
		var want []metadata.ACL
		for _, i := range tc.want {
			want = append(want, acls[i])
		}
		var got []metadata.ACL
		for _, a := range img.Matching(tc.filter) {
			got = append(got, a.ACL)
		}
		if fmt.Sprint(sortedACLs(got)) != fmt.Sprint(sortedACLs(want)) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, want)
		}
	}
}

func sortedACLs(acls []metadata.ACL) []string {
	out := make([]string, len(acls))
	for i, a := range acls {
		out[i] = fmt.Sprintf("%+v", a)
	}
	slices.Sort(out)
	return out
}

// BenchmarkAuthorize is the hot path: a produce or fetch's per-topic
// check among a thousand ACLs, literal and prefixed.
func BenchmarkAuthorize(b *testing.B) {
	var acls []metadata.ACL
	for i := range 500 {
		acls = append(acls, acl(topic, fmt.Sprintf("topic-%d", i), literal, fmt.Sprintf("User:u%d", i%50), "*", write, allow))
		acls = append(acls, acl(topic, fmt.Sprintf("team-%d.", i), prefixed, fmt.Sprintf("User:u%d", i%50), "*", read, allow))
	}
	acls = append(acls, acl(topic, "team-7.secret", prefixed, "User:*", "*", read, deny))
	img := aclsImage(b, acls...)
	s := &metadata.StandardAuthorizer{SuperUsers: map[string]bool{"User:admin": true}}
	b.ReportAllocs()
	for b.Loop() {
		if !s.Authorize(img, "User:u7", "10.1.2.3", read, topic, "team-7.orders") {
			b.Fatal("denied")
		}
		if s.Authorize(img, "User:u7", "10.1.2.3", read, topic, "team-7.secret.keys") {
			b.Fatal("allowed")
		}
		if !s.Authorize(img, "User:u7", "10.1.2.3", write, topic, "topic-7") {
			b.Fatal("denied")
		}
	}
}
