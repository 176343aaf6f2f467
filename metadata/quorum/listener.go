package quorum

// One controller listener carries both the quorum's raft traffic and the
// Kafka protocol of the controller (broker registrations and heartbeats,
// forwarded admin requests), as a Kafka controller serves KRaft's and the
// controller APIs on its CONTROLLER listener. A broker-only node
// (process.roles=broker) is a raft non-voter that the leader sends the log
// to, and has no controller listener: its client listeners carry raft's
// connections the same way (NewBrokerListeners). A raft connection opens
// with raftMagic, four bytes that as a Kafka frame size are negative,
// which no Kafka client sends. The first four bytes of every connection
// are peeked, not read, so a Kafka connection reaches the Kafka side
// untouched: still a *net.TCPConn, which Fetch sends segments to with
// sendfile. On an SSL listener the bytes are read after the TLS handshake
// instead (tls.go); on a SASL listener a raft connection authenticates
// after them (sasl.go).

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// raftMagic opens every raft connection on the controller listener.
var raftMagic = [4]byte{0xff, 'S', 'R', 'F'}

// sniffTimeout bounds the wait for a new connection's first four bytes.
const sniffTimeout = 10 * time.Second

// ControllerListener splits the connections of one or more listeners:
// raft's go to Transport, the others to the Kafka side of the listener
// they came on.
type ControllerListener struct {
	lns    []net.Listener
	self   net.Addr // the address the other voters reach this one at
	logger *zap.Logger

	raftConns chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
	kafka     []*kafkaListener // one per lns entry
	// raftClosed is told when a raft connection from another voter closes.
	raftClosed atomic.Pointer[func()]
	// identity answers AskIdentity (discover.go); nil: such connections
	// are closed.
	identity   atomic.Pointer[identityServer]
	sec        Security
	handshakes handshakeLog // failed TLS handshakes, logged (tls.go)
}

// NewControllerListener serves ln; self is this node's voter address.
func NewControllerListener(ln net.Listener, self string, sec Security, logger *zap.Logger) (*ControllerListener, error) {
	return newSplitListener([]net.Listener{ln}, self, sec, logger)
}

// NewBrokerListeners serves a broker-only node's client listeners; self
// is the address the leader reaches it at, one of their advertised
// endpoints. Their Kafka sides are KafkaListeners, in the order of lns.
func NewBrokerListeners(lns []net.Listener, self string, sec Security, logger *zap.Logger) (*ControllerListener, error) {
	return newSplitListener(lns, self, sec, logger)
}

func newSplitListener(lns []net.Listener, self string, sec Security, logger *zap.Logger) (*ControllerListener, error) {
	l := &ControllerListener{lns: lns, logger: logger, raftConns: make(chan net.Conn), done: make(chan struct{}), sec: sec}
	if err := l.SetSelf(self); err != nil {
		return nil, err
	}
	for i, ln := range lns {
		l.kafka = append(l.kafka, &kafkaListener{l: l, ln: ln, tls: sec.TLS.listener(i), authenticate: sec.SASL.listener(i),
			conns: make(chan net.Conn), closed: make(chan struct{})})
	}
	for _, k := range l.kafka {
		go l.accept(k)
	}
	return l, nil
}

// SetSelf sets the address raft's transport names this node by, before
// Transport is called: a node that discovers its voters learns it then.
func (l *ControllerListener) SetSelf(self string) error {
	addr, err := net.ResolveTCPAddr("tcp", self)
	if err != nil {
		return err
	}
	l.self = addr
	return nil
}

func (l *ControllerListener) accept(k *kafkaListener) {
	for {
		c, err := k.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			l.Close()
			return
		}
		go l.sniff(c, k)
	}
}

// sniff looks at a connection's first four bytes and hands it on: a raft
// connection without them, any other with them still unread.
func (l *ControllerListener) sniff(c net.Conn, k *kafkaListener) {
	if k.tls != nil {
		l.sniffInTLS(c, k)
		return
	}
	c.SetReadDeadline(time.Now().Add(sniffTimeout))
	hdr, err := peekHeader(c)
	if err == nil && (hdr == raftMagic || hdr == identityMagic) {
		_, err = io.ReadFull(c, hdr[:])
	}
	if err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	l.handOn(c, hdr, c, k)
}

// sniffInTLS is sniff on an SSL listener: the handshake first, then the
// four bytes, read from the TLS stream and replayed to the Kafka side.
func (l *ControllerListener) sniffInTLS(c net.Conn, k *kafkaListener) {
	c.SetDeadline(time.Now().Add(sniffTimeout))
	tc, hdr := l.sniffTLS(c, k.tls)
	if tc == nil {
		return
	}
	c.SetDeadline(time.Time{})
	l.handOn(tc, hdr, &sniffedConn{Conn: tc, head: append([]byte(nil), hdr[:]...)}, k)
}

// handOn hands c, whose first four bytes were hdr, to who serves it:
// kafka is c as the Kafka side reads it, with those bytes still unread.
// On a SASL listener a raft or identity connection authenticates first
// (sasl.go).
func (l *ControllerListener) handOn(c net.Conn, hdr [4]byte, kafka net.Conn, k *kafkaListener) {
	if (hdr == raftMagic || hdr == identityMagic) && !l.authenticated(c, k) {
		return
	}
	if hdr == identityMagic {
		l.answerIdentity(c)
		return
	}
	to, kafkaClosed := k.conns, k.closed
	if hdr == raftMagic {
		to, kafkaClosed = l.raftConns, nil // nil, never ready, for raft's
	} else {
		c = kafka
	}
	select {
	case to <- c:
	case <-l.done:
		c.Close()
	case <-kafkaClosed:
		c.Close()
	}
}

