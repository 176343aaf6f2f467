package broker

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// unsecuredJWT is an alg none JWT of claims, as Kafka's
// OAuthBearerUnsecuredLoginCallbackHandler makes them.
func unsecuredJWT(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}

// oauthFirst is an OAUTHBEARER client first message carrying token.
func oauthFirst(authzid, token string) []byte {
	a := ""
	if authzid != "" {
		a = "a=" + authzid
	}
	return []byte("n," + a + ",\x01auth=Bearer " + token + "\x01\x01")
}

// oauthBroker is a broker whose SASL listener serves PLAIN and OAUTHBEARER
// with validator.
func oauthBroker(t *testing.T, validator OAuthBearerValidator, mutate func(*Config)) *Broker {
	t.Helper()
	return saslBroker(t, func(c *Config) {
		l := c.ListenerSASL["SASL"]
		l.Mechanisms = append(l.Mechanisms, MechanismOAuthBearer)
		l.OAuthBearer = validator
		if mutate != nil {
			mutate(c)
		}
	})
}

func oauthClient(t *testing.T, b *Broker, token string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.ListenerAddr("SASL").String()),
		kgo.SASL(oauth.Auth{Token: token}.AsMechanism())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// oauthRefused walks the failure round on the wire: the token gets the
// error JSON want as a challenge, the client's 0x01 then
// SASL_AUTHENTICATION_FAILED with that JSON, and the connection closes.
func oauthRefused(t *testing.T, b *Broker, msg []byte, want string) {
	t.Helper()
	c := dialSASL(t, b)
	handshake(c, 1, MechanismOAuthBearer)
	resp := authenticate(c, 2, msg)
	if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != want {
		t.Fatalf("token refused: %v, challenge %q; want no error and the challenge %q", kerr.ErrorForCode(resp.ErrorCode), resp.SASLAuthBytes, want)
	}
	resp = authenticate(c, 2, []byte{0x01})
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || derefOr(resp.ErrorMessage) != want {
		t.Fatalf("after 0x01: %v %q, want SASL_AUTHENTICATION_FAILED %q", kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), want)
	}
	c.closed("after the failure round")
}

