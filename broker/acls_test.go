package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/local"
	"github.com/strata-io/strata/protocol"
	"github.com/strata-io/strata/storage"
)

// standardAuthorizerBroker is saslBroker with the StandardAuthorizer,
// admin its super user, and no allow-everyone.
func standardAuthorizerBroker(t *testing.T) *Broker {
	return saslBroker(t, func(c *Config) {
		c.StandardAuthorizer = &StandardAuthorizerConfig{SuperUsers: []string{"User:admin"}}
	})
}

// aclCreation is a creation of an ACL of alice's from any host.
func aclCreation(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", op, perm
	return c
}

// saslRoundTrip authenticates as user on the SASL listener, sends req at
// the highest version served and returns the response.
func saslRoundTrip(t *testing.T, b *Broker, user, pass string, req kmsg.Request) kmsg.Response {
	t.Helper()
	c := dialSASL(t, b)
	if r := handshake(c, 1, MechanismPlain); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := authenticate(c, 2, []byte("\x00"+user+"\x00"+pass)); r.ErrorCode != 0 {
		t.Fatalf("authenticate as %s: %v", user, kerr.ErrorForCode(r.ErrorCode))
	}
	version := int16(-1)
	for _, v := range ServedVersions() {
		if v.Key == req.Key() {
			version = v.Max
		}
	}
	req.SetVersion(version)
	c.sendRequest(req, version, 4)
	return c.response(req, 4)
}