// peekHeader waits, within c's read deadline, for c's first four bytes
// and returns them, leaving them to be read.
func peekHeader(c net.Conn) (hdr [4]byte, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return hdr, fmt.Errorf("a %T cannot be peeked at", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return hdr, err
	}
	for {
		var n int
		var perr error
		if err := rc.Read(func(fd uintptr) bool {
			n, _, perr = syscall.Recvfrom(int(fd), hdr[:], syscall.MSG_PEEK)
			return perr != syscall.EAGAIN
		}); err != nil {
			return hdr, err
		}
		switch {
		case perr != nil:
			return hdr, perr
		case n == 0:
			return hdr, io.EOF
		case n == len(hdr):
			return hdr, nil
		}
		// Fewer bytes than a header came in one segment: the socket stays
		// readable, so wait for the rest rather than spin.
		time.Sleep(time.Millisecond)
	}
}

// Close stops the listener; connections already handed on stay open.
func (l *ControllerListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		for _, ln := range l.lns {
			err = errors.Join(err, ln.Close())
		}
	})
	return err
}

// NotifyRaftConnClosed has fn called (on the connection's goroutine)
// each time a raft connection another voter opened to this one fails or
// closes: a leader that dies closes them all (Store.RaftConnClosed).
func (l *ControllerListener) NotifyRaftConnClosed(fn func()) { l.raftClosed.Store(&fn) }

func (l *ControllerListener) notifyRaftClosed() {
	if fn := l.raftClosed.Load(); fn != nil {
		(*fn)()
	}
}

// watchedConn is an accepted raft connection that reports, once, the
// first read that fails other than by a deadline.
type watchedConn struct {
	net.Conn
	closed func()
	once   sync.Once
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
		c.once.Do(c.closed)
	}
	return n, err
}

// Kafka is the listener of the Kafka-protocol connections of the first
// (a controller listener's only) listener.
func (l *ControllerListener) Kafka() net.Listener { return l.kafka[0] }

// KafkaListeners are the Kafka sides of every listener, in their order.
func (l *ControllerListener) KafkaListeners() []net.Listener {
	out := make([]net.Listener, len(l.kafka))
	for i, k := range l.kafka {
		out[i] = k
	}
	return out
}

// Transport is raft's transport over the listener: it accepts the raft
// connections and dials the other voters' listeners with raftMagic. A
// request to another voter fails after timeout (a snapshot gets more, by
// its size): a connection to a voter cut off without a reset is given up
// then, and the next request dials again.
func (l *ControllerListener) Transport(timeout time.Duration, logger *zap.Logger) raft.Transport {
	return raft.NewNetworkTransportWithLogger(streamLayer{l}, 3, timeout, raftLogger(logger))
}

// streamLayer is raft.StreamLayer on the controller listener.
type streamLayer struct{ l *ControllerListener }

func (s streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.l.raftConns:
		return &watchedConn{Conn: c, closed: s.l.notifyRaftClosed}, nil
	case <-s.l.done:
		return nil, net.ErrClosed
	}
}

func (s streamLayer) Close() error   { return s.l.Close() }
func (s streamLayer) Addr() net.Addr { return s.l.self }

// refusedRedial bounds how long Dial keeps dialing a voter whose listener
// refuses connections (its process is down), every refusedRedialEvery.
// Raft backs off exponentially, up to 10 s, after each failed send to a
// follower; failing a send at most once a second while the follower is
// down keeps that backoff short, so a follower that comes back gets the
// log within milliseconds, not seconds.
const (
	refusedRedial      = time.Second
	refusedRedialEvery = 25 * time.Millisecond
)

func (s streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(min(timeout, refusedRedial))
	c, err := s.l.sec.dial(string(address), raftMagic, timeout)
	for err != nil && errors.Is(err, syscall.ECONNREFUSED) && time.Now().Before(deadline) {
		select {
		case <-s.l.done:
			return nil, err
		case <-time.After(refusedRedialEvery):
		}
		c, err = s.l.sec.dial(string(address), raftMagic, timeout)
	}
	return c, err
}

// kafkaListener is the net.Listener of one listener's Kafka-protocol
// connections; closing it refuses later ones, and leaves raft's.
type kafkaListener struct {
	l   *ControllerListener
	ln  net.Listener
	tls *tls.Config // an SSL listener's; nil on a PLAINTEXT one
	// authenticate is a SASL listener's authentication of the raft and
	// identity connections; nil on one without SASL.
	authenticate func(net.Conn) error
	conns        chan net.Conn
	closed       chan struct{}
	closeOnce    sync.Once
}

func (k *kafkaListener) Accept() (net.Conn, error) {
	select {
	case c := <-k.conns:
		return c, nil
	case <-k.closed:
		return nil, net.ErrClosed
	case <-k.l.done:
		return nil, net.ErrClosed
	}
}

func (k *kafkaListener) Close() error {
	k.closeOnce.Do(func() { close(k.closed) })
	return nil
}

func (k *kafkaListener) Addr() net.Addr { return k.ln.Addr() }
