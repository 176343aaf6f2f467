package broker

// SASL re-authentication (KIP-368), as Kafka's SaslServerAuthenticator
// (ReauthInfo), KafkaChannel and SocketServer have it:
//
//   - a session has a lifetime when connections.max.reauth.ms is positive
//     for its mechanism or its credential expires (an OAUTHBEARER token):
//     the smaller of the two, from the end of the authentication, sent as
//     SaslAuthenticate's SessionLifetimeMs (v1 and later); otherwise none,
//     and 0 is sent;
//   - on a connection whose session has a lifetime, a SaslHandshake begins a
//     re-authentication, unless the last one began less than a second ago
//     (the handshake is then served as any request after authentication:
//     ILLEGAL_SASL_STATE); the mechanism must be the session's (else the
//     handshake succeeds and the next token closes the connection, Kafka's
//     message only in the log) and so must the principal (else
//     SASL_AUTHENTICATION_FAILED "Cannot change principals during
//     re-authentication from User.a: User.b"); a failed re-authentication
//     closes the connection;
//   - any other request once the session has expired closes the connection
//     without an answer.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// errSASLSessionExpired is the end of a connection used after its session
// expired without re-authenticating.
var errSASLSessionExpired = errors.New("SASL session expired")

// saslSession is an authenticated connection's session.
type saslSession struct {
	mechanism, principal string
	tokenAuthenticated   bool          // by a delegation token: principal is its owner
	lifetime             time.Duration // SessionLifetimeMs answered
	expires              time.Time     // zero: the session does not expire
	reauthStarted        time.Time     // when the last re-authentication began
}

// what names the exchange in Kafka's messages.
func (x *saslExchange) what() string {
	if x.reauth != nil {
		return "re-authentication"
	}
	return "authentication"
}

// saslComplete ends an exchange whose mechanism authenticated the client:
// the connection's principal and session are the new ones, unless a
// re-authentication changed the principal.
func (c *conn) saslComplete(x *saslExchange) error {
	principal, delegated := "User:"+x.server.principal(), false
	if d, ok := x.server.(saslDelegated); ok {
		if owner, ok := d.tokenOwner(); ok {
			principal, delegated = owner, true
		}
	}
	if x.reauth != nil && principal != x.reauth.principal {
		return fmt.Errorf("Cannot change principals during re-authentication from %s: %s",
			strings.Replace(x.reauth.principal, ":", ".", 1), strings.Replace(principal, ":", ".", 1))
	}
	now := time.Now()
	s := saslSession{mechanism: x.mechanism, principal: principal, tokenAuthenticated: delegated}
	if x.reauth != nil {
		s.reauthStarted = x.reauth.reauthStarted
	}
	maxReauth := c.sasl.MaxReauth[x.mechanism]
	var credential time.Time
	if e, ok := x.server.(saslExpiring); ok {
		credential = e.expiry()
	}
	if !credential.IsZero() || maxReauth > 0 {
		lifetime := maxReauth
		if !credential.IsZero() {
			// Kafka counts in milliseconds of the wall clock.
			remaining := time.Duration(credential.UnixMilli()-now.UnixMilli()) * time.Millisecond
			if maxReauth <= 0 || remaining < maxReauth {
				lifetime = remaining
			}
		}
		s.lifetime = max(lifetime, 0)
		s.expires = now.Add(s.lifetime)
	}
	c.session, c.principal = s, principal
	c.b.metrics.Authentication(c.svc.listener, x.reauth != nil, true)
	return nil
}

// saslSessionCheck runs before each request of an authenticated SASL
// connection: handled is true when req began a re-authentication (err its
// outcome) or closes an expired session.
func (c *conn) saslSessionCheck(req *protocol.Request) (handled bool, err error) {
	s := &c.session
	if s.expires.IsZero() {
		return false, nil
	}
	now := time.Now()
	if req.Key == int16(kmsg.SASLHandshake) && (s.reauthStarted.IsZero() || now.Sub(s.reauthStarted) >= time.Second) {
		s.reauthStarted = now
		return true, c.authenticateSASL(req)
	}
	if now.After(s.expires) {
		return true, fmt.Errorf("%w on SASL listener %s: the %s session of %s ended %v ago, and the client sent %s instead of re-authenticating",
			errSASLSessionExpired, c.svc.listener, s.mechanism, s.principal, now.Sub(s.expires).Round(time.Millisecond), kmsg.NameForKey(req.Key))
	}
	return false, nil
}
