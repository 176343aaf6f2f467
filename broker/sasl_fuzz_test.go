package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// FuzzSASLMechanisms feeds up to three client tokens to a fresh server of
// PLAIN or OAUTHBEARER (Kafka's unsecured validator): no input panics, an
// exchange ends authenticated only with a principal and, for OAUTHBEARER,
// only for a token the validator accepts; a challenge is only ever
// Kafka's error JSON, and 0x01 after it fails with that JSON.
func FuzzSASLMechanisms(f *testing.F) {
	now := time.Now().Unix()
	good := unsecuredJWT(map[string]any{"sub": "alice", "exp": now + 3600, "scope": "kafka"})
	for _, seed := range [][3][]byte{
		{[]byte("\x00alice\x00alice-secret")},
		{[]byte("alice\x00alice\x00alice-secret"), []byte("x")},
		{oauthFirst("", good)},
		{oauthFirst("alice", good), {0x01}},
		{oauthFirst("", unsecuredJWT(map[string]any{"sub": "alice", "exp": now - 10})), {0x01}},
		{oauthFirst("", unsecuredJWT(map[string]any{"sub": "alice", "exp": now + 10})), oauthFirst("", good)},
		{[]byte("n,,\x01auth=Bearer \x01\x01")},
		{[]byte("n,a=x=2C,\x01k=v\x01auth=bearer a.b.\x01\x01")},
		{{0x01}},
		{},
	} {
		f.Add(uint8(0), seed[0], seed[1], seed[2])
		f.Add(uint8(1), seed[0], seed[1], seed[2])
	}
	validator := &UnsecuredJWTValidator{RequiredScope: []string{"kafka"}}
	l := &ListenerSASL{Mechanisms: []string{MechanismPlain, MechanismOAuthBearer}, PlainUsers: map[string]string{"alice": "alice-secret"}, OAuthBearer: validator}
	f.Fuzz(func(t *testing.T, mech uint8, t1, t2, t3 []byte) {
		mechanism := MechanismPlain
		if mech%2 == 1 {
			mechanism = MechanismOAuthBearer
		}
		s := l.newServer(mechanism, nil, nil)
		var challenged string
		for _, token := range [][]byte{t1, t2, t3} {
			challenge, done, err := s.step(token)
			if err != nil {
				if challenged != "" && bytes.Equal(token, []byte{0x01}) && err.Error() != challenged {
					t.Fatalf("0x01 after the challenge %q: error %q, want the challenge", challenged, err)
				}
				return
			}
			if done {
				if s.principal() == "" {
					t.Fatalf("%s authenticated %q without a principal", mechanism, token)
				}
				if mechanism == MechanismOAuthBearer {
					_, tok, perr := parseOAuthBearerClientFirst(token)
					if _, refused := validator.Validate(tok, time.Now()); perr != nil || refused != nil {
						t.Fatalf("OAUTHBEARER authenticated %q: parse %v, validator %v", token, perr, refused)
					}
				}
				if len(challenge) != 0 {
					t.Fatalf("%s's last token %q, want none", mechanism, challenge)
				}
				return
			}
			var status struct{ Status string }
			if mechanism != MechanismOAuthBearer || json.Unmarshal(challenge, &status) != nil ||
				(status.Status != "invalid_token" && status.Status != "insufficient_scope") {
				t.Fatalf("%s challenged %q with %q, want Kafka's error JSON", mechanism, token, challenge)
			}
			challenged = string(challenge)
		}
	})
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestSASLHostileClients: malformed OAUTHBEARER first messages (each
// answered, or closed as Kafka closes on a scheme other than bearer), frame
// sizes up to 2 GiB before authentication and hundreds of connections
// that claim a large frame and stall neither panic the broker nor make it
// allocate what they claim: the heap grows by 160 KiB at most per
// connection (each claims 512 KiB), and falls back once they are gone;
// meanwhile an authenticated client is served.
func TestSASLHostileClients(t *testing.T) {
	b := oauthBroker(t, &UnsecuredJWTValidator{}, func(c *Config) { c.ListenerSASL["SASL"].FailedDelay = 0 })
	good := unsecuredJWT(map[string]any{"sub": "alice", "exp": time.Now().Unix() + 3600})
	authenticated := func(what string) {
		t.Helper()
		cl := oauthClient(t, b, good)
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		defer cancel()
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("an authenticated client %s: %v", what, err)
		}
	}
	rng := rand.New(rand.NewSource(7))

	t.Run("malformed first messages", func(t *testing.T) {
		for i := 0; i < 300; i++ {
			msg := oauthFirst("", good)
			switch i % 4 {
			case 0:
				msg = make([]byte, rng.Intn(200))
				rng.Read(msg)
			case 1:
				msg = msg[:rng.Intn(len(msg))]
			case 2:
				msg[rng.Intn(len(msg))] ^= byte(1 + rng.Intn(255))
			case 3:
				msg = append([]byte("n,,\x01auth=Bearer "), bytes.Repeat([]byte("a."), 1+rng.Intn(20000))...)
			}
			c := dialSASL(t, b)
			handshake(c, 1, MechanismOAuthBearer)
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.SASLAuthBytes = msg
			c.sendRequest(req, 2, 3)
			o := c.outcome(true)
			if o.closed {
				continue // Kafka's answer to a scheme other than bearer
			}
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.SetVersion(2)
			if err := resp.ReadFrom(o.body); err != nil || o.corr != 3 {
				t.Fatalf("%q: response %d: %v", msg, o.corr, err)
			}
			switch {
			case resp.ErrorCode == kerr.SaslAuthenticationFailed.Code:
				c.closed("after SASL_AUTHENTICATION_FAILED")
			case resp.ErrorCode == 0 && len(resp.SASLAuthBytes) > 0:
				if r := authenticate(c, 2, []byte{0x01}); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
					t.Fatalf("%q: after the challenge, 0x01 got %v", msg, kerr.ErrorForCode(r.ErrorCode))
				}
				c.closed("after the failure round")
			case resp.ErrorCode != 0:
				t.Fatalf("%q: %v, want SASL_AUTHENTICATION_FAILED or a challenge", msg, kerr.ErrorForCode(resp.ErrorCode))
			}
		}
		authenticated("after malformed first messages")
	})

	t.Run("huge and stalled frames", func(t *testing.T) {
		before := heapInUse()
		for _, size := range []int32{DefaultSASLMaxReceiveSize + 1, 1 << 28, 1<<31 - 1, -1} {
			for i := 0; i < 50; i++ {
				c := dialSASL(t, b)
				if i%2 == 1 {
					handshake(c, 1, MechanismOAuthBearer)
				}
				c.sendFrame(size, []byte{0, 36, 0, 2})
				c.closed("a huge frame")
			}
		}
		// Connections that each claim a frame of the largest size allowed
		// before authentication and send 10 bytes of it.
		const stalled = 300
		var conns []net.Conn
		for i := 0; i < stalled; i++ {
			nc, err := net.DialTimeout("tcp", b.ListenerAddr("SASL").String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, nc)
			hdr := binary.BigEndian.AppendUint32(nil, DefaultSASLMaxReceiveSize)
			if _, err := nc.Write(append(hdr, 0, 17, 0, 3, 0, 0, 0, 1, 0, 0)); err != nil {
				t.Fatal(err)
			}
		}
		authenticated("beside stalled connections")
		during := heapInUse()
		growth := int64(during) - int64(before)
		perConn := growth / stalled
		t.Logf("heap in use %d KiB before, %d KiB with %d stalled connections (%d KiB each; each claims %d KiB)",
			before>>10, during>>10, stalled, perConn>>10, DefaultSASLMaxReceiveSize>>10)
		// Each connection holds its 64 KiB read buffer and the first 64 KiB
		// chunk of the frame it claims, plus its goroutine: bounded by what
		// was sent, not by the size claimed.
		if perConn > 160<<10 {
			t.Errorf("heap grew %d KiB per stalled connection, want 160 KiB at most (each claims %d KiB)", perConn>>10, DefaultSASLMaxReceiveSize>>10)
		}
		for _, nc := range conns {
			nc.Close()
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			after := heapInUse()
			if int64(after)-int64(before) < 8<<20 {
				t.Logf("heap in use %d KiB once they closed", after>>10)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("heap in use %d KiB 10 s after the stalled connections closed, %d KiB before", after>>10, before>>10)
			}
			time.Sleep(50 * time.Millisecond)
		}
		authenticated("after the stalled connections")
	})
}

// TestOAuthBearerFranzGoMalformedToken: franz-go with a token that is not
// a JWT gets the failure round and SASL_AUTHENTICATION_FAILED, as with any
// refused token.
func TestOAuthBearerFranzGoMalformedToken(t *testing.T) {
	b := oauthBroker(t, &UnsecuredJWTValidator{}, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenerAddr("SASL").String()), kgo.RequestRetries(0),
		kgo.SASL(oauth.Auth{Token: strings.Repeat("x", 5000)}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil || !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
		t.Fatalf("a token that is not a JWT: %v, want SASL_AUTHENTICATION_FAILED {\"status\":\"invalid_token\"}", err)
	}
}
