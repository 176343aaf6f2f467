package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metrics"
)

// reauthBroker serves PLAIN and OAUTHBEARER (unsecured) with
// connections.max.reauth.ms maxReauth for both.
func reauthBroker(t *testing.T, maxReauth time.Duration) *Broker {
	t.Helper()
	return oauthBroker(t, &UnsecuredJWTValidator{}, func(c *Config) {
		c.ListenerSASL["SASL"].MaxReauth = map[string]time.Duration{MechanismPlain: maxReauth, MechanismOAuthBearer: maxReauth}
	})
}

func metadataServed(t *testing.T, c *rawConn, corr int32) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	c.sendRequest(req, 12, corr)
	c.response(req, corr)
}

// TestSASLReauthentication walks KIP-368 on the wire: SessionLifetimeMs
// is connections.max.reauth.ms, capped by an OAUTHBEARER token's remaining
// lifetime; a SaslHandshake after authentication re-authenticates (once a
// second at most: sooner it gets ILLEGAL_SASL_STATE); a changed principal
// or mechanism fails and closes; a request after the session expired
// closes the connection.
func TestSASLReauthentication(t *testing.T) {
	const maxReauth = 1500 * time.Millisecond
	b := reauthBroker(t, maxReauth)
	h := newHealthCheck(t, b)
	alice := []byte("\x00alice\x00alice-secret")

	t.Run("re-authenticate, then too soon, then expired", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismPlain)
		start := time.Now()
		if resp := authenticate(c, 1, alice); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != maxReauth.Milliseconds() {
			t.Fatalf("SaslAuthenticate v1: %v lifetime %d ms, want success and %d ms", kerr.ErrorForCode(resp.ErrorCode), resp.SessionLifetimeMillis, maxReauth.Milliseconds())
		}
		if resp := authenticate(c, 0, nil); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("SaslAuthenticate without a handshake: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(resp.ErrorCode))
		}
		metadataServed(t, c, 4)
		if resp := handshake(c, 1, MechanismPlain); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		reauthAt := time.Now()
		if resp := authenticate(c, 2, alice); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != maxReauth.Milliseconds() {
			t.Fatalf("re-authentication: %v %q lifetime %d", kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), resp.SessionLifetimeMillis)
		}
		metadataServed(t, c, 5)
		if resp := handshake(c, 1, MechanismPlain); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("a handshake %v after the last re-authentication began: %v, want ILLEGAL_SASL_STATE", time.Since(reauthAt), kerr.ErrorForCode(resp.ErrorCode))
		}
		if time.Since(start) > maxReauth {
			t.Fatalf("took %v, past the first session: the rest tests nothing", time.Since(start))
		}
		time.Sleep(time.Until(reauthAt.Add(maxReauth + 100*time.Millisecond)))
		c.sendRequest(kmsg.NewPtrMetadataRequest(), 12, 6)
		c.closed("Metadata after the session expired")
	})
	t.Run("another principal", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismPlain)
		authenticate(c, 2, alice)
		handshake(c, 1, MechanismPlain)
		resp := authenticate(c, 2, []byte("\x00admin\x00admin-secret"))
		if want := "Cannot change principals during re-authentication from User.alice: User.admin"; resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || derefOr(resp.ErrorMessage) != want {
			t.Errorf("re-authentication as admin: %v %q, want SASL_AUTHENTICATION_FAILED %q", kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage), want)
		}
		c.closed("after a changed principal")
	})
	t.Run("another mechanism", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismPlain)
		authenticate(c, 2, alice)
		if resp := handshake(c, 1, MechanismOAuthBearer); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication handshake with OAUTHBEARER: %v, want success as Kafka answers", kerr.ErrorForCode(resp.ErrorCode))
		}
		c.sendRequest(kmsg.NewPtrSASLAuthenticateRequest(), 2, 3)
		c.closed("a token after a changed mechanism")
	})
	t.Run("a wrong password closes", func(t *testing.T) {
		c := dialSASL(t, b)
		handshake(c, 1, MechanismPlain)
		authenticate(c, 2, alice)
		handshake(c, 1, MechanismPlain)
		if resp := authenticate(c, 2, []byte("\x00alice\x00wrong")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Errorf("re-authentication with a wrong password: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		c.closed("after a failed re-authentication")
	})
	t.Run("OAUTHBEARER: the token's lifetime caps the session", func(t *testing.T) {
		now := time.Now()
		for _, tc := range []struct {
			exp     time.Time
			lo, max time.Duration
		}{
			{now.Add(time.Hour), maxReauth, maxReauth},
			{now.Add(time.Second), 0, time.Second},
		} {
			c := dialSASL(t, b)
			handshake(c, 1, MechanismOAuthBearer)
			resp := authenticate(c, 1, oauthFirst("", unsecuredJWT(map[string]any{"sub": "alice", "exp": float64(tc.exp.UnixMilli()) / 1000})))
			if got := time.Duration(resp.SessionLifetimeMillis) * time.Millisecond; resp.ErrorCode != 0 || got < tc.lo || got > tc.max {
				t.Errorf("token expiring in %v: %v lifetime %v, want %v to %v", time.Until(tc.exp), kerr.ErrorForCode(resp.ErrorCode), got, tc.lo, tc.max)
			}
		}
	})
	h.check("re-authentication")
}

// TestSASLReauthFranzGo: franz-go, which re-authenticates ahead of its
// session's end (KIP-368), keeps producing across sessions of 2.5 s, each
// re-authentication counted; without connections.max.reauth.ms PLAIN's
// lifetime is 0 and a handshake after authentication ILLEGAL_SASL_STATE.
func TestSASLReauthFranzGo(t *testing.T) {
	b := oauthBroker(t, &UnsecuredJWTValidator{}, func(c *Config) {
		c.ListenerSASL["SASL"].MaxReauth = map[string]time.Duration{MechanismPlain: 2500 * time.Millisecond}
		c.MetricsListener = "http://127.0.0.1:0"
	})
	cl := saslClient(t, b, "alice", "alice-secret", kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation(), kgo.RequestRetries(0))
	deadline := time.Now().Add(6 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce %d, %v before the end: %v", n, time.Until(deadline), err)
		}
		n++
		time.Sleep(50 * time.Millisecond)
	}
	m := scrapeMetrics(t, b)
	reauths, failed := m.get(metrics.SuccessfulReauthentications, "listener", "SASL"), m.get(metrics.FailedReauthentications, "listener", "SASL")
	auths, authFailed := m.get(metrics.SuccessfulAuthentications, "listener", "SASL"), m.get(metrics.FailedAuthentications, "listener", "SASL")
	t.Logf("%d records in 6 s; %v authentications, %v re-authentications, %v and %v failed", n, auths, reauths, authFailed, failed)
	if reauths < 2 || failed != 0 || authFailed != 0 || n < 30 {
		t.Errorf("%d records, %v re-authentications, %v failed re-authentications, %v failed authentications: want 30 or more records, 2 re-authentications or more, none failed", n, reauths, failed, authFailed)
	}

	plain := saslBroker(t, nil)
	c := dialSASL(t, plain)
	handshake(c, 1, MechanismPlain)
	if resp := authenticate(c, 2, []byte("\x00alice\x00alice-secret")); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
		t.Errorf("without connections.max.reauth.ms: %v lifetime %d, want 0", kerr.ErrorForCode(resp.ErrorCode), resp.SessionLifetimeMillis)
	}
	if r := handshake(c, 1, MechanismPlain); r.ErrorCode != kerr.IllegalSaslState.Code || !strings.Contains(kerr.ErrorForCode(r.ErrorCode).Error(), "ILLEGAL_SASL_STATE") {
		t.Errorf("a handshake without a session lifetime: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
	}
}