// TestStandardAuthorizerEnforcesACLs: with the StandardAuthorizer and no
// ACL, alice may neither produce nor see the topic; an ACL admin creates
// lets her produce (an idempotent producer with WRITE on a topic needs no
// IDEMPOTENT_WRITE, as Kafka), a DENY on a prefix overrides it, and once
// the ACLs are deleted she is refused again. DescribeAcls lists what was
// created, grouped by resource, and DeleteAcls answers what it matched.
func TestStandardAuthorizerEnforcesACLs(t *testing.T) {
	b := standardAuthorizerBroker(t)
	ctx := context.Background()
	admin := kadm.NewClient(saslClient(t, b, "admin", "admin-secret"))
	if _, err := admin.CreateTopics(ctx, 1, 1, nil, "t", "secret-t"); err != nil {
		t.Fatal(err)
	}
	alice := saslClient(t, b, "alice", "alice-secret", kgo.DefaultProduceTopic("t"), kgo.RequestRetries(0), kgo.RecordRetries(1))
	produce := func(topic string) error {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return alice.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	if err := produce("t"); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice's produce with no ACL: %v, want an authorization failure", err)
	}
	if topics, err := kadm.NewClient(saslClient(t, b, "alice", "alice-secret")).ListTopics(ctx); err != nil || len(topics) != 0 {
		t.Fatalf("alice's metadata: %v, %v; want no topic", topics.Names(), err)
	}

	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{
		aclCreation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
		aclCreation(kmsg.ACLResourceTypeTopic, "secret", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationAll, kmsg.ACLPermissionTypeDeny),
		aclCreation(kmsg.ACLResourceTypeTopic, "secret-t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
		aclCreation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
	}
	for i, r := range saslRoundTrip(t, b, "admin", "admin-secret", create).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("creation %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if n := b.meta.Image().Access.ACLs.Len(); n != 3 {
		t.Fatalf("%d ACLs in the image, want 3 (the repeated one once)", n)
	}
	if err := produce("t"); err != nil {
		t.Fatalf("alice's produce with WRITE on t: %v", err)
	}
	if err := produce("secret-t"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's produce to secret-t under a prefixed DENY: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if topics, err := kadm.NewClient(saslClient(t, b, "alice", "alice-secret")).ListTopics(ctx); err != nil || len(topics) != 1 || !topics.Has("t") {
		t.Fatalf("alice's metadata: %v, %v; want t alone (WRITE implies DESCRIBE)", topics.Names(), err)
	}

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourceName, describe.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("secret-t"), kmsg.ACLResourcePatternTypeMatch
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	d := saslRoundTrip(t, b, "admin", "admin-secret", describe).(*kmsg.DescribeACLsResponse)
	if d.ErrorCode != 0 || len(d.Resources) != 2 {
		t.Fatalf("describe MATCH secret-t: %v, %+v; want the prefixed DENY and the literal ALLOW", kerr.ErrorForCode(d.ErrorCode), d.Resources)
	}
	for _, res := range d.Resources {
		if len(res.ACLs) != 1 || res.ACLs[0].Principal != "User:alice" || res.ACLs[0].Host != "*" {
			t.Errorf("resource %s %s: %+v", res.ResourcePatternType, res.ResourceName, res.ACLs)
		}
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	all := kmsg.NewDeleteACLsRequestFilter()
	all.ResourceType, all.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	all.Operation, all.PermissionType, all.Principal = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny, kmsg.StringPtr("User:alice")
	deny := all
	deny.PermissionType = kmsg.ACLPermissionTypeDeny
	del.Filters = []kmsg.DeleteACLsRequestFilter{deny, all}
	dr := saslRoundTrip(t, b, "admin", "admin-secret", del).(*kmsg.DeleteACLsResponse)
	if len(dr.Results) != 2 || len(dr.Results[0].MatchingACLs) != 1 || len(dr.Results[1].MatchingACLs) != 3 {
		t.Fatalf("delete: %+v; want the DENY, then all three", dr.Results)
	}
	if n := b.meta.Image().Access.ACLs.Len(); n != 0 {
		t.Fatalf("%d ACLs left", n)
	}
	if err := produce("t"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's produce after the deletion: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// TestACLRequestsRefused: CreateAcls' validation and errors as Kafka's
// AclApis and AclControlManager give them, a principal who may not ALTER
// the cluster refused, and a request with an UNKNOWN code ending the
// connection.
func TestACLRequestsRefused(t *testing.T) {
	b := standardAuthorizerBroker(t)
	topic, literal, allow := kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
	read := kmsg.ACLOperationRead
	noColon := aclCreation(topic, "t", literal, read, allow)
	noColon.Principal = "alice"
	for _, tc := range []struct {
		name      string
		user      string
		creations []kmsg.CreateACLsRequestCreation
		want      []*kerr.Error
		msg       string
	}{
		{"the cluster named other than kafka-cluster", "admin", []kmsg.CreateACLsRequestCreation{
			aclCreation(kmsg.ACLResourceTypeCluster, "c", literal, kmsg.ACLOperationAlter, allow), aclCreation(topic, "t", literal, read, allow)},
			[]*kerr.Error{kerr.InvalidRequest, nil}, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{"an empty name", "admin", []kmsg.CreateACLsRequestCreation{aclCreation(topic, "", literal, read, allow)},
			[]*kerr.Error{kerr.InvalidRequest}, "Invalid empty resource name"},
		{"a principal without a colon", "admin", []kmsg.CreateACLsRequestCreation{noColon},
			[]*kerr.Error{kerr.InvalidRequest}, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
		{"pattern type MATCH fails the request", "admin", []kmsg.CreateACLsRequestCreation{
			aclCreation(topic, "t", literal, read, allow), aclCreation(topic, "t", kmsg.ACLResourcePatternTypeMatch, read, allow)},
			[]*kerr.Error{kerr.UnknownServerError, kerr.UnknownServerError}, ""},
		{"operation ANY fails the request", "admin", []kmsg.CreateACLsRequestCreation{aclCreation(topic, "t", literal, kmsg.ACLOperationAny, allow)},
			[]*kerr.Error{kerr.UnknownServerError}, ""},
		{"alice may not alter the cluster", "alice", []kmsg.CreateACLsRequestCreation{aclCreation(topic, "t", literal, read, allow)},
			[]*kerr.Error{kerr.ClusterAuthorizationFailed}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrCreateACLsRequest()
			req.Creations = tc.creations
			resp := saslRoundTrip(t, b, tc.user, tc.user+"-secret", req).(*kmsg.CreateACLsResponse)
			if len(resp.Results) != len(tc.want) {
				t.Fatalf("%d results", len(resp.Results))
			}
			for i, want := range tc.want {
				got := resp.Results[i]
				if err := kerr.ErrorForCode(got.ErrorCode); err != want && !(want == nil && err == nil) {
					t.Errorf("creation %d: %v, want %v", i, err, want)
				}
				if want != nil && tc.msg != "" && (got.ErrorMessage == nil || *got.ErrorMessage != tc.msg) {
					t.Errorf("creation %d: message %v, want %q", i, got.ErrorMessage, tc.msg)
				}
				if tc.msg == "" && got.ErrorMessage != nil {
					t.Errorf("creation %d: message %q, want none", i, *got.ErrorMessage)
				}
			}
		})
	}
	if n := b.meta.Image().Access.ACLs.Len(); n != 1 {
		t.Fatalf("%d ACLs, want only the valid one of the first request", n)
	}
	unknownCreate := kmsg.NewPtrCreateACLsRequest()
	unknownCreate.Creations = []kmsg.CreateACLsRequestCreation{aclCreation(topic, "t", literal, 0, allow)}
	unknownDelete := kmsg.NewPtrDeleteACLsRequest()
	unknownDelete.Filters = []kmsg.DeleteACLsRequestFilter{kmsg.NewDeleteACLsRequestFilter()}
	for _, req := range []kmsg.Request{unknownCreate, unknownDelete, kmsg.NewPtrDescribeACLsRequest()} {
		nc, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(requestFrame(req, "admin", 3)); err != nil {
			t.Fatal(err)
		}
		if _, err := protocol.ReadFrame(nc, 1<<20, nil); err == nil {
			t.Errorf("%s with an UNKNOWN code was answered; Kafka closes the connection", kmsg.NameForKey(req.Key()))
		}
		nc.Close()
	}
}

// TestACLsSurviveRestart: the ACLs a single node created are in its
// image again after a restart, so they are enforced from the start.
func TestACLsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	start := func() (*Broker, func()) {
		cfg := Config{Listeners: "PLAINTEXT://127.0.0.1:0", LogDirs: dir, NodeID: testNodeID, NumPartitions: 1,
			SocketRequestMaxBytes: 100 << 20, Log: storage.DefaultConfig(), Groups: testGroupConfig(),
			StandardAuthorizer: &StandardAuthorizerConfig{SuperUsers: []string{anonymousPrincipal}}}
		b, err := New(cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- b.Serve() }()
		return b, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := b.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-served; err != nil {
				t.Fatal(err)
			}
		}
	}
	b, stop := start()
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{
		aclCreation(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow)}
	if r := adminRoundTrip[*kmsg.CreateACLsResponse](t, b, create, 3); r.Results[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.Results[0].ErrorCode))
	}
	want := b.meta.Image().Access.ACLs.All()
	stop()
	b, stop = start()
	defer stop()
	if got := b.meta.Image().Access.ACLs.All(); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("after the restart: %+v, want %+v", got, want)
	}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if r := adminRoundTrip[*kmsg.DescribeACLsResponse](t, b, describe, 3); len(r.Resources) != 1 || r.Resources[0].ResourceName != "g" {
		t.Fatalf("describe after the restart: %+v", r.Resources)
	}
}

