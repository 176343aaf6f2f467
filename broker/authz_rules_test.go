package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authzRule names one operation on one resource.
type authzRule struct {
	op       Operation
	resource ResourceType
	name     string
}

// ruleAuthorizer refuses exactly the rules it is given.
type ruleAuthorizer struct {
	mu   sync.Mutex
	deny map[authzRule]bool
}

func (a *ruleAuthorizer) Authorize(_, _ string, op Operation, resource ResourceType, name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.deny[authzRule{op, resource, name}]
}

func (a *ruleAuthorizer) set(rules ...authzRule) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deny = make(map[authzRule]bool, len(rules))
	for _, r := range rules {
		a.deny[r] = true
	}
}

// TestAuthorizerRefusesOneResource checks the checks a deny-all authorizer
// never reaches: with the first check passed, the next one refuses only
// what it names (a topic after the group, the group after the
// transactional id, CREATE after DESCRIBE), and the alternatives Kafka
// allows (CLUSTER_ACTION instead of per-topic rights, CREATE on the
// cluster instead of on the topic) are honoured.
func TestAuthorizerRefusesOneResource(t *testing.T) {
	authz := &ruleAuthorizer{}
	b := startBroker(t, func(c *Config) { c.Authorizer = authz })
	ctx := context.Background()
	adm := kadm.NewClient(newClient(t, b))
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "t", "u"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g", "h"} {
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.Generation = g, -1
		for _, tp := range []string{"t", "u"} {
			commit.Topics = append(commit.Topics, kmsg.OffsetCommitRequestTopic{Topic: tp, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}})
		}
		adminRoundTrip[*kmsg.OffsetCommitResponse](t, b, commit, 9)
	}
	initTxn := kmsg.NewPtrInitProducerIDRequest()
	initTxn.TransactionalID, initTxn.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 60000
	pid := adminRoundTrip[*kmsg.InitProducerIDResponse](t, b, initTxn, 5)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx", pid.ProducerID, pid.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0}}}
	if r := adminRoundTrip[*kmsg.AddPartitionsToTxnResponse](t, b, add, 3); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("setup: add partitions: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	committed := func(t *testing.T, group, topic string) int64 {
		t.Helper()
		authz.set()
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = group
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
		return adminRoundTrip[*kmsg.OffsetFetchResponse](t, b, r, 7).Topics[0].Partitions[0].Offset
	}
	deny := func(op Operation, resource ResourceType, name string) authzRule { return authzRule{op, resource, name} }
	cluster := func(op Operation) authzRule { return authzRule{op, ResourceCluster, clusterName} }
	twoTopics := func(mk func(topic string) kmsg.OffsetCommitRequestTopic) []kmsg.OffsetCommitRequestTopic {
		return []kmsg.OffsetCommitRequestTopic{mk("t"), mk("u")}
	}

	for _, tc := range []struct {
		name    string
		deny    []authzRule
		req     func() kmsg.Request
		version int16
		check   func(t *testing.T, resp kmsg.Response)
	}{
		{"OffsetCommit refuses only the topic", []authzRule{deny(OpRead, ResourceTopic, "t")}, func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "g", -1
			r.Topics = twoTopics(func(topic string) kmsg.OffsetCommitRequestTopic {
				return kmsg.OffsetCommitRequestTopic{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9}}}
			})
			return r
		}, 9, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.OffsetCommitResponse)
			code(t, "t", r.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
			if c := r.Topics[1].Partitions[0].ErrorCode; c != 0 {
				t.Errorf("u: %v", kerr.ErrorForCode(c))
			}
			if got, gotU := committed(t, "g", "t"), committed(t, "g", "u"); got != 5 || gotU != 9 {
				t.Errorf("committed t %d, u %d: want 5 (refused) and 9", got, gotU)
			}
		}},
		{"OffsetFetch of named topics", []authzRule{deny(OpDescribe, ResourceTopic, "t")}, func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "h", MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{
				{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0}}}}}
			return r
		}, 9, func(t *testing.T, resp kmsg.Response) {
			topics := resp.(*kmsg.OffsetFetchResponse).Groups[0].Topics
			if len(topics) != 2 {
				t.Fatalf("topics %+v: want t and u once each", topics)
			}
			offsets := map[string]kmsg.OffsetFetchResponseGroupTopicPartition{}
			for _, rt := range topics {
				offsets[rt.Topic] = rt.Partitions[0]
			}
			code(t, "t", offsets["t"].ErrorCode, kerr.TopicAuthorizationFailed)
			if offsets["t"].Offset != -1 || offsets["u"].Offset != 5 || offsets["u"].ErrorCode != 0 {
				t.Errorf("offsets %+v: want t -1 refused, u 5", offsets)
			}
		}},
		{"OffsetFetch of all topics leaves refused ones out", []authzRule{deny(OpDescribe, ResourceTopic, "t")}, func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "h", MemberEpoch: -1}}
			return r
		}, 9, func(t *testing.T, resp kmsg.Response) {
			g := resp.(*kmsg.OffsetFetchResponse).Groups[0]
			if len(g.Topics) != 1 || g.Topics[0].Topic != "u" {
				t.Errorf("topics %+v: want only u", g.Topics)
			}
		}},
		{"ListGroups without DESCRIBE on the cluster", []authzRule{cluster(OpDescribe), deny(OpDescribe, ResourceGroup, "h")}, func() kmsg.Request {
			return kmsg.NewPtrListGroupsRequest()
		}, 5, func(t *testing.T, resp kmsg.Response) {
			if g := resp.(*kmsg.ListGroupsResponse).Groups; len(g) != 1 || g[0].Group != "g" {
				t.Errorf("groups %+v: want only g", g)
			}
		}},
		{"ListGroups with DESCRIBE on the cluster", []authzRule{deny(OpDescribe, ResourceGroup, "h")}, func() kmsg.Request {
			return kmsg.NewPtrListGroupsRequest()
		}, 5, func(t *testing.T, resp kmsg.Response) {
			if g := resp.(*kmsg.ListGroupsResponse).Groups; len(g) != 2 {
				t.Errorf("groups %+v: want g and h", g)
			}
		}},
		{"DescribeTransactions leaves refused topics out", []authzRule{deny(OpDescribe, ResourceTopic, "t")}, func() kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{"tx"}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			st := resp.(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
			if st.ErrorCode != 0 || len(st.Topics) != 1 || st.Topics[0].Topic != "u" {
				t.Errorf("error %d, topics %+v: want only u", st.ErrorCode, st.Topics)
			}
		}},
		{"TxnOffsetCommit refuses the group", []authzRule{deny(OpRead, ResourceGroup, "g")}, func() kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = "tx", "g", pid.ProducerID, pid.ProducerEpoch, -1
			r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "u", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 9, LeaderEpoch: -1}}}}
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.GroupAuthorizationFailed)
		}},
		{"AddOffsetsToTxn refuses the group", []authzRule{deny(OpRead, ResourceGroup, "g")}, func() kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "tx", pid.ProducerID, pid.ProducerEpoch, "g"
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			code(t, "top level", resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode, kerr.GroupAuthorizationFailed)
		}},
		{"AddPartitionsToTxn refuses one topic, adds none", []authzRule{deny(OpWrite, ResourceTopic, "t")}, func() kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch = "tx", pid.ProducerID, pid.ProducerEpoch
			r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0, 7}}}
			return r
		}, 3, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.AddPartitionsToTxnResponse)
			code(t, "t-0", r.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
			code(t, "u-0", r.Topics[1].Partitions[0].ErrorCode, kerr.OperationNotAttempted)
			code(t, "u-7", r.Topics[1].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
		}},
		{"Produce transactional refuses the topic", []authzRule{deny(OpWrite, ResourceTopic, "t")}, func() kmsg.Request {
			bt := kmsg.NewRecordBatch()
			bt.Magic, bt.Attributes, bt.ProducerID, bt.ProducerEpoch = 2, 0x10, pid.ProducerID, pid.ProducerEpoch
			bt.Length = int32(len(bt.AppendTo(nil)) - 12)
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis, r.TransactionID = -1, 5000, kmsg.StringPtr("tx")
			r.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: bt.AppendTo(nil)}}}}
			return r
		}, 11, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
		}},
		{"Metadata auto-creates only with CREATE", []authzRule{cluster(OpCreate), deny(OpCreate, ResourceTopic, "auto1")}, func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("auto1")}, {Topic: kmsg.StringPtr("auto2")}}
			r.AllowAutoTopicCreation = true
			return r
		}, 12, func(t *testing.T, resp kmsg.Response) {
			r := resp.(*kmsg.MetadataResponse)
			code(t, "auto1", r.Topics[0].ErrorCode, kerr.TopicAuthorizationFailed)
			code(t, "auto2", r.Topics[1].ErrorCode, kerr.UnknownTopicOrPartition)
			if b.logs.Topic("auto1") != nil || b.logs.Topic("auto2") == nil {
				t.Error("want auto2 created (CREATE on the topic) and auto1 not")
			}
		}},
		{"CreateTopics without DESCRIBE_CONFIGS", []authzRule{cluster(OpCreate), deny(OpDescribeConfigs, ResourceTopic, "new")}, func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "new", NumPartitions: 2, ReplicationFactor: 1}}
			return r
		}, 7, func(t *testing.T, resp kmsg.Response) {
			st := resp.(*kmsg.CreateTopicsResponse).Topics[0]
			if st.ErrorCode != 0 || b.logs.Topic("new") == nil {
				t.Fatalf("not created: %v", kerr.ErrorForCode(st.ErrorCode))
			}
			code(t, "configs", st.ConfigErrorCode, kerr.TopicAuthorizationFailed)
			if st.NumPartitions != -1 || len(st.Configs) != 0 {
				t.Errorf("%d partitions, %d configs disclosed", st.NumPartitions, len(st.Configs))
			}
		}},
		{"CreateTopics with CREATE on the cluster", []authzRule{deny(OpCreate, ResourceTopic, "new2")}, func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "new2", NumPartitions: 1, ReplicationFactor: 1}}
			return r
		}, 7, func(t *testing.T, resp kmsg.Response) {
			if c := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != 0 {
				t.Errorf("topic: %v, want created", kerr.ErrorForCode(c))
			}
		}},
		{"DeleteTopics by id names a describable topic", []authzRule{cluster(OpDelete), deny(OpDelete, ResourceTopic, "t")}, func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: b.logs.Topic("t").ID}}
			return r
		}, 6, func(t *testing.T, resp kmsg.Response) {
			st := resp.(*kmsg.DeleteTopicsResponse).Topics[0]
			code(t, "topic", st.ErrorCode, kerr.TopicAuthorizationFailed)
			if st.Topic == nil || *st.Topic != "t" || b.logs.Topic("t") == nil {
				t.Errorf("name %v, want t, not deleted", st.Topic)
			}
		}},
		{"Fetch of an unknown name is refused before it is looked up", []authzRule{deny(OpRead, ResourceTopic, "nosuch")}, func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxBytes = -1, 1<<20
			r.Topics = []kmsg.FetchRequestTopic{{Topic: "nosuch", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
			return r
		}, 12, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
		}},
		{"Follower fetch with CLUSTER_ACTION needs no READ", []authzRule{deny(OpRead, ResourceTopic, "u")}, func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxBytes = 1, 1<<20
			r.Topics = []kmsg.FetchRequestTopic{{Topic: "u", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
			return r
		}, 12, func(t *testing.T, resp kmsg.Response) {
			if c := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
				t.Errorf("partition: %v", kerr.ErrorForCode(c))
			}
		}},
		{"Follower fetch without CLUSTER_ACTION", []authzRule{cluster(OpClusterAction)}, func() kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxBytes = 1, 1<<20
			r.Topics = []kmsg.FetchRequestTopic{{Topic: "u", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
			return r
		}, 12, func(t *testing.T, resp kmsg.Response) {
			code(t, "partition", resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
		}},
		{"OffsetForLeaderEpoch with CLUSTER_ACTION", []authzRule{deny(OpDescribe, ResourceTopic, "u")}, func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = 1
			r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "u", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
			return r
		}, 4, func(t *testing.T, resp kmsg.Response) {
			if c := resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
				t.Errorf("partition: %v", kerr.ErrorForCode(c))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			authz.set(tc.deny...)
			resp := adminRoundTrip[kmsg.Response](t, b, tc.req(), tc.version)
			tc.check(t, resp)
		})
	}
}

