package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerIAC sets one config of the BROKER resource node ("" for the
// cluster default) with IncrementalAlterConfigs v1.
func brokerIAC(t *testing.T, b *Broker, node, key, value string, validateOnly bool) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, node
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = key, &value
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	return adminRoundTrip[*kmsg.IncrementalAlterConfigsResponse](t, b, req, 1).Resources[0]
}

// TestDynamicBrokerConfigsAsKafka44: dynamic broker configs are taken or
// refused, per broker and at the cluster default level, with the code and
// message Apache Kafka 4.4.0 answers (recorded against it with
// ValidateOnly).
func TestDynamicBrokerConfigsAsKafka44(t *testing.T) {
	b := startBroker(t, nil)
	perBrokerOnly := "Cannot update these configs at default cluster level, broker id must be specified: [%s]"
	for _, tc := range []struct {
		kv               string
		node, clusterDef string // "" taken, else INVALID_REQUEST with this message (%s: the key)
	}{
		{"sasl.kerberos.min.time.before.relogin=60000", "", perBrokerOnly},
		{"listener.name.plaintext.sasl.kerberos.min.time.before.relogin=60001", "", perBrokerOnly},
		{"listener.name.plaintext.ssl.client.auth=required", "", perBrokerOnly},
		{"foo.bar=1", "", ""},
		{"num.io.threads=4", "", ""},
		{"log.retention.ms=abc", "Invalid value abc for configuration log.retention.ms: Not a number of type LONG", "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"},
		{"sasl.kerberos.min.time.before.relogin=abc", "Invalid value abc for configuration sasl.kerberos.min.time.before.relogin: Not a number of type LONG", "Invalid value abc for configuration sasl.kerberos.min.time.before.relogin: Not a number of type LONG"},
		{"node.id=5", "Cannot update these configs dynamically: [node.id]", "Cannot update these configs dynamically: [node.id]"},
		{"ssl.keystore.location=/x", "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]", "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
		{"max.connections=100", "", ""},
		{"listener.name.plaintext.max.connections=100", "", ""},
		{"message.max.bytes=2000000", "", ""},
		{"unclean.leader.election.enable=true", "", ""},
		{"background.threads=5", "", ""},
		{"compression.type=gzip", "", ""},
		{"listener.name.plaintext.foo=bar", "", perBrokerOnly},
		{"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256", "", perBrokerOnly},
		{"ssl.cipher.suites=x", "", perBrokerOnly},
		{"num.network.threads=0", "Invalid value 0 for configuration num.network.threads: Value must be at least 1", "Invalid value 0 for configuration num.network.threads: Value must be at least 1"},
		{"log.cleaner.threads=2", "", ""},
		{"listener.name.PLAINTEXT.ssl.protocol=TLSv1.3", "", perBrokerOnly},
		{"listener.name.plaintext.plain.sasl.jaas.config=x", "", perBrokerOnly},
		{"ssl.client.auth=bogus", "Invalid value bogus for configuration ssl.client.auth: String must be one of: required, requested, none", "Invalid value bogus for configuration ssl.client.auth: String must be one of: required, requested, none"},
	} {
		k, v, _ := strings.Cut(tc.kv, "=")
		for _, level := range []struct{ node, want string }{{"1", tc.node}, {"", tc.clusterDef}} {
			want := strings.ReplaceAll(level.want, "%s", k)
			code := int16(0)
			if want != "" {
				code = kerr.InvalidRequest.Code
			}
			got := brokerIAC(t, b, level.node, k, v, true)
			if got.ErrorCode != code || (want != "" && derefOr(got.ErrorMessage) != want) {
				t.Errorf("%s on %q: %v %q, want Kafka's %v %q", tc.kv, level.node, kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage), kerr.ErrorForCode(code), want)
			}
		}
	}
}

// TestDynamicBrokerConfigsKeptAndDescribed: dynamic broker configs Strata
// does not apply are kept, across a restart, and described as Kafka 4.4.0
// describes them: one of Kafka's with its value and type, writable; a
// listener-prefixed one read-only with the type of the config it
// prefixes; a key Kafka does not know read-only and sensitive, without a
// value or type.
func TestDynamicBrokerConfigsKeptAndDescribed(t *testing.T) {
	cfg := Config{
		Listeners: "PLAINTEXT://127.0.0.1:0", LogDirs: t.TempDir(), NodeID: testNodeID, NumPartitions: 1,
		SocketRequestMaxBytes: 100 << 20, Groups: testGroupConfig(),
	}
	b, stop := runBroker(t, cfg)
	for _, kv := range []string{"sasl.kerberos.min.time.before.relogin=60000", "listener.name.plaintext.sasl.kerberos.min.time.before.relogin=60001", "foo.bar=1"} {
		k, v, _ := strings.Cut(kv, "=")
		if got := brokerIAC(t, b, "1", k, v, false); got.ErrorCode != 0 {
			t.Fatalf("%s: %v %q", kv, kerr.ErrorForCode(got.ErrorCode), derefOr(got.ErrorMessage))
		}
	}
	stop()
	b, stop = runBroker(t, cfg)
	defer stop()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, r)
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range adminRoundTrip[*kmsg.DescribeConfigsResponse](t, b, req, 4).Resources[0].Configs {
		got[c.Name] = c
	}
	for name, want := range map[string]struct {
		value            string
		readOnly, secret bool
		typ              kmsg.ConfigType
	}{
		"sasl.kerberos.min.time.before.relogin":                         {"60000", false, false, kmsg.ConfigTypeLong},
		"listener.name.plaintext.sasl.kerberos.min.time.before.relogin": {"60001", true, false, kmsg.ConfigTypeLong},
		"foo.bar": {"<nil>", true, true, kmsg.ConfigTypeUnknown},
	} {
		c, ok := got[name]
		if !ok || derefOr(c.Value) != want.value || c.ReadOnly != want.readOnly || c.IsSensitive != want.secret || c.ConfigType != want.typ ||
			c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
			t.Errorf("%s: listed %v, value %s read-only %v sensitive %v type %v source %v; want Kafka's %+v from DYNAMIC_BROKER_CONFIG",
				name, ok, derefOr(c.Value), c.ReadOnly, c.IsSensitive, c.ConfigType, c.Source, want)
		}
	}
}
