package main

import (
	"crypto/tls"
	"errors"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// sslNode is a single combined node whose client listener SSL (port 9094)
// is mapped to SSL, with changes on top.
func sslNode(changes map[string]string) map[string]string {
	return combined(withChanges(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
		"advertised.listeners":           "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
	}, changes))
}

// TestSSLKeyStores loads the server's key from each store type Kafka
// reads, plain keys and per-listener ones.
func TestSSLKeyStores(t *testing.T) {
	p := newTestPKI(t)
	for name, keys := range map[string]map[string]string{
		"JKS by default": {"ssl.keystore.location": p.serverJKS, "ssl.keystore.password": storePass},
		"PKCS12":         {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p.serverP12, "ssl.keystore.password": storePass},
		"a PKCS12 file under the default type, as Java reads it": {"ssl.keystore.location": p.serverP12, "ssl.keystore.password": storePass},
		"a JKS file under type PKCS12, likewise":                 {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p.serverJKS, "ssl.keystore.password": storePass},
		"PEM file":                                               {"ssl.keystore.type": "PEM", "ssl.keystore.location": p.serverPEM},
		"inline PEM":                                             {"ssl.keystore.type": "PEM", "ssl.keystore.key": p.serverKey, "ssl.keystore.certificate.chain": p.serverChain},
		"inline PEM on one line, as a continued properties value": {"ssl.keystore.type": "PEM",
			"ssl.keystore.key":               strings.ReplaceAll(p.serverKey, "\n", " "),
			"ssl.keystore.certificate.chain": strings.ReplaceAll(p.serverChain, "\n", " ")},
		"encrypted PKCS#8 with ssl.key.password": {"ssl.keystore.type": "PEM", "ssl.key.password": "k3y",
			"ssl.keystore.key": p.encryptedKeyPEM(t, "k3y"), "ssl.keystore.certificate.chain": p.serverChain},
		"the listener's keys win": {"ssl.keystore.location": "/nonexistent.jks", "ssl.keystore.password": "wrong",
			"listener.name.ssl.ssl.keystore.type": "PKCS12", "listener.name.ssl.ssl.keystore.location": p.serverP12,
			"listener.name.ssl.ssl.keystore.password": storePass},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := loadSettings(sslNode(keys), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			lt := s.ListenerTLS["SSL"]
			if lt == nil || len(s.ListenerTLS) != 1 {
				t.Fatalf("ListenerTLS = %v, want the SSL listener's only", s.ListenerTLS)
			}
			if len(lt.Config.Certificates) != 1 || len(lt.Config.Certificates[0].Certificate) != 2 {
				t.Fatalf("certificates %v, want one chain of the server and the CA", lt.Config.Certificates)
			}
			if lt.Config.ClientAuth != tls.NoClientCert || lt.Config.MinVersion != tls.VersionTLS12 || lt.Config.MaxVersion != tls.VersionTLS13 {
				t.Errorf("client auth %v, versions %x-%x; want Kafka's defaults none, TLSv1.2-TLSv1.3",
					lt.Config.ClientAuth, lt.Config.MinVersion, lt.Config.MaxVersion)
			}
		})
	}
}

