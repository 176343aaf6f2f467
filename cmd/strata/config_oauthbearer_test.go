package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
)

const oauthJAAS = oauthBearerLoginModule + ` required unsecuredLoginStringClaim_sub="admin"`

// TestOAuthBearerListenerKeys: OAUTHBEARER's validator is chosen as Kafka
// chooses it, the unsecured one by default with its unsecuredValidator*
// options, the JWKS one with OAuthBearerValidatorCallbackHandler (either
// name) and the sasl.oauthbearer.* keys in Kafka's precedence; a server
// callback handler anywhere else is refused.
func TestOAuthBearerListenerKeys(t *testing.T) {
	s, err := loadSettings(saslNode(map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "listener.name.sasl.plain.sasl.jaas.config": "<unset>",
		"listener.name.sasl.oauthbearer.sasl.jaas.config": oauthJAAS + ` unsecuredValidatorPrincipalClaimName="email" unsecuredValidatorScopeClaimName="scp" ` +
			`unsecuredValidatorRequiredScope="read write" unsecuredValidatorAllowableClockSkewMs="1500";`}), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ls := s.ListenerSASL["SASL"]
	u, ok := ls.OAuthBearer.(*broker.UnsecuredJWTValidator)
	if !ok || ls.PlainUsers != nil || u.PrincipalClaim != "email" || u.ScopeClaim != "scp" || !slices.Equal(u.RequiredScope, []string{"read", "write"}) || u.ClockSkew != 1500*time.Millisecond {
		t.Errorf("unsecured validator %#v, PLAIN users %v", ls.OAuthBearer, ls.PlainUsers)
	}
	for _, handler := range oauthBearerValidatorHandlers {
		s, err := loadSettings(saslNode(map[string]string{"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
			"listener.name.sasl.oauthbearer.sasl.jaas.config":                   oauthJAAS + ";",
			"listener.name.sasl.oauthbearer.sasl.server.callback.handler.class": handler,
			"sasl.oauthbearer.jwks.endpoint.url":                                "https://broker-wide.example/jwks",
			"listener.name.sasl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": "file:///etc/jwks.json",
			"listener.name.sasl.sasl.oauthbearer.expected.audience":             "a, b",
			"sasl.oauthbearer.expected.issuer":                                  "https://issuer.example",
			"sasl.oauthbearer.clock.skew.seconds":                               "5",
			"sasl.oauthbearer.sub.claim.name":                                   "email",
			"sasl.oauthbearer.jwks.endpoint.refresh.ms":                         "60000",
		}), zap.NewNop())
		if err != nil {
			t.Fatalf("%s: %v", handler, err)
		}
		v, ok := s.ListenerSASL["SASL"].OAuthBearer.(*broker.JWKSValidator)
		if !ok {
			t.Fatalf("%s: validator %#v, want a JWKS one", handler, s.ListenerSASL["SASL"].OAuthBearer)
		}
		c := v.Config()
		if c.URL != "file:///etc/jwks.json" || !slices.Equal(c.Audience, []string{"a", "b"}) || c.Issuer != "https://issuer.example" ||
			c.ClockSkew != 5*time.Second || c.SubClaim != "email" || c.ScopeClaim != "" || c.Refresh != time.Minute {
			t.Errorf("%s: JWKS config %+v", handler, c)
		}
	}
	oauth := func(changes map[string]string) map[string]string {
		base := map[string]string{"sasl.enabled.mechanisms": "OAUTHBEARER", "listener.name.sasl.oauthbearer.sasl.jaas.config": oauthJAAS + ";"}
		for k, v := range changes {
			base[k] = v
		}
		return base
	}
	for _, tt := range []struct {
		changes     map[string]string
		key, reason string
	}{
		{oauth(map[string]string{"listener.name.sasl.oauthbearer.sasl.jaas.config": "<unset>"}),
			"listener.name.sasl.oauthbearer.sasl.jaas.config", "missing: the JAAS configuration of mechanism OAUTHBEARER"},
		{oauth(map[string]string{"listener.name.sasl.oauthbearer.sasl.jaas.config": plainLoginModule + " required;"}),
			"listener.name.sasl.oauthbearer.sasl.jaas.config", "OAUTHBEARER's options are those of " + oauthBearerLoginModule},
		{oauth(map[string]string{"listener.name.sasl.oauthbearer.sasl.jaas.config": oauthJAAS + ` unsecuredValidatorAllowableClockSkewMs="-1";`}),
			"listener.name.sasl.oauthbearer.sasl.jaas.config", "Allowable clock skew millis must be a whole number, not negative"},
		{oauth(map[string]string{"listener.name.sasl.oauthbearer.sasl.server.callback.handler.class": oauthBearerValidatorHandlers[0]}),
			"listener.name.sasl.sasl.oauthbearer.jwks.endpoint.url", "missing"},
		{oauth(map[string]string{"listener.name.sasl.oauthbearer.sasl.server.callback.handler.class": oauthBearerValidatorHandlers[0],
			"sasl.oauthbearer.jwks.endpoint.url": "ftp://x/jwks"}), "sasl.oauthbearer.jwks.endpoint.url", `"http", "https" and "file"`},
		{oauth(map[string]string{"listener.name.sasl.oauthbearer.sasl.server.callback.handler.class": oauthBearerValidatorHandlers[0],
			"sasl.oauthbearer.jwks.endpoint.url": "file:///j", "sasl.oauthbearer.clock.skew.seconds": "-3"}), "sasl.oauthbearer.clock.skew.seconds", "0 or more"},
		{oauth(map[string]string{"listener.name.sasl.sasl.server.callback.handler.class": oauthBearerValidatorHandlers[0]}),
			"listener.name.sasl.sasl.server.callback.handler.class", "only as listener.name.<listener>.<mechanism>.sasl.server.callback.handler.class"},
		{oauth(map[string]string{"listener.name.sasl.plain.sasl.server.callback.handler.class": oauthBearerValidatorHandlers[0]}),
			"listener.name.sasl.plain.sasl.server.callback.handler.class", "only for OAUTHBEARER"},
	} {
		_, err := loadSettings(saslNode(tt.changes), zap.NewNop())
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%v: error %v, want one for %s saying %q", tt.changes, err, tt.key, tt.reason)
		}
	}
}

