package broker

import (
	"context"
	"crypto/pbkdf2"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-io/strata/metadata"
)

// scramRecord is the credential of user's password for mechanism, as
// Kafka's tools and ScramControlManager derive it.
func scramRecord(t testing.TB, mech, user, password string, iterations int32) metadata.UserScramCredentialRecord {
	t.Helper()
	m, ok := scramMechanismNamed(mech)
	if !ok {
		t.Fatalf("no mechanism %s", mech)
	}
	salt := []byte("salt-of-" + user)
	salted, err := pbkdf2.Key(m.hash, password, salt, int(iterations), m.hash().Size())
	if err != nil {
		t.Fatal(err)
	}
	stored, server := m.credential(salted)
	return metadata.UserScramCredentialRecord{Name: user, Mechanism: m.id, Salt: salt, StoredKey: stored, ServerKey: server, Iterations: iterations}
}

// scramBroker is saslBroker with the SCRAM mechanisms enabled too and
// alice's credentials for both (password alice-secret, 4096 and 8192
// iterations).
func scramBroker(t *testing.T, mutate func(*Config)) *Broker {
	t.Helper()
	b := saslBroker(t, func(c *Config) {
		c.ListenerSASL["SASL"].Mechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}
		if mutate != nil {
			mutate(c)
		}
	})
	if _, err := b.meta.Propose(scramRecord(t, MechanismScramSHA256, "alice", "alice-secret", 4096),
		scramRecord(t, MechanismScramSHA512, "alice", "alice-secret", 8192)); err != nil {
		t.Fatal(err)
	}
	return b
}

func scramClient(t *testing.T, b *Broker, mech sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.ListenerAddr("SASL").String()), kgo.SASL(mech)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestSASLScramFranzGo: franz-go authenticates with SCRAM-SHA-256 and
// SCRAM-SHA-512 against the credentials in the metadata image and is
// authorized as User:alice; a wrong password, an unknown user and a
// mechanism alice has no credential for are refused with Kafka's message.
func TestSASLScramFranzGo(t *testing.T) {
	authz := &switchAuthorizer{principals: map[string]bool{}}
	b := scramBroker(t, func(c *Config) { c.Authorizer = authz })
	alice := scram.Auth{User: "alice", Pass: "alice-secret"}
	for name, mech := range map[string]sasl.Mechanism{"SHA-256": alice.AsSha256Mechanism(), "SHA-512": alice.AsSha512Mechanism()} {
		cl := scramClient(t, b, mech, kgo.DefaultProduceTopic("scram"), kgo.AllowAutoTopicCreation())
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(name)}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("%s: produce as alice: %v", name, err)
		}
	}
	authz.mu.Lock()
	if len(authz.principals) != 1 || !authz.principals["User:alice"] {
		t.Errorf("authorizer asked about %v, want only User:alice", authz.principals)
	}
	authz.mu.Unlock()

	const refused = "Authentication failed during authentication due to invalid credentials with SASL mechanism "
	if _, err := b.meta.Propose(metadata.RemoveUserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA512}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{MechanismScramSHA256, scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism()},
		{MechanismScramSHA512, scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()},
		{MechanismScramSHA256, scram.Auth{User: "mallory", Pass: "alice-secret"}.AsSha256Mechanism()},
		{MechanismScramSHA512, alice.AsSha512Mechanism()}, // its credential was removed
	} {
		cl := scramClient(t, b, tc.mech, kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := cl.Ping(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) || !strings.Contains(err.Error(), refused+tc.name) {
			t.Errorf("%s: ping error %v, want SASL_AUTHENTICATION_FAILED: %s%s", tc.name, err, refused, tc.name)
		}
	}
}

// scramFirst sends a client's first message and returns the server's
// first, failing the test on an error.
func scramFirst(t *testing.T, c *rawConn, msg string) string {
	t.Helper()
	resp := authenticate(c, 2, []byte(msg))
	if resp.ErrorCode != 0 {
		t.Fatalf("client first %q: %v %q", msg, kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage))
	}
	return string(resp.SASLAuthBytes)
}

