package main

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/broker"
)

// This file reads OAUTHBEARER's validator on a SASL listener as Kafka
// chooses it:
//
//   - without listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class,
//     Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: unsigned JWTs,
//     tuned by the unsecuredValidator* options of the listener's
//     OAuthBearerLoginModule JAAS configuration;
//   - with OAuthBearerValidatorCallbackHandler (either of its names), JWTs
//     signed by a key of the JWKS at sasl.oauthbearer.jwks.endpoint.url,
//     tuned by the sasl.oauthbearer.* keys, each read as Kafka's
//     ConfigurationUtils reads it: listener.name.<listener>.oauthbearer.<key>,
//     then listener.name.<listener>.<key>, then <key>.

const oauthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// oauthBearerValidatorHandlers are the names of Kafka's JWKS validator
// callback handler, the second the one before Kafka 3.4.
var oauthBearerValidatorHandlers = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
}

// validSASLCallbackHandler refuses sasl.server.callback.handler.class set
// where Kafka does not read it: it is read only with a listener and a
// mechanism prefix, and strata takes only OAUTHBEARER's.
func validSASLCallbackHandler(r sslReader) bool {
	if _, name, ok := r.set("sasl.server.callback.handler.class"); ok {
		r.fail(name, "Kafka reads a server callback handler only as listener.name.<listener>.<mechanism>.sasl.server.callback.handler.class; "+
			"strata takes OAUTHBEARER's, "+strings.Join(oauthBearerValidatorHandlers, " or "))
		return false
	}
	for k, v := range r.p.props {
		rest, ok := strings.CutPrefix(k, r.prefix)
		if ok && strings.HasSuffix(rest, ".sasl.server.callback.handler.class") && rest != "oauthbearer.sasl.server.callback.handler.class" && strings.TrimSpace(v) != "" {
			r.fail(k, "strata takes a server callback handler only for OAUTHBEARER: "+strings.Join(oauthBearerValidatorHandlers, " or "))
			return false
		}
	}
	return true
}

// oauthBearerValidator builds the listener's OAUTHBEARER validator.
func oauthBearerValidator(r sslReader, listener string) (broker.OAuthBearerValidator, bool) {
	entry, ok := mechanismJAAS(r, listener, broker.MechanismOAuthBearer, oauthBearerLoginModule, "OAUTHBEARER's options are those of "+oauthBearerLoginModule)
	if !ok {
		return nil, false
	}
	if h, _ := r.p.get(r.prefix + "oauthbearer.sasl.server.callback.handler.class"); h != "" {
		return jwksValidator(r)
	}
	v := &broker.UnsecuredJWTValidator{
		PrincipalClaim: entry.options["unsecuredValidatorPrincipalClaimName"],
		ScopeClaim:     entry.options["unsecuredValidatorScopeClaimName"],
		RequiredScope:  strings.Fields(entry.options["unsecuredValidatorRequiredScope"]),
	}
	if s := strings.TrimSpace(entry.options["unsecuredValidatorAllowableClockSkewMs"]); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			r.p.fail(r.prefix+"oauthbearer.sasl.jaas.config", "[hidden]",
				fmt.Sprintf("unsecuredValidatorAllowableClockSkewMs=%q: Allowable clock skew millis must be a whole number, not negative", s))
			return nil, false
		}
		v.ClockSkew = time.Duration(n) * time.Millisecond
	}
	return v, true
}

// oauthGet reads an OAUTHBEARER key with Kafka's precedence.
func oauthGet(r sslReader, key string) (value, name string, ok bool) {
	if v, ok := r.p.get(r.prefix + "oauthbearer." + key); ok {
		return v, r.prefix + "oauthbearer." + key, true
	}
	return r.get(key)
}

// jwksValidator builds the validator of OAuthBearerValidatorCallbackHandler.
func jwksValidator(r sslReader) (broker.OAuthBearerValidator, bool) {
	cfg := broker.JWKSConfig{Refresh: time.Hour, ClockSkew: 30 * time.Second}
	u, name, ok := oauthGet(r, "sasl.oauthbearer.jwks.endpoint.url")
	if !ok || u == "" {
		r.fail(r.prefix+"sasl.oauthbearer.jwks.endpoint.url", "missing: OAuthBearerValidatorCallbackHandler validates tokens with the keys at this URL")
		return nil, false
	}
	parsed, err := url.Parse(u)
	if err != nil || !slices.Contains([]string{"http", "https", "file"}, parsed.Scheme) {
		r.fail(name, fmt.Sprintf("The OAuth configuration option %s contains a URL (%s) that is malformed or of a protocol other than \"http\", \"https\" and \"file\"", name, u))
		return nil, false
	}
	cfg.URL = u
	if v, name, ok := oauthGet(r, "sasl.oauthbearer.jwks.endpoint.refresh.ms"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			r.fail(name, "must be a whole number of milliseconds, 1 or more")
			return nil, false
		}
		cfg.Refresh = time.Duration(n) * time.Millisecond
	}
	if v, name, ok := oauthGet(r, "sasl.oauthbearer.clock.skew.seconds"); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 || n > math.MaxInt32 {
			r.fail(name, "must be a whole number of seconds, 0 or more")
			return nil, false
		}
		cfg.ClockSkew = time.Duration(n) * time.Second
	}
	if v, _, ok := oauthGet(r, "sasl.oauthbearer.expected.audience"); ok {
		cfg.Audience = csvList(v)
	}
	if v, _, ok := oauthGet(r, "sasl.oauthbearer.expected.issuer"); ok {
		cfg.Issuer = v
	}
	if v, _, ok := oauthGet(r, "sasl.oauthbearer.sub.claim.name"); ok {
		cfg.SubClaim = v
	}
	if v, _, ok := oauthGet(r, "sasl.oauthbearer.scope.claim.name"); ok {
		cfg.ScopeClaim = v
	}
	return broker.NewJWKSValidator(cfg), true
}
