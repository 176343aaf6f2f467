package broker

// JWKSValidator is Kafka's OAuthBearerValidatorCallbackHandler with its
// BrokerJwtValidator: a signed JWT checked against the keys of a JSON Web
// Key Set (sasl.oauthbearer.jwks.endpoint.url, http, https or file), with
// jose4j's checks as BrokerJwtValidator sets them up: a signature algorithm
// other than none, then the claims (checkClaims), then a non-blank
// subject. Every refusal is invalid_token. This is Kafka 4.4's behaviour:
// Kafka 4.1's handler, with the default sasl.oauthbearer.jwt.validator.class,
// validates with ClientJwtValidator, which checks no signature, audience
// or issuer, a hole strata does not copy.
//
// An http(s) key set is fetched again every
// sasl.oauthbearer.jwks.endpoint.refresh.ms, and sooner when a token names
// a key id the set lacks (no more than once per JWKSMinRefresh); a file
// key set is read once, at startup.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/zap"
)

// JWKSMinRefresh is the least time between two fetches of a key set that
// a token's unknown key id prompts.
const JWKSMinRefresh = 10 * time.Second

// jwksMaxSize bounds a fetched key set.
const jwksMaxSize = 1 << 20

// jwtAlgorithms are the signature algorithms accepted: jose4j's, none
// excluded.
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA, jose.HS256, jose.HS384, jose.HS512,
}

// JWKSConfig is what a JWKSValidator checks, from the sasl.oauthbearer.* keys.
type JWKSConfig struct {
	URL        string        // sasl.oauthbearer.jwks.endpoint.url
	Refresh    time.Duration // sasl.oauthbearer.jwks.endpoint.refresh.ms
	Audience   []string      // sasl.oauthbearer.expected.audience
	Issuer     string        // sasl.oauthbearer.expected.issuer
	ClockSkew  time.Duration // sasl.oauthbearer.clock.skew.seconds
	SubClaim   string        // sasl.oauthbearer.sub.claim.name
	ScopeClaim string        // sasl.oauthbearer.scope.claim.name
	// HTTP fetches an http(s) key set; nil means http.DefaultClient.
	HTTP *http.Client
}

// JWKSValidator validates signed JWTs with a key set it keeps fresh.
type JWKSValidator struct {
	cfg JWKSConfig
	log *zap.Logger

	mu         sync.Mutex
	keys       jose.JSONWebKeySet
	fetched    time.Time // last fetch started
	refreshing bool
}

// NewJWKSValidator is a validator of cfg; New reads its key set (open).
func NewJWKSValidator(cfg JWKSConfig) *JWKSValidator {
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	return &JWKSValidator{cfg: cfg, log: zap.NewNop()}
}

// Config is what v checks.
func (v *JWKSValidator) Config() JWKSConfig { return v.cfg }

// open reads the key set a first time, failing as Kafka fails to start
// when it cannot.
func (v *JWKSValidator) open(ctx context.Context, log *zap.Logger) error {
	keys, err := v.fetch(ctx)
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.keys, v.fetched, v.log = keys, time.Now(), log
	return nil
}

func (v *JWKSValidator) fetch(ctx context.Context) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	u, err := url.Parse(v.cfg.URL)
	if err != nil {
		return set, fmt.Errorf("JWKS endpoint %s: %w", v.cfg.URL, err)
	}
	var body []byte
	switch u.Scheme {
	case "file":
		body, err = os.ReadFile(u.Path)
	case "http", "https":
		body, err = v.get(ctx)
	default:
		return set, fmt.Errorf("JWKS endpoint %s: only the http, https and file protocols are supported", v.cfg.URL)
	}
	if err != nil {
		return set, fmt.Errorf("JWKS endpoint %s: %w", v.cfg.URL, err)
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return set, fmt.Errorf("JWKS endpoint %s: not a JSON Web Key Set: %w", v.cfg.URL, err)
	}
	if len(set.Keys) == 0 {
		return set, fmt.Errorf("JWKS endpoint %s: no keys", v.cfg.URL)
	}
	return set, nil
}

func (v *JWKSValidator) get(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.cfg.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, jwksMaxSize))
}