// TestAuthorizedOperations: Metadata, DescribeCluster, DescribeGroups,
// ConsumerGroupDescribe and DescribeTopicPartitions report the KIP-430
// bits of what the principal may do, computed by the StandardAuthorizer
// (READ implies DESCRIBE; the cluster's are 0 without DESCRIBE on it, all
// seven for a super user), and ListGroups leaves out the groups it may not
// describe.
func TestAuthorizedOperations(t *testing.T) {
	b := standardAuthorizerBroker(t)
	ctx := context.Background()
	admin := saslClient(t, b, "admin", "admin-secret")
	if _, err := kadm.NewClient(admin).CreateTopics(ctx, 1, 1, nil, "t", "u"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g", "h"} {
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.Generation = g, -1
		commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", TopicID: b.logs.Topic("t").ID,
			Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
		if r := saslRoundTrip(t, b, "admin", "admin-secret", commit).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit for %s: %v", g, kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
		}
	}
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{
		aclCreation(kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		aclCreation(kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDelete, kmsg.ACLPermissionTypeAllow),
	}
	if r := saslRoundTrip(t, b, "admin", "admin-secret", create).(*kmsg.CreateACLsResponse); r.Results[0].ErrorCode != 0 || r.Results[1].ErrorCode != 0 {
		t.Fatalf("create: %+v", r.Results)
	}
	const readDescribe = 1<<3 | 1<<8
	const deleteDescribe = 1<<6 | 1<<8
	const allCluster = 1<<5 | 1<<9 | 1<<10 | 1<<11 | 1<<12 | 1<<7 | 1<<8

	metadata := func(user string) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = true, true
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("u")}}
		v10 := kversion.Stable()
		v10.SetMaxKeyVersion(int16(kmsg.Metadata), 10)
		cl := saslClient(t, b, user, user+"-secret", kgo.MaxVersions(v10))
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	m := metadata("alice")
	if m.AuthorizedOperations != 0 || m.Topics[0].AuthorizedOperations != readDescribe || m.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code ||
		m.Topics[1].AuthorizedOperations != math.MinInt32 {
		t.Errorf("alice's metadata: cluster %b, t %b, u %v %d", m.AuthorizedOperations, m.Topics[0].AuthorizedOperations,
			kerr.ErrorForCode(m.Topics[1].ErrorCode), m.Topics[1].AuthorizedOperations)
	}
	if m := metadata("admin"); m.AuthorizedOperations != allCluster || m.Topics[1].AuthorizedOperations != 1<<3|1<<4|1<<5|1<<8|1<<6|1<<7|1<<10|1<<11 {
		t.Errorf("admin's metadata: cluster %b, u %b", m.AuthorizedOperations, m.Topics[1].AuthorizedOperations)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if r := saslRoundTrip(t, b, "admin", "admin-secret", dc).(*kmsg.DescribeClusterResponse); r.ClusterAuthorizedOperations != allCluster {
		t.Errorf("admin's DescribeCluster: %b", r.ClusterAuthorizedOperations)
	}
	dc.IncludeClusterAuthorizedOperations = false
	if r := saslRoundTrip(t, b, "admin", "admin-secret", dc).(*kmsg.DescribeClusterResponse); r.ClusterAuthorizedOperations != math.MinInt32 {
		t.Errorf("DescribeCluster not asking: %d", r.ClusterAuthorizedOperations)
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g", "h"}, true
	r := saslRoundTrip(t, b, "alice", "alice-secret", dg).(*kmsg.DescribeGroupsResponse)
	if r.Groups[0].ErrorCode != 0 || r.Groups[0].AuthorizedOperations != deleteDescribe || r.Groups[1].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice's DescribeGroups: g %v %b, h %v", kerr.ErrorForCode(r.Groups[0].ErrorCode), r.Groups[0].AuthorizedOperations, kerr.ErrorForCode(r.Groups[1].ErrorCode))
	}
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.Topics, dtp.ResponsePartitionLimit = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}, 10
	if r := saslRoundTrip(t, b, "alice", "alice-secret", dtp).(*kmsg.DescribeTopicPartitionsResponse); r.Topics[0].AuthorizedOperations != readDescribe {
		t.Errorf("alice's DescribeTopicPartitions of t: %b", r.Topics[0].AuthorizedOperations)
	}
	lg := saslRoundTrip(t, b, "alice", "alice-secret", kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "g" {
		t.Errorf("alice's ListGroups: %+v, want g alone", lg.Groups)
	}
}

