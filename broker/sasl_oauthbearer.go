package broker

// SASL/OAUTHBEARER (RFC 7628) as Kafka's OAuthBearerSaslServer serves it:
// the client's first message carries a bearer token, which the listener's
// validator checks. A token refused gets no error at once: the server
// answers with an RFC 7628 error JSON ({"status":"invalid_token"}), the
// client acknowledges it with a single 0x01 byte, and only then does the
// authentication fail, SASL_AUTHENTICATION_FAILED with that JSON as the
// message. The principal is User:<the token's principal claim>. The
// extensions a client sends (auth aside) are accepted and unused, as both
// of Kafka's validator callback handlers accept them.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// MechanismOAuthBearer is SASL/OAUTHBEARER (RFC 7628).
const MechanismOAuthBearer = "OAUTHBEARER"

// OAuthBearerToken is a bearer token its validator accepted.
type OAuthBearerToken struct {
	Principal string    // the principal (by default sub) claim
	Expiry    time.Time // exp: the session ends by then (KIP-368)
}

// OAuthBearerError is a token its validator refused: Status (and, for
// insufficient_scope, Scope) go to the client in the error JSON, Reason
// only to the broker's log.
type OAuthBearerError struct {
	Status string // invalid_token or insufficient_scope
	Scope  string // the required scope, for insufficient_scope
	Reason string
}

func (e *OAuthBearerError) Error() string { return e.Reason }

// errorJSON is the JSON OAuthBearerSaslServer.jsonErrorResponse sends,
// byte for byte (a space after each comma).
func (e *OAuthBearerError) errorJSON() string {
	s := fmt.Sprintf(`{"status":"%s"`, e.Status)
	if e.Scope != "" {
		s += fmt.Sprintf(`, "scope":"%s"`, e.Scope)
	}
	return s + "}"
}

func invalidToken(format string, args ...any) *OAuthBearerError {
	return &OAuthBearerError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// OAuthBearerValidator checks a bearer token at time now.
type OAuthBearerValidator interface {
	Validate(token string, now time.Time) (OAuthBearerToken, *OAuthBearerError)
}

// oauthBearerServer is one OAUTHBEARER exchange.
type oauthBearerServer struct {
	validator OAuthBearerValidator
	now       func() time.Time
	failure   *OAuthBearerError // the refusal sent, awaiting the client's 0x01
	token     OAuthBearerToken
}

// oauthBearerRefused is the end of a failure round: the client is told the
// error JSON, the broker's log why.
type oauthBearerRefused struct{ e *OAuthBearerError }

func (r oauthBearerRefused) Error() string  { return r.e.errorJSON() }
func (r oauthBearerRefused) detail() string { return r.e.errorJSON() + ": " + r.e.Reason }

func (s *oauthBearerServer) step(msg []byte) ([]byte, bool, error) {
	if len(msg) == 1 && msg[0] == 0x01 && s.failure != nil {
		return nil, false, oauthBearerRefused{s.failure}
	}
	s.failure = nil
	authzid, token, err := parseOAuthBearerClientFirst(msg)
	if err != nil {
		return nil, false, err
	}
	t, refused := s.validator.Validate(token, s.now())
	if refused != nil {
		s.failure = refused
		return []byte(refused.errorJSON()), false, nil
	}
	if authzid != "" && authzid != t.Principal {
		return nil, false, fmt.Errorf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			authzid, t.Principal)
	}
	s.token = t
	return []byte{}, true, nil
}

func (s *oauthBearerServer) principal() string { return s.token.Principal }

func (s *oauthBearerServer) expiry() time.Time { return s.token.Expiry }

// The client's first message, as OAuthBearerClientInitialResponse matches
// it: gs2 header, then key=value pairs each ended by 0x01, then 0x01.
var (
	oauthClientFirst = regexp.MustCompile("^n,(?:a=((?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$")
	oauthAuth        = regexp.MustCompile(`^([A-Za-z0-9_]+) +([-_~+/.a-zA-Z0-9]+=*)$`)
	oauthExtKey      = regexp.MustCompile(`^[A-Za-z]+$`)
	oauthExtValue    = regexp.MustCompile("^[\x21-\x7E \t\r\n]+$")
)

// parseOAuthBearerClientFirst returns the authorization id and the bearer
// token of a client's first message; its errors are Kafka's SaslException
// messages, shown to the client only as invalid credentials.
func parseOAuthBearerClientFirst(msg []byte) (authzid, token string, err error) {
	m := oauthClientFirst.FindSubmatch(msg)
	if m == nil {
		return "", "", fmt.Errorf("%w: Invalid OAUTHBEARER client first message", errSASLInvalidCredentials)
	}
	auth, found := "", false
	for _, kv := range strings.Split(string(m[2]), "\x01") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if k == "auth" {
			auth, found = v, true
			continue
		}
		if !oauthExtKey.MatchString(k) || !oauthExtValue.MatchString(v) {
			return "", "", fmt.Errorf("%w: Invalid OAUTHBEARER client first message: invalid extension %s", errSASLInvalidCredentials, k)
		}
	}
	if !found {
		return "", "", fmt.Errorf("%w: Invalid OAUTHBEARER client first message: 'auth' not specified", errSASLInvalidCredentials)
	}
	a := oauthAuth.FindStringSubmatch(auth)
	if a == nil {
		return "", "", fmt.Errorf("%w: Invalid OAUTHBEARER client first message: invalid 'auth' format", errSASLInvalidCredentials)
	}
	if !strings.EqualFold(a[1], "bearer") {
		// Kafka means to fail with "Invalid scheme in OAUTHBEARER client
		// first message", but formatting that message throws (it names a
		// group of the wrong pattern), and the connection just closes.
		return "", "", fmt.Errorf("%w: OAUTHBEARER client first message with the scheme %s, not bearer", errSASLUnanswered, a[1])
	}
	return string(m[1]), a[2], nil
}

