package broker

// SASL client listeners. A listener whose security protocol is
// SASL_PLAINTEXT or SASL_SSL (listener.security.protocol.map) has a
// ListenerSASL, built by cmd/strata from the listener's sasl.* keys and JAAS
// configuration. Each connection accepted on it (after its TLS handshake on
// SASL_SSL) authenticates before anything else is served, as Kafka's
// SaslServerAuthenticator has it (4.1):
//
//   - before authentication only ApiVersions (once, before the handshake),
//     SaslHandshake and then the mechanism's tokens are read; any other
//     request closes the connection without a response;
//   - SaslHandshake v1 puts each token in a SaslAuthenticate request; v0
//     (clients before Kafka 1.0) sends the tokens as bare size-prefixed
//     frames, answered the same way;
//   - a mechanism not enabled gets UNSUPPORTED_SASL_MECHANISM with the
//     enabled ones, a failed authentication SASL_AUTHENTICATION_FAILED with
//     Kafka's message; either closes the connection after
//     connection.failed.authentication.delay.ms, as Kafka's Selector delays
//     it;
//   - every frame before authentication is bounded by
//     sasl.server.max.receive.size, checked before anything is allocated;
//   - each mechanism is a saslServer, made for each authentication by the
//     listener: PLAIN (sasl_plain.go) and OAUTHBEARER (sasl_oauthbearer.go).
//
// After authentication the connection is served as any other, its principal
// User:<name>; a SaslHandshake or SaslAuthenticate then (or on a listener
// without SASL) gets ILLEGAL_SASL_STATE, as KafkaApis answers, unless the
// session has a lifetime and the handshake begins a re-authentication
// (KIP-368, sasl_reauth.go). Where Kafka answers an
// unexpected request during the token exchange with that request's own error
// response, Strata answers only a SaslHandshake or SaslAuthenticate and
// otherwise just closes.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/protocol"
)

// MechanismPlain is SASL/PLAIN (RFC 4616); the SCRAM mechanisms are in
// sasl_scram.go.
const MechanismPlain = "PLAIN"

// DefaultSASLMaxReceiveSize is sasl.server.max.receive.size's default.
const DefaultSASLMaxReceiveSize = 524288

// DefaultFailedAuthenticationDelay is
// connection.failed.authentication.delay.ms's default.
const DefaultFailedAuthenticationDelay = 100 * time.Millisecond

// ListenerSASL is the SASL side of one SASL_PLAINTEXT or SASL_SSL listener.
type ListenerSASL struct {
	// Mechanisms are sasl.enabled.mechanisms, as the handshake lists them.
	Mechanisms []string
	// PlainUsers are PLAIN's users and their passwords: the user_<name>
	// options of the listener's PlainLoginModule JAAS configuration.
	PlainUsers map[string]string
	// OAuthBearer validates OAUTHBEARER's tokens: an UnsecuredJWTValidator
	// (Kafka's default) or a JWKSValidator.
	OAuthBearer OAuthBearerValidator
	// MaxReceiveSize bounds each frame before authentication
	// (sasl.server.max.receive.size).
	MaxReceiveSize int32
	// FailedDelay is how long a failed authentication waits before its
	// answer and the close (connection.failed.authentication.delay.ms).
	FailedDelay time.Duration
	// MaxReauth is each mechanism's connections.max.reauth.ms: the longest
	// session before the client must re-authenticate; 0 or absent, none.
	MaxReauth map[string]time.Duration
}

// errSASLFailed is the end of a connection whose authentication failed: a
// client's doing, whose audit line saslFailed logged.
var errSASLFailed = errors.New("failed authentication")

// registerSASL serves SaslHandshake and SaslAuthenticate after
// authentication, and on listeners without SASL: both are ILLEGAL_SASL_STATE
// there, as in KafkaApis. Before authentication they are read by
// authenticateSASL. Advertising them everywhere is what Kafka does, and
// what clients look for before they authenticate.
func registerSASL(r *registry) {
	r.add(kmsg.SASLHandshake, 0, 1, func(*reqCtx) (kmsg.Response, error) {
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	})
	r.add(kmsg.SASLAuthenticate, 0, 2, func(*reqCtx) (kmsg.Response, error) {
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication")
		return resp, nil
	})
}

