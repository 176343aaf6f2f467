package broker

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/metrics"
)

// TestSASLAuditLog: each failed authentication is one info line, "failed
// authentication" with the listener, mechanism, client address, reason
// (and on a re-authentication the session's principal), and is counted
// in strata_failed_authentication_total, as successes are in
// strata_successful_authentication_total.
func TestSASLAuditLog(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	b := startBrokerLogging(t, func(c *Config) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0"
		c.MetricsListener = "http://127.0.0.1:0"
		c.ListenerSASL = map[string]*ListenerSASL{"SASL": {
			Mechanisms:     []string{MechanismPlain, MechanismOAuthBearer},
			PlainUsers:     map[string]string{"alice": "alice-secret", "admin": "admin-secret"},
			OAuthBearer:    &UnsecuredJWTValidator{},
			MaxReceiveSize: DefaultSASLMaxReceiveSize,
			MaxReauth:      map[string]time.Duration{MechanismPlain: time.Minute},
		}}
	}, zap.New(zapcore.NewTee(core, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Core())))
	expired := unsecuredJWT(map[string]any{"sub": "alice", "exp": time.Now().Unix() - 60})
	for _, tc := range []struct {
		name      string
		run       func(c *rawConn)
		mechanism string
		reason    string
		principal string
	}{
		{"wrong password", func(c *rawConn) {
			handshake(c, 1, MechanismPlain)
			authenticate(c, 2, []byte("\x00alice\x00wrong"))
		}, MechanismPlain, "Authentication failed: Invalid username or password", ""},
		{"expired token", func(c *rawConn) {
			handshake(c, 1, MechanismOAuthBearer)
			authenticate(c, 2, oauthFirst("", expired))
			authenticate(c, 2, []byte{0x01})
		}, MechanismOAuthBearer, `{"status":"invalid_token"}: The indicated time`, ""},
		{"unknown mechanism", func(c *rawConn) { handshake(c, 1, "SCRAM-SHA-256") }, "SCRAM-SHA-256", "Unsupported SASL mechanism SCRAM-SHA-256", ""},
		{"huge frame", func(c *rawConn) { c.sendFrame(1<<30, []byte{0, 17}) }, "", "invalid receive size: 1073741824 bytes", ""},
		{"re-authentication as another", func(c *rawConn) {
			handshake(c, 1, MechanismPlain)
			authenticate(c, 2, []byte("\x00alice\x00alice-secret"))
			handshake(c, 1, MechanismPlain)
			authenticate(c, 2, []byte("\x00admin\x00admin-secret"))
		}, MechanismPlain, "Cannot change principals during re-authentication from User.alice: User.admin", "User:alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialSASL(t, b)
			local := c.nc.LocalAddr().String()
			tc.run(c)
			c.closed(tc.name)
			var lines []observer.LoggedEntry
			deadline := time.Now().Add(10 * time.Second)
			for len(lines) == 0 && time.Now().Before(deadline) {
				lines = logs.FilterField(zap.String("remote", local)).FilterLevelExact(zapcore.InfoLevel).All()
				time.Sleep(10 * time.Millisecond)
			}
			if len(lines) != 1 || lines[0].Message != "failed authentication" {
				t.Fatalf("logged %v for the client, want one failed authentication line", lines)
			}
			f := lines[0].ContextMap()
			reason, _ := f["reason"].(string)
			if f["listener"] != "SASL" || f["mechanism"] != tc.mechanism || f["client"] != local || !strings.Contains(reason, tc.reason) ||
				f["reauthentication"] != (tc.principal != "") || tc.principal != "" && f["principal"] != tc.principal {
				t.Errorf("fields %v, want listener SASL, mechanism %q, client %s, reason with %q, principal %q", f, tc.mechanism, local, tc.reason, tc.principal)
			}
		})
	}
	m := scrapeMetrics(t, b)
	if failed, ok := m.get(metrics.FailedAuthentications, "listener", "SASL"), m.get(metrics.SuccessfulAuthentications, "listener", "SASL"); failed != 4 || ok != 1 {
		t.Errorf("failed authentications %v, successful %v; want 4 and 1", failed, ok)
	}
	if failed := m.get(metrics.FailedReauthentications, "listener", "SASL"); failed != 1 {
		t.Errorf("failed re-authentications %v, want 1", failed)
	}
}