// TestConsumerGroupHeartbeatTopicAuthorization checks KafkaApis' and
// TopicRegexResolver's topic checks of a KIP-848 heartbeat: a named topic
// the member may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED, and a regex
// resolves only to the topics it may DESCRIBE.
func TestConsumerGroupHeartbeatTopicAuthorization(t *testing.T) {
	authz := &ruleAuthorizer{}
	b := startBroker(t, func(c *Config) { c.Authorizer = authz })
	adm := kadm.NewClient(newClient(t, b))
	if _, err := adm.CreateTopics(context.Background(), 1, 1, nil, "r-ok", "r-no"); err != nil {
		t.Fatal(err)
	}
	authz.set(authzRule{OpDescribe, ResourceTopic, "r-no"})
	hb := func(member string, epoch int32, mutate func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "rg", member, epoch, 30000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		mutate(req)
		return adminRoundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, b, req, 1)
	}
	named := hb("named", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{"r-ok", "r-no"} })
	code(t, "subscribed to a topic it may not describe", named.ErrorCode, kerr.TopicAuthorizationFailed)

	regex := func(epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		return hb("regex", epoch, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("r-.*") })
	}
	r := regex(0)
	if r.ErrorCode != 0 {
		t.Fatalf("regex join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	waitUntil(t, 10*time.Second, func() (bool, string) {
		r = regex(r.MemberEpoch)
		return r.Assignment != nil && len(r.Assignment.Topics) > 0, fmt.Sprintf("no assignment yet (epoch %d)", r.MemberEpoch)
	})
	ok := b.logs.Topic("r-ok").ID
	if len(r.Assignment.Topics) != 1 || r.Assignment.Topics[0].TopicID != ok {
		t.Fatalf("the regex assigned %+v, want only r-ok (%x)", r.Assignment.Topics, ok)
	}
}