// TestSASLReauthKeys: connections.max.reauth.ms of each mechanism is
// listener.name.<listener>.<mechanism>.connections.max.reauth.ms, then the
// listener's, then the broker's, as SaslChannelBuilder reads it; 0 or
// less is none.
func TestSASLReauthKeys(t *testing.T) {
	s, err := loadSettings(saslNode(map[string]string{"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
		"listener.name.sasl.oauthbearer.sasl.jaas.config":          oauthJAAS + ";",
		"connections.max.reauth.ms":                                "1000",
		"listener.name.sasl.connections.max.reauth.ms":             "2000",
		"listener.name.sasl.oauthbearer.connections.max.reauth.ms": "3000",
	}), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.ListenerSASL["SASL"].MaxReauth; got[broker.MechanismPlain] != 2*time.Second || got[broker.MechanismOAuthBearer] != 3*time.Second {
		t.Errorf("MaxReauth %v, want PLAIN 2s (the listener's) and OAUTHBEARER 3s (the mechanism's)", got)
	}
	s, err = loadSettings(saslNode(map[string]string{"connections.max.reauth.ms": "-5"}), zap.NewNop())
	if err != nil || len(s.ListenerSASL["SASL"].MaxReauth) != 0 {
		t.Errorf("connections.max.reauth.ms=-5: %v, MaxReauth %v, want none", err, s.ListenerSASL["SASL"].MaxReauth)
	}
	_, err = loadSettings(saslNode(map[string]string{"listener.name.sasl.plain.connections.max.reauth.ms": "soon"}), zap.NewNop())
	var ce *configError
	if !errors.As(err, &ce) || ce.Key != "listener.name.sasl.plain.connections.max.reauth.ms" {
		t.Errorf("a bad connections.max.reauth.ms: %v, want a configError naming it", err)
	}
}
