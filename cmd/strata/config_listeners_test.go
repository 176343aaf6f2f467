package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// kafkaStockProperties is Apache Kafka 4.1's config/server.properties, unchanged.
const kafkaStockProperties = "testdata/kafka-4.1-server.properties"

func readStockProperties(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(kafkaStockProperties)
	if err != nil {
		t.Fatal(err)
	}
	props, err := parseProperties(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return props
}

func TestKafkaStockServerProperties(t *testing.T) {
	props := readStockProperties(t)
	props["log.dirs"] = t.TempDir()
	core, logs := observer.New(zapcore.DebugLevel)
	s, err := loadSettings(props, zap.New(core))
	if err != nil {
		t.Fatalf("Kafka's own server.properties: %v", err)
	}
	if s.Listeners != "PLAINTEXT://:9092" || s.AdvertisedListeners != "PLAINTEXT://localhost:9092" ||
		s.ControllerListener != "CONTROLLER://:9093" || s.NodeID != 1 {
		t.Errorf("listeners %q, advertised %q, controller %q, node.id %d; want PLAINTEXT://:9092, PLAINTEXT://localhost:9092, CONTROLLER://:9093, 1",
			s.Listeners, s.AdvertisedListeners, s.ControllerListener, s.NodeID)
	}
	infos := 0
	for _, e := range logs.All() {
		switch {
		case e.Level >= zapcore.WarnLevel:
			t.Errorf("unexpected %s line: %s %v", e.Level, e.Message, e.ContextMap())
		case e.Level == zapcore.InfoLevel && strings.Contains(e.Message, "controller listener is validated but not served"):
			infos++
		}
	}
	if infos != 1 {
		t.Errorf("%d info lines about the unserved controller listener, want 1", infos)
	}
}

// combined is a minimal combined node in the compat suite's form: voters, an
// explicit protocol map, no controller entry in advertised.listeners.
func combined(changes map[string]string) map[string]string {
	return withChanges(map[string]string{
		"process.roles":                  "broker,controller",
		"node.id":                        "1",
		"controller.quorum.voters":       "1@127.0.0.1:9093",
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
		"advertised.listeners":           "PLAINTEXT://127.0.0.1:9092",
		"controller.listener.names":      "CONTROLLER",
		"inter.broker.listener.name":     "PLAINTEXT",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	}, changes)
}

func TestCombinedNodeForms(t *testing.T) {
	tests := []struct {
		name                             string
		changes                          map[string]string
		listener, advertised, controller string
	}{
		{"voters", nil, "PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
		{"bootstrap servers instead of voters", map[string]string{"controller.quorum.voters": "<unset>",
			"controller.quorum.bootstrap.servers": "localhost:9093"}, "PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
		{"Kafka's default protocol map gives the controller PLAINTEXT", map[string]string{"listener.security.protocol.map": "<unset>"},
			"PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
		{"advertised.listeners absent", map[string]string{"advertised.listeners": "<unset>"},
			"PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
		{"named client listener", map[string]string{"listeners": "CLIENT://:9092,CONTROLLER://:9093",
			"advertised.listeners": "CLIENT://kafka.example:9092", "inter.broker.listener.name": "client",
			"listener.security.protocol.map": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT"}, "CLIENT://:9092", "CLIENT://kafka.example:9092", "CONTROLLER://:9093"},
		{"controller listener first, broker.id as node.id", map[string]string{"node.id": "<unset>", "broker.id": "3",
			"controller.quorum.voters": "3@localhost:9093", "listeners": "CONTROLLER://:9093,PLAINTEXT://:9092"},
			"PLAINTEXT://:9092", "PLAINTEXT://127.0.0.1:9092", "CONTROLLER://:9093"},
		{"inter-broker listener from security.inter.broker.protocol", map[string]string{"inter.broker.listener.name": "<unset>",
			"security.inter.broker.protocol": "PLAINTEXT"}, "PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
		{"several client listeners", map[string]string{"listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:19092,CONTROLLER://127.0.0.1:9093",
			"advertised.listeners": "INTERNAL://a.example:9092,EXTERNAL://b.example:19092", "inter.broker.listener.name": "internal",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			"INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:19092", "INTERNAL://a.example:9092,EXTERNAL://b.example:19092", "CONTROLLER://127.0.0.1:9093"},
		{"a client listener left out of advertised.listeners", map[string]string{"listeners": "INTERNAL://:9092,EXTERNAL://:19092,CONTROLLER://:9093",
			"advertised.listeners": "INTERNAL://a.example:9092", "inter.broker.listener.name": "INTERNAL",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			"INTERNAL://:9092,EXTERNAL://:19092", "INTERNAL://a.example:9092", "CONTROLLER://:9093"},
		{"two client listeners without advertised.listeners", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093,EXTERNAL://:19092",
			"advertised.listeners": "<unset>", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT"},
			"PLAINTEXT://:9092,EXTERNAL://:19092", "PLAINTEXT://:9092,EXTERNAL://:19092", "CONTROLLER://:9093"},
		{"IPv4 and IPv6 listeners on one port", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092,CONTROLLER://127.0.0.1:9093",
			"advertised.listeners": "<unset>", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,V6:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			"PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092", "PLAINTEXT://127.0.0.1:9092,V6://[::1]:9092", "CONTROLLER://127.0.0.1:9093"},
		{"unused SSL entry in the protocol map", map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"},
			"PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9092", "CONTROLLER://127.0.0.1:9093"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := loadSettings(combined(tt.changes), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			if s.Listeners != tt.listener || s.AdvertisedListeners != tt.advertised || s.ControllerListener != tt.controller {
				t.Errorf("listeners %q, advertised %q, controller %q; want %q, %q, %q",
					s.Listeners, s.AdvertisedListeners, s.ControllerListener, tt.listener, tt.advertised, tt.controller)
			}
		})
	}
}

func TestCombinedNodeRefused(t *testing.T) {
	tests := []struct {
		name    string
		changes map[string]string
		key     string // the key the error names
		reason  string
	}{
		{"broker role alone with a controller listener", map[string]string{"process.roles": "broker"}, "controller.listener.names",
			"must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role"},
		{"controller role alone with a client listener", map[string]string{"process.roles": "controller"}, "listeners",
			"must only contain KRaft controller listeners"},
		{"unknown role", map[string]string{"process.roles": "broker,zookeeper"}, "process.roles", "unknown process role 'zookeeper'"},
		{"duplicate role", map[string]string{"process.roles": "broker,broker"}, "process.roles", "duplicate role"},
		{"voter id twice", map[string]string{"controller.quorum.voters": "1@127.0.0.1:9093,1@b:9093"}, "controller.quorum.voters", "appears twice"},
		{"node not a voter", map[string]string{"controller.quorum.voters": "2@127.0.0.1:9093"}, "controller.quorum.voters", "node id 1 must be included"},
		{"malformed voter", map[string]string{"controller.quorum.voters": "127.0.0.1:9093"}, "controller.quorum.voters", "{id}@{host}:{port}"},
		{"no quorum at all", map[string]string{"controller.quorum.voters": "<unset>"}, "controller.quorum.voters", "either controller.quorum.bootstrap.servers"},
		{"a bootstrap server that is not host:port", map[string]string{"controller.quorum.voters": "<unset>",
			"controller.quorum.bootstrap.servers": "a:9093,b"}, "controller.quorum.bootstrap.servers", `entry "b": want {host}:{port}`},
		{"bootstrap controller elsewhere", map[string]string{"controller.quorum.voters": "<unset>",
			"controller.quorum.bootstrap.servers": "controller.example:9999"}, "controller.quorum.bootstrap.servers", "external quorum"},
		{"no node.id", map[string]string{"node.id": "<unset>"}, "node.id", "required when process.roles is set"},
		{"no controller.listener.names", map[string]string{"controller.listener.names": "<unset>"}, "controller.listener.names", "at least one value"},
		{"controller listener not in listeners", map[string]string{"controller.listener.names": "CONTROLLER,OTHER",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OTHER:PLAINTEXT"}, "controller.listener.names", "OTHER does not appear"},
		{"controller listener missing from listeners", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092"}, "controller.listener.names", "at least one value"},
		{"only controller listeners", map[string]string{"listeners": "CONTROLLER://127.0.0.1:9093", "advertised.listeners": "<unset>"}, "listeners", "at least one broker listener"},
		{"advertised name not a listener", map[string]string{"advertised.listeners": "OTHER://h:1",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OTHER:PLAINTEXT"}, "advertised.listeners", "not defined in listeners"},
		{"advertised controller on 0.0.0.0", map[string]string{"advertised.listeners": "PLAINTEXT://h:9092,CONTROLLER://0.0.0.0:9093"}, "advertised.listeners", "non-routable"},
		{"inter-broker listener is the controller", map[string]string{"inter.broker.listener.name": "CONTROLLER"}, "inter.broker.listener.name", "must be a listener name defined in advertised.listeners"},
		{"inter-broker listener unmapped", map[string]string{"inter.broker.listener.name": "INTERNAL"}, "inter.broker.listener.name", "not found in listener.security.protocol.map"},
		{"both inter-broker keys", map[string]string{"security.inter.broker.protocol": "PLAINTEXT"}, "inter.broker.listener.name", "only one of"},
		{"default inter-broker listener absent", map[string]string{"listeners": "CLIENT://:9092,CONTROLLER://:9093", "advertised.listeners": "<unset>",
			"inter.broker.listener.name": "<unset>", "listener.security.protocol.map": "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT"}, "inter.broker.listener.name", "PLAINTEXT must be a listener name"},
		{"two client listeners on one port", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093,EXTERNAL://:9092",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT"}, "listeners", "same port 9092"},
		{"two IPv4 listeners on one port", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://:9093,EXTERNAL://127.0.0.2:9092",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT"}, "listeners", "same port 9092"},
		{"a listener name twice", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093,plaintext://:19092"}, "listeners", "PLAINTEXT appears more than once"},
		{"a client listener without a protocol", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093,EXTERNAL://:19092"},
			"listeners", "no security protocol defined for listener EXTERNAL"},
		{"inter-broker listener not advertised", map[string]string{"listeners": "INTERNAL://:9092,EXTERNAL://:19092,CONTROLLER://:9093",
			"advertised.listeners": "EXTERNAL://b.example:19092", "inter.broker.listener.name": "INTERNAL",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			"inter.broker.listener.name", "INTERNAL must be a listener name defined in advertised.listeners; the valid options based on the configured listeners are EXTERNAL"},
		{"second client listener advertised on 0.0.0.0", map[string]string{"listeners": "PLAINTEXT://:9092,EXTERNAL://:19092,CONTROLLER://:9093",
			"advertised.listeners":           "PLAINTEXT://a.example:9092,EXTERNAL://0.0.0.0:19092",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"}, "advertised.listeners", "non-routable"},
		{"same port twice", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9092"}, "listeners", "same port"},
		{"bad protocol name", map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:TLS"}, "listener.security.protocol.map", "invalid security protocol `TLS`"},
		{"controller key without process.roles", map[string]string{"process.roles": "<unset>"}, "controller.listener.names", "needs process.roles=broker,controller"},
		{"control plane listener", map[string]string{"control.plane.listener.name": "CONTROLLER"}, "control.plane.listener.name", "not supported in KRaft mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadSettings(combined(tt.changes), zap.NewNop())
			var ce *configError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a configError", err)
			}
			if ce.Key != tt.key || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q, want one naming %s and %q", err, tt.key, tt.reason)
			}
		})
	}
}

func TestUnsupportedSecurityRefused(t *testing.T) {
	tests := []struct {
		changes map[string]string
		key     string
		feature string
	}{
		{map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"},
			"sasl.enabled.mechanisms", "the SASL mechanism GSSAPI (Kerberos) on the SASL_PLAINTEXT listener PLAINTEXT (Kafka's default"},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,GSSAPI"},
			"sasl.enabled.mechanisms", "the SASL mechanism GSSAPI (Kerberos) on the SASL_PLAINTEXT listener PLAINTEXT (strata serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER)"},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT", "listener.name.plaintext.sasl.enabled.mechanisms": "GSSAPI"},
			"listener.name.plaintext.sasl.enabled.mechanisms", "the SASL mechanism GSSAPI"},
		{map[string]string{"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": "com.example.Handler"},
			"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class", "custom SASL callback handlers"},
		{map[string]string{"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwt.validator.class": "com.example.Validator"},
			"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwt.validator.class", "a custom OAUTHBEARER JWT validator"},
		{map[string]string{"sasl.server.callback.handler.class": "com.example.Handler"}, "sasl.server.callback.handler.class", "custom SASL callback handlers"},
		{map[string]string{"listener.name.sasl_ssl.plain.sasl.server.callback.handler.class": "com.example.Handler"},
			"listener.name.sasl_ssl.plain.sasl.server.callback.handler.class", "custom SASL callback handlers"},
		{map[string]string{"principal.builder.class": "com.example.Builder"}, "principal.builder.class", "a custom principal builder"},
		{map[string]string{"create.topic.policy.class.name": "com.example.Policy"}, "create.topic.policy.class.name", "create topic policies"},
	}
	for _, tt := range tests {
		_, err := loadSettings(combined(tt.changes), zap.NewNop())
		var ue *unsupportedError
		if !errors.As(err, &ue) {
			t.Errorf("%v: error %v, want an unsupportedError", tt.changes, err)
			continue
		}
		if ue.Key != tt.key || !strings.Contains(err.Error(), "strata does not support "+tt.feature) {
			t.Errorf("%v: error %q, want one naming %s and saying strata does not support %s", tt.changes, err, tt.key, tt.feature)
		}
	}
	// Their off values, and ssl.* keys without an SSL listener, are harmless.
	for _, harmless := range []map[string]string{
		{"authorizer.class.name": ""},
		{"ssl.client.auth": "required", "ssl.keystore.location": "/etc/kafka/server.jks"},
		{"ssl.enabled.protocols": "TLSv1.3", "ssl.endpoint.identification.algorithm": "https"},
		{"sasl.enabled.mechanisms": " "},
		{"sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN", "connections.max.reauth.ms": "0"},
		{"listener.name.sasl_ssl.plain.sasl.jaas.config": "x required;", "sasl.kerberos.service.name": "kafka"},
		{"principal.builder.class": "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"},
		{"super.users": "User:admin", "allow.everyone.if.no.acl.found": "false"},
	} {
		if _, err := loadSettings(combined(harmless), zap.NewNop()); err != nil {
			t.Errorf("%v: %v", harmless, err)
		}
	}
}
