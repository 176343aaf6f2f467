package quorum

// SASL on a split listener. Kafka's KRaft client speaks the Kafka protocol
// to the controller listener, so a SASL_PLAINTEXT or SASL_SSL controller
// listener authenticates raft's connections as any other: SaslHandshake
// and SaslAuthenticate with sasl.mechanism.controller.protocol and the
// controller listener's JAAS username and password, the principal then
// held to CLUSTER_ACTION. Strata's raft connections are told apart by
// their magic, so on a SASL listener the exchange follows the magic:
// the dialing node writes raftMagic (or identityMagic) and then runs the
// same SaslHandshake v1 and SaslAuthenticate v2 frames a Kafka client
// sends, and the listener hands the connection to raft (or answers the
// identity) only once SASL.Listeners' function accepted it. The Kafka
// protocol itself and the mechanisms are the broker's: this package is
// given the two sides as functions.

import (
	"net"
	"time"

	"go.uber.org/zap"
)

// Security is how a split listener's connections, and those it dials to
// other nodes' listeners, are secured: TLS, then SASL.
type Security struct {
	TLS  TLS
	SASL SASL
}

// SASL is the authentication of raft's and AskIdentity's connections.
type SASL struct {
	// Listeners authenticate the connections of each listener, in their
	// order, once their magic is read; a nil entry (or none) is a
	// listener without SASL.
	Listeners []func(c net.Conn) error
	// Login authenticates a connection dialed to addr, once its magic
	// is written; nil: the other nodes' listeners have no SASL.
	Login func(c net.Conn, addr string) error
}

func (s SASL) listener(i int) func(net.Conn) error {
	if i < len(s.Listeners) {
		return s.Listeners[i]
	}
	return nil
}

// dial connects to addr within timeout, with TLS when s.TLS.Dial is set,
// writes magic and logs in when s.SASL.Login is set.
func (s Security) dial(addr string, magic [4]byte, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err == nil && s.TLS.Dial != nil {
		c, err = HandshakeClient(c, s.TLS.Dial, addr, timeout)
	}
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(magic[:]); err != nil {
		c.Close()
		return nil, err
	}
	if s.SASL.Login != nil {
		if err := s.SASL.Login(c, addr); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// authenticated runs k's authentication of c, a raft or identity
// connection, within sniffTimeout; false (c closed) when it failed.
func (l *ControllerListener) authenticated(c net.Conn, k *kafkaListener) bool {
	if k.authenticate == nil {
		return true
	}
	c.SetDeadline(time.Now().Add(sniffTimeout))
	if err := k.authenticate(c); err != nil {
		l.logger.Info("a node's metadata quorum connection failed authentication: closed",
			zap.Stringer("remote", c.RemoteAddr()), zap.Stringer("listener", c.LocalAddr()), zap.Error(err))
		c.Close()
		return false
	}
	c.SetDeadline(time.Time{})
	return true
}