// saslState is where a connection is in its authentication.
type saslState int

const (
	saslInitial      saslState = iota // ApiVersions or SaslHandshake
	saslHandshake                     // after ApiVersions: SaslHandshake
	saslAuthenticate                  // the mechanism's tokens
)

var saslStateNames = map[saslState]string{
	saslInitial: "HANDSHAKE_OR_VERSIONS_REQUEST", saslHandshake: "HANDSHAKE_REQUEST", saslAuthenticate: "AUTHENTICATE",
}

// saslServer is the server side of one SASL mechanism's exchange on one
// connection: a state machine fed the client's tokens in order, as Java's
// SaslServer.evaluateResponse is. ListenerSASL.newServer makes one per
// authentication.
type saslServer interface {
	// step takes the client's next token and returns the token to send
	// back; done once the client is authenticated, the token then being
	// the mechanism's last. An error ends the authentication: its text is
	// the client's SASL_AUTHENTICATION_FAILED message, unless it wraps
	// errSASLInvalidCredentials, whose text stays in the broker's log as
	// Kafka keeps a SaslException's.
	step(token []byte) (challenge []byte, done bool, err error)
	// principal is the authenticated user's name, once done.
	principal() string
}

// saslExpiring is a saslServer whose credential expires, as OAUTHBEARER's
// token and a delegation token do: the session (KIP-368) ends no later than
// the credential; a zero time does not expire.
type saslExpiring interface {
	expiry() time.Time
}

// saslDelegated is a saslServer that may have authenticated a delegation
// token: the session's principal is then the token's owner, and it is
// token-authenticated (KafkaPrincipal.tokenAuthenticated).
type saslDelegated interface {
	tokenOwner() (owner string, ok bool)
}

// errSASLInvalidCredentials marks a mechanism's error that the client is
// told only as "Authentication failed during authentication due to invalid
// credentials with SASL mechanism <m>", as SaslServerAuthenticator
// answers a SaslException.
var errSASLInvalidCredentials = errors.New("invalid credentials")

// errSASLUnanswered marks a mechanism's error on which Kafka closes the
// connection without answering the token.
var errSASLUnanswered = errors.New("closed without an answer")

// saslExchange is one authentication (or re-authentication) of a
// connection in progress.
type saslExchange struct {
	state      saslState
	bareTokens bool // SaslHandshake v0: tokens without SaslAuthenticate
	mechanism  string
	server     saslServer
	// reauth is a re-authentication's session before it, nil at first;
	// badMechanism Kafka's message when its handshake named another
	// mechanism, the exchange failing at the next token.
	reauth       *saslSession
	badMechanism string
}

