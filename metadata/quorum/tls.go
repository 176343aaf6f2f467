package quorum

// TLS on a split listener. A listener mapped to SSL completes a TLS
// handshake with every connection before its first four bytes are looked
// at: they are read from the TLS stream, not peeked at on the socket,
// and a Kafka-protocol connection is handed on with them replayed
// (sniffedConn). Raft's transport and AskIdentity dial the other nodes'
// listeners with TLS.Dial, the client side of the controller listener's
// ssl.* settings, as Kafka's KRaft client dials with the controller
// listener's. A connection whose handshake fails is closed with one log
// line naming the peer and the cause, at most one every handshakeLogEvery
// with the number of failures left unlogged (a node whose certificate the
// listener refuses redials every few tens of milliseconds); ListenerGone's
// probe, which closes without a handshake, is not logged.

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
)

// TLS is the TLS of a split listener's connections.
type TLS struct {
	// Listeners is the server side of each listener, in their order; a
	// nil entry (or none) is a PLAINTEXT listener.
	Listeners []*tls.Config
	// Dial is the client side of connections to other nodes' listeners;
	// nil dials plain TCP.
	Dial *tls.Config
}

func (t TLS) listener(i int) *tls.Config {
	if i < len(t.Listeners) {
		return t.Listeners[i]
	}
	return nil
}

// ClientTLS is cfg for a connection to addr: a cfg without a ServerName
// verifies the peer's certificate against addr's host (a DNS name or an
// IP address SAN), as Kafka's ssl.endpoint.identification.algorithm=https.
func ClientTLS(cfg *tls.Config, addr string) *tls.Config {
	c := cfg.Clone()
	if c.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		c.ServerName = host
	}
	return c
}

// HandshakeClient runs the client side of a TLS handshake on c, a
// connection to addr, within timeout; on an error c is closed.
func HandshakeClient(c net.Conn, cfg *tls.Config, addr string, timeout time.Duration) (*tls.Conn, error) {
	tc := tls.Client(c, ClientTLS(cfg, addr))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}

// sniffTLS completes c's server handshake with cfg and reads its first
// four bytes, within c's deadline; nil when the connection failed.
func (l *ControllerListener) sniffTLS(c net.Conn, cfg *tls.Config) (*tls.Conn, [4]byte) {
	var hdr [4]byte
	tc := tls.Server(c, cfg)
	if err := tc.Handshake(); err != nil {
		if !errors.Is(err, io.EOF) {
			l.logHandshakeFailure(c, err)
		}
		c.Close()
		return nil, hdr
	}
	if _, err := io.ReadFull(tc, hdr[:]); err != nil {
		c.Close()
		return nil, hdr
	}
	return tc, hdr
}

// handshakeLogEvery bounds how often failed handshakes are logged.
const handshakeLogEvery = 10 * time.Second

// handshakeLog is when a failed handshake was last logged, and how many
// failed since.
type handshakeLog struct {
	mu       sync.Mutex
	last     time.Time
	unlogged int
}

func (l *ControllerListener) logHandshakeFailure(c net.Conn, err error) {
	h := &l.handshakes
	h.mu.Lock()
	if time.Since(h.last) < handshakeLogEvery {
		h.unlogged++
		h.mu.Unlock()
		return
	}
	unlogged := h.unlogged
	h.last, h.unlogged = time.Now(), 0
	h.mu.Unlock()
	l.logger.Warn("TLS handshake failed: connection closed", zap.Stringer("remote", c.RemoteAddr()),
		zap.Stringer("listener", c.LocalAddr()), zap.Int("failures_unlogged_since_last", unlogged), zap.Error(err))
}

// sniffedConn is a Kafka-protocol connection accepted inside TLS: its
// first bytes, read to sniff it, are read again first.
type sniffedConn struct {
	*tls.Conn
	head []byte
}

func (c *sniffedConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// TLSConn is the connection's TLS, its handshake done.
func (c *sniffedConn) TLSConn() *tls.Conn { return c.Conn }
