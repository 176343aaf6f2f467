package broker

// SSL client listeners. A listener whose security protocol is SSL
// (listener.security.protocol.map) has a ListenerTLS, built by cmd/strata
// from the listener's ssl.* keys: each connection accepted on it completes
// a TLS handshake before its first request, and its principal is that of
// its certificate (sslprincipal.go). Records sent to a TLS connection are
// encrypted in user space, so Fetch copies segment bytes through the
// process instead of sendfile(2) (storage.Chunk).
//
// Between the nodes of a cluster, a connection to another node's
// inter-broker listener (follower fetchers, transaction markers) or
// controller listener (registration, heartbeats, forwarded requests) is
// TLS when that listener is SSL, with the client side of its ssl.*
// settings (ClusterConfig.InterBrokerTLS, ControllerTLS), as Kafka's
// inter-broker clients use the listener's: its key store is the node's
// certificate, so ssl.client.auth=required holds between nodes too. A
// connection that arrives through a quorum.ControllerListener on an SSL
// listener has had its handshake there (tlsConner).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// ListenerTLS is the TLS side of one SSL listener.
type ListenerTLS struct {
	// Config is the server side the listener starts with; a reload
	// (tlsreload.go) replaces it for new connections.
	Config *tls.Config
	// Client is the client side of the listener's settings: what other
	// nodes' listeners of this name are dialed with.
	Client *tls.Config
	// Principals maps a client certificate's subject to its principal
	// name (ssl.principal.mapping.rules).
	Principals *SSLPrincipalMapper
	// Rebuild, when set, builds the server side again from the
	// listener's static keys with dynamic ones (listener.name.<l>.ssl.*)
	// over them, reading its stores again (tlsreload.go).
	Rebuild func(dynamic map[string]string) (*tls.Config, error)
	// AllowDNChanges and AllowSANChanges let a reload take a certificate
	// of another subject or with fewer subject alternative names
	// (ssl.allow.dn.changes, ssl.allow.san.changes).
	AllowDNChanges, AllowSANChanges bool

	live atomic.Pointer[tls.Config] // the reloaded server side; nil before any reload
}

// server is the server side new connections get.
func (lt *ListenerTLS) server() *tls.Config {
	if c := lt.live.Load(); c != nil {
		return c
	}
	return lt.Config
}

// tlsHandshakeTimeout bounds the handshake of a new TLS connection, so a
// client that connects and says nothing holds no slot for long; the
// connection's idle timeout, when shorter, wins.
const tlsHandshakeTimeout = 10 * time.Second

// tlsConner is a connection whose TLS handshake a
// quorum.ControllerListener did.
type tlsConner interface{ TLSConn() *tls.Conn }

// serverTLS is nc served on a listener with lt: nc in TLS, and that TLS.
func serverTLS(nc net.Conn, lt *ListenerTLS) (net.Conn, *tls.Conn) {
	if tc, ok := nc.(tlsConner); ok {
		return nc, tc.TLSConn()
	}
	if lt == nil {
		return nc, nil
	}
	tc := tls.Server(nc, lt.server())
	return tc, tc
}

// notTLSAlert is what Java's TLS (and so Kafka) answers a first record
// that is not TLS, a plaintext Kafka request say: a fatal internal_error
// alert in a TLS 1.2 record. Clients recognise it and tell their users the
// broker expects TLS.
var notTLSAlert = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x50}

// handshake completes c's TLS handshake and sets its principal; on a
// PLAINTEXT listener it does nothing.
func (c *conn) handshake() error {
	if c.tls == nil {
		return nil
	}
	d := tlsHandshakeTimeout
	if idle := c.b.cfg.Limits.idle(); idle > 0 && idle < d {
		d = idle
	}
	// Shutdown's stopReading ends a handshake waiting for the client too.
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := c.tlsConn.HandshakeContext(ctx); err != nil {
		var notTLS tls.RecordHeaderError
		if errors.As(err, &notTLS) && notTLS.Conn != nil {
			// Best effort, as the connection closes next.
			_, _ = notTLS.Conn.Write(notTLSAlert)
		}
		return fmt.Errorf("TLS handshake on SSL listener %s: %w", c.svc.listener, err)
	}
	state := c.tlsConn.ConnectionState()
	if len(state.PeerCertificates) == 0 {
		c.principal = anonymousPrincipal
		return nil
	}
	dn, err := SubjectDN(state.PeerCertificates[0])
	if err != nil {
		return fmt.Errorf("client certificate on SSL listener %s: %w", c.svc.listener, err)
	}
	name, err := c.tls.Principals.Name(dn)
	if err != nil {
		return fmt.Errorf("ssl.principal.mapping.rules of SSL listener %s: %w", c.svc.listener, err)
	}
	c.principal = "User:" + name
	return nil
}
