package broker

// SASL between nodes, the client side. A node dials other nodes'
// inter-broker listener (follower fetchers, transaction markers) and
// controller listener (registration, heartbeats, forwarded requests, and
// raft's connections, metadata/quorum/sasl.go) as Kafka's inter-broker and
// KRaft clients do: TLS when the listener is SASL_SSL, then SaslHandshake
// v1 with the mechanism of sasl.mechanism.inter.broker.protocol or
// sasl.mechanism.controller.protocol, and SaslAuthenticate v2 with the
// username and password of that listener's JAAS configuration of the
// mechanism (listener.name.<listener>.<mechanism>.sasl.jaas.config), as
// Kafka's client channel builder of JaasContext.Type.SERVER reads them.
// The exchanges are franz-go's PLAIN and SCRAM clients.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// PeerLogin is a node's SASL login to the listeners of other nodes.
type PeerLogin struct {
	Mechanism          string // PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	Username, Password string
}

// peerLoginTimeout bounds each request of a login.
const peerLoginTimeout = 10 * time.Second

// Login logs nc, a connection dialed to addr, in: the client side of
// metadata/quorum's SASL (quorum.SASL.Login).
func (l *PeerLogin) Login(node int32) func(nc net.Conn, addr string) error {
	return func(nc net.Conn, addr string) error {
		return loginConn(addr, nc, node, l)
	}
}

// loginConn logs nc in with l, reading each answer exactly: what the peer
// sends after the last (AskIdentity's answer, or a fetch response) is the
// caller's to read.
func loginConn(addr string, nc net.Conn, node int32, l *PeerLogin) error {
	c := newCtrlClient(addr, nc, node)
	c.r = nc
	return c.login(l)
}

func (l *PeerLogin) mechanism() (sasl.Mechanism, error) {
	switch l.Mechanism {
	case MechanismPlain:
		return plain.Auth{User: l.Username, Pass: l.Password}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: l.Username, Pass: l.Password}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: l.Username, Pass: l.Password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %s between nodes is not served", l.Mechanism)
}

// login runs the SASL exchange of l on c, before any other request.
func (c *ctrlClient) login(l *PeerLogin) error {
	m, err := l.mechanism()
	if err != nil {
		return err
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, l.Mechanism
	resp, err := c.request(hs, peerLoginTimeout)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SASL handshake with %s for %s: %w", c.addr, l.Mechanism, kerr.ErrorForCode(code))
	}
	session, token, err := m.Authenticate(context.Background(), c.addr)
	if err != nil {
		return fmt.Errorf("SASL %s with %s: %w", l.Mechanism, c.addr, err)
	}
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version, auth.SASLAuthBytes = 2, token
		resp, err := c.request(auth, peerLoginTimeout)
		if err != nil {
			return err
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			msg := ""
			if ar.ErrorMessage != nil {
				msg = ": " + *ar.ErrorMessage
			}
			return fmt.Errorf("SASL %s with %s as %s: %w%s", l.Mechanism, c.addr, l.Username, kerr.ErrorForCode(ar.ErrorCode), msg)
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s with %s as %s: %w", l.Mechanism, c.addr, l.Username, err)
		}
		if done {
			return nil
		}
		token = next
	}
}

// peerSecurity is how a node's connections to one listener of the other
// nodes are secured: TLS (nil: none), then a SASL login (nil: none).
type peerSecurity struct {
	tls   *tls.Config
	login *PeerLogin
}

// interBroker and controller are the client sides of the inter-broker
// and the controller listener.
func (c ClusterConfig) interBroker() peerSecurity {
	return peerSecurity{tls: c.InterBrokerTLS, login: c.InterBrokerSASL}
}

func (c ClusterConfig) controller() peerSecurity {
	return peerSecurity{tls: c.ControllerTLS, login: c.ControllerSASL}
}

// newCtrlClient is a ctrlClient on nc, a connection to addr.
func newCtrlClient(addr string, nc net.Conn, node int32) *ctrlClient {
	return &ctrlClient{addr: addr, nc: nc, r: bufio.NewReader(nc),
		fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(fmt.Sprintf("strata-broker-%d", node)))}
}