var serverFirstPattern = regexp.MustCompile(`^r=(cnonce[0-9a-z]+),s=([A-Za-z0-9+/=]+),i=([0-9]+)$`)

// scramFinal is the client's final message for password and the server's
// first message, with the server signature it must be answered with.
func scramFinal(t *testing.T, mech, clientFirstBare, serverFirst, password string) (final, signature string) {
	t.Helper()
	m, _ := scramMechanismNamed(mech)
	parts := serverFirstPattern.FindStringSubmatch(serverFirst)
	if parts == nil {
		t.Fatalf("server first message %q", serverFirst)
	}
	salt, _ := base64.StdEncoding.DecodeString(parts[2])
	var iterations int
	fmt.Sscan(parts[3], &iterations)
	salted, err := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	if err != nil {
		t.Fatal(err)
	}
	withoutProof := "c=biws,r=" + parts[1]
	auth := []byte(clientFirstBare + "," + serverFirst + "," + withoutProof)
	clientKey := m.hmac(salted, []byte("Client Key"))
	stored, server := m.credential(salted)
	proof := m.hmac(stored, auth)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), "v=" + base64.StdEncoding.EncodeToString(m.hmac(server, auth))
}

// TestSASLScramExchange walks ScramSaslServer's rounds on the wire: the
// server's messages, the v0 handshake's bare tokens, Kafka's messages for
// what it refuses, an unknown user answered as a wrong password is.
func TestSASLScramExchange(t *testing.T) {
	b := scramBroker(t, nil)
	h := newHealthCheck(t, b)
	t.Run("the enabled mechanisms are listed", func(t *testing.T) {
		c := dialSASL(t, b)
		resp := handshake(c, 1, "OAUTHBEARER")
		if got := strings.Join(resp.SupportedMechanisms, ","); resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || got != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
			t.Errorf("handshake OAUTHBEARER: %v %s, want UNSUPPORTED_SASL_MECHANISM PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", kerr.ErrorForCode(resp.ErrorCode), got)
		}
	})
	for _, tc := range []struct{ mech, iterations string }{{MechanismScramSHA256, "4096"}, {MechanismScramSHA512, "8192"}} {
		t.Run(tc.mech+" authenticates in two rounds and signs the server's answer", func(t *testing.T) {
			c := dialSASL(t, b)
			handshake(c, 1, tc.mech)
			bare := "n=alice,r=cnonce1"
			first := scramFirst(t, c, "n,,"+bare)
			if p := serverFirstPattern.FindStringSubmatch(first); p == nil || len(p[1]) <= len("cnonce1") || p[3] != tc.iterations ||
				p[2] != base64.StdEncoding.EncodeToString([]byte("salt-of-alice")) {
				t.Fatalf("server first %q, want r=cnonce1<server nonce>,s=<alice's salt>,i=%s", first, tc.iterations)
			}
			final, signature := scramFinal(t, tc.mech, bare, first, "alice-secret")
			resp := authenticate(c, 2, []byte(final))
			if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != signature || derefOr(resp.ErrorMessage) != "" {
				t.Fatalf("client final: %v %q %q, want %q", kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), resp.SASLAuthBytes, signature)
			}
			req := kmsg.NewPtrMetadataRequest()
			c.sendRequest(req, 12, 4)
			c.response(req, 4)
		})
	}
	t.Run("a v0 handshake exchanges bare tokens", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 0, MechanismScramSHA256)
		bare := "n=alice,r=cnonce2"
		first := bareToken(t, c, "n,a=alice,"+bare)
		final, signature := scramFinal(t, MechanismScramSHA256, bare, first, "alice-secret")
		if got := bareToken(t, c, final); got != signature {
			t.Fatalf("bare client final: %q, want %q", got, signature)
		}
		req := kmsg.NewPtrMetadataRequest()
		c.sendRequest(req, 12, 4)
		c.response(req, 4)

		c = dialSASL(t, b)
		handshake(c, 0, MechanismScramSHA256)
		first = bareToken(t, c, "n,,"+bare)
		final, _ = scramFinal(t, MechanismScramSHA256, bare, first, "wrong")
		c.sendFrame(int32(len(final)), []byte(final))
		c.closed("a wrong bare client final")
	})
	t.Run("an unknown user gets a server first message and the same refusal as a wrong password", func(t *testing.T) {
		var salts []string
		for _, user := range []string{"mallory", "mallory", "alice"} {
			c := dialSASL(t, b)
			handshake(c, 1, MechanismScramSHA256)
			bare := "n=" + user + ",r=cnonce3"
			first := scramFirst(t, c, "n,,"+bare)
			p := serverFirstPattern.FindStringSubmatch(first)
			if p == nil || p[3] != "4096" {
				t.Fatalf("%s: server first %q, want one with 4096 iterations", user, first)
			}
			salts = append(salts, p[2])
			final, _ := scramFinal(t, MechanismScramSHA256, bare, first, "wrong")
			resp := authenticate(c, 2, []byte(final))
			if want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"; resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || derefOr(resp.ErrorMessage) != want {
				t.Errorf("%s: %v %q, want SASL_AUTHENTICATION_FAILED %q", user, kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), want)
			}
			c.closed("after a refused client final")
		}
		if salts[0] != salts[1] || salts[0] == salts[2] {
			t.Errorf("salts mallory %s, %s, alice %s: want mallory's the same each time", salts[0], salts[1], salts[2])
		}
	})
	generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
	// A credential below Kafka's minimum iterations, which only a record
	// not made by AlterUserScramCredentials can hold, is refused too.
	if _, err := b.meta.Propose(scramRecord(t, MechanismScramSHA512, "weak", "weak-secret", 1000)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, first, msg string }{
		{"a credential of 1000 iterations", "n,,n=weak,r=cnonce4", generic},
		{"an authzid other than the user", "n,a=bob,n=alice,r=cnonce4", "Authentication failed: Client requested an authorization id that is different from username"},
		{"an unknown user's authzid other than the user", "n,a=bob,n=mallory,r=cnonce4", "Authentication failed: Client requested an authorization id that is different from username"},
		{"channel binding asked for", "p=tls-unique,,n=alice,r=cnonce4", generic},
		{"a client that could bind", "y,,n=alice,r=cnonce4", generic},
		{"a delegation token", "n,,n=alice,r=cnonce4,tokenauth=true", generic},
		{"a delegation token, in capitals", "n,,n=alice,r=cnonce4,tokenauth=TRUE", generic},
		{"an '=' not escaped", "n,,n=al=ice,r=cnonce4", generic},
		{"no nonce", "n,,n=alice", generic},
		{"a NUL", "n,,n=al\x00ice,r=cnonce4", generic},
		{"not ASCII", "n,,n=alicé,r=cnonce4", generic},
		{"empty", "", generic},
	} {
		t.Run("client first: "+tc.name, func(t *testing.T) {
			c := dialSASL(t, b)
			handshake(c, 1, MechanismScramSHA512)
			resp := authenticate(c, 2, []byte(tc.first))
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || derefOr(resp.ErrorMessage) != tc.msg {
				t.Errorf("%q: %v %q, want SASL_AUTHENTICATION_FAILED %q", tc.first, kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), tc.msg)
			}
			c.closed("after a refused client first")
		})
	}
	for _, tc := range []struct {
		name  string
		final func(good string) string
	}{
		{"another nonce", func(good string) string { return strings.Replace(good, "r=cnonce5", "r=cnonce6", 1) }},
		{"a changed channel binding", func(good string) string { return strings.Replace(good, "c=biws", "c=eSws", 1) }},
		{"no proof", func(good string) string { return good[:strings.Index(good, ",p=")] }},
		{"a proof not base64", func(good string) string { return good[:strings.Index(good, ",p=")] + ",p=!!!!" }},
	} {
		t.Run("client final: "+tc.name, func(t *testing.T) {
			c := dialSASL(t, b)
			handshake(c, 1, MechanismScramSHA512)
			bare := "n=alice,r=cnonce5"
			first := scramFirst(t, c, "n,,"+bare)
			good, _ := scramFinal(t, MechanismScramSHA512, bare, first, "alice-secret")
			resp := authenticate(c, 2, []byte(tc.final(good)))
			if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || derefOr(resp.ErrorMessage) != generic {
				t.Errorf("%q: %v %q, want SASL_AUTHENTICATION_FAILED %q", tc.final(good), kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), generic)
			}
			c.closed("after a refused client final")
		})
	}
	t.Run("client final: extensions are left out of what is signed", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismScramSHA512)
		bare := "n=alice,r=cnonce8"
		first := scramFirst(t, c, "n,,"+bare)
		good, signature := scramFinal(t, MechanismScramSHA512, bare, first, "alice-secret")
		resp := authenticate(c, 2, []byte(strings.Replace(good, ",p=", ",x=1,p=", 1)))
		if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != signature {
			t.Errorf("client final with an extension: %v %q, want success", kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage))
		}
	})
	t.Run("client final: a proof of the wrong length closes without an answer", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismScramSHA512)
		first := scramFirst(t, c, "n,,n=alice,r=cnonce7")
		nonce := serverFirstPattern.FindStringSubmatch(first)[1]
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte("c=biws,r=" + nonce + ",p=AAAA")
		c.sendRequest(req, 2, 3)
		c.closed("a short proof")
	})
	h.check("SCRAM exchanges")
}