// authenticateSASL runs c's SASL exchange; nil once it is authenticated,
// with c.principal its user and c.session its session. reauth is the
// SaslHandshake that begins a re-authentication, nil at first.
func (c *conn) authenticateSASL(reauth *protocol.Request) error {
	x := &saslExchange{state: saslInitial}
	if reauth != nil {
		prev := c.session
		x.reauth = &prev
		if err := c.saslHandshake(x, reauth); err != nil {
			return err
		}
	}
	for {
		c.armIdle()
		if !c.sniffed {
			c.sniffed = true
			if err := c.sniffFirstFrame(); err != nil {
				return err
			}
		}
		frame, err := c.readSASLFrame()
		if err != nil {
			return err
		}
		if x.badMechanism != "" {
			return c.saslFailed(x, errors.New(x.badMechanism), nil, nil)
		}
		if x.state == saslAuthenticate && x.bareTokens {
			challenge, done, err := x.server.step(frame)
			if err == nil && done {
				err = c.saslComplete(x)
			}
			if err != nil {
				return c.saslFailed(x, err, nil, nil)
			}
			// Each server token goes size-prefixed, an empty one too, as
			// Kafka sends them.
			c.out = append(binary.BigEndian.AppendUint32(c.out[:0], uint32(len(challenge))), challenge...)
			if err := c.write(c.out); err != nil {
				return err
			}
			if done {
				return nil
			}
			continue
		}
		req, err := protocol.ParseRequest(frame, c.apis.supports)
		if err != nil && !(errors.Is(err, protocol.ErrUnsupported) && req.Key == int16(kmsg.ApiVersions)) {
			if x.state == saslInitial {
				return fmt.Errorf("SASL listener %s: %w: Invalid request, potential reasons: kafka client configured with the wrong security protocol, "+
					"it does not support KIP-43 or it is not a kafka client", c.svc.listener, err)
			}
			return fmt.Errorf("SASL listener %s, state %s: %w", c.svc.listener, saslStateNames[x.state], err)
		}
		key := kmsg.Key(req.Key)
		switch {
		case x.state == saslAuthenticate && key == kmsg.SASLAuthenticate:
			challenge, done, err := x.server.step(req.Body.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes)
			if err == nil && done {
				err = c.saslComplete(x)
			}
			if errors.Is(err, errSASLUnanswered) {
				return c.saslFailed(x, err, nil, nil)
			}
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			if err != nil {
				msg := kafkaerr.Message(err)
				if errors.Is(err, errSASLInvalidCredentials) {
					msg = "Authentication failed during " + x.what() + " due to invalid credentials with SASL mechanism " + x.mechanism
				}
				resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(msg)
				return c.saslFailed(x, err, req, resp)
			}
			// Kafka answers with an empty message, not a null one, and an
			// empty token rather than none.
			resp.SASLAuthBytes, resp.ErrorMessage = append([]byte{}, challenge...), kmsg.StringPtr("")
			if done {
				resp.SessionLifetimeMillis = c.session.lifetime.Milliseconds()
			}
			if err := c.reply(req, resp); err != nil {
				return err
			}
			if done {
				return nil
			}
		case x.state == saslAuthenticate:
			err := fmt.Errorf("Unexpected Kafka request of type %s during SASL authentication", key.Name())
			var resp kmsg.Response
			if key == kmsg.SASLHandshake {
				r := kmsg.NewPtrSASLHandshakeResponse()
				r.ErrorCode = kerr.IllegalSaslState.Code
				resp = r
			}
			return c.saslFailed(x, err, req, resp)
		case key == kmsg.ApiVersions:
			if x.state != saslInitial {
				return fmt.Errorf("SASL listener %s: Unexpected ApiVersions request received during SASL authentication state %s", c.svc.listener, saslStateNames[x.state])
			}
			if err != nil {
				// Not this version: the client retries at one it finds in the answer.
				if err := c.write(protocol.AppendResponse(c.out[:0], &protocol.Request{Key: req.Key, CorrelationID: req.CorrelationID},
					unsupportedAPIVersions(c.svc.served))); err != nil {
					return err
				}
				continue
			}
			if err := c.serveBeforeAuthentication(req); err != nil {
				return err
			}
			x.state = saslHandshake
		case key == kmsg.SASLHandshake:
			if err := c.saslHandshake(x, req); err != nil {
				return err
			}
		default:
			err := fmt.Errorf("Unexpected Kafka request of type %s during SASL handshake", key.Name())
			if x.state == saslInitial {
				return fmt.Errorf("SASL listener %s: %w: Invalid request, potential reasons: kafka client configured with the wrong security protocol, "+
					"it does not support KIP-43 or it is not a kafka client", c.svc.listener, err)
			}
			return fmt.Errorf("SASL listener %s: %w", c.svc.listener, err)
		}
	}
}

// saslHandshake answers a SaslHandshake: x goes on to the mechanism's
// tokens, or the connection fails with UNSUPPORTED_SASL_MECHANISM.
func (c *conn) saslHandshake(x *saslExchange, req *protocol.Request) error {
	asked := req.Body.(*kmsg.SASLHandshakeRequest).Mechanism
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = c.sasl.Mechanisms
	server := c.sasl.newServer(asked, func(u metadata.ScramUser) (metadata.ScramCredential, bool) {
		return c.svc.meta.Image().Access.Scram.Credential(u)
	}, c.svc.tokens.login)
	if server == nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		x.mechanism = asked
		return c.saslFailed(x, fmt.Errorf("Unsupported SASL mechanism %s", asked), req, resp)
	}
	if err := c.reply(req, resp); err != nil {
		return err
	}
	x.mechanism, x.bareTokens, x.state, x.server = asked, req.Version == 0, saslAuthenticate, server
	if x.reauth != nil && asked != x.reauth.mechanism {
		x.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", asked, x.reauth.mechanism)
	}
	return nil
}

