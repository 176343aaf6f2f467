package broker

// A node cut off from a peer without a reset (a network partition, a
// pulled cable) leaves its connections to that peer open: TCP retransmits
// what it sent with a backoff that reaches several seconds after a cut of
// a few seconds, and a connection waiting for an answer sends nothing at
// all, so after the heal a follower's fetch connection would come back
// only on TCP's next retransmission, or at its 30 s deadline (Kafka's
// replica.socket.timeout.ms). Connections to peers therefore have TCP
// find a silent peer within seconds, as a dead connection: keepalive
// probes on an idle one, and a bound on unacknowledged data
// (TCP_USER_TIMEOUT) on one that sends. Both are
// answered by the peer's kernel, so a slow peer process is not mistaken
// for a lost one.

import (
	"context"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/strata-io/strata/metadata/quorum"
)

const (
	peerDialTimeout = 3 * time.Second // a peer on the cluster's network answers a SYN in milliseconds
	peerSilence     = 4 * time.Second // a peer's TCP silent this long is lost
)

var peerDialer = net.Dialer{
	Timeout:         peerDialTimeout,
	KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: int(peerSilence/time.Second) - 1},
	Control:         boundUnacknowledged(peerSilence),
}

// dialPeer connects node to another node of the cluster, secured as sec
// says; the keepalive and TCP_USER_TIMEOUT are the TCP connection's under
// its TLS.
func dialPeer(addr string, node int32, sec peerSecurity) (net.Conn, error) {
	c, err := peerDialer.DialContext(context.Background(), "tcp", addr)
	if err == nil && sec.tls != nil {
		c, err = quorum.HandshakeClient(c, sec.tls, addr, peerDialTimeout)
	}
	if err != nil || sec.login == nil {
		return c, err
	}
	if err := loginConn(addr, c, node, sec.login); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// boundUnacknowledged has a connection fail once data it sent has gone
// unacknowledged for d (TCP_USER_TIMEOUT).
func boundUnacknowledged(d time.Duration) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return serr
	}
}