// TestStandardAuthorizerAllocatesNothing: the check produce and fetch
// make for each topic allocates nothing, allowed or denied, literal or
// prefixed, on the store's current image.
func TestStandardAuthorizerAllocatesNothing(t *testing.T) {
	store := local.New(metadata.Empty, nil)
	acl := func(id byte, name string, pt metadata.ACLPatternType, perm metadata.ACLPermission) metadata.Record {
		return metadata.AccessControlEntryRecord{ID: [16]byte{id}, ResourceType: metadata.ACLResourceTopic, ResourceName: name, PatternType: pt,
			Principal: "User:alice", Host: "*", Operation: metadata.ACLOpRead, PermissionType: perm}
	}
	if _, err := store.Propose(acl(1, "orders", metadata.ACLPatternLiteral, metadata.ACLAllow), acl(2, "team.", metadata.ACLPatternPrefixed, metadata.ACLAllow),
		acl(3, "team.secret", metadata.ACLPatternPrefixed, metadata.ACLDeny)); err != nil {
		t.Fatal(err)
	}
	a := newStandardAuthorizer(&StandardAuthorizerConfig{SuperUsers: []string{"User:admin"}}, store)
	for _, c := range []struct {
		topic string
		want  bool
	}{{"orders", true}, {"team.orders", true}, {"team.secret.keys", false}, {"other", false}} {
		var got bool
		if n := testing.AllocsPerRun(1000, func() { got = a.Authorize("User:alice", "10.0.0.1", OpRead, ResourceTopic, c.topic) }); n != 0 {
			t.Errorf("READ on %s: %v allocations per check", c.topic, n)
		}
		if got != c.want {
			t.Errorf("READ on %s: %v, want %v", c.topic, got, c.want)
		}
	}
}