func TestSSLListenerSettings(t *testing.T) {
	p := newTestPKI(t)
	base := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": p.serverPEM}
	with := func(m map[string]string) map[string]string { return withChanges(maps.Clone(base), m) }
	for name, tt := range map[string]struct {
		keys  map[string]string
		check func(*tls.Config) bool
	}{
		"required":  {with(map[string]string{"ssl.client.auth": "required"}), func(c *tls.Config) bool { return c.ClientAuth == tls.RequireAndVerifyClientCert }},
		"requested": {with(map[string]string{"listener.name.ssl.ssl.client.auth": "requested", "ssl.client.auth": "required"}), func(c *tls.Config) bool { return c.ClientAuth == tls.VerifyClientCertIfGiven }},
		"TLSv1.3 only": {with(map[string]string{"ssl.enabled.protocols": "TLSv1.3"}), func(c *tls.Config) bool {
			return c.MinVersion == tls.VersionTLS13 && c.MaxVersion == tls.VersionTLS13
		}},
		"TLS 1.2 suites by Java's names turn TLS 1.3 off": {with(map[string]string{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, TLS_EMPTY_RENEGOTIATION_INFO_SCSV"}), func(c *tls.Config) bool {
			return len(c.CipherSuites) == 2 && c.CipherSuites[0] == tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 && c.MaxVersion == tls.VersionTLS12
		}},
		"PKCS12 trust store": {with(map[string]string{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p.trustP12, "ssl.truststore.password": storePass}),
			func(c *tls.Config) bool { return c.ClientCAs != nil && !c.ClientCAs.Equal(nil) }},
		"JKS trust store without its password": {with(map[string]string{"ssl.truststore.location": p.trustJKS}),
			func(c *tls.Config) bool { return c.ClientCAs != nil }},
		"endpoint identification accepted": {with(map[string]string{"ssl.endpoint.identification.algorithm": "https"}), func(c *tls.Config) bool { return true }},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := loadSettings(sslNode(tt.keys), zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(s.ListenerTLS["SSL"].Config) {
				t.Errorf("config %+v", s.ListenerTLS["SSL"].Config)
			}
		})
	}
}

