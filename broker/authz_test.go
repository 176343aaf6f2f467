package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// switchAuthorizer allows everything until deny is set, then nothing; it
// records the principals it was asked about.
type switchAuthorizer struct {
	deny       atomic.Bool
	mu         sync.Mutex
	principals map[string]bool
}

func (a *switchAuthorizer) Authorize(principal, _ string, _ Operation, _ ResourceType, _ string) bool {
	a.mu.Lock()
	a.principals[principal] = true
	a.mu.Unlock()
	return !a.deny.Load()
}

// authzCase is one request sent with everything denied and the check of
// what Kafka answers then.
type authzCase struct {
	name    string
	req     func() kmsg.Request
	version int16
	check   func(t *testing.T, resp kmsg.Response)
}

// TestDenyAllAuthorizer walks every registered key against a broker whose
// authorizer refuses everything and checks each answers as Kafka's
// KafkaApis (and the KRaft controller's ControllerApis) does: the
// *_AUTHORIZATION_FAILED code in the field Kafka sets, or an answer
// filtered of what may not be seen; ApiVersions and DescribeCluster are
// not authorized. The topic, group and transaction exist (made while
// everything was allowed), so a filtered answer is empty only because of
// the authorizer, and afterwards nothing the refused requests asked for
// has happened.
func TestDenyAllAuthorizer(t *testing.T) {
	authz := &switchAuthorizer{principals: map[string]bool{}}
	b := startBroker(t, func(c *Config) { c.Authorizer = authz })
	ctx := context.Background()
	adm := kadm.NewClient(newClient(t, b))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	topicID := b.logs.Topic("t").ID
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	if resp := adminRoundTrip[*kmsg.OffsetCommitResponse](t, b, commit, 9); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("setup commit: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	initTxn := kmsg.NewPtrInitProducerIDRequest()
	initTxn.TransactionalID, initTxn.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
	if resp := adminRoundTrip[*kmsg.InitProducerIDResponse](t, b, initTxn, 5); resp.ErrorCode != 0 {
		t.Fatalf("setup init producer id: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// What the filtered answers hold while everything is allowed.
	allTopics := len(adminRoundTrip[*kmsg.MetadataResponse](t, b, kmsg.NewPtrMetadataRequest(), 12).Topics)
	if allTopics != 3 {
		t.Fatalf("allowed: metadata lists %d topics, want t and the two internal ones", allTopics)
	}
	if n := len(adminRoundTrip[*kmsg.ListGroupsResponse](t, b, kmsg.NewPtrListGroupsRequest(), 5).Groups); n != 1 {
		t.Fatalf("allowed: %d groups listed, want 1", n)
	}
	if n := len(adminRoundTrip[*kmsg.ListTransactionsResponse](t, b, kmsg.NewPtrListTransactionsRequest(), 1).TransactionStates); n != 1 {
		t.Fatalf("allowed: %d transactions listed, want 1", n)
	}
	authz.deny.Store(true)

	cases := denyAllCases(topicID)
	covered := map[int16]bool{}
	for _, tc := range cases {
		req := tc.req()
		covered[req.Key()] = true
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, adminRoundTrip[kmsg.Response](t, b, req, tc.version))
		})
	}
	for _, v := range ServedVersions() {
		if !covered[v.Key] {
			t.Errorf("%s is served but has no deny-all case", kmsg.NameForKey(v.Key))
		}
	}

	authz.deny.Store(false)
	if n := len(adminRoundTrip[*kmsg.MetadataResponse](t, b, kmsg.NewPtrMetadataRequest(), 12).Topics); n != allTopics {
		t.Errorf("after the refusals metadata lists %d topics, want %d", n, allTopics)
	}
	if level := b.svc.meta.Image().Features.Level("group.version"); level != 1 {
		t.Errorf("after the refusals group.version is finalized at %d, want 1", level)
	}
	if parts := b.logs.Topic("t").Partitions(); len(parts) != 1 || parts[0].Log.HighWatermark() != 0 {
		t.Errorf("after the refusals t has %d partitions, want 1 and empty", len(parts))
	}
	fetchOffsets := kmsg.NewPtrOffsetFetchRequest()
	fetchOffsets.Group = "g"
	if resp := adminRoundTrip[*kmsg.OffsetFetchResponse](t, b, fetchOffsets, 7); len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 5 {
		t.Errorf("after the refusals group g has %+v, want offset 5 for t-0", resp.Topics)
	}
	if e := b.meta.Image().Access.ClientQuotas.Entities(); len(e) != 0 {
		t.Errorf("after the refusals the client quotas are %v, want none", e)
	}
	if len(authz.principals) != 1 || !authz.principals[anonymousPrincipal] {
		t.Errorf("authorizer asked about %v, want only %s", authz.principals, anonymousPrincipal)
	}
}