// TestOAuthBearerUnsecured: with Kafka's default validator franz-go
// authenticates with an unsecured JWT and is authorized as User:<sub>; an
// expired or badly scoped token gets Kafka's error JSON in the failure
// round and then SASL_AUTHENTICATION_FAILED; a malformed first message
// gets Kafka's generic message; a v0 handshake exchanges the same tokens
// bare.
func TestOAuthBearerUnsecured(t *testing.T) {
	authz := &switchAuthorizer{principals: map[string]bool{}}
	v := &UnsecuredJWTValidator{RequiredScope: []string{"kafka"}, ClockSkew: time.Second}
	b := oauthBroker(t, v, func(c *Config) { c.Authorizer = authz })
	now := time.Now().Unix()
	good := unsecuredJWT(map[string]any{"sub": "alice", "iat": now, "exp": now + 3600, "scope": []string{"kafka", "other"}})

	cl := oauthClient(t, b, good, kgo.DefaultProduceTopic("oauth"), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	cancel()
	if err != nil {
		t.Fatalf("produce with a good unsecured token: %v", err)
	}
	authz.mu.Lock()
	if len(authz.principals) != 1 || !authz.principals["User:alice"] {
		t.Errorf("authorizer asked about %v, want only User:alice", authz.principals)
	}
	authz.mu.Unlock()
	h := newHealthCheck(t, b)

	expired := unsecuredJWT(map[string]any{"sub": "alice", "iat": now - 7200, "exp": now - 3600, "scope": "kafka"})
	wrong := oauthClient(t, b, expired, kgo.RequestRetries(0))
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	err = wrong.Ping(ctx)
	cancel()
	if err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
		t.Errorf("franz-go with an expired token: %v, want SASL_AUTHENTICATION_FAILED {\"status\":\"invalid_token\"}", err)
	}

	for name, tc := range map[string]struct {
		msg  []byte
		want string
	}{
		"expired":          {oauthFirst("", expired), `{"status":"invalid_token"}`},
		"issued in future": {oauthFirst("", unsecuredJWT(map[string]any{"sub": "alice", "iat": now + 60, "exp": now + 3600, "scope": "kafka"})), `{"status":"invalid_token"}`},
		"no exp":           {oauthFirst("", unsecuredJWT(map[string]any{"sub": "alice", "scope": "kafka"})), `{"status":"invalid_token"}`},
		"no sub":           {oauthFirst("", unsecuredJWT(map[string]any{"exp": now + 60, "scope": "kafka"})), `{"status":"invalid_token"}`},
		"signed":           {oauthFirst("", strings.TrimSuffix(good, ".")+".c2ln"), `{"status":"invalid_token"}`},
		"scope":            {oauthFirst("", unsecuredJWT(map[string]any{"sub": "alice", "exp": now + 60, "scope": "other"})), `{"status":"insufficient_scope", "scope":"[kafka]"}`},
		"not a JWT":        {oauthFirst("", "abc"), `{"status":"invalid_token"}`},
		"standard Base64":  {oauthFirst("", stdBase64JWT(t, now)), `{"status":"invalid_token"}`},
	} {
		t.Run(name, func(t *testing.T) { oauthRefused(t, b, tc.msg, tc.want) })
	}
	for name, tc := range map[string]struct {
		msg  []byte
		want string
	}{
		"malformed":   {[]byte("n,,auth=Bearer x"), "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"},
		"no auth":     {[]byte("n,,\x01foo=bar\x01\x01"), "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"},
		"authzid":     {oauthFirst("bob", good), "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"},
		"bare 0x01":   {[]byte{0x01}, "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"},
		"empty token": {nil, "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialSASL(t, b)
			handshake(c, 1, MechanismOAuthBearer)
			resp := authenticate(c, 2, tc.msg)
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || derefOr(resp.ErrorMessage) != tc.want {
				t.Errorf("%q: %v %q, want SASL_AUTHENTICATION_FAILED %q", tc.msg, kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), tc.want)
			}
			c.closed("after SASL_AUTHENTICATION_FAILED")
		})
	}
	t.Run("a scheme other than bearer closes without an answer, as in Kafka", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismOAuthBearer)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte("n,,\x01auth=Basic abc\x01\x01")
		c.sendRequest(req, 2, 3)
		c.closed("auth=Basic")
	})
	t.Run("base64url claims, as Kafka 4.4 reads them", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismOAuthBearer)
		if resp := authenticate(c, 2, oauthFirst("", urlSafeJWT(t, now))); resp.ErrorCode != 0 || len(resp.SASLAuthBytes) != 0 {
			t.Fatalf("claims with '-' or '_': %v %q, want success", kerr.ErrorForCode(resp.ErrorCode), resp.SASLAuthBytes)
		}
	})
	t.Run("authzid equal to the principal", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismOAuthBearer)
		if resp := authenticate(c, 2, oauthFirst("alice", good)); resp.ErrorCode != 0 || len(resp.SASLAuthBytes) != 0 {
			t.Fatalf("a=alice: %v %q, want success", kerr.ErrorForCode(resp.ErrorCode), resp.SASLAuthBytes)
		}
	})
	t.Run("v0 bare tokens", func(t *testing.T) {
		bare := func(c *rawConn, token []byte) []byte {
			c.sendFrame(int32(len(token)), token)
			var size [4]byte
			if _, err := c.r.Read(size[:]); err != nil {
				t.Fatalf("bare token: %v", err)
			}
			out := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := c.r.Read(out); len(out) > 0 && err != nil {
				t.Fatalf("bare token: %v", err)
			}
			return out
		}
		c := dialSASL(t, b)
		handshake(c, 0, MechanismOAuthBearer)
		if got := bare(c, oauthFirst("", good)); len(got) != 0 {
			t.Fatalf("a good bare token: server token %q, want an empty one", got)
		}
		c = dialSASL(t, b)
		handshake(c, 0, MechanismOAuthBearer)
		if got := bare(c, oauthFirst("", expired)); string(got) != `{"status":"invalid_token"}` {
			t.Fatalf("an expired bare token: server token %q, want the error JSON", got)
		}
		c.sendFrame(1, []byte{0x01})
		c.closed("after the bare failure round")
	})
	h.check("OAUTHBEARER")
}

// jwksKey is an RSA key generated for a test, its public half in a JWKS
// file.
type jwksKey struct {
	priv *rsa.PrivateKey
	kid  string
}

func newJWKSKey(t *testing.T, kid string) jwksKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return jwksKey{priv: k, kid: kid}
}

// writeJWKS writes the public keys as a JSON Web Key Set and returns its
// file: URL.
func writeJWKS(t *testing.T, keys ...jwksKey) string {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: string(jose.RS256), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return "file://" + path
}

