package main

import (
	"crypto/tls"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
)

// TestParseJAAS: sasl.jaas.config strings parse as Kafka's JaasConfig
// parses them (StreamTokenizer's quoting, escapes and comments), or fail
// with its messages.
func TestParseJAAS(t *testing.T) {
	for _, tt := range []struct {
		in      string
		module  string
		options map[string]string
		err     string
	}{
		{in: `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			module:  plainLoginModule,
			options: map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}},
		{in: "  x.Y REQUIRED\n\tuser_bob='b o\\tb' user_$x-1=\"q\\\"\\101\\u\" ; ", module: "x.Y",
			options: map[string]string{"user_bob": "b o\tb", "user_$x-1": `q"Au`}},
		{in: "m required /* a comment user_x=\"no\" */ user_a=unquoted // to the end\n user_b=\"2\";", module: "m",
			options: map[string]string{"user_a": "unquoted", "user_b": "2"}},
		{in: `m optional;`, module: "m", options: map[string]string{}},
		{in: "m required user_a=\"unterminated\nuser_b=\"c\";", module: "m", options: map[string]string{"user_a": "unterminated", "user_b": "c"}},
		{in: ``, err: "Login module not specified in JAAS config"},
		{in: `// only a comment`, err: "Login module not specified in JAAS config"},
		{in: `m`, err: "Login module control flag not specified in JAAS config"},
		{in: `m mandatory;`, err: "Invalid login module control flag 'mandatory' in JAAS config"},
		{in: `m required user_a;`, err: "Value not specified for key 'user_a' in JAAS config"},
		{in: `m required user_a=123;`, err: "Value not specified for key 'user_a' in JAAS config"},
		{in: `m required user_a="x"`, err: "JAAS config entry not terminated by semi-colon"},
	} {
		entries, err := parseJAAS(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || len(entries) != 1 || entries[0].module != tt.module || !maps.Equal(entries[0].options, tt.options) {
			t.Errorf("%q: %+v, %v; want module %s options %v", tt.in, entries, err, tt.module, tt.options)
		}
	}
}

const scramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule required;"

// saslNode is a single node with a SASL_PLAINTEXT listener SASL.
func saslNode(changes map[string]string) map[string]string {
	return combined(withChanges(map[string]string{
		"listeners":                                 "PLAINTEXT://127.0.0.1:9092,SASL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
		"advertised.listeners":                      "PLAINTEXT://127.0.0.1:9092,SASL://127.0.0.1:9094",
		"listener.security.protocol.map":            "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                   "PLAIN",
		"listener.name.sasl.plain.sasl.jaas.config": plainLoginModule + ` required username="admin" password="pw" user_admin="pw" user_alice="alice-secret";`,
	}, changes))
}

// TestSASLListenerKeys: the SASL listener's mechanisms, users and limits
// come from Kafka's keys with Kafka's precedence; a JAAS configuration
// only without the mechanism prefix is refused, as Kafka ignores it.
func TestSASLListenerKeys(t *testing.T) {
	s, err := loadSettings(saslNode(map[string]string{"sasl.server.max.receive.size": "1024", "connection.failed.authentication.delay.ms": "0"}), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ls := s.ListenerSASL["SASL"]
	if ls == nil || len(s.ListenerSASL) != 1 || s.ListenerTLS["SASL"] != nil {
		t.Fatalf("ListenerSASL %v, ListenerTLS %v: want the SASL listener's only", s.ListenerSASL, s.ListenerTLS)
	}
	if !maps.Equal(ls.PlainUsers, map[string]string{"admin": "pw", "alice": "alice-secret"}) || len(ls.Mechanisms) != 1 ||
		ls.MaxReceiveSize != 1024 || ls.FailedDelay != 0 {
		t.Errorf("listener SASL %+v", ls)
	}
	// The listener's own key wins over the broker's.
	s, err = loadSettings(saslNode(map[string]string{"sasl.enabled.mechanisms": "GSSAPI", "listener.name.sasl.sasl.enabled.mechanisms": "PLAIN"}), zap.NewNop())
	if err != nil || s.ListenerSASL["SASL"].MaxReceiveSize != 524288 {
		t.Errorf("listener-prefixed mechanisms: %v", err)
	}
	// SCRAM's users are in the metadata: its JAAS configuration is only
	// required to be there, and PLAIN's is not read when PLAIN is off.
	s, err = loadSettings(saslNode(map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256", "listener.name.sasl.plain.sasl.jaas.config": "<unset>",
		"listener.name.sasl.scram-sha-256.sasl.jaas.config": scramLoginModule, "listener.name.sasl.scram-sha-512.sasl.jaas.config": scramLoginModule}), zap.NewNop())
	if err != nil || !slices.Equal(s.ListenerSASL["SASL"].Mechanisms, []string{"SCRAM-SHA-512", "SCRAM-SHA-256"}) || s.ListenerSASL["SASL"].PlainUsers != nil {
		t.Errorf("SCRAM only: %v %+v", err, s.ListenerSASL["SASL"])
	}
	for _, tt := range []struct {
		changes     map[string]string
		key, reason string
	}{
		{map[string]string{"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256", "listener.name.sasl.scram-sha-512.sasl.jaas.config": scramLoginModule},
			"listener.name.sasl.scram-sha-256.sasl.jaas.config", "missing: the JAAS configuration of mechanism SCRAM-SHA-256 on listener SASL"},
		{map[string]string{"sasl.enabled.mechanisms": "SCRAM-SHA-512", "listener.name.sasl.scram-sha-512.sasl.jaas.config": "a required; b required;"},
			"listener.name.sasl.scram-sha-512.sasl.jaas.config", "JAAS config property contains 2 login modules, should be 1 module"},
		{map[string]string{"listener.name.sasl.plain.sasl.jaas.config": "<unset>", "sasl.jaas.config": plainLoginModule + ` required user_a="b";`},
			"listener.name.sasl.plain.sasl.jaas.config", "sasl.jaas.config is ignored, as Kafka ignores"},
		{map[string]string{"listener.name.sasl.plain.sasl.jaas.config": "<unset>", "listener.name.sasl.sasl.jaas.config": plainLoginModule + ` required user_a="b";`},
			"listener.name.sasl.plain.sasl.jaas.config", "listener.name.sasl.sasl.jaas.config is ignored"},
		{map[string]string{"listener.name.sasl.plain.sasl.jaas.config": `a required; b required;`},
			"listener.name.sasl.plain.sasl.jaas.config", "JAAS config property contains 2 login modules, should be 1 module"},
		{map[string]string{"listener.name.sasl.plain.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`},
			"listener.name.sasl.plain.sasl.jaas.config", "the users of PLAIN are the user_<name> options of " + plainLoginModule},
		{map[string]string{"listener.name.sasl.plain.sasl.jaas.config": plainLoginModule + ` required user_a="secret"`},
			"listener.name.sasl.plain.sasl.jaas.config", "JAAS config entry not terminated by semi-colon"},
		{map[string]string{"sasl.enabled.mechanisms": "plain"}, "sasl.enabled.mechanisms", "unknown SASL mechanism plain"},
		{map[string]string{"sasl.enabled.mechanisms": ","}, "sasl.enabled.mechanisms", "No SASL mechanisms are enabled"},
		{map[string]string{"sasl.server.max.receive.size": "-1"}, "sasl.server.max.receive.size", "must be a whole number"},
	} {
		_, err := loadSettings(saslNode(tt.changes), zap.NewNop())
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%v: error %v, want one for %s saying %q", tt.changes, err, tt.key, tt.reason)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%v: error %v shows the JAAS configuration's password", tt.changes, err)
		}
	}
}

// TestSASLSSLClientAuth: a SASL_SSL listener has its SSL keys, but asks
// for a client certificate only when ssl.client.auth has its listener
// prefix, as Kafka's ChannelBuilders.
func TestSASLSSLClientAuth(t *testing.T) {
	p := newTestPKI(t)
	base := map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"ssl.keystore.type":              "PEM", "ssl.keystore.location": p.serverPEM,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM,
		"ssl.client.auth": "required",
	}
	s, err := loadSettings(saslNode(maps.Clone(base)), zap.NewNop())
	if err != nil || s.ListenerSASL["SASL"] == nil || s.ListenerTLS["SASL"] == nil {
		t.Fatalf("SASL_SSL listener: %v", err)
	}
	if got := s.ListenerTLS["SASL"].Config.ClientAuth; got != tls.NoClientCert {
		t.Errorf("broker-wide ssl.client.auth=required on SASL_SSL: client auth %v, want none", got)
	}
	base["listener.name.sasl.ssl.client.auth"] = "required"
	if s, err = loadSettings(saslNode(base), zap.NewNop()); err != nil || s.ListenerTLS["SASL"].Config.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("listener-prefixed ssl.client.auth=required: %v", err)
	}
}

