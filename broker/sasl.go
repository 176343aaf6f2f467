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
//     sasl.server.max.receive.size, checked before anything is allocated.
//
// After authentication the connection is served as any other, its principal
// User:<name>; a SaslHandshake or SaslAuthenticate then (or on a listener
// without SASL) gets ILLEGAL_SASL_STATE, as KafkaApis answers. Re-authentication
// (KIP-368) is not served: SessionLifetimeMs is 0. Where Kafka answers an
// unexpected request during the token exchange with that request's own error
// response, Strata answers only a SaslHandshake or SaslAuthenticate and
// otherwise just closes.

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	// MaxReceiveSize bounds each frame before authentication
	// (sasl.server.max.receive.size).
	MaxReceiveSize int32
	// FailedDelay is how long a failed authentication waits before its
	// answer and the close (connection.failed.authentication.delay.ms).
	FailedDelay time.Duration
}

// errSASLFailed is the end of a connection whose authentication failed: a
// client's doing, logged at info as Kafka logs it.
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

// authenticateSASL runs c's SASL exchange; nil once it is authenticated,
// with c.principal its user.
func (c *conn) authenticateSASL() error {
	state := saslInitial
	bareTokens := false // SaslHandshake v0: tokens without SaslAuthenticate
	mechanism := ""
	var scram *scramServer // the exchange of a SCRAM mechanism (sasl_scram.go)
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
		if state == saslAuthenticate && bareTokens && scram != nil {
			if done, err := c.scramToken(scram, mechanism, frame, nil); done || err != nil {
				return err
			}
			continue
		}
		if state == saslAuthenticate && bareTokens {
			user, err := c.sasl.plain(frame)
			if err != nil {
				return c.saslFailed(mechanism, err, nil, nil)
			}
			// PLAIN's server token is empty, sent size-prefixed as Kafka does.
			if err := c.write([]byte{0, 0, 0, 0}); err != nil {
				return err
			}
			c.principal = "User:" + user
			return nil
		}
		req, err := protocol.ParseRequest(frame, c.apis.supports)
		if err != nil && !(errors.Is(err, protocol.ErrUnsupported) && req.Key == int16(kmsg.ApiVersions)) {
			if state == saslInitial {
				return fmt.Errorf("SASL listener %s: %w: Invalid request, potential reasons: kafka client configured with the wrong security protocol, "+
					"it does not support KIP-43 or it is not a kafka client", c.svc.listener, err)
			}
			return fmt.Errorf("SASL listener %s, state %s: %w", c.svc.listener, saslStateNames[state], err)
		}
		key := kmsg.Key(req.Key)
		switch {
		case state == saslAuthenticate && key == kmsg.SASLAuthenticate && scram != nil:
			if done, err := c.scramToken(scram, mechanism, req.Body.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes, req); done || err != nil {
				return err
			}
		case state == saslAuthenticate && key == kmsg.SASLAuthenticate:
			user, err := c.sasl.plain(req.Body.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes)
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			if err != nil {
				resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(err.Error())
				return c.saslFailed(mechanism, err, req, resp)
			}
			// Kafka answers success with an empty message, not a null one.
			resp.SASLAuthBytes, resp.ErrorMessage = []byte{}, kmsg.StringPtr("")
			if err := c.reply(req, resp); err != nil {
				return err
			}
			c.principal = "User:" + user
			return nil
		case state == saslAuthenticate:
			err := fmt.Errorf("Unexpected Kafka request of type %s during SASL authentication", key.Name())
			var resp kmsg.Response
			if key == kmsg.SASLHandshake {
				r := kmsg.NewPtrSASLHandshakeResponse()
				r.ErrorCode = kerr.IllegalSaslState.Code
				resp = r
			}
			return c.saslFailed(mechanism, err, req, resp)
		case key == kmsg.ApiVersions:
			if state != saslInitial {
				return fmt.Errorf("SASL listener %s: Unexpected ApiVersions request received during SASL authentication state %s", c.svc.listener, saslStateNames[state])
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
			state = saslHandshake
		case key == kmsg.SASLHandshake:
			asked := req.Body.(*kmsg.SASLHandshakeRequest).Mechanism
			resp := kmsg.NewPtrSASLHandshakeResponse()
			resp.SupportedMechanisms = c.sasl.Mechanisms
			if !c.sasl.enabled(asked) {
				resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
				return c.saslFailed(asked, fmt.Errorf("Unsupported SASL mechanism %s", asked), req, resp)
			}
			if err := c.reply(req, resp); err != nil {
				return err
			}
			mechanism, bareTokens, state = asked, req.Version == 0, saslAuthenticate
			if m, ok := scramMechanismNamed(asked); ok {
				scram = newScramServer(m, func(u metadata.ScramUser) (metadata.ScramCredential, bool) {
					return c.svc.meta.Image().Access.Scram.Credential(u)
				})
			}
		default:
			err := fmt.Errorf("Unexpected Kafka request of type %s during SASL handshake", key.Name())
			if state == saslInitial {
				return fmt.Errorf("SASL listener %s: %w: Invalid request, potential reasons: kafka client configured with the wrong security protocol, "+
					"it does not support KIP-43 or it is not a kafka client", c.svc.listener, err)
			}
			return fmt.Errorf("SASL listener %s: %w", c.svc.listener, err)
		}
	}
}

// readSASLFrame reads one frame before authentication, refusing a size
// above sasl.server.max.receive.size before allocating anything for it.
func (c *conn) readSASLFrame() ([]byte, error) {
	hdr, err := c.r.Peek(4)
	if err != nil {
		return nil, c.idleErr(err)
	}
	if n := int32(binary.BigEndian.Uint32(hdr)); n < 0 || n > c.sasl.MaxReceiveSize {
		return nil, c.saslFailed("", fmt.Errorf("Failing SASL authentication due to invalid receive size: %d bytes (sasl.server.max.receive.size is %d)",
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
// sent: after the failed-authentication delay it sends resp, when there is
// one, and the connection closes.
func (c *conn) saslFailed(mechanism string, cause error, req *protocol.Request, resp kmsg.Response) error {
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
	if mechanism == "" {
		return fmt.Errorf("%w on SASL listener %s: %w", errSASLFailed, c.svc.listener, cause)
	}
	return fmt.Errorf("%w on SASL listener %s with mechanism %s: %w", errSASLFailed, c.svc.listener, mechanism, cause)
}

func (l *ListenerSASL) enabled(mechanism string) bool {
	for _, m := range l.Mechanisms {
		if m == mechanism {
			return true
		}
	}
	return false
}

// plain checks a SASL/PLAIN message, [authzid] NUL authcid NUL passwd, as
// Kafka's PlainSaslServer and PlainServerCallbackHandler do, with their
// messages; it returns the user. The password is compared in constant time,
// and so is an unknown user's, against nothing.
func (l *ListenerSASL) plain(msg []byte) (string, error) {
	tokens := strings.Split(string(msg), "\x00")
	if len(tokens) != 3 {
		return "", fmt.Errorf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", min(len(tokens), 4))
	}
	authzid, user, password := tokens[0], tokens[1], tokens[2]
	if user == "" {
		return "", errors.New("Authentication failed: username not specified")
	}
	if password == "" {
		return "", errors.New("Authentication failed: password not specified")
	}
	want, known := l.PlainUsers[user]
	got, expected := sha256.Sum256([]byte(password)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], expected[:]) != 1 || !known {
		return "", errors.New("Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != user {
		return "", errors.New("Authentication failed: Client requested an authorization id that is different from username")
	}
	return user, nil
}
