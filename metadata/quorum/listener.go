package quorum

// One controller listener carries both the quorum's raft traffic and the
// Kafka protocol of the controller (broker registrations and heartbeats,
// forwarded admin requests), as a Kafka controller serves KRaft's and the
// controller APIs on its CONTROLLER listener. A raft connection opens with
// raftMagic, four bytes that as a Kafka frame size are negative, which no
// Kafka client sends; every other connection is Kafka's, its first four
// bytes given back to it.

import (
	"bytes"
	"errors"
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

// ControllerListener splits the connections of a controller listener:
// raft's go to Transport, the others to Kafka.
type ControllerListener struct {
	ln     net.Listener
	self   net.Addr // the address the other voters reach this one at
	logger *zap.Logger

	raftConns  chan net.Conn
	kafkaConns chan net.Conn
	done       chan struct{}
	closeOnce  sync.Once
	kafka      kafkaListener
	// raftClosed is told when a raft connection from another voter closes.
	raftClosed atomic.Pointer[func()]
}

// NewControllerListener serves ln; self is this node's voter address.
func NewControllerListener(ln net.Listener, self string, logger *zap.Logger) (*ControllerListener, error) {
	addr, err := net.ResolveTCPAddr("tcp", self)
	if err != nil {
		return nil, err
	}
	l := &ControllerListener{ln: ln, self: addr, logger: logger,
		raftConns: make(chan net.Conn), kafkaConns: make(chan net.Conn), done: make(chan struct{})}
	l.kafka = kafkaListener{l: l, closed: make(chan struct{})}
	go l.accept()
	return l, nil
}

func (l *ControllerListener) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			l.Close()
			return
		}
		go l.sniff(c)
	}
}

// sniff reads a connection's first four bytes and hands it on.
func (l *ControllerListener) sniff(c net.Conn) {
	var hdr [4]byte
	c.SetReadDeadline(time.Now().Add(sniffTimeout))
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	to := l.kafkaConns
	if hdr == raftMagic {
		to = l.raftConns
	} else {
		c = &prefixedConn{Conn: c, r: io.MultiReader(bytes.NewReader(hdr[:]), c)}
	}
	var kafkaClosed chan struct{} // nil, never ready, for raft's
	if to == l.kafkaConns {
		kafkaClosed = l.kafka.closed
	}
	select {
	case to <- c:
	case <-l.done:
		c.Close()
	case <-kafkaClosed:
		c.Close()
	}
}

// Close stops the listener; connections already handed on stay open.
func (l *ControllerListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.ln.Close()
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

// Kafka is the listener of the Kafka-protocol connections.
func (l *ControllerListener) Kafka() net.Listener { return &l.kafka }

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
	c, err := net.DialTimeout("tcp", string(address), timeout)
	for err != nil && errors.Is(err, syscall.ECONNREFUSED) && time.Now().Before(deadline) {
		select {
		case <-s.l.done:
			return nil, err
		case <-time.After(refusedRedialEvery):
		}
		c, err = net.DialTimeout("tcp", string(address), timeout)
	}
	if err != nil {
		return nil, err
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(raftMagic[:]); err != nil {
		c.Close()
		return nil, err
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}

// kafkaListener is the net.Listener of the Kafka-protocol connections;
// closing it refuses later ones, and leaves raft's.
type kafkaListener struct {
	l         *ControllerListener
	closed    chan struct{}
	closeOnce sync.Once
}

func (k *kafkaListener) Accept() (net.Conn, error) {
	select {
	case c := <-k.l.kafkaConns:
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

func (k *kafkaListener) Addr() net.Addr { return k.l.ln.Addr() }

// prefixedConn reads the bytes sniffed off it first.
type prefixedConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
