package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupIAC sets (or, with a nil value, deletes) configs of group with
// IncrementalAlterConfigs v1 and returns the resource's answer.
func groupIAC(t *testing.T, b *Broker, group string, kv ...any) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = kv[i].(string)
		if v, ok := kv[i+1].(string); ok {
			c.Value = &v
		} else {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return adminRoundTrip[*kmsg.IncrementalAlterConfigsResponse](t, b, req, 1).Resources[0]
}

// describeGroup is DescribeConfigs v4 of group with synonyms, names nil
// for every config.
func describeGroup(t *testing.T, b *Broker, group string, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
	req.Resources = append(req.Resources, r)
	return adminRoundTrip[*kmsg.DescribeConfigsResponse](t, b, req, 4).Resources[0]
}

// describedLine is one config as kafka-configs --describe --all prints it.
func describedLine(c kmsg.DescribeConfigsResponseResourceConfig) string {
	var syns []string
	for _, s := range c.ConfigSynonyms {
		syns = append(syns, fmt.Sprintf("%s:%s=%s", s.Source, s.Name, derefOr(s.Value)))
	}
	return fmt.Sprintf("%s=%s %s %s {%s}", c.Name, derefOr(c.Value), c.Source, c.ConfigType, strings.Join(syns, ", "))
}

// TestGroupConfigsMessagesAsKafka: refused GROUP config changes answer the
// code and message Apache Kafka 4.4.0 answers for them (recorded against
// it with kafka-configs and kmsg).
func TestGroupConfigsMessagesAsKafka(t *testing.T) {
	b := startBroker(t, nil)
	for _, tc := range []struct {
		group string
		kv    []any
		code  *kerr.Error
		msg   string
	}{
		{"g1", []any{"consumer.session.timeout.ms", "1000"}, kerr.InvalidConfig, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"g1", []any{"consumer.session.timeout.ms", "70000"}, kerr.InvalidConfig, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"g1", []any{"consumer.heartbeat.interval.ms", "1000"}, kerr.InvalidConfig, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{"g1", []any{"consumer.session.timeout.ms", "abc"}, kerr.InvalidConfig, "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{"g1", []any{"foo.bar", "1"}, kerr.InvalidConfig, "Unknown group config name: foo.bar"},
		{"g1", []any{"share.auto.offset.reset", "bogus"}, kerr.InvalidConfig, "Invalid value bogus for configuration share.auto.offset.reset: Invalid value `bogus` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"g1", []any{"streams.assignor.name", "bogus"}, kerr.InvalidConfig, "streams.assignor.name 'bogus' is not a registered task assignor. Registered assignors are: [sticky]."},
		{"g1", []any{"share.record.lock.duration.ms", "500"}, kerr.InvalidConfig, "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"g1", []any{"streams.num.standby.replicas", "5"}, kerr.InvalidConfig, "streams.num.standby.replicas must be less than or equal to 2"},
		{"", []any{"consumer.session.timeout.ms", "50000"}, kerr.InvalidRequest, "Default group resources are not allowed."},
	} {
		got := groupIAC(t, b, tc.group, tc.kv...)
		if got.ErrorCode != tc.code.Code || derefOr(got.ErrorMessage) != tc.msg {
			t.Errorf("%q %v: %v %q, want Kafka's %v %q", tc.group, tc.kv, kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage), tc.code, tc.msg)
		}
	}
	if got := describeGroup(t, b, ""); got.ErrorCode != kerr.InvalidRequest.Code || derefOr(got.ErrorMessage) != "Group name must not be empty" {
		t.Errorf("describe the default group: %v %q, want Kafka's INVALID_REQUEST \"Group name must not be empty\"", kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage))
	}
}

// TestGroupConfigsSetDescribeDeleteRestart: a group's configs are set
// (also for a group that does not exist, and the internal ones), listed
// as Kafka 4.4.0 lists them, survive a restart and go back to the broker's
// default when deleted.
func TestGroupConfigsSetDescribeDeleteRestart(t *testing.T) {
	cfg := Config{
		Listeners: "PLAINTEXT://127.0.0.1:0", LogDirs: t.TempDir(), NodeID: testNodeID, NumPartitions: 1,
		SocketRequestMaxBytes: 100 << 20, Groups: testGroupConfig(),
	}
	b, stop := runBroker(t, cfg)
	if got := groupIAC(t, b, "g1", "consumer.session.timeout.ms", "50000", "consumer.heartbeat.interval.ms", "6000", "consumer.assignor.offload.enable", "false"); got.ErrorCode != 0 {
		t.Fatalf("set: %v %q", kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage))
	}
	all := describeGroup(t, b, "g1")
	if all.ErrorCode != 0 || len(all.Configs) != 21 {
		t.Fatalf("describe g1: %v, %d configs, want Kafka's 21 (the internal ones left out)", kerr.ErrorForCode(all.ErrorCode), len(all.Configs))
	}
	lines := map[string]string{}
	for _, c := range all.Configs {
		lines[c.Name] = describedLine(c)
	}
	for name, want := range map[string]string{
		"consumer.session.timeout.ms":        "consumer.session.timeout.ms=50000 GROUP_CONFIG INT {GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}",
		"consumer.assignment.interval.ms":    "consumer.assignment.interval.ms=1000 DEFAULT_CONFIG INT {DEFAULT_CONFIG:group.consumer.assignment.interval.ms=1000}",
		"share.auto.offset.reset":            "share.auto.offset.reset=latest DEFAULT_CONFIG STRING {DEFAULT_CONFIG:share.auto.offset.reset=latest}",
		"streams.assignor.name":              "streams.assignor.name=sticky DEFAULT_CONFIG STRING {DEFAULT_CONFIG:group.streams.assignors=sticky}",
		"streams.rack.aware.assignment.tags": "streams.rack.aware.assignment.tags= DEFAULT_CONFIG LIST {DEFAULT_CONFIG:group.streams.rack.aware.assignment.tags=}",
	} {
		if lines[name] != want {
			t.Errorf("%s:\n got %s\nwant %s", name, lines[name], want)
		}
	}
	if _, listed := lines["consumer.assignor.offload.enable"]; listed {
		t.Errorf("the internal consumer.assignor.offload.enable is listed among every config")
	}
	named := describeGroup(t, b, "g1", "consumer.assignor.offload.enable")
	if len(named.Configs) != 1 || describedLine(named.Configs[0]) != "consumer.assignor.offload.enable=false GROUP_CONFIG BOOLEAN {GROUP_CONFIG:consumer.assignor.offload.enable=false, DEFAULT_CONFIG:group.consumer.assignor.offload.enable=true}" {
		t.Errorf("named internal config: %v", named.Configs)
	}

	stop()
	b, stop = runBroker(t, cfg)
	defer stop()
	after := describeGroup(t, b, "g1", "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")
	if len(after.Configs) != 2 || derefOr(after.Configs[0].Value) != "6000" || derefOr(after.Configs[1].Value) != "50000" {
		t.Fatalf("after a restart: %v", after.Configs)
	}
	if got := groupIAC(t, b, "g1", "consumer.session.timeout.ms", nil); got.ErrorCode != 0 {
		t.Fatalf("delete: %v %q", kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage))
	}
	deleted := describeGroup(t, b, "g1", "consumer.session.timeout.ms")
	if len(deleted.Configs) != 1 || describedLine(deleted.Configs[0]) != "consumer.session.timeout.ms=45000 DEFAULT_CONFIG INT {DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}" {
		t.Fatalf("after DELETE: %v", deleted.Configs)
	}
}