// readSASLFrame reads one frame before authentication, refusing a size
// above sasl.server.max.receive.size before allocating anything for it.
func (c *conn) readSASLFrame() ([]byte, error) {
	hdr, err := c.r.Peek(4)
	if err != nil {
		return nil, c.idleErr(err)
	}
	if n := int32(binary.BigEndian.Uint32(hdr)); n < 0 || n > c.sasl.MaxReceiveSize {
		return nil, c.saslFailed(&saslExchange{}, fmt.Errorf("Failing SASL authentication due to invalid receive size: %d bytes (sasl.server.max.receive.size is %d)",
			n, c.sasl.MaxReceiveSize), nil, nil)
	}
	frame, err := protocol.ReadFrame(c.r, c.sasl.MaxReceiveSize, nil)
	if err != nil {
		return nil, c.idleErr(err)
	}
	return frame, nil
}

// serveBeforeAuthentication serves ApiVersions as the broker's handler
// does, to a client not yet authenticated.
func (c *conn) serveBeforeAuthentication(req *protocol.Request) error {
	c.rc = reqCtx{principal: c.principal, clientAddr: c.remote, clientHost: c.host, listener: c.svc.listener, req: req, svc: c.svc, authz: c.b.authz, conn: c}
	resp, err := c.apis.apis[req.Key].serve(&c.rc)
	c.rc = reqCtx{}
	if err != nil {
		return err
	}
	return c.reply(req, resp)
}

// saslFailed ends an authentication that failed because of what the client
// sent. It logs the one audit line of the failure, at info as Kafka's
// Selector logs "Failed authentication with /<ip> (<reason>)", and counts
// it; after the failed-authentication delay it sends resp, when there is
// one, and the connection closes.
func (c *conn) saslFailed(x *saslExchange, cause error, req *protocol.Request, resp kmsg.Response) error {
	c.b.metrics.Authentication(c.svc.listener, x.reauth != nil, false)
	reason := cause.Error()
	var d interface{ detail() string }
	if errors.As(cause, &d) {
		reason = d.detail()
	}
	fields := []zap.Field{zap.String("listener", c.svc.listener), zap.String("mechanism", x.mechanism),
		zap.String("client", c.remote), zap.Bool("reauthentication", x.reauth != nil), zap.String("reason", reason)}
	if x.reauth != nil {
		fields = append(fields, zap.String("principal", x.reauth.principal))
	}
	c.log.Info("failed authentication", fields...)
	t := time.NewTimer(c.sasl.FailedDelay)
	select {
	case <-t.C:
	case <-c.b.shutdown:
		t.Stop()
	}
	if resp != nil {
		// The connection closes whether or not the answer gets through.
		_ = c.reply(req, resp)
	}
	return fmt.Errorf("%w on SASL listener %s: %w", errSASLFailed, c.svc.listener, cause)
}

// openSASL reads what the SASL listeners' validators need before the
// broker serves: a JWKS validator's key set.
func openSASL(listeners map[string]*ListenerSASL, log *zap.Logger) error {
	for name, l := range listeners {
		if v, ok := l.OAuthBearer.(*JWKSValidator); ok {
			if err := v.open(context.Background(), log.With(zap.String("listener", name))); err != nil {
				return fmt.Errorf("SASL listener %s, mechanism OAUTHBEARER: %w", name, err)
			}
		}
	}
	return nil
}

// newServer is the server side of mechanism for one authentication, a
// SCRAM one looking credentials up in scram; nil
// when the mechanism is not enabled on l or not served.
func (l *ListenerSASL) newServer(mechanism string, scram scramCredentials, tokens tokenCredentials) saslServer {
	if !slices.Contains(l.Mechanisms, mechanism) {
		return nil
	}
	switch mechanism {
	case MechanismPlain:
		return &plainServer{users: l.PlainUsers}
	case MechanismScramSHA256, MechanismScramSHA512:
		m, _ := scramMechanismNamed(mechanism)
		return newScramServer(m, scram, tokens)
	case MechanismOAuthBearer:
		if l.OAuthBearer != nil {
			return &oauthBearerServer{validator: l.OAuthBearer, now: time.Now}
		}
	}
	return nil
}