// TestShareGroupHeartbeatChecksAsKafka44: Kafka 4.4's KafkaApis refuses a
// share member id that is empty or over 36 characters (INVALID_REQUEST)
// and a subscription to a topic the member may not DESCRIBE
// (TOPIC_AUTHORIZATION_FAILED) before the group coordinator sees it.
func TestShareGroupHeartbeatChecksAsKafka44(t *testing.T) {
	authz := &ruleAuthorizer{}
	b := startBroker(t, func(c *Config) { c.Authorizer, c.UnstableAPIVersions = authz, true })
	cl := newClient(t, b)
	if _, err := kadm.NewClient(cl).CreateTopics(context.Background(), 1, 1, nil, "s-ok", "s-no"); err != nil {
		t.Fatal(err)
	}
	authz.set(authzRule{OpDescribe, ResourceTopic, "s-no"})
	long := strings.Repeat("m", 37)
	code(t, "member id of 37 characters", shareHB(t, cl, "sg", long, 0, []string{"s-ok"}).ErrorCode, kerr.InvalidRequest)
	code(t, "subscribed to a topic it may not describe", shareHB(t, cl, "sg", "m1", 0, []string{"s-ok", "s-no"}).ErrorCode, kerr.TopicAuthorizationFailed)
	if r := shareHB(t, cl, "sg", strings.Repeat("m", 36), 0, []string{"s-ok"}); r.ErrorCode != 0 {
		t.Fatalf("member id of 36 characters: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