// UnsecuredJWTValidator is Kafka's default OAUTHBEARER validator,
// OAuthBearerUnsecuredValidatorCallbackHandler: an unsigned JWT (alg none)
// whose claims are checked, not its origin; for development and tests.
// Its settings are the unsecuredValidator* options of the listener's
// OAuthBearerLoginModule JAAS configuration.
type UnsecuredJWTValidator struct {
	PrincipalClaim string        // unsecuredValidatorPrincipalClaimName, default sub
	ScopeClaim     string        // unsecuredValidatorScopeClaimName, default scope
	RequiredScope  []string      // unsecuredValidatorRequiredScope, space-separated
	ClockSkew      time.Duration // unsecuredValidatorAllowableClockSkewMs
}

// Validate checks token as OAuthBearerUnsecuredJws and
// OAuthBearerValidationUtils do, in their order.
func (v *UnsecuredJWTValidator) Validate(token string, now time.Time) (OAuthBearerToken, *OAuthBearerError) {
	if strings.Contains(token, "..") {
		return OAuthBearerToken{}, invalidToken("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return OAuthBearerToken{}, invalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := jwtSection(parts[0])
	if err != nil {
		return OAuthBearerToken{}, err
	}
	claims, err := jwtSection(parts[1])
	if err != nil {
		return OAuthBearerToken{}, err
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return OAuthBearerToken{}, invalidToken("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return OAuthBearerToken{}, invalidToken("Unsecured JWS must not contain a digital signature")
	}
	scope, err := jwtScope(claims, v.claim(v.ScopeClaim, "scope"))
	if err != nil {
		return OAuthBearerToken{}, err
	}
	exp, ok := claims["exp"].(float64)
	if !ok {
		return OAuthBearerToken{}, invalidToken("No expiration time in JWT")
	}
	principalClaim := v.claim(v.PrincipalClaim, "sub")
	principal, ok := claims[principalClaim].(string)
	if !ok || strings.TrimSpace(principal) == "" {
		return OAuthBearerToken{}, invalidToken("No principal name in JWT claim: %s", principalClaim)
	}
	nowMs := float64(now.UnixMilli())
	skew := float64(v.ClockSkew.Milliseconds())
	iat, hasIat := claims["iat"]
	if hasIat {
		n, ok := iat.(float64)
		if !ok {
			return OAuthBearerToken{}, invalidToken("The iat claim had the incorrect type")
		}
		if 1000*n > nowMs+skew {
			return OAuthBearerToken{}, invalidToken("The Issued At value (%f seconds) was after the indicated time (%.0f ms) plus allowable clock skew (%.0f ms)", n, nowMs, skew)
		}
	}
	if nowMs-skew >= 1000*exp {
		return OAuthBearerToken{}, invalidToken("The indicated time (%.0f ms) minus allowable clock skew (%.0f ms) was on or after the Expiration Time value (%f seconds)", nowMs, skew, exp)
	}
	if n, ok := iat.(float64); hasIat && ok && exp <= n {
		return OAuthBearerToken{}, invalidToken("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp, n)
	}
	for _, want := range v.RequiredScope {
		if !slices.Contains(scope, want) {
			return OAuthBearerToken{}, &OAuthBearerError{Status: "insufficient_scope", Scope: javaList(v.RequiredScope),
				Reason: fmt.Sprintf("The provided scope (%s) was missing a required scope (%s).  All required scope elements: %s", javaList(scope), want, javaList(v.RequiredScope))}
		}
	}
	return OAuthBearerToken{Principal: principal, Expiry: millisTime(exp * 1000)}, nil
}

func (v *UnsecuredJWTValidator) claim(name, dflt string) string {
	if strings.TrimSpace(name) == "" {
		return dflt
	}
	return strings.TrimSpace(name)
}

// jwtSection decodes an unsecured JWT's header or claims section, a JSON
// object, as Kafka 4.4's OAuthBearerUnsecuredJws.toMap does: base64url,
// padding optional. (Kafka 4.1 decodes with the standard alphabet and
// refuses a section that needs base64url's '-' or '_'.)
func jwtSection(s string) (map[string]any, *OAuthBearerError) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, invalidToken("malformed Base64 URL encoded value")
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, invalidToken("malformed JSON")
	}
	return m, nil
}

// jwtScope is a scope claim as a string (one scope) or a list of them,
// blank ones left out and each trimmed, as Kafka reads it.
func jwtScope(claims map[string]any, name string) ([]string, *OAuthBearerError) {
	var scope []string
	switch c := claims[name].(type) {
	case nil:
	case string:
		if strings.TrimSpace(c) != "" {
			scope = append(scope, strings.TrimSpace(c))
		}
	case []any:
		for _, e := range c {
			s, ok := e.(string)
			if !ok {
				return nil, invalidToken("The %s claim had the incorrect type", name)
			}
			if strings.TrimSpace(s) != "" {
				scope = append(scope, strings.TrimSpace(s))
			}
		}
	default:
		return nil, invalidToken("The %s claim had the incorrect type", name)
	}
	return scope, nil
}

// javaList formats as Java's List.toString: [a, b].
func javaList(s []string) string { return "[" + strings.Join(s, ", ") + "]" }

// millisTime is a JWT time in milliseconds, saturated to what time.Time
// holds.
func millisTime(ms float64) time.Time {
	if ms > math.MaxInt64/2 {
		ms = math.MaxInt64 / 2
	}
	if ms < -math.MaxInt64/2 {
		ms = -math.MaxInt64 / 2
	}
	return time.UnixMilli(int64(ms))
}