// bareToken sends a bare size-prefixed token and reads the bare answer.
func bareToken(t *testing.T, c *rawConn, token string) string {
	t.Helper()
	c.sendFrame(int32(len(token)), []byte(token))
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		t.Fatalf("bare token %q: %v", token, err)
	}
	answer := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.r, answer); err != nil {
		t.Fatalf("bare token %q: %v", token, err)
	}
	return string(answer)
}

// FuzzScramServer: no client message panics the SCRAM server, each round
// ends in an answer or an error, and only alice's proof authenticates.
func FuzzScramServer(f *testing.F) {
	rec := scramRecord(f, MechanismScramSHA256, "alice", "alice-secret", 4096)
	creds := func(u metadata.ScramUser) (metadata.ScramCredential, bool) {
		if u != (metadata.ScramUser{Name: rec.Name, Mechanism: rec.Mechanism}) {
			return metadata.ScramCredential{}, false
		}
		return metadata.ScramCredential{Salt: rec.Salt, StoredKey: rec.StoredKey, ServerKey: rec.ServerKey, Iterations: rec.Iterations}, true
	}
	for _, s := range [][2]string{
		{"n,,n=alice,r=abc", "c=biws,r=abc,p=AAAA"},
		{"n,a=alice,m=x,n=alice,r=abc,ext=1,tokenauth=false", "c=biws,r=abcdef,x=y,p=dGVzdA=="},
		{"n,,n=al=2Cice=3D,r=abc", "c="},
		{"y,,n=alice,r=abc", ""},
		{"n,,n=alice,r=,", "c=biws,r=abc,p=" + strings.Repeat("A", 44)},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	mech, _ := scramMechanismNamed(MechanismScramSHA256)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := newScramServer(mech, creds, nil)
		challenge, done, err := s.step(first)
		if done || (err == nil) == (challenge == nil) {
			t.Fatalf("client first %q: challenge %q, done %v, error %v", first, challenge, done, err)
		}
		if err != nil {
			return
		}
		challenge, done, err = s.step(final)
		if done != (err == nil) || done != (challenge != nil) || done && s.user != "alice" {
			t.Fatalf("client final %q: challenge %q, done %v, error %v, user %q", final, challenge, done, err, s.user)
		}
		if done {
			t.Fatalf("client final %q authenticated without alice's proof", final)
		}
		if _, _, err := s.step(final); err == nil {
			t.Fatal("a third message was taken")
		}
	})
}