// refreshAsync fetches an http(s) key set again in the background, unless a
// fetch is running or started less than min ago; validations meanwhile use
// the keys at hand.
func (v *JWKSValidator) refreshAsync(min time.Duration) {
	if strings.HasPrefix(v.cfg.URL, "file:") {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.refreshing || time.Since(v.fetched) < min {
		return
	}
	v.refreshing, v.fetched = true, time.Now()
	go func() {
		keys, err := v.fetch(context.Background())
		v.mu.Lock()
		defer v.mu.Unlock()
		v.refreshing = false
		if err != nil {
			v.log.Warn("refreshing the OAUTHBEARER key set failed; the keys at hand stay in use", zap.Error(err))
			return
		}
		v.keys = keys
	}()
}

// jwtClaims are the claims checked; the subject and scope claims are read
// by name from the rest.
type jwtClaims struct {
	jwt.Claims
	IssuedAtRaw *jwt.NumericDate `json:"iat"`
}

// checkClaims checks the registered claims as jose4j's JwtConsumer does
// with Kafka's settings, in whole seconds as its NumericDate counts: exp
// and iat present, the issuer, the audience (none when none is expected),
// exp not before iat or nbf, exp and nbf against now within the skew. An
// iat in the future is accepted, as jose4j accepts it.
func (v *JWKSValidator) checkClaims(c *jwtClaims, now time.Time) string {
	switch {
	case c.Expiry == nil:
		return "No Expiration Time (exp) claim present."
	case c.IssuedAtRaw == nil:
		return "No Issued At (iat) claim present."
	case v.cfg.Issuer != "" && c.Issuer != v.cfg.Issuer:
		return fmt.Sprintf("Issuer (iss) claim value (%s) doesn't match expected value of %s", c.Issuer, v.cfg.Issuer)
	case len(v.cfg.Audience) == 0 && len(c.Audience) > 0:
		return fmt.Sprintf("Audience (aud) claim %v present in the JWT but no expected audience value(s) were provided to the JWT Consumer", c.Audience)
	case len(v.cfg.Audience) > 0 && !slices.ContainsFunc(v.cfg.Audience, c.Audience.Contains):
		return fmt.Sprintf("Audience (aud) claim %v doesn't contain an acceptable identifier. Expected one of %v as an aud value.", c.Audience, v.cfg.Audience)
	}
	skew := int64(v.cfg.ClockSkew / time.Second)
	nowSec, exp, iat := now.Unix(), int64(*c.Expiry), int64(*c.IssuedAtRaw)
	switch {
	case nowSec-skew >= exp:
		return fmt.Sprintf("The JWT is no longer valid - the evaluation time %d is on or after the Expiration Time (exp=%d) claim value (even when providing %d seconds of leeway to account for clock skew).", nowSec, exp, skew)
	case exp < iat:
		return fmt.Sprintf("The Expiration Time (exp=%d) claim value cannot be before the Issued At (iat=%d) claim value.", exp, iat)
	case c.NotBefore != nil && exp < int64(*c.NotBefore):
		return fmt.Sprintf("The Expiration Time (exp=%d) claim value cannot be before the Not Before (nbf=%d) claim value.", exp, int64(*c.NotBefore))
	case c.NotBefore != nil && nowSec+skew < int64(*c.NotBefore):
		return fmt.Sprintf("The JWT is not yet valid as the evaluation time %d is before the Not Before (nbf=%d) claim time (even when providing %d seconds of leeway to account for clock skew).", nowSec, int64(*c.NotBefore), skew)
	}
	return ""
}

// Validate checks token's signature and claims.
func (v *JWKSValidator) Validate(token string, now time.Time) (OAuthBearerToken, *OAuthBearerError) {
	v.refreshAsync(v.cfg.Refresh)
	token = strings.TrimSpace(token)
	if n := strings.Count(token, ".") + 1; n != 3 {
		return OAuthBearerToken{}, invalidToken("Malformed JWT provided; expected three sections (header, payload, and signature), but %d sections provided", n)
	}
	parsed, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: %v", err)
	}
	if len(parsed.Headers) != 1 {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: %d signatures", len(parsed.Headers))
	}
	kid := parsed.Headers[0].KeyID
	v.mu.Lock()
	candidates := v.keys.Keys
	if kid != "" {
		candidates = v.keys.Key(kid)
	}
	candidates = slices.Clone(candidates)
	v.mu.Unlock()
	if len(candidates) == 0 {
		v.refreshAsync(JWKSMinRefresh)
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: no key with id %q in the key set", kid)
	}
	var claims jwtClaims
	var named map[string]any
	verified := false
	for _, k := range candidates {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if err := parsed.Claims(k.Key, &claims, &named); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: the signature does not verify with the key set's keys")
	}
	if err := v.checkClaims(&claims, now); err != "" {
		return OAuthBearerToken{}, invalidToken("Could not validate the access token: %s", err)
	}
	subClaim := v.cfg.SubClaim
	if subClaim == "" {
		subClaim = "sub"
	}
	sub, ok := named[subClaim].(string)
	if _, present := named[subClaim]; present && !ok {
		return OAuthBearerToken{}, invalidToken("Could not extract the '%s' claim from the access token", subClaim)
	}
	if strings.TrimSpace(sub) == "" {
		return OAuthBearerToken{}, invalidToken("%s value must be non-null", subClaim)
	}
	scopeClaim := v.cfg.ScopeClaim
	if scopeClaim == "" {
		scopeClaim = "scope"
	}
	if _, err := jwtScope(named, scopeClaim); err != nil {
		return OAuthBearerToken{}, err
	}
	if claims.Expiry.Time().Before(time.Unix(0, 0)) {
		return OAuthBearerToken{}, invalidToken("exp value must be non-negative")
	}
	return OAuthBearerToken{Principal: strings.TrimSpace(sub), Expiry: claims.Expiry.Time()}, nil
}
