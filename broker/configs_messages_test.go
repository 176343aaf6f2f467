package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIncrementalAlterConfigsMessagesAsKafka: refused config changes
// answer the code and message Apache Kafka 4.1.1 answers for them
// (recorded against it), the message alone.
func TestIncrementalAlterConfigsMessagesAsKafka(t *testing.T) {
	b := startBroker(t, nil)
	createTopic(t, newAdmin(t, b), "t1", 1)
	value := func(s string) *string { return &s }
	set := func(k string, v *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Op: kmsg.IncrementalAlterConfigOpSet, Name: k, Value: v}
	}
	op := func(o kmsg.IncrementalAlterConfigOp, k, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Op: o, Name: k, Value: &v}
	}
	topic, broker := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker
	for _, tc := range []struct {
		what    string
		typ     kmsg.ConfigResourceType
		name    string
		configs []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code    *kerr.Error
		msg     string
	}{
		{"topic append to a non-list", topic, "t1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op(kmsg.IncrementalAlterConfigOpAppend, "retention.ms", "5")},
			kerr.InvalidConfig, "Can't APPEND to key retention.ms because its type is not LIST."},
		{"topic subtract from an unknown key", topic, "t1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op(kmsg.IncrementalAlterConfigOpSubtract, "nosuch", "5")},
			kerr.InvalidConfig, "Can't SUBTRACT to key nosuch because its type is not LIST."},
		{"broker append to a non-list", broker, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op(kmsg.IncrementalAlterConfigOpAppend, "log.retention.ms", "5")},
			kerr.InvalidConfig, "Config value append is not allowed for config key: log.retention.ms"},
		{"duplicate keys", topic, "t1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("retention.ms", value("5")), set("retention.ms", value("6"))},
			kerr.InvalidRequest, "Error due to duplicate config keys"},
		{"null values", topic, "t1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("retention.ms", nil), set("segment.ms", nil)},
			kerr.InvalidRequest, "Null value not supported for : retention.ms, segment.ms"},
		{"unknown operation", broker, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{op(7, "log.retention.ms", "1")},
			kerr.InvalidRequest, "Unknown operations type 7"},
		{"unknown topic", topic, "nosuch", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("retention.ms", value("1"))},
			kerr.UnknownTopicOrPartition, "The topic 'nosuch' does not exist."},
		{"default topic", topic, "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("retention.ms", value("1"))},
			kerr.InvalidRequest, "Default topic resources are not allowed."},
		{"invalid topic value", topic, "t1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("retention.ms", value("abc"))},
			kerr.InvalidConfig, "Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"invalid broker value", broker, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{set("log.retention.ms", value("abc"))},
			kerr.InvalidRequest, "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = tc.typ, tc.name, tc.configs
		req.Resources = append(req.Resources, r)
		got := adminRoundTrip[*kmsg.IncrementalAlterConfigsResponse](t, b, req, 1).Resources[0]
		if got.ErrorCode != tc.code.Code || derefOr(got.ErrorMessage) != tc.msg {
			t.Errorf("%s: %v %q, want Kafka's %v %q", tc.what, kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage), tc.code, tc.msg)
		}
	}
}