// BenchmarkProduceWithACLs is BenchmarkProduceAllocs' one-record produce
// with the StandardAuthorizer deciding among a thousand ACLs, the
// producer's principal no super user, beside the same without an
// authorizer.
func BenchmarkProduceWithACLs(b *testing.B) {
	for _, withACLs := range []bool{false, true} {
		b.Run(fmt.Sprintf("acls=%v", withACLs), func(b *testing.B) {
			br := startBroker(b, func(c *Config) {
				if withACLs {
					c.StandardAuthorizer = &StandardAuthorizerConfig{SuperUsers: []string{"User:admin"}}
				}
			})
			records := []metadata.Record{metadata.AccessControlEntryRecord{ID: [16]byte{1}, ResourceType: metadata.ACLResourceTopic,
				ResourceName: "allocs", PatternType: metadata.ACLPatternLiteral, Principal: anonymousPrincipal, Host: "*",
				Operation: metadata.ACLOpAll, PermissionType: metadata.ACLAllow}}
			for i := range 1000 {
				records = append(records, metadata.AccessControlEntryRecord{ID: [16]byte{2, byte(i), byte(i >> 8)}, ResourceType: metadata.ACLResourceTopic,
					ResourceName: fmt.Sprintf("team-%d.", i), PatternType: metadata.ACLPatternPrefixed, Principal: fmt.Sprintf("User:u%d", i), Host: "*",
					Operation: metadata.ACLOpWrite, PermissionType: metadata.ACLAllow})
			}
			if _, err := br.meta.Propose(records...); err != nil {
				b.Fatal(err)
			}
			frame, batchLen := produceFrame(1, -1)
			c := dialBench(b, br)
			benchTopic(b, br)
			resp := kmsg.NewPtrProduceResponse()
			resp.Version = 11
			if err := resp.ReadFrom(c.roundTrip(b, frame)); err != nil || kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode) != nil {
				b.Fatalf("produce: %v %+v", err, resp)
			}
			b.SetBytes(int64(batchLen))
			b.ReportAllocs()
			for b.Loop() {
				c.roundTrip(b, frame)
			}
		})
	}
}

// TestACLHostIsJavasHostAddress: an ACL's host matches the client's
// address as Kafka's clientAddress().getHostAddress() writes it: IPv6 in
// eight uncompressed groups, an IPv4-mapped address as IPv4. A client on
// [::1] is allowed by an ACL for 0:0:0:0:0:0:0:1, as on Kafka, and not by
// one for ::1.
func TestACLHostIsJavasHostAddress(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1": "127.0.0.1", "::ffff:10.0.0.1": "10.0.0.1", "::1": "0:0:0:0:0:0:0:1",
		"2001:db8::ff00:42:8329": "2001:db8:0:0:0:ff00:42:8329", "fe80::1:0:0:abcd": "fe80:0:0:0:1:0:0:abcd"} {
		if got := javaHostAddress(net.ParseIP(in)); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
	b := startBroker(t, func(c *Config) {
		c.Listeners = "PLAINTEXT://[::1]:0"
		c.StandardAuthorizer = &StandardAuthorizerConfig{}
	})
	describe := func() int16 {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny,
			kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return adminRoundTrip[*kmsg.DescribeACLsResponse](t, b, req, 3).ErrorCode
	}
	for _, tc := range []struct {
		host string
		want *kerr.Error
	}{{"::1", kerr.ClusterAuthorizationFailed}, {"0:0:0:0:0:0:0:1", nil}} {
		if _, err := b.meta.Propose(metadata.AccessControlEntryRecord{ID: [16]byte{1, byte(len(tc.host))}, ResourceType: metadata.ACLResourceCluster,
			ResourceName: clusterName, PatternType: metadata.ACLPatternLiteral, Principal: anonymousPrincipal, Host: tc.host,
			Operation: metadata.ACLOpDescribe, PermissionType: metadata.ACLAllow}); err != nil {
			t.Fatal(err)
		}
		if got := kerr.ErrorForCode(describe()); got != tc.want && !(got == nil && tc.want == nil) {
			t.Errorf("DESCRIBE on the cluster allowed from host %s: DescribeAcls from [::1] %v, want %v", tc.host, got, tc.want)
		}
	}
}
