package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListConfigResourcesAsKafka: ListConfigResources v1 lists, as Kafka
// 4.4.0 does, the groups with configs, the client metrics subscriptions,
// the brokers (as BROKER_LOGGER and BROKER) and the topics, by type in
// Kafka's order, only the types asked for, UNSUPPORTED_VERSION for a type
// it does not list; v0 lists the client metrics subscriptions only.
func TestListConfigResourcesAsKafka(t *testing.T) {
	b := startBroker(t, nil)
	createTopic(t, newAdmin(t, b), "t1", 1)
	if got := clientMetricsIAC(t, b, "s1", "metrics", "org.apache.kafka.producer."); got.ErrorCode != 0 {
		t.Fatalf("set s1: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	for _, g := range []string{"g3", "g1"} {
		if got := groupIAC(t, b, g, "consumer.session.timeout.ms", "50000"); got.ErrorCode != 0 {
			t.Fatalf("set %s: %v", g, kerr.ErrorForCode(got.ErrorCode))
		}
	}
	list := func(version int16, types ...int8) (int16, string) {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		r := adminRoundTrip[*kmsg.ListConfigResourcesResponse](t, b, req, version)
		var out []string
		for _, c := range r.ConfigResources {
			out = append(out, fmt.Sprintf("%d:%s", c.Type, c.Name))
		}
		return r.ErrorCode, strings.Join(out, " ")
	}
	for _, tc := range []struct {
		version int16
		types   []int8
		code    int16
		want    string
	}{
		{1, nil, 0, "32:g1 32:g3 16:s1 8:1 4:1 2:t1"},
		{1, []int8{2, 32}, 0, "32:g1 32:g3 2:t1"},
		{1, []int8{4}, 0, "4:1"},
		{1, []int8{16}, 0, "16:s1"},
		{1, []int8{1}, kerr.UnsupportedVersion.Code, ""},
		{1, []int8{99}, kerr.UnsupportedVersion.Code, ""},
		{0, nil, 0, "16:s1"},
	} {
		if code, got := list(tc.version, tc.types...); code != tc.code || got != tc.want {
			t.Errorf("v%d %v: %v %q, want Kafka's %v %q", tc.version, tc.types, kerr.ErrorForCode(code), got, kerr.ErrorForCode(tc.code), tc.want)
		}
	}
}