// sign is a compact RS256 JWT of claims signed with k, its kid in the
// header.
func (k jwksKey) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k.priv}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.kid))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOAuthBearerJWKS: with Kafka's OAuthBearerValidatorCallbackHandler
// settings (a JWKS file, an expected audience and issuer) a token signed
// with the key set's key authenticates franz-go as User:<sub>; a token
// signed by another key, or with the wrong audience or issuer, or expired,
// or without iat, gets {"status":"invalid_token"} and then
// SASL_AUTHENTICATION_FAILED.
func TestOAuthBearerJWKS(t *testing.T) {
	key, other := newJWKSKey(t, "k1"), newJWKSKey(t, "k1")
	v := NewJWKSValidator(JWKSConfig{URL: writeJWKS(t, key), Audience: []string{"strata"}, Issuer: "https://issuer.test",
		ClockSkew: 30 * time.Second, Refresh: time.Hour})
	authz := &switchAuthorizer{principals: map[string]bool{}}
	b := oauthBroker(t, v, func(c *Config) { c.Authorizer = authz })
	now := time.Now().Unix()
	claims := func(change map[string]any) map[string]any {
		c := map[string]any{"sub": "alice", "aud": "strata", "iss": "https://issuer.test", "iat": now, "exp": now + 600}
		for k, v := range change {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	cl := oauthClient(t, b, key.sign(t, claims(nil)), kgo.DefaultProduceTopic("jwks"), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
	cancel()
	if err != nil {
		t.Fatalf("produce with a signed token: %v", err)
	}
	authz.mu.Lock()
	if len(authz.principals) != 1 || !authz.principals["User:alice"] {
		t.Errorf("authorizer asked about %v, want only User:alice", authz.principals)
	}
	authz.mu.Unlock()
	for name, token := range map[string]string{
		"other key":       other.sign(t, claims(nil)),
		"unknown kid":     newJWKSKey(t, "k2").sign(t, claims(nil)),
		"wrong audience":  key.sign(t, claims(map[string]any{"aud": "someone-else"})),
		"no audience":     key.sign(t, claims(map[string]any{"aud": nil})),
		"wrong issuer":    key.sign(t, claims(map[string]any{"iss": "https://evil.test"})),
		"expired":         key.sign(t, claims(map[string]any{"exp": now - 60})),
		"not yet valid":   key.sign(t, claims(map[string]any{"nbf": now + 600})),
		"no iat":          key.sign(t, claims(map[string]any{"iat": nil})),
		"exp before iat":  key.sign(t, claims(map[string]any{"iat": now + 700})),
		"exp before nbf":  key.sign(t, claims(map[string]any{"nbf": now + 700})),
		"no sub":          key.sign(t, claims(map[string]any{"sub": nil})),
		"unsecured":       unsecuredJWT(claims(nil)),
		"tampered claims": tamper(key.sign(t, claims(nil)), claims(map[string]any{"sub": "admin"})),
	} {
		t.Run(name, func(t *testing.T) { oauthRefused(t, b, oauthFirst("", token), `{"status":"invalid_token"}`) })
	}
	t.Run("within the clock skew", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismOAuthBearer)
		if resp := authenticate(c, 2, oauthFirst("", key.sign(t, claims(map[string]any{"exp": now - 5, "iat": now - 60})))); resp.ErrorCode != 0 || len(resp.SASLAuthBytes) != 0 {
			t.Fatalf("expired 5 s ago with 30 s of skew: %v %q, want success", kerr.ErrorForCode(resp.ErrorCode), resp.SASLAuthBytes)
		}
	})
}

// tamper replaces a signed JWT's claims, keeping its header and signature.
func tamper(token string, claims map[string]any) string {
	parts := strings.Split(token, ".")
	b, _ := json.Marshal(claims)
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
}

// TestOAuthBearerJWKSHTTPS: a key set served over https is fetched at
// start and again every sasl.oauthbearer.jwks.endpoint.refresh.ms, so a
// key the issuer adds later is trusted without a restart.
func TestOAuthBearerJWKSHTTPS(t *testing.T) {
	first, second := newJWKSKey(t, "first"), newJWKSKey(t, "second")
	var served atomic.Value
	set := func(keys ...jwksKey) {
		var s jose.JSONWebKeySet
		for _, k := range keys {
			s.Keys = append(s.Keys, jose.JSONWebKey{Key: &k.priv.PublicKey, KeyID: k.kid, Algorithm: string(jose.RS256), Use: "sig"})
		}
		b, _ := json.Marshal(s)
		served.Store(b)
	}
	set(first)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(served.Load().([]byte)) }))
	t.Cleanup(srv.Close)
	v := NewJWKSValidator(JWKSConfig{URL: srv.URL + "/jwks", Refresh: 100 * time.Millisecond, HTTP: srv.Client()})
	b := oauthBroker(t, v, nil)
	now := time.Now().Unix()
	claims := map[string]any{"sub": "alice", "iat": now, "exp": now + 600}
	ping := func(token string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return oauthClient(t, b, token, kgo.RequestRetries(0)).Ping(ctx)
	}
	if err := ping(first.sign(t, claims)); err != nil {
		t.Fatalf("a token of the served key: %v", err)
	}
	if err := ping(second.sign(t, claims)); err == nil || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
		t.Fatalf("a token of a key not yet served: %v, want invalid_token", err)
	}
	set(first, second)
	deadline := time.Now().Add(10 * time.Second)
	for ping(second.sign(t, claims)) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the key added to the served set is still refused after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// urlSafeJWT is an unsecured JWT of alice whose claims section needs
// base64url's '-' or '_': Kafka 4.4 accepts it, 4.1 refuses it.
func urlSafeJWT(t *testing.T, now int64) string {
	t.Helper()
	token := unsecuredJWT(map[string]any{"sub": "alice", "exp": now + 3600, "scope": "kafka", "note": "~~~???"})
	if !strings.ContainsAny(strings.Split(token, ".")[1], "-_") {
		t.Fatalf("%s: no '-' or '_' in the claims", token)
	}
	return token
}

// stdBase64JWT is urlSafeJWT in the standard Base64 alphabet, which
// base64url decoding refuses.
func stdBase64JWT(t *testing.T, now int64) string {
	t.Helper()
	return strings.NewReplacer("-", "+", "_", "/").Replace(urlSafeJWT(t, now))
}
