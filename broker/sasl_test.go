package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"math/rand"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// saslBroker is a broker with a PLAINTEXT listener (b.Addr) and a
// SASL_PLAINTEXT one, SASL, whose PLAIN users are alice and admin.
func saslBroker(t *testing.T, mutate func(*Config)) *Broker {
	t.Helper()
	return startBroker(t, func(c *Config) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0"
		c.ListenerSASL = map[string]*ListenerSASL{"SASL": {
			Mechanisms:     []string{MechanismPlain},
			PlainUsers:     map[string]string{"alice": "alice-secret", "admin": "admin-secret"},
			MaxReceiveSize: DefaultSASLMaxReceiveSize,
			FailedDelay:    10 * time.Millisecond,
		}}
		if mutate != nil {
			mutate(c)
		}
	})
}

func saslClient(t *testing.T, b *Broker, user, pass string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.ListenerAddr("SASL").String()),
		kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestSASLPlainPrincipalReachesAuthorizer: franz-go authenticates with
// PLAIN over SASL_PLAINTEXT and over SASL_SSL, and its requests are
// authorized as User:<name>, not as the anonymous TLS client it also is.
func TestSASLPlainPrincipalReachesAuthorizer(t *testing.T) {
	server, _, pool := tlsPKI(t, pkix.Name{CommonName: "unused"})
	for _, ssl := range []bool{false, true} {
		authz := &switchAuthorizer{principals: map[string]bool{}}
		b := saslBroker(t, func(c *Config) {
			c.Authorizer = authz
			if ssl {
				rules, _ := ParseSSLPrincipalMappingRules(DefaultSSLPrincipalMappingRules)
				c.ListenerTLS = map[string]*ListenerTLS{"SASL": {Principals: rules, Config: &tls.Config{Certificates: []tls.Certificate{server}}}}
			}
		})
		var opts []kgo.Opt
		if ssl {
			opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool}))
		}
		cl := saslClient(t, b, "alice", "alice-secret", append(opts, kgo.DefaultProduceTopic("principals"), kgo.AllowAutoTopicCreation())...)
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("ssl=%v: produce as alice: %v", ssl, err)
		}
		authz.mu.Lock()
		if len(authz.principals) != 1 || !authz.principals["User:alice"] {
			t.Errorf("ssl=%v: authorizer asked about %v, want only User:alice", ssl, authz.principals)
		}
		authz.mu.Unlock()
	}
}

