package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The secure columns (strata-secure, kafka-secure) are single nodes whose
// clients authenticate: a SASL_SSL listener serving PLAIN (users from the
// listener's JAAS configuration) and SCRAM-SHA-256/512 (credentials the
// harness creates with AlterUserScramCredentials), and an SSL listener with
// ssl.client.auth=required whose principal is the certificate's CN. The
// PLAINTEXT listener stays for the harness's own set-up (topics, SCRAM
// users, ACLs). The certificates come from a CA generated per run. Both
// run Kafka's StandardAuthorizer with admin, alice and ANONYMOUS (the
// PLAINTEXT and controller listeners) as super users and no allow-everyone,
// so the acl_* scenarios' user bob may do only what the harness grants.

// secureScenarios run on the secure targets only, and only they run there.
var secureScenarios = []string{
	"auth_plain", "auth_scram_sha_256", "auth_scram_sha_512", "auth_mtls", "auth_bad_password", "auth_no_tls",
	"acl_denied", "acl_allowed", "acl_group_denied", "acl_deny_wins", "delegation_token",
}

func isSecureScenario(s string) bool {
	for _, x := range secureScenarios {
		if x == s {
			return true
		}
	}
	return false
}

// The users: admin, alice and bob with PLAIN passwords, alice with SCRAM
// credentials of the same password, and the client certificate's CN. bob
// is no super user: acl_denied runs as bob with no ACLs, the other acl_*
// scenarios as bob once grantACLs has given him the scenario's ACLs.
const (
	secureUser     = "alice"
	securePassword = "alice-secret"
	aclUser        = "bob"
	aclPassword    = "bob-secret"
	plainJAAS      = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" ` +
		`user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	superUsers         = "User:admin;User:alice;User:ANONYMOUS"
	scramJAAS          = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	allMechanisms      = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
	// tokenSecret is delegation.token.secret.key, which enables delegation
	// tokens (the delegation_token scenario).
	tokenSecret = "compat-tests-delegation-token-secret"
)

// security is a secure target's listeners and certificate files.
type security struct {
	saslAddr, sslAddr string // the SASL_SSL and SSL listeners
	caPEM             string // the CA certificate
	serverPEM         string // the broker's PKCS#8 key and certificate chain
	clientCert        string // the client certificate (CN=alice), PEM
	clientKey         string // its PKCS#8 key, PEM
	// mechanisms is the template's sasl.enabled.mechanisms.
	mechanisms string
	// authorizer is the template's authorizer.class.name knob ("" leaves it out).
	authorizer string
}

// properties is the secure part of the server.properties template for
// ports sasl and ssl next to the PLAINTEXT and CONTROLLER listeners.
func (s *security) properties() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sasl.enabled.mechanisms=%s\n", s.mechanisms)
	fmt.Fprintf(&b, "listener.name.sasl_ssl.plain.sasl.jaas.config=%s\n", plainJAAS)
	for _, m := range []string{"scram-sha-256", "scram-sha-512"} {
		fmt.Fprintf(&b, "listener.name.sasl_ssl.%s.sasl.jaas.config=%s\n", m, scramJAAS)
	}
	fmt.Fprintf(&b, "ssl.keystore.type=PEM\nssl.keystore.location=%s\n", s.serverPEM)
	fmt.Fprintf(&b, "ssl.truststore.type=PEM\nssl.truststore.location=%s\n", s.caPEM)
	b.WriteString("listener.name.ssl.ssl.client.auth=required\n")
	b.WriteString("ssl.principal.mapping.rules=RULE:^CN=([^,]*).*$/$1/,DEFAULT\n")
	fmt.Fprintf(&b, "delegation.token.secret.key=%s\n", tokenSecret)
	if s.authorizer != "" {
		fmt.Fprintf(&b, "authorizer.class.name=%s\nsuper.users=%s\n", s.authorizer, superUsers)
	}
	return b.String()
}

// newSecurity picks the two listeners' ports and writes a fresh CA, the
// broker's certificate (127.0.0.1 and localhost) and a client certificate
// into dir.
func newSecurity(dir string) (*security, error) {
	s := &security{mechanisms: allMechanisms, authorizer: standardAuthorizer}
	for _, a := range []*string{&s.saslAddr, &s.sslAddr} {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		*a = fmt.Sprintf("127.0.0.1:%d", p)
	}
	caKey, ca, err := makeCert(nil, nil, pkix.Name{CommonName: "compat-tests CA"})
	if err != nil {
		return nil, err
	}
	srvKey, srv, err := makeCert(ca, caKey, pkix.Name{CommonName: "localhost"})
	if err != nil {
		return nil, err
	}
	cliKey, cli, err := makeCert(ca, caKey, pkix.Name{CommonName: secureUser, Organization: []string{"compat-tests"}})
	if err != nil {
		return nil, err
	}
	certPEM := func(c *x509.Certificate) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	keyPEM := func(k *ecdsa.PrivateKey) ([]byte, error) {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), err
	}
	srvKeyPEM, err := keyPEM(srvKey)
	if err != nil {
		return nil, err
	}
	cliKeyPEM, err := keyPEM(cliKey)
	if err != nil {
		return nil, err
	}
	files := []struct {
		path *string
		name string
		data []byte
	}{
		{&s.caPEM, "ca.pem", certPEM(ca)},
		{&s.serverPEM, "server.pem", append(append(srvKeyPEM, certPEM(srv)...), certPEM(ca)...)},
		{&s.clientCert, "client.pem", certPEM(cli)},
		{&s.clientKey, "client.key", cliKeyPEM},
	}
	for _, f := range files {
		*f.path = filepath.Join(dir, f.name)
		if err := os.WriteFile(*f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// makeCert is an ECDSA P-256 key and its certificate, valid for a day,
// signed by parent (self-signed, a CA, when parent is nil).
func makeCert(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, subject pkix.Name) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, err
}

// runnerArgs are a secure scenario's bootstrap address and --arg values
// (see clients/RUNNERS.md).
func (s *security) runnerArgs(scenario string) (string, []string) {
	saslAs := func(mechanism, user, password string) []string {
		return []string{"security.protocol=SASL_SSL", "sasl.mechanism=" + mechanism, "sasl.username=" + user,
			"sasl.password=" + password, "ssl.ca.location=" + s.caPEM}
	}
	sasl := func(mechanism, password string) []string { return saslAs(mechanism, secureUser, password) }
	switch scenario {
	case "acl_denied", "acl_allowed", "acl_group_denied", "acl_deny_wins":
		return s.saslAddr, saslAs("PLAIN", aclUser, aclPassword)
	case "auth_plain":
		return s.saslAddr, sasl("PLAIN", securePassword)
	case "auth_scram_sha_256", "delegation_token":
		return s.saslAddr, sasl("SCRAM-SHA-256", securePassword)
	case "auth_scram_sha_512":
		return s.saslAddr, sasl("SCRAM-SHA-512", securePassword)
	case "auth_bad_password":
		return s.saslAddr, sasl("PLAIN", "not-"+securePassword)
	case "auth_mtls":
		return s.sslAddr, []string{"security.protocol=SSL", "ssl.ca.location=" + s.caPEM,
			"ssl.certificate.location=" + s.clientCert, "ssl.key.location=" + s.clientKey}
	case "auth_no_tls":
		return s.saslAddr, []string{"security.protocol=PLAINTEXT"}
	}
	return "", nil
}

// createScramUsers gives alice SCRAM-SHA-256 and SCRAM-SHA-512 credentials
// through the PLAINTEXT listener and waits until DescribeUserScramCredentials
// lists both.
func createScramUsers(seeds []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// One mechanism per request: kadm takes a user once per request.
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		up := []kadm.UpsertSCRAM{{User: secureUser, Mechanism: m, Iterations: 4096, Password: securePassword}}
		res, err := adm.AlterUserSCRAMs(ctx, nil, up)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			return fmt.Errorf("AlterUserScramCredentials %s: %w", m, err)
		}
	}
	for {
		d, err := adm.DescribeUserSCRAMs(ctx, secureUser)
		if err == nil && d.Error() == nil && len(d[secureUser].CredInfos) == 2 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("DescribeUserScramCredentials does not list both credentials of %s: %v", secureUser, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bobsACLs are the ACLs grantACLs gives bob for scenario on topic:
// acl_allowed may write and read topic and read the groups whose names start
// with it (the runners' groups are named after the topic); acl_group_denied
// may read topic but no group; acl_deny_wins is allowed to write the topics
// prefixed by topic's name without its target tag and denied to write topic
// itself, which must win.
func bobsACLs(scenario, topic string) []*kadm.ACLBuilder {
	principal := "User:" + aclUser
	allow := func() *kadm.ACLBuilder { return kadm.NewACLs().Allow(principal).AllowHosts("*") }
	switch scenario {
	case "acl_allowed":
		return []*kadm.ACLBuilder{
			allow().Topics(topic).Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
			allow().Groups(topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
		}
	case "acl_group_denied":
		return []*kadm.ACLBuilder{allow().Topics(topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)}
	case "acl_deny_wins":
		prefix := topic[:strings.LastIndex(topic, "-")+1]
		return []*kadm.ACLBuilder{
			allow().Topics(prefix).Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed),
			kadm.NewACLs().Deny(principal).DenyHosts("*").Topics(topic).Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		}
	}
	return nil
}

// grantACLs creates bobsACLs through the PLAINTEXT listener and waits until
// DescribeAcls lists every one, as the authorizer then has them.
func grantACLs(seeds []string, scenario, topic string) error {
	grants := bobsACLs(scenario, topic)
	if len(grants) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	created := 0
	for _, g := range grants {
		res, err := adm.CreateACLs(ctx, g)
		for _, r := range res {
			if err == nil && r.Err != nil {
				err = fmt.Errorf("%w %s", r.Err, r.ErrMessage)
			}
		}
		if err != nil {
			return fmt.Errorf("CreateAcls: %w", err)
		}
		created += len(res)
	}
	for {
		n := 0
		for _, g := range grants {
			res, err := adm.DescribeACLs(ctx, g)
			for _, r := range res {
				if err == nil && r.Err == nil {
					n += len(r.Described)
				}
			}
		}
		if n == created {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("DescribeAcls lists %d of the %d ACLs granted to User:%s", n, created, aclUser)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// What differs in a client's error between two runs, taken out before the
// brokers' errors are compared: the broker addresses, librdkafka's time in
// a state ("(after 101ms in state AUTH_REQ)") and its count of brokers
// down ("1/1 brokers are down", which counts the bootstrap and the
// advertised broker as they come and go).
var variable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):\d+`), "HOST:PORT"},
	{regexp.MustCompile(`after \d+ms`), "after Nms"},
	{regexp.MustCompile(`\d+/\d+ brokers are down`), "N/M brokers are down"},
}

// comparableError is a client's error text as compared across the brokers.
func comparableError(scenario, s string) string {
	if isSecureScenario(scenario) {
		for _, v := range variable {
			s = v.re.ReplaceAllString(s, v.with)
		}
	}
	return s
}