// TestGroupSessionTimeoutFromGroupConfig: a KIP-848 group's
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms, set
// with IncrementalAlterConfigs, are what its members get: the heartbeat
// interval in the answer, and a silent member fenced after the group's
// session timeout, not the broker's.
func TestGroupSessionTimeoutFromGroupConfig(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) {
		c.Groups.ConsumerSessionTimeout, c.Groups.ConsumerHeartbeatInterval = 60*time.Second, 5*time.Second
		c.StaticConfigs = map[string]string{"group.consumer.min.session.timeout.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "100"}
	})
	const topic, group = "fenced", "gfenced"
	if _, err := newAdmin(t, b).CreateTopic(testCtx(t), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if got := groupIAC(t, b, group, "consumer.session.timeout.ms", "1500", "consumer.heartbeat.interval.ms", "250"); got.ErrorCode != 0 {
		t.Fatalf("set: %v %q", kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage))
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, "silent", 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{topic}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	r := adminRoundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, b, req, 1)
	if r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 250 {
		t.Fatalf("join: %v, heartbeat interval %d, want the group's 250", kerr.ErrorForCode(r.ErrorCode), r.HeartbeatIntervalMillis)
	}
	joined := time.Now()
	waitUntil(t, 20*time.Second, func() (bool, string) {
		g := describe848(t, b, group)
		return len(g.Members) == 0, fmt.Sprintf("%d members", len(g.Members))
	})
	if took := time.Since(joined); took < 1400*time.Millisecond || took > 10*time.Second {
		t.Fatalf("the silent member was fenced after %v, want the group's 1.5s session timeout", took)
	}
}