// TestSASLWrongPasswordRefused: franz-go with a wrong password or an
// unknown user gets SASL_AUTHENTICATION_FAILED with Kafka's message.
func TestSASLWrongPasswordRefused(t *testing.T) {
	b := saslBroker(t, nil)
	for _, creds := range [][2]string{{"alice", "wrong"}, {"mallory", "alice-secret"}} {
		cl := saslClient(t, b, creds[0], creds[1], kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := cl.Ping(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) ||
			!strings.Contains(err.Error(), "Authentication failed: Invalid username or password") {
			t.Errorf("%s/%s: ping error %v, want SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username or password", creds[0], creds[1], err)
		}
	}
}

func dialSASL(t *testing.T, b *Broker) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", b.ListenerAddr("SASL").String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// response reads a response of req's type and version, failing the test
// on a close.
func (c *rawConn) response(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	o := c.outcome(req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions))
	if o.closed || o.corr != corr {
		c.t.Fatalf("%s: closed=%v correlation id %d, want a response with %d", kmsg.NameForKey(req.Key()), o.closed, o.corr, corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(o.body); err != nil {
		c.t.Fatalf("%s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// closed checks that nothing more comes: the broker closed the connection.
func (c *rawConn) closed(what string) {
	c.t.Helper()
	if o := c.outcome(false); !o.closed {
		c.t.Fatalf("%s: a response (correlation id %d), want the connection closed", what, o.corr)
	}
}

func handshake(c *rawConn, version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = mechanism
	req.SetVersion(version)
	c.sendRequest(req, version, 2)
	return c.response(req, 2).(*kmsg.SASLHandshakeResponse)
}

func authenticate(c *rawConn, version int16, token []byte) *kmsg.SASLAuthenticateResponse {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = token
	req.SetVersion(version)
	c.sendRequest(req, version, 3)
	return c.response(req, 3).(*kmsg.SASLAuthenticateResponse)
}

// TestSASLExchange walks Kafka's SaslServerAuthenticator states on the
// wire: what is answered before authentication, what closes the
// connection, PLAIN's messages, the v0 handshake's bare tokens, and
// ILLEGAL_SASL_STATE after authentication. After each case a client on
// the PLAINTEXT listener still produces and fetches.
func TestSASLExchange(t *testing.T) {
	b := saslBroker(t, nil)
	h := newHealthCheck(t, b)
	metadata := func(c *rawConn, corr int32) { c.sendRequest(kmsg.NewPtrMetadataRequest(), 12, corr) }

	t.Run("Metadata before the handshake closes without a response", func(t *testing.T) {
		c := dialSASL(t, b)
		metadata(c, 1)
		c.closed("Metadata first")
		h.check("Metadata first")
	})
	t.Run("ApiVersions is served once, then only SaslHandshake", func(t *testing.T) {
		c := dialSASL(t, b)
		req := kmsg.NewPtrApiVersionsRequest()
		c.sendRequest(req, 3, 1)
		resp := c.response(req, 1).(*kmsg.ApiVersionsResponse)
		var sasl int
		for _, k := range resp.ApiKeys {
			if k.ApiKey == int16(kmsg.SASLHandshake) && k.MaxVersion == 1 || k.ApiKey == int16(kmsg.SASLAuthenticate) && k.MaxVersion == 2 {
				sasl++
			}
		}
		if resp.ErrorCode != 0 || sasl != 2 {
			t.Errorf("ApiVersions: error %d, SaslHandshake 1 and SaslAuthenticate 2 found %d of 2", resp.ErrorCode, sasl)
		}
		c.sendRequest(req, 3, 2)
		c.closed("a second ApiVersions")
		c = dialSASL(t, b)
		c.send(int16(kmsg.ApiVersions), 99, 1, []byte{0, 0, 0}, true)
		if o := c.outcome(false); o.closed || o.corr != 1 || len(o.body) < 2 || int16(binary.BigEndian.Uint16(o.body)) != kerr.UnsupportedVersion.Code {
			t.Fatalf("ApiVersions v99 before authentication: %+v, want UNSUPPORTED_VERSION", o)
		}
		c.sendRequest(req, 3, 2)
		c.response(req, 2)
		handshake(c, 1, "PLAIN")
		c = dialSASL(t, b)
		c.sendRequest(req, 3, 1)
		c.response(req, 1)
		metadata(c, 2)
		c.closed("Metadata after ApiVersions")
		h.check("after ApiVersions")
	})
	t.Run("an unknown mechanism gets UNSUPPORTED_SASL_MECHANISM and the enabled ones", func(t *testing.T) {
		c := dialSASL(t, b)
		resp := handshake(c, 1, "SCRAM-SHA-512")
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "PLAIN" {
			t.Errorf("handshake SCRAM-SHA-512: %v %v, want UNSUPPORTED_SASL_MECHANISM [PLAIN]", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
		}
		c.closed("after UNSUPPORTED_SASL_MECHANISM")
	})
	t.Run("a request other than SaslAuthenticate after the handshake closes", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, "PLAIN")
		metadata(c, 3)
		c.closed("Metadata after the handshake")
	})
	for _, tc := range []struct {
		token []byte
		msg   string
	}{
		{[]byte("\x00alice\x00wrong"), "Authentication failed: Invalid username or password"},
		{[]byte("\x00mallory\x00alice-secret"), "Authentication failed: Invalid username or password"},
		{[]byte("\x00alice\x00alice-secretX"), "Authentication failed: Invalid username or password"},
		{[]byte("\x00alice\x00"), "Authentication failed: password not specified"},
		{[]byte("\x00\x00alice-secret"), "Authentication failed: username not specified"},
		{[]byte("admin\x00alice\x00alice-secret"), "Authentication failed: Client requested an authorization id that is different from username"},
		{[]byte("alice-secret"), "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
		{[]byte("\x00alice\x00alice-secret\x00"), "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{[]byte("\x00\x00\x00\x00\x00\x00"), "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{nil, "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
	} {
		t.Run("PLAIN "+strings.ReplaceAll(string(tc.token), "\x00", "^@"), func(t *testing.T) {
			c := dialSASL(t, b)
			handshake(c, 1, "PLAIN")
			resp := authenticate(c, 2, tc.token)
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg {
				t.Errorf("error %v %q, want SASL_AUTHENTICATION_FAILED %q", kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), tc.msg)
			}
			c.closed("after SASL_AUTHENTICATION_FAILED")
		})
	}
	h.check("PLAIN failures")
	t.Run("authenticated: served as alice, SASL requests then ILLEGAL_SASL_STATE", func(t *testing.T) {
		for _, v := range []int16{0, 1, 2} {
			c := dialSASL(t, b)
			handshake(c, 1, "PLAIN")
			resp := authenticate(c, v, []byte("alice\x00alice\x00alice-secret"))
			if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 || len(resp.SASLAuthBytes) != 0 || resp.ErrorMessage == nil || *resp.ErrorMessage != "" {
				t.Fatalf("SaslAuthenticate v%d: %+v, want success, no token, no session lifetime", v, resp)
			}
			req := kmsg.NewPtrMetadataRequest()
			c.sendRequest(req, 12, 4)
			c.response(req, 4)
			if r := handshake(c, 1, "PLAIN"); r.ErrorCode != kerr.IllegalSaslState.Code {
				t.Errorf("SaslHandshake after authentication: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
			}
			if r := authenticate(c, 2, []byte("\x00alice\x00alice-secret")); r.ErrorCode != kerr.IllegalSaslState.Code {
				t.Errorf("SaslAuthenticate after authentication: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
			}
		}
	})
	t.Run("a v0 handshake exchanges bare tokens", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 0, "PLAIN")
		c.sendFrame(int32(len("\x00admin\x00admin-secret")), []byte("\x00admin\x00admin-secret"))
		var size [4]byte
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.r.Read(size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("bare PLAIN token: got % x, %v; want an empty size-prefixed token", size, err)
		}
		req := kmsg.NewPtrMetadataRequest()
		c.sendRequest(req, 12, 4)
		c.response(req, 4)

		c = dialSASL(t, b)
		handshake(c, 0, "PLAIN")
		c.sendFrame(int32(len("\x00admin\x00wrong")), []byte("\x00admin\x00wrong"))
		c.closed("a wrong bare token")
	})
	t.Run("a frame above sasl.server.max.receive.size closes before it is read", func(t *testing.T) {
		for _, size := range []int32{DefaultSASLMaxReceiveSize + 1, 1 << 30, -1} {
			c := dialSASL(t, b)
			c.sendFrame(size, []byte{0, 17, 0, 1})
			c.closed("a huge frame")
			c = dialSASL(t, b)
			handshake(c, 1, "PLAIN")
			c.sendFrame(size, []byte{0, 36, 0, 2})
			c.closed("a huge SaslAuthenticate")
		}
		h.check("huge frames")
	})
}

// TestSASLRandomInputBeforeAuthentication throws random frames and random
// PLAIN tokens at the SASL listener: each connection is answered or
// closed, nothing authenticates, and other clients carry on.
func TestSASLRandomInputBeforeAuthentication(t *testing.T) {
	b := saslBroker(t, func(c *Config) { c.ListenerSASL["SASL"].FailedDelay = 0 })
	h := newHealthCheck(t, b)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		c := dialSASL(t, b)
		junk := make([]byte, rng.Intn(64))
		rng.Read(junk)
		if i%2 == 0 {
			c.sendFrame(int32(len(junk)), junk)
			for {
				if o := c.outcome(false); o.closed {
					break
				}
			}
			continue
		}
		handshake(c, 1, "PLAIN")
		resp := authenticate(c, 2, junk)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("random token % x: %v, want SASL_AUTHENTICATION_FAILED", junk, kerr.ErrorForCode(resp.ErrorCode))
		}
		c.closed("a random token")
	}
	h.check("random input")
	cl := saslClient(t, b, "admin", "admin-secret")
	if err := cl.Ping(t.Context()); err != nil {
		t.Errorf("a good SASL client after the random input: %v", err)
	}
}

// FuzzPlainToken: no PLAIN message panics, and only alice's right
// password authenticates her.
func FuzzPlainToken(f *testing.F) {
	users := map[string]string{"alice": "alice-secret"}
	for _, s := range []string{"\x00alice\x00alice-secret", "alice\x00alice\x00alice-secret", "\x00\x00", "", "\x00alice\x00alice-secret\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := &plainServer{users: users}
		_, done, err := s.step(msg)
		user := s.principal()
		parts := strings.Split(string(msg), "\x00")
		ok := len(parts) == 3 && parts[1] == "alice" && parts[2] == "alice-secret" && (parts[0] == "" || parts[0] == "alice")
		if (err == nil) != ok || done != ok || err == nil && user != "alice" {
			t.Fatalf("%q: user %q, error %v; want success %v", msg, user, err, ok)
		}
	})
}

// TestSASLFailureDelayed: a failed authentication is answered, and the
// connection closed, only after connection.failed.authentication.delay.ms,
// as Kafka slows down password guessing.
func TestSASLFailureDelayed(t *testing.T) {
	const delay = 300 * time.Millisecond
	b := saslBroker(t, func(c *Config) { c.ListenerSASL["SASL"].FailedDelay = delay })
	c := dialSASL(t, b)
	handshake(c, 1, "PLAIN")
	start := time.Now()
	resp := authenticate(c, 2, []byte("\x00alice\x00wrong"))
	if took := time.Since(start); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || took < delay {
		t.Errorf("wrong password: %v after %v, want SASL_AUTHENTICATION_FAILED after %v at least", kerr.ErrorForCode(resp.ErrorCode), took, delay)
	}
	c.closed("after the delayed failure")
}
