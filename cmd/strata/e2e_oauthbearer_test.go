package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// oauthServerJAAS is the broker side of OAUTHBEARER in the tests: Kafka's
// unsecured validator requiring the scope kafka; the broker's own login
// (Kafka logs in at start) is admin.
const oauthServerJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ` +
	`unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";`

// oauthStrata is a strata process whose SASL_PLAINTEXT listener (the
// returned address) serves PLAIN and OAUTHBEARER, plus keys.
func oauthStrata(t *testing.T, keys map[string]string) (*proc, string) {
	t.Helper()
	all := map[string]string{
		"sasl.enabled.mechanisms":                                   "PLAIN,OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": oauthServerJAAS,
	}
	for k, v := range keys {
		all[k] = v
	}
	return saslBroker(t, "SASL_PLAINTEXT", all)
}

// oauthKafka is Apache Kafka from kafkaHome with the same SASL_PLAINTEXT listener as oauthStrata plus
// the extra lines, its JVM given the system properties props, its address
// returned; it is killed at the end.
func oauthKafka(t *testing.T, kafkaHome string, props []string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	k := kafkaTargetFrom(t, kafkaHome, dir)
	if len(props) > 0 {
		k.JVM = append([]string{"-Xmx512m", "-XX:+UseSerialGC"}, props...)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	file := filepath.Join(dir, "server.properties")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^(advertised\.)?listeners=PLAINTEXT://[^,\n]+`).ReplaceAllString(string(b), "${0},SASL_PLAINTEXT://"+addr)
	s = strings.Replace(s, "listener.security.protocol.map=PLAINTEXT:PLAINTEXT", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT", 1)
	s += "sasl.enabled.mechanisms=PLAIN,OAUTHBEARER\n" +
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + saslJAAS + "\n" +
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=" + oauthServerJAAS + "\n" + strings.Join(extra, "\n") + "\n"
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	return addr
}

// unsecuredJWT is an alg none JWT of claims.
func unsecuredJWT(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}

// oauthClientProps writes a Java client configuration authenticating with
// OAUTHBEARER as alice with the scope claim scope (Kafka's unsecured
// login), plus extra lines.
func oauthClientProps(t *testing.T, dir, scope string, extra ...string) string {
	t.Helper()
	name := filepath.Join(dir, "oauth-"+scope+".properties")
	writeFile(t, name, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "+
		`unsecuredLoginStringClaim_sub="alice" unsecuredLoginStringClaim_scope="`+scope+`";`+"\n"+strings.Join(extra, "\n")+"\n")
	return name
}

// saslFailure is the SaslAuthenticationException line a Java tool printed,
// or the SASL_AUTHENTICATION_FAILED text of a franz-go error.
var saslFailure = regexp.MustCompile(`SaslAuthenticationException: [^\n]*|SASL_AUTHENTICATION_FAILED[^\n]*`)

// oauthOutcomes runs the OAUTHBEARER scenario against the SASL listener at
// addr and returns what each step gave: Kafka's console producer and
// consumer with a good unsecured token, the producer with a token lacking
// the required scope, franz-go with a good token and with an expired one.
func oauthOutcomes(t *testing.T, addr string) map[string]string {
	home := kafkaToolsHome(t)
	dir := t.TempDir()
	out := map[string]string{}
	java := func(stdin, class string, args ...string) (string, error) {
		stdout, stderr, err := runKafkaTool(t, home, stdin, class, args...)
		return stdout + stderr, err
	}
	lines := []string{"oauth one", "oauth two", "oauth three"}
	if o, err := java(strings.Join(lines, "\n")+"\n", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", addr, "--topic", "oauth-java", "--command-config", oauthClientProps(t, dir, "kafka")); err != nil {
		t.Fatalf("console producer with OAUTHBEARER: %v\n%s", err, o)
	}
	got, err := java("", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", addr, "--topic", "oauth-java",
		"--from-beginning", "--max-messages", "3", "--timeout-ms", "60000", "--command-config", oauthClientProps(t, dir, "kafka"))
	out["java consumer"] = fmt.Sprintf("%v %v", err == nil, strings.HasPrefix(got, strings.Join(lines, "\n")+"\n"))
	o, _ := java("refused\n", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", addr, "--topic", "oauth-java", "--command-config", oauthClientProps(t, dir, "other"))
	out["java producer, wrong scope"] = saslFailure.FindString(o)
	if out["java producer, wrong scope"] == "" {
		t.Logf("console producer with the wrong scope printed:\n%s", tail(o, 10))
	}

	now := time.Now().Unix()
	good := unsecuredJWT(map[string]any{"sub": "alice", "scope": "kafka", "iat": now, "exp": now + 600})
	cl := newClient(t, addr, kgo.SASL(oauth.Auth{Token: good}.AsMechanism()), kgo.AllowAutoTopicCreation())
	acked := produceAll(t, cl, "oauth-franz", 0, 20)
	out["franz-go produce"] = strconv.Itoa(len(acked))
	expired := unsecuredJWT(map[string]any{"sub": "alice", "scope": "kafka", "iat": now - 600, "exp": now - 300})
	err = newClient(t, addr, kgo.SASL(oauth.Auth{Token: expired}.AsMechanism()), kgo.RequestRetries(0)).Ping(timeoutCtx(t, 20*time.Second))
	out["franz-go, expired"] = fmt.Sprint(err != nil) + " " + saslFailure.FindString(fmt.Sprint(err))
	return out
}

// TestOAuthBearerSideBySide: the same OAUTHBEARER scenario against strata
// and Apache Kafka 4.4.0, both with Kafka's unsecured validator requiring
// the scope kafka, gives the same outcomes: Kafka's console tools produce
// and consume, a token without the scope is refused with
// {"status":"insufficient_scope", "scope":"[kafka]"}, franz-go produces,
// and an expired token gets SASL_AUTHENTICATION_FAILED {"status":"invalid_token"}.
func TestOAuthBearerSideBySide(t *testing.T) {
	e2e(t)
	installedKafkaTools(t)
	_, strataAddr := oauthStrata(t, nil)
	kafkaAddr := oauthKafka(t, kafkaHome, nil)
	want := map[string]string{
		"java consumer":              "true true",
		"java producer, wrong scope": `SaslAuthenticationException: {"status":"insufficient_scope", "scope":"[kafka]"}`,
		"franz-go produce":           "20",
		"franz-go, expired":          `true SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: {"status":"invalid_token"}`,
	}
	results := map[string]map[string]string{}
	for name, addr := range map[string]string{"strata": strataAddr, "kafka": kafkaAddr} {
		results[name] = oauthOutcomes(t, addr)
	}
	for step, w := range want {
		s, k := results["strata"][step], results["kafka"][step]
		t.Logf("%s: strata %q, kafka %q", step, s, k)
		if s != k {
			t.Errorf("%s: strata %q, kafka %q; want the same", step, s, k)
		}
		if !strings.HasPrefix(s, w) {
			t.Errorf("%s: strata %q, want %q", step, s, w)
		}
	}
}

// TestOAuthBearerJWKSFile: strata configured with Kafka's
// OAuthBearerValidatorCallbackHandler and a JWKS file the test wrote
// authenticates franz-go with a token the test signed and refuses, with
// SASL_AUTHENTICATION_FAILED {"status":"invalid_token"}, one of another
// key, audience or issuer, or expired; and every case, the edges of
// jose4j's checks too (no aud, no iat, nbf, the clock skew), ends as it
// does on Apache Kafka 4.4.0 configured alike.
func TestOAuthBearerJWKSFile(t *testing.T) {
	e2e(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	writeFile(t, jwks, string(set))
	keys := map[string]string{
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url":                                          "file://" + jwks,
		"sasl.oauthbearer.expected.audience":                                          "strata",
		"sasl.oauthbearer.expected.issuer":                                            "https://issuer.test",
	}
	_, strataAddr := oauthStrata(t, keys)
	sign := func(now int64, k *rsa.PrivateKey, kid string, change map[string]any) string {
		claims := map[string]any{"sub": "alice", "aud": "strata", "iss": "https://issuer.test", "iat": now, "exp": now + 600}
		for n, v := range change {
			if v == nil {
				delete(claims, n)
			} else {
				claims[n] = v
			}
		}
		opts := &jose.SignerOptions{}
		if kid != "" {
			opts = opts.WithHeader("kid", kid)
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k}, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(claims)
		jws, err := s.Sign(b)
		if err != nil {
			t.Fatal(err)
		}
		token, _ := jws.CompactSerialize()
		return token
	}
	const refused = `SASL_AUTHENTICATION_FAILED: SASL Authentication failed.: {"status":"invalid_token"}`
	// casesAt signs the tokens with the times relative to now: each broker
	// gets tokens signed just before it is tried, so that a slow Kafka start
	// does not push "expired, within skew" out of the 30 s skew.
	casesAt := func(now int64) map[string]struct{ token, want string } {
		sign := func(k *rsa.PrivateKey, kid string, change map[string]any) string { return sign(now, k, kid, change) }
		return map[string]struct{ token, want string }{
			"good":                 {sign(key, "k", nil), "ok"},
			"other key":            {sign(other, "k", nil), refused},
			"wrong audience":       {sign(key, "k", map[string]any{"aud": "kafka"}), refused},
			"one of the audiences": {sign(key, "k", map[string]any{"aud": []string{"kafka", "strata"}}), "ok"},
			"no audience":          {sign(key, "k", map[string]any{"aud": nil}), refused},
			"wrong issuer":         {sign(key, "k", map[string]any{"iss": "https://evil.test"}), refused},
			"no issuer":            {sign(key, "k", map[string]any{"iss": nil}), refused},
			"expired":              {sign(key, "k", map[string]any{"exp": now - 600}), refused},
			// Accepted within the skew, but its session (KIP-368) has ended: the
			// next request closes the connection, on Kafka too.
			"expired, within skew":  {sign(key, "k", map[string]any{"exp": now - 10, "iat": now - 60}), "EOF"},
			"exp before iat":        {sign(key, "k", map[string]any{"exp": now + 60, "iat": now + 120}), refused},
			"exp before nbf":        {sign(key, "k", map[string]any{"exp": now + 60, "nbf": now + 70}), refused},
			"no exp":                {sign(key, "k", map[string]any{"exp": nil}), refused},
			"not before, in 10 min": {sign(key, "k", map[string]any{"nbf": now + 600}), refused},
			"not before, in skew":   {sign(key, "k", map[string]any{"nbf": now + 10}), "ok"},
			"no iat":                {sign(key, "k", map[string]any{"iat": nil}), refused},
			"iat in 10 min":         {sign(key, "k", map[string]any{"iat": now + 600}), ""},
			"no sub":                {sign(key, "k", map[string]any{"sub": nil}), refused},
			"blank sub":             {sign(key, "k", map[string]any{"sub": " "}), refused},
			"numeric sub":           {sign(key, "k", map[string]any{"sub": 42}), refused},
			"no kid":                {sign(key, "", nil), ""},
			"unsecured":             {unsecuredJWT(map[string]any{"sub": "alice", "aud": "strata", "iss": "https://issuer.test", "iat": now, "exp": now + 600}), refused},
		}
	}
	cases := casesAt(time.Now().Unix())
	outcomes := func(addr string) map[string]string {
		out := map[string]string{}
		for name, c := range casesAt(time.Now().Unix()) {
			err := newClient(t, addr, kgo.SASL(oauth.Auth{Token: c.token}.AsMechanism()), kgo.RequestRetries(0)).Ping(timeoutCtx(t, 20*time.Second))
			out[name] = "ok"
			if err != nil {
				out[name] = saslFailure.FindString(err.Error())
				if out[name] == "" {
					out[name] = err.Error()
				}
			}
		}
		return out
	}
	got := outcomes(strataAddr)
	for name, c := range cases {
		if c.want != "" && got[name] != c.want {
			t.Errorf("%s: %q, want %q", name, got[name], c.want)
		}
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed: no comparison with Kafka")
	}
	var extra []string
	for k, v := range keys {
		extra = append(extra, k+"="+v)
	}
	// Kafka 4.4.0 verifies as documented (4.1.1's
	// OAuthBearerValidatorCallbackHandler, with the default
	// sasl.oauthbearer.jwt.validator.class, validated with ClientJwtValidator,
	// which checks no signature, audience or issuer).
	if _, err := os.Stat(filepath.Join(kafkaHome, "libs")); err != nil {
		t.Skip("Kafka's jars are not cached: no comparison with Kafka")
	}
	kafka := outcomes(oauthKafka(t, kafkaHome, []string{"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file://" + jwks}, extra...))
	for name := range cases {
		t.Logf("%s: strata %q, kafka %q", name, got[name], kafka[name])
		if got[name] != kafka[name] {
			t.Errorf("%s: strata %q, kafka %q; want the same", name, got[name], kafka[name])
		}
	}
}

// oauthWireOutcomes sends OAUTHBEARER exchanges over raw connections to
// the listener at addr: what each answers, token and message.
func oauthWireOutcomes(t *testing.T, addr string) map[string]string {
	now := time.Now().Unix()
	first := func(authzid string, claims map[string]any) string {
		a := ""
		if authzid != "" {
			a = "a=" + authzid
		}
		return "n," + a + ",\x01auth=Bearer " + unsecuredJWT(claims) + "\x01\x01"
	}
	good := map[string]any{"sub": "alice", "scope": "kafka", "iat": now, "exp": now + 600}
	out := map[string]string{}
	exchange := func(name string, tokens ...string) {
		c := dialRawSASL(t, addr)
		c.handshake("OAUTHBEARER")
		var got []string
		for _, tok := range tokens {
			r := c.authenticate(tok)
			if strings.HasPrefix(r, "<nil>") && strings.Contains(r, "lifetime ") && !strings.Contains(r, "lifetime 0") {
				r = r[:strings.Index(r, "lifetime ")] + "lifetime >0" // the token's remaining lifetime, to the millisecond
			}
			got = append(got, r)
		}
		got = append(got, "then "+c.metadata())
		out[name] = strings.Join(got, " | ")
	}
	exchange("good token", first("", good))
	exchange("matching authzid", first("alice", good))
	exchange("other authzid", first("bob", good))
	exchange("malformed", "n,,auth=Bearer x")
	exchange("no auth", "n,,\x01k=v\x01\x01")
	exchange("scheme", "n,,\x01auth=Basic abc\x01\x01")
	exchange("0x01 first", "\x01")
	exchange("expired, 0x01", first("", map[string]any{"sub": "alice", "scope": "kafka", "exp": now - 60}), "\x01")
	exchange("no scope, 0x01", first("", map[string]any{"sub": "alice", "exp": now + 60}), "\x01")
	exchange("expired, then good", first("", map[string]any{"sub": "alice", "scope": "kafka", "exp": now - 60}), first("", good))
	return out
}

// TestOAuthBearerWireSideBySide: raw OAUTHBEARER exchanges get the same
// answers, byte for byte, from strata and Apache Kafka 4.4.0: success and
// its session lifetime, the authorization id check, Kafka's generic
// message for a malformed first message, the failure round's error JSON,
// and a new first message after a refusal.
func TestOAuthBearerWireSideBySide(t *testing.T) {
	e2e(t)
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not installed")
	}
	_, strataAddr := oauthStrata(t, nil)
	kafkaAddr := oauthKafka(t, kafkaHome, nil)
	results := map[string]map[string]string{}
	for name, addr := range map[string]string{"strata": strataAddr, "kafka": kafkaAddr} {
		results[name] = oauthWireOutcomes(t, addr)
	}
	for step, s := range results["strata"] {
		k := results["kafka"][step]
		t.Logf("%s: strata %q, kafka %q", step, s, k)
		if s != k {
			t.Errorf("%s: strata %q, kafka %q; want the same", step, s, k)
		}
	}
}