// code checks one error code.
func code(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func denyAllCases(topicID [16]byte) []authzCase {
	topicAuth, groupAuth := kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed
	txnAuth, clusterAuth := kerr.TransactionalIDAuthorizationFailed, kerr.ClusterAuthorizationFailed
	produce := func(records []byte, txnID *string) func() kmsg.Request {
		return func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis, r.TransactionID = -1, 5000, txnID
			r.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: records}}}}
			return r
		}
	}
	txnBatch := func() []byte {
		bt := kmsg.NewRecordBatch()
		bt.Magic, bt.Attributes, bt.ProducerID, bt.ProducerEpoch = 2, 0x10, 1, 0
		bt.Length = int32(len(bt.AppendTo(nil)) - 12)
		return bt.AppendTo(nil)
	}
	fetch := func(byID bool) func() kmsg.Request {
		return func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxBytes, r.MinBytes, r.MaxWaitMillis = -1, 1<<20, 1, 5000
			rt := kmsg.FetchRequestTopic{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}
			if byID {
				rt.TopicID = topicID
			}
			r.Topics = []kmsg.FetchRequestTopic{rt}
			return r
		}
	}
	findCoordinator := func(keyType int8, key string) func() kmsg.Request {
		return func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = keyType, key, []string{key}
			return r
		}
	}
	return append(append(shareStateDenyCases(topicID), shareGroupDenyCases()...), []authzCase{
		{"ApiVersions is not authorized", func() kmsg.Request { return kmsg.NewPtrApiVersionsRequest() }, 4, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ApiVersionsResponse)
			if r.ErrorCode != 0 || len(r.ApiKeys) != len(ServedVersions()) {
				t.Errorf("error %d, %d keys", r.ErrorCode, len(r.ApiKeys))
			}
		}},
		{"DescribeAcls", func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}, 3, func(t *testing.T, resp kmsg.Response) {
			code(t, "describe acls", resp.(*kmsg.DescribeACLsResponse).ErrorCode, clusterAuth)
		}},
		{"CreateAcls", func() kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			r.Creations = []kmsg.CreateACLsRequestCreation{c}
			return r
		}, 3, func(t *testing.T, resp kmsg.Response) {
			code(t, "create acls", resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode, clusterAuth)
		}},
		{"DeleteAcls", func() kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r.Filters = []kmsg.DeleteACLsRequestFilter{f}
			return r
		}, 3, func(t *testing.T, resp kmsg.Response) {
			code(t, "delete acls", resp.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode, clusterAuth)
		}},
		{"SaslHandshake after authentication is ILLEGAL_SASL_STATE, not authorized", func() kmsg.Request {
			r := kmsg.NewPtrSASLHandshakeRequest()
			r.Mechanism = "PLAIN"
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "handshake", resp.(*kmsg.SASLHandshakeResponse).ErrorCode, kerr.IllegalSaslState)
		}},
		{"SaslAuthenticate after authentication is ILLEGAL_SASL_STATE, not authorized", func() kmsg.Request { return kmsg.NewPtrSASLAuthenticateRequest() }, 2,
			func(t *testing.T, resp kmsg.Response) {
				code(t, "authenticate", resp.(*kmsg.SASLAuthenticateResponse).ErrorCode, kerr.IllegalSaslState)
			}},
		{"Produce", produce(badInputBatch(), nil), 11, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			code(t, "partition", p.ErrorCode, topicAuth)
			if p.BaseOffset != -1 {
				t.Errorf("base offset %d, want -1", p.BaseOffset)
			}
		}},
		{"Produce transactional", produce(txnBatch(), kmsg.StringPtr("tx")), 11, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, txnAuth)
		}},
		{"Fetch by id", fetch(true), 17, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.FetchResponse)
			if r.ErrorCode != 0 {
				t.Errorf("top level: %v, want none", kerr.ErrorForCode(r.ErrorCode))
			}
			p := r.Topics[0].Partitions[0]
			code(t, "partition", p.ErrorCode, topicAuth)
			if p.HighWatermark != -1 || len(p.RecordBatches) != 0 {
				t.Errorf("high watermark %d, %d record bytes: a refused partition discloses nothing", p.HighWatermark, len(p.RecordBatches))
			}
		}},
		{"Fetch by name", fetch(false), 12, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, topicAuth)
		}},
		{"ListOffsets", func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			r.ReplicaID = -1
			r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
			return r
		}, 10, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			code(t, "partition", p.ErrorCode, topicAuth)
			if p.Offset != -1 {
				t.Errorf("offset %d, want -1", p.Offset)
			}
		}},
		{"Metadata of all topics lists none", func() kmsg.Request { return kmsg.NewPtrMetadataRequest() }, 12, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Topics) != 0 || len(r.Brokers) != 1 {
				t.Errorf("%d topics, %d brokers: want no topics, the broker", len(r.Topics), len(r.Brokers))
			}
		}},
		{"Metadata by name", func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("auto")}}
			r.AllowAutoTopicCreation = true
			return r
		}, 12, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Topics) != 2 {
				t.Fatalf("%d topics, want 2", len(r.Topics))
			}
			for _, mt := range r.Topics {
				code(t, *mt.Topic, mt.ErrorCode, topicAuth)
				if mt.TopicID != [16]byte{} || len(mt.Partitions) != 0 {
					t.Errorf("%s: id %x, %d partitions disclosed", *mt.Topic, mt.TopicID, len(mt.Partitions))
				}
			}
		}},
		{"Metadata by id", func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{TopicID: topicID}}
			return r
		}, 12, func(t *testing.T, resp kmsg.Response) {
			mt := resp.(*kmsg.MetadataResponse).Topics[0]
			code(t, "topic", mt.ErrorCode, topicAuth)
			if mt.Topic != nil {
				t.Errorf("name %q disclosed", *mt.Topic)
			}
		}},
		{"CreateTopics", func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "new", NumPartitions: 1, ReplicationFactor: 1}}
			return r
		}, 7, func(t *testing.T, resp kmsg.Response) {
			code(t, "topic", resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, topicAuth)
		}},
		{"DeleteTopics by name", func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("t")}}
			return r
		}, 6, func(t *testing.T, resp kmsg.Response) {
			code(t, "topic", resp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, topicAuth)
		}},
		{"DeleteTopics by id", func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: topicID}}
			return r
		}, 6, func(t *testing.T, resp kmsg.Response) {
			st := resp.(*kmsg.DeleteTopicsResponse).Topics[0]
			code(t, "topic", st.ErrorCode, topicAuth)
			if st.Topic != nil {
				t.Errorf("name %q disclosed", *st.Topic)
			}
		}},
		{"InitProducerID transactional", func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
			return r
		}, 5, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.InitProducerIDResponse)
			code(t, "top level", r.ErrorCode, txnAuth)
			if r.ProducerID != -1 {
				t.Errorf("producer id %d, want -1", r.ProducerID)
			}
		}},
		{"InitProducerID idempotent", func() kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() }, 5, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.InitProducerIDResponse).ErrorCode, clusterAuth)
		}},
		{"OffsetForLeaderEpoch", func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode, topicAuth)
		}},
		{"CreatePartitions", func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 2}}
			return r
		}, 3, func(t *testing.T, resp kmsg.Response) {
			code(t, "topic", resp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, topicAuth)
		}},
		{"DescribeConfigs", func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{
				{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"},
				{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"},
				{ResourceType: kmsg.ConfigResourceTypeClientMetrics, ResourceName: "s"},
			}
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.DescribeConfigsResponse)
			code(t, "topic", r.Resources[0].ErrorCode, topicAuth)
			code(t, "broker", r.Resources[1].ErrorCode, clusterAuth)
			code(t, "client metrics", r.Resources[2].ErrorCode, clusterAuth)
			if len(r.Resources[0].Configs)+len(r.Resources[1].Configs)+len(r.Resources[2].Configs) != 0 {
				t.Error("configs disclosed")
			}
		}},
		{"AlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.Resources = []kmsg.AlterConfigsRequestResource{
				{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}},
				{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"},
			}
			return r
		}, 2, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.AlterConfigsResponse)
			code(t, "topic", r.Resources[0].ErrorCode, topicAuth)
			code(t, "broker", r.Resources[1].ErrorCode, clusterAuth)
		}},
		{"IncrementalAlterConfigs", func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
				{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}},
				{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: ""},
				{ResourceType: kmsg.ConfigResourceTypeClientMetrics, ResourceName: "s", Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "metrics", Value: kmsg.StringPtr("*")}}},
			}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.IncrementalAlterConfigsResponse)
			code(t, "topic", r.Resources[0].ErrorCode, topicAuth)
			code(t, "broker", r.Resources[1].ErrorCode, clusterAuth)
			code(t, "client metrics", r.Resources[2].ErrorCode, clusterAuth)
		}},
		{"GetTelemetrySubscriptions is not authorized", func() kmsg.Request { return kmsg.NewPtrGetTelemetrySubscriptionsRequest() }, 0, func(t *testing.T, resp kmsg.Response) {
			if r := resp.(*kmsg.GetTelemetrySubscriptionsResponse); r.ErrorCode != 0 || r.ClientInstanceID == ([16]byte{}) {
				t.Errorf("error %d, instance id %x", r.ErrorCode, r.ClientInstanceID)
			}
		}},
		{"PushTelemetry is not authorized", func() kmsg.Request { return kmsg.NewPtrPushTelemetryRequest() }, 0, func(t *testing.T, resp kmsg.Response) {
			code(t, "zero instance id", resp.(*kmsg.PushTelemetryResponse).ErrorCode, kerr.InvalidRequest)
		}},
		{"DeleteRecords", func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
			return r
		}, 2, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
			code(t, "partition", p.ErrorCode, topicAuth)
			if p.LowWatermark != -1 {
				t.Errorf("low watermark %d, want -1", p.LowWatermark)
			}
		}},
		{"DescribeCluster is not authorized", func() kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() }, 1, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.DescribeClusterResponse)
			if r.ErrorCode != 0 || len(r.Brokers) != 1 {
				t.Errorf("error %d, %d brokers", r.ErrorCode, len(r.Brokers))
			}
		}},
		{"DescribeTopicPartitions named", func() kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.DescribeTopicPartitionsResponse)
			if len(r.Topics) != 1 || r.Topics[0].TopicID != ([16]byte{}) || len(r.Topics[0].Partitions) != 0 {
				t.Fatalf("topics %+v, want t refused without its id or partitions", r.Topics)
			}
			code(t, "topic", r.Topics[0].ErrorCode, topicAuth)
		}},
		{"DescribeTopicPartitions of every topic", func() kmsg.Request { return kmsg.NewPtrDescribeTopicPartitionsRequest() }, 0, func(t *testing.T, resp kmsg.Response) {
			if r := resp.(*kmsg.DescribeTopicPartitionsResponse); len(r.Topics) != 0 || r.NextCursor != nil {
				t.Errorf("topics %+v, cursor %+v disclosed", r.Topics, r.NextCursor)
			}
		}},
		{"DescribeLogDirs", func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() }, 4, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.DescribeLogDirsResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			if len(r.Dirs) != 0 {
				t.Errorf("%d dirs disclosed", len(r.Dirs))
			}
		}},
		{"AlterReplicaLogDirs", func() kmsg.Request {
			r := kmsg.NewPtrAlterReplicaLogDirsRequest()
			r.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{
				{Dir: "/a", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t", Partitions: []int32{0}}}},
				{Dir: "/b", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t", Partitions: []int32{0, 1}}}},
			}
			return r
		}, 2, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.AlterReplicaLogDirsResponse)
			if len(r.Topics) != 2 || len(r.Topics[0].Partitions) != 1 || len(r.Topics[1].Partitions) != 2 {
				t.Fatalf("results %+v, want one per topic of each dir, as Kafka's getErrorResponse", r.Topics)
			}
			for _, rt := range r.Topics {
				for _, p := range rt.Partitions {
					code(t, "partition", p.ErrorCode, clusterAuth)
				}
			}
		}},
		{"ListConfigResources", func() kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() }, 1, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ListConfigResourcesResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			if len(r.ConfigResources) != 0 {
				t.Errorf("%d config resources disclosed", len(r.ConfigResources))
			}
		}},
		{"DescribeClientQuotas", func() kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() }, 1, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.DescribeClientQuotasResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
		}},
		{"AlterClientQuotas", func() kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			r.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("alice")}},
				Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}}}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "entry", resp.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode, clusterAuth)
		}},
		{"ElectLeaders", func() kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			return r
		}, 2, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ElectLeadersResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			code(t, "partition", r.Topics[0].Partitions[0].ErrorCode, clusterAuth)
		}},
		{"UpdateFeatures", func() kmsg.Request {
			r := kmsg.NewPtrUpdateFeaturesRequest()
			r.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2}}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.UpdateFeaturesResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			if len(r.Results) != 0 {
				t.Errorf("results %v, want none", r.Results)
			}
		}},
		{"AlterPartitionReassignments", func() kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			code(t, "partition", r.Topics[0].Partitions[0].ErrorCode, clusterAuth)
		}},
		{"ListPartitionReassignments", func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() }, 0, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ListPartitionReassignmentsResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			if len(r.Topics) != 0 {
				t.Errorf("%d topics disclosed", len(r.Topics))
			}
		}},
		{"FindCoordinator group v6", findCoordinator(0, "g"), 6, func(t *testing.T, resp kmsg.Response) {
			c := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
			code(t, "coordinator", c.ErrorCode, groupAuth)
			if c.NodeID != -1 {
				t.Errorf("node %d disclosed", c.NodeID)
			}
		}},
		{"FindCoordinator group v2", findCoordinator(0, "g"), 2, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.FindCoordinatorResponse)
			code(t, "top level", r.ErrorCode, groupAuth)
			if r.ErrorMessage == nil || *r.ErrorMessage != "Group authorization failed." {
				t.Errorf("message %q, want Kafka's Errors.message(), %q", derefOr(r.ErrorMessage), "Group authorization failed.")
			}
		}},
		{"FindCoordinator transaction v3", findCoordinator(1, "tx"), 3, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.FindCoordinatorResponse)
			code(t, "top level", r.ErrorCode, txnAuth)
			if r.ErrorMessage == nil || *r.ErrorMessage != "Transactional Id authorization failed." {
				t.Errorf("message %q, want Kafka's Errors.message(), %q", derefOr(r.ErrorMessage), "Transactional Id authorization failed.")
			}
		}},
		{"JoinGroup", func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "g", 10000, 10000, "consumer"
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
			return r
		}, 9, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.JoinGroupResponse)
			code(t, "top level", r.ErrorCode, groupAuth)
			if r.MemberID != "" || r.Generation != -1 {
				t.Errorf("member %q generation %d, want none", r.MemberID, r.Generation)
			}
		}},
		{"SyncGroup", func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID, r.Generation = "g", "m", 1
			return r
		}, 5, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.SyncGroupResponse).ErrorCode, groupAuth)
		}},
		{"Heartbeat", func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = "g", "m", 1
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.HeartbeatResponse).ErrorCode, groupAuth)
		}},
		{"LeaveGroup", func() kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group = "g"
			r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			return r
		}, 5, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.LeaveGroupResponse).ErrorCode, groupAuth)
		}},
		{"DescribeGroups", func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}, 5, func(t *testing.T, resp kmsg.Response) {
			g := resp.(*kmsg.DescribeGroupsResponse).Groups[0]
			code(t, "group", g.ErrorCode, groupAuth)
			if g.Group != "g" || g.State != "" {
				t.Errorf("group %q state %q", g.Group, g.State)
			}
		}},
		{"ListGroups lists none", func() kmsg.Request { return kmsg.NewPtrListGroupsRequest() }, 5, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ListGroupsResponse)
			if r.ErrorCode != 0 || len(r.Groups) != 0 {
				t.Errorf("error %d, groups %+v: want none", r.ErrorCode, r.Groups)
			}
		}},
		{"DeleteGroups", func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}, 2, func(t *testing.T, resp kmsg.Response) {
			code(t, "group", resp.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, groupAuth)
		}},
		{"OffsetCommit", func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "g", -1
			r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9}}}}
			return r
		}, 9, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, groupAuth)
		}},
		{"OffsetFetch v9", func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", MemberEpoch: -1}}
			return r
		}, 9, func(t *testing.T, resp kmsg.Response) {
			g := resp.(*kmsg.OffsetFetchResponse).Groups[0]
			code(t, "group", g.ErrorCode, groupAuth)
			if len(g.Topics) != 0 {
				t.Errorf("offsets disclosed: %+v", g.Topics)
			}
		}},
		{"OffsetFetch v7", func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Group = "g"
			return r
		}, 7, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.OffsetFetchResponse)
			code(t, "top level", r.ErrorCode, groupAuth)
			if len(r.Topics) != 0 {
				t.Errorf("offsets disclosed: %+v", r.Topics)
			}
		}},
		{"OffsetDelete", func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "g"
			r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.OffsetDeleteResponse).ErrorCode, groupAuth)
		}},
		{"ConsumerGroupHeartbeat", func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = "cg", "m", 10000
			r.SubscribedTopicNames = []string{"t"}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, groupAuth)
		}},
		{"ConsumerGroupDescribe", func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{"g"}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "group", resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode, groupAuth)
		}},
		{"StreamsGroupHeartbeat", func() kmsg.Request {
			r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = "sg", "m", 10000
			r.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
				{SubtopologyID: "0", SourceTopics: []string{"t"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "sg-store-changelog"}}}}}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode, groupAuth)
		}},
		{"StreamsGroupDescribe", func() kmsg.Request {
			r := kmsg.NewPtrStreamsGroupDescribeRequest()
			r.Groups = []string{"g"}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			code(t, "group", resp.(*kmsg.StreamsGroupDescribeResponse).Groups[0].ErrorCode, groupAuth)
		}},
		{"StreamsGroupTopologyDescriptionUpdate", func() kmsg.Request {
			r := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
			r.Group, r.MemberID = "sg", "m"
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse).ErrorCode, groupAuth)
		}},
		{"AddPartitionsToTxn", func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 1, 0
			r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			return r
		}, 3, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode, txnAuth)
		}},
		{"AddPartitionsToTxn v4", func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx", 1, 0, true
			tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0}}}
			r.Transactions = append(r.Transactions, tx)
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.AddPartitionsToTxnResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			if len(r.Transactions) != 0 {
				t.Errorf("transactions answered past CLUSTER_AUTHORIZATION_FAILED: %+v", r.Transactions)
			}
		}},
		{"AddOffsetsToTxn", func() kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx", 1, 0, "g"
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode, txnAuth)
		}},
		{"EndTxn", func() kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", 1, 0
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.EndTxnResponse).ErrorCode, txnAuth)
		}},
		{"WriteTxnMarkers", func() kmsg.Request {
			r := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = 1, 0, true
			m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}
			r.Markers = append(r.Markers, m)
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.WriteTxnMarkersResponse)
			if len(r.Markers) != 1 || len(r.Markers[0].Topics) != 1 || len(r.Markers[0].Topics[0].Partitions) != 1 {
				t.Fatalf("answer %+v, want the one partition", r.Markers)
			}
			code(t, "partition", r.Markers[0].Topics[0].Partitions[0].ErrorCode, clusterAuth)
		}},
		{"TxnOffsetCommit", func() kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = "tx", "g", 1, 0, -1
			r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9, LeaderEpoch: -1}}}}
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, txnAuth)
		}},
		{"DescribeTransactions", func() kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{"tx"}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			st := resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
			code(t, "transaction", st.ErrorCode, txnAuth)
			if st.ProducerID > 0 {
				t.Errorf("producer id %d disclosed", st.ProducerID)
			}
		}},
		{"ListTransactions lists none", func() kmsg.Request { return kmsg.NewPtrListTransactionsRequest() }, 1, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.ListTransactionsResponse)
			if r.ErrorCode != 0 || len(r.TransactionStates) != 0 {
				t.Errorf("error %d, transactions %+v: want none", r.ErrorCode, r.TransactionStates)
			}
		}},
		{"DescribeProducers", func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
			code(t, "partition", p.ErrorCode, topicAuth)
			if len(p.ActiveProducers) != 0 {
				t.Errorf("producers %+v disclosed", p.ActiveProducers)
			}
		}},
		{"AlterUserScramCredentials", func() kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "bob", Mechanism: 1, Iterations: 4096, Salt: []byte("s"), SaltedPassword: []byte("p")}}
			r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 1}, {Name: "alice", Mechanism: 2}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
			if len(r.Results) != 2 || r.Results[0].User != "alice" || r.Results[1].User != "bob" {
				t.Fatalf("results %+v, want alice's and bob's", r.Results)
			}
			for _, res := range r.Results {
				code(t, res.User, res.ErrorCode, clusterAuth)
			}
		}},
		{"DescribeUserScramCredentials", func() kmsg.Request {
			r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			r.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "alice"}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
			code(t, "top level", r.ErrorCode, clusterAuth)
			if len(r.Results) != 1 || len(r.Results[0].CredentialInfos) != 0 {
				t.Fatalf("results %+v, want one without credentials", r.Results)
			}
			code(t, "user", r.Results[0].ErrorCode, clusterAuth)
		}},
		// Over PLAINTEXT the token keys stop before any authorization, as
		// Kafka's allowTokenRequests: nothing is created or disclosed.
		{"CreateDelegationToken", func() kmsg.Request {
			r := kmsg.NewPtrCreateDelegationTokenRequest()
			r.OwnerPrincipalType, r.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr("bob")
			return r
		}, 3, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.CreateDelegationTokenResponse)
			code(t, "top level", r.ErrorCode, kerr.DelegationTokenRequestNotAllowed)
			if r.TokenID != "" || len(r.HMAC) != 0 {
				t.Errorf("a token %q was created", r.TokenID)
			}
		}},
		{"RenewDelegationToken", func() kmsg.Request {
			r := kmsg.NewPtrRenewDelegationTokenRequest()
			r.HMAC = []byte("hmac")
			return r
		}, 2, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.RenewDelegationTokenResponse).ErrorCode, kerr.DelegationTokenRequestNotAllowed)
		}},
		{"ExpireDelegationToken", func() kmsg.Request {
			r := kmsg.NewPtrExpireDelegationTokenRequest()
			r.HMAC = []byte("hmac")
			return r
		}, 2, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.ExpireDelegationTokenResponse).ErrorCode, kerr.DelegationTokenRequestNotAllowed)
		}},
		{"DescribeDelegationToken", func() kmsg.Request { return kmsg.NewPtrDescribeDelegationTokenRequest() }, 3, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.DescribeDelegationTokenResponse)
			code(t, "top level", r.ErrorCode, kerr.DelegationTokenRequestNotAllowed)
			if len(r.TokenDetails) != 0 {
				t.Errorf("%d tokens disclosed", len(r.TokenDetails))
			}
		}},
	}...)
}