// TestSSLRefused: each bad value stops start-up with the key that has it.
func TestSSLRefused(t *testing.T) {
	p := newTestPKI(t)
	pemStore := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": p.serverPEM}
	with := func(m map[string]string) map[string]string { return withChanges(maps.Clone(pemStore), m) }
	for _, tt := range []struct {
		keys   map[string]string
		key    string
		reason string
	}{
		{nil, "ssl.keystore.location", "listener SSL is SSL and has no key store"},
		{map[string]string{"ssl.keystore.location": p.serverJKS}, "ssl.keystore.password", "key store password is not specified"},
		{map[string]string{"ssl.keystore.location": p.serverJKS, "ssl.keystore.password": "wrong"}, "ssl.keystore.location", "Failed to load SSL keystore"},
		{map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p.serverP12, "ssl.keystore.password": "wrong"}, "ssl.keystore.location", "Failed to load SSL keystore"},
		{map[string]string{"ssl.keystore.type": "BKS", "ssl.keystore.location": p.serverJKS, "ssl.keystore.password": storePass}, "ssl.keystore.type", "unknown store type BKS"},
		{map[string]string{"ssl.keystore.location": "/nonexistent", "ssl.keystore.password": "x"}, "ssl.keystore.location", "cannot read"},
		{with(map[string]string{"ssl.keystore.password": "x"}), "ssl.keystore.password", "cannot be specified with PEM format"},
		{map[string]string{"ssl.keystore.key": p.serverKey, "ssl.keystore.certificate.chain": p.serverChain}, "ssl.keystore.key", "only for PEM, but key store type is JKS"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": p.serverKey}, "ssl.keystore.key", "certificate chain is not specified"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": p.encryptedKeyPEM(t, "k3y"), "ssl.keystore.certificate.chain": p.serverChain},
			"ssl.keystore.key", "set ssl.key.password"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": p.encryptedKeyPEM(t, "k3y"), "ssl.keystore.certificate.chain": p.serverChain,
			"ssl.key.password": "wrong"}, "ssl.keystore.key", "Private key could not be loaded"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": p.serverKey, "ssl.keystore.certificate.chain": p.serverChain,
			"ssl.key.password": "k3y"}, "ssl.keystore.key", "not an ENCRYPTED PRIVATE KEY"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.key": p.serverKey, "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"},
			"ssl.keystore.key", "Invalid PEM keystore configs"},
		{with(map[string]string{"ssl.client.auth": "always"}), "ssl.client.auth", "String must be one of: required, requested, none"},
		{with(map[string]string{"listener.name.ssl.ssl.client.auth": "always"}), "listener.name.ssl.ssl.client.auth", "String must be one of"},
		{with(map[string]string{"ssl.enabled.protocols": "TLSv1.2,SSLv3"}), "ssl.enabled.protocols", "unsupported protocol SSLv3"},
		{with(map[string]string{"ssl.enabled.protocols": "TLSv1.1,TLSv1.3"}), "ssl.enabled.protocols", "consecutive"},
		{with(map[string]string{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_NO_SUCH_SUITE"}), "ssl.cipher.suites", "unknown cipher suite TLS_NO_SUCH_SUITE"},
		{with(map[string]string{"ssl.truststore.location": p.trustP12, "ssl.truststore.type": "PKCS12", "ssl.truststore.password": "wrong"}), "ssl.truststore.location", "Failed to load SSL truststore"},
		{with(map[string]string{"ssl.truststore.password": "x"}), "ssl.truststore.password", "trust store is not specified"},
		{with(map[string]string{"ssl.truststore.certificates": "x"}), "ssl.truststore.certificates", "only for PEM"},
		{with(map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": "x"}), "ssl.truststore.certificates", "At least one certificate expected"},
		{with(map[string]string{"ssl.principal.mapping.rules": "RULE:^CN=(.*?)$/$1/LU"}), "ssl.principal.mapping.rules", "invalid rule"},
		{with(map[string]string{"ssl.principal.mapping.rules": `RULE:^CN=(.)\1$/$1/`}), "ssl.principal.mapping.rules", "invalid rule"},
	} {
		_, err := loadSettings(sslNode(tt.keys), zap.NewNop())
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%v: error %v, want one for %s saying %q", tt.keys, err, tt.key, tt.reason)
		}
	}
	_, err := loadSettings(sslNode(with(map[string]string{"ssl.engine.factory.class": "com.example.Factory"})), zap.NewNop())
	if ue := (*unsupportedError)(nil); !errors.As(err, &ue) || ue.Key != "ssl.engine.factory.class" {
		t.Errorf("ssl.engine.factory.class: error %v, want it refused as unsupported", err)
	}
}

// TestSSLBetweenNodes: a cluster node's SSL inter-broker and controller
// listeners give the client sides the node dials its peers with (its key
// store's certificate, its trust store's CAs), with the host name checked
// unless ssl.endpoint.identification.algorithm is empty; a broker-only
// node's inter-broker listener must have its controller listener's
// protocol, as raft's connections from the controller arrive on it (SASL
// too: config_sasl_test.go has SASL between nodes).
func TestSSLBetweenNodes(t *testing.T) {
	p := newTestPKI(t)
	store := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": p.serverPEM,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": p.caPEM}
	three := "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293"
	s, err := loadSettings(sslNode(withChanges(maps.Clone(store), map[string]string{"controller.quorum.voters": three,
		"inter.broker.listener.name": "SSL", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:SSL"})), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*tls.Config{"inter-broker": s.Cluster.InterBrokerTLS, "controller": s.Cluster.ControllerTLS} {
		if c == nil || len(c.Certificates) != 1 || c.RootCAs == nil || c.InsecureSkipVerify || c.MinVersion != tls.VersionTLS12 {
			t.Errorf("%s client side %+v: want the key store's certificate, the trust store, the host name checked, TLSv1.2 up", name, c)
		}
	}
	if s.Cluster.InterBrokerTLS != s.ListenerTLS["SSL"].Client || s.ListenerTLS["CONTROLLER"] == nil ||
		s.ListenerTLS["CONTROLLER"].Config.ClientCAs == nil {
		t.Errorf("listener TLS %+v: want the SSL listener's client side and the controller listener's server side", s.ListenerTLS)
	}
	s, err = loadSettings(sslNode(withChanges(maps.Clone(store), map[string]string{"controller.quorum.voters": three,
		"inter.broker.listener.name": "SSL", "listener.name.ssl.ssl.endpoint.identification.algorithm": ""})), zap.NewNop())
	if c := s.Cluster.InterBrokerTLS; err != nil || c == nil || !c.InsecureSkipVerify || c.VerifyConnection == nil || s.Cluster.ControllerTLS != nil {
		t.Errorf("empty endpoint identification: %v, %+v: want the chain verified alone, and a PLAINTEXT controller listener", err, s.Cluster)
	}
	_, err = loadSettings(sslNode(withChanges(maps.Clone(store), map[string]string{"ssl.endpoint.identification.algorithm": "ldaps"})), zap.NewNop())
	if ce := (*configError)(nil); !errors.As(err, &ce) || ce.Key != "ssl.endpoint.identification.algorithm" {
		t.Errorf("ssl.endpoint.identification.algorithm=ldaps: error %v, want it refused", err)
	}
	_, err = loadSettings(brokerOnly(withChanges(maps.Clone(store), map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"})), zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "the two must have the same security protocol") {
		t.Errorf("broker-only node, PLAINTEXT inter-broker and SSL controller listener: error %v, want it refused", err)
	}
	b, err := loadSettings(brokerOnly(map[string]string{"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:SSL",
		"ssl.keystore.type": "PEM", "listener.name.plaintext.ssl.keystore.location": p.serverPEM}), zap.NewNop())
	if err != nil || b.Cluster.ControllerTLS == nil || len(b.Cluster.ControllerTLS.Certificates) != 0 || b.ListenerTLS["CONTROLLER"] != nil {
		t.Errorf("broker-only node dialing an SSL controller listener with no key store of its own: %v, %+v", err, b.Cluster.ControllerTLS)
	}
	_, err = loadSettings(brokerOnly(map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}), zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "the two must have the same security protocol") {
		t.Errorf("broker-only node, PLAINTEXT inter-broker and SASL_PLAINTEXT controller listener: error %v, want it refused", err)
	}
}

// TestSSLKeytoolStores reads the stores Java's keytool writes: a PKCS12
// key store (EC key), a JKS one (RSA key, its own key password), and
// trust stores of both types.
func TestSSLKeytoolStores(t *testing.T) {
	if _, err := exec.LookPath("keytool"); err != nil {
		t.Skip("keytool not installed")
	}
	dir := t.TempDir()
	keytool := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("keytool", args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	p12, jks := filepath.Join(dir, "ks.p12"), filepath.Join(dir, "ks.jks")
	keytool("-genkeypair", "-alias", "broker", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost", "-validity", "2",
		"-storetype", "PKCS12", "-keystore", p12, "-storepass", storePass)
	keytool("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=localhost", "-validity", "2",
		"-storetype", "JKS", "-keystore", jks, "-storepass", storePass, "-keypass", "keypass1")
	der := filepath.Join(dir, "broker.der")
	keytool("-exportcert", "-alias", "broker", "-keystore", p12, "-storepass", storePass, "-file", der)
	tsP12, tsJKS := filepath.Join(dir, "ts.p12"), filepath.Join(dir, "ts.jks")
	keytool("-importcert", "-noprompt", "-alias", "ca", "-file", der, "-storetype", "PKCS12", "-keystore", tsP12, "-storepass", storePass)
	keytool("-importcert", "-noprompt", "-alias", "ca", "-file", der, "-storetype", "JKS", "-keystore", tsJKS, "-storepass", storePass)
	for name, keys := range map[string]map[string]string{
		"PKCS12": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12, "ssl.keystore.password": storePass,
			"ssl.truststore.type": "PKCS12", "ssl.truststore.location": tsP12, "ssl.truststore.password": storePass},
		"JKS": {"ssl.keystore.location": jks, "ssl.keystore.password": storePass, "ssl.key.password": "keypass1",
			"ssl.truststore.location": tsJKS, "ssl.truststore.password": storePass},
	} {
		s, err := loadSettings(sslNode(keys), zap.NewNop())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c := s.ListenerTLS["SSL"].Config; len(c.Certificates) != 1 || c.ClientCAs == nil {
			t.Fatalf("%s: certificates %d, client CAs %v", name, len(c.Certificates), c.ClientCAs)
		}
	}
}

// TestSSLInlinePEMInPropertiesFile: the inline PEM values as Kafka's docs
// write them in server.properties, each line continued with a backslash.
func TestSSLInlinePEMInPropertiesFile(t *testing.T) {
	p := newTestPKI(t)
	continued := func(pem string) string {
		return strings.ReplaceAll(strings.TrimSpace(pem), "\n", " \\\n    ")
	}
	props, err := parseProperties("ssl.keystore.type=PEM\n" +
		"ssl.keystore.key=" + continued(p.serverKey) + "\n" +
		"ssl.keystore.certificate.chain=" + continued(p.serverChain) + "\n")
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadSettings(sslNode(props), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if c := s.ListenerTLS["SSL"].Config.Certificates; len(c) != 1 || len(c[0].Certificate) != 2 {
		t.Fatalf("certificates %v, want the server's chain of two", c)
	}
}