// TestSASLBetweenNodesKeys: on a node of a cluster, an inter-broker
// listener with SASL is dialed with sasl.mechanism.inter.broker.protocol
// and a controller listener with sasl.mechanism.controller.protocol, each
// logging in with the username and password of that listener's JAAS
// configuration; GSSAPI (Kafka's default for both) and OAUTHBEARER are
// refused as not served between nodes, and Kafka's check that the
// inter-broker mechanism is enabled on its listener holds.
func TestSASLBetweenNodesKeys(t *testing.T) {
	three := "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293"
	controllerJAAS := plainLoginModule + ` required username="node" password="node-pw" user_node="node-pw";`
	sasl := func(changes map[string]string) map[string]string {
		return withChanges(map[string]string{"controller.quorum.voters": three, "inter.broker.listener.name": "SASL",
			"sasl.mechanism.inter.broker.protocol": "PLAIN"}, changes)
	}
	s, err := loadSettings(saslNode(sasl(nil)), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.InterBrokerSASL; got == nil || *got != (broker.PeerLogin{Mechanism: "PLAIN", Username: "admin", Password: "pw"}) || s.ControllerSASL != nil {
		t.Errorf("inter-broker login %+v, controller login %+v: want PLAIN as admin, none", got, s.ControllerSASL)
	}
	s, err = loadSettings(saslNode(sasl(map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.mechanism.controller.protocol": "PLAIN", "listener.name.controller.plain.sasl.jaas.config": controllerJAAS})), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ControllerSASL; got == nil || *got != (broker.PeerLogin{Mechanism: "PLAIN", Username: "node", Password: "node-pw"}) ||
		s.ListenerSASL["CONTROLLER"] == nil || s.ListenerSASL["CONTROLLER"].PlainUsers["node"] != "node-pw" {
		t.Errorf("controller login %+v, controller listener SASL %+v: want PLAIN as node, its users", got, s.ListenerSASL["CONTROLLER"])
	}
	for _, tt := range []struct {
		changes     map[string]string
		key, reason string
		unsupported bool
	}{
		{map[string]string{"sasl.mechanism.inter.broker.protocol": "<unset>"}, "sasl.mechanism.inter.broker.protocol",
			"the SASL mechanism GSSAPI (Kerberos) between nodes (Kafka's default when sasl.mechanism.inter.broker.protocol is unset)", true},
		{map[string]string{"sasl.mechanism.inter.broker.protocol": "OAUTHBEARER"}, "sasl.mechanism.inter.broker.protocol", "OAUTHBEARER between nodes", true},
		{map[string]string{"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}, "sasl.mechanism.inter.broker.protocol",
			"sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication", false},
		{map[string]string{"listener.name.sasl.plain.sasl.jaas.config": plainLoginModule + ` required user_admin="pw";`}, "listener.name.sasl.plain.sasl.jaas.config",
			"no username option", false},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
			"listener.name.controller.plain.sasl.jaas.config": controllerJAAS}, "sasl.mechanism.controller.protocol", "GSSAPI (Kerberos) between nodes", true},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT", "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
			"listener.name.controller.plain.sasl.jaas.config": controllerJAAS}, "sasl.mechanism.controller.protocol", "must include sasl.mechanism.controller.protocol in its sasl.enabled.mechanisms", false},
	} {
		_, err := loadSettings(saslNode(sasl(tt.changes)), zap.NewNop())
		var ue *unsupportedError
		if err == nil || !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), tt.reason) || errors.As(err, &ue) != tt.unsupported {
			t.Errorf("%v: error %v, want %s: %s (unsupported %v)", tt.changes, err, tt.key, tt.reason, tt.unsupported)
		}
	}
}
