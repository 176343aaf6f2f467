package broker

// Connection limits: max.connections, max.connections.per.ip and
// connections.max.idle.ms, and what bounds a connection's memory.
//
// What one connection can make the broker hold: the broker reads one request,
// answers it, and only then reads the next, so a connection has at most one
// request in flight and one response being written (Kafka mutes a channel
// while its response is pending, to the same effect; queued.max.requests has
// nothing to bound). A request frame is at most socket.request.max.bytes; a
// response is encoded into one buffer except Fetch records, which go from the
// segment files with sendfile. A client that sends requests and never reads
// the responses therefore fills its socket buffers and stalls its own
// connection: the broker's write blocks, it stops reading, and the client's
// writes block in turn. Every response write has a deadline of
// connections.max.idle.ms from its start, so such a stuck reader is dropped
// after that long (Kafka drops it through the same idle expiry: a channel
// with no reads or writes for connections.max.idle.ms is closed).
//
// At max.connections, which counts the connections of every listener, the
// accept loops stop accepting until a connection closes, as Kafka's acceptor
// does (ConnectionQuotas.waitForConnectionSlot): new connections wait in the
// kernel's backlog and are served, in turn, once a slot frees. Over
// max.connections.per.ip the new connection is closed at once, as Kafka does.
// Connection creation rates (max.connection.creation.rate, the
// connection_creation_rate quotas) are connquotas.go's. Differences from
// Kafka: max.connections.per.ip.overrides and the per-listener limits are
// not implemented.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"go.uber.org/zap"
)

// ConnLimits bound the connections clients may hold. Zero values mean no
// limit, so a zero Config behaves as Kafka's defaults (Int.MaxValue
// connections, 10 minutes idle).
type ConnLimits struct {
	MaxConnections      int           // max.connections; 0 = no limit
	MaxConnectionsPerIP int           // max.connections.per.ip; 0 = no limit
	MaxIdle             time.Duration // connections.max.idle.ms; 0 = 10 minutes, negative = never
}

// defaultMaxIdle is Kafka's connections.max.idle.ms.
const defaultMaxIdle = 10 * time.Minute

func (l ConnLimits) idle() time.Duration {
	if l.MaxIdle == 0 {
		return defaultMaxIdle
	}
	return l.MaxIdle
}

// errIdle ends a connection on which no request arrived for
// connections.max.idle.ms.
var errIdle = errors.New("idle for connections.max.idle.ms")

// waitForSlot blocks an accept loop while the broker holds
// max.connections connections, logging when it starts to wait (at most once
// a minute: at the limit, every close lets one waiting connection in and the
// loop waits again). It returns false when the broker is shutting down.
func (b *Broker) waitForSlot() bool {
	limit := b.cfg.Limits.MaxConnections
	b.mu.Lock()
	defer b.mu.Unlock()
	if limit > 0 && len(b.conns) >= limit && !b.closing {
		if now := b.clock.Now(); now.Sub(b.fullLogged) >= time.Minute {
			b.fullLogged = now
			b.logger.Info("not accepting connections until one closes", zap.String("reason",
				fmt.Sprintf("the broker has the configured maximum of %d connections (max.connections)", limit)))
		}
		for len(b.conns) >= limit && !b.closing {
			b.slotFreed.Wait()
		}
	}
	return !b.closing
}

// admit checks a new connection against max.connections.per.ip and counts
// it against its address; over the limit it closes the connection with one
// log line and returns false. Only the accept loops add connections, one
// at a time (Broker.add), so a count checked here cannot grow before track.
func (b *Broker) admit(c *conn) bool {
	ip := remoteIP(c.nc)
	if b.throttledByIP(c, ip) {
		return false
	}
	l := b.cfg.Limits
	b.mu.Lock()
	var reason string
	if l.MaxConnectionsPerIP > 0 && b.perIP[ip] >= l.MaxConnectionsPerIP {
		reason = fmt.Sprintf("address already has the configured maximum of %d connections (max.connections.per.ip)", l.MaxConnectionsPerIP)
	} else {
		if b.perIP == nil {
			b.perIP = make(map[string]int)
		}
		b.perIP[ip]++
		c.ip = ip
	}
	b.mu.Unlock()
	if reason != "" {
		b.logger.Info("rejected connection", zap.String("remote", c.remote), zap.String("reason", reason))
		c.nc.Close()
		return false
	}
	return true
}

// release gives back the connection's count against its address.
func (b *Broker) release(c *conn) {
	if c.ip == "" {
		return // not counted: a controller listener's connection
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perIP[c.ip]--; b.perIP[c.ip] <= 0 {
		delete(b.perIP, c.ip)
	}
}

func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// armIdle starts the idle clock before waiting for the next request. A
// shutdown that began meanwhile keeps its immediate deadline.
func (c *conn) armIdle() {
	if d := c.b.cfg.Limits.idle(); d > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	} else {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	select {
	case <-c.b.shutdown:
		c.stopReading()
	default:
	}
}

// idleErr names a read that timed out outside a shutdown as an idle close.
func (c *conn) idleErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) && !c.b.isClosing() {
		return fmt.Errorf("%w (%v)", errIdle, c.b.cfg.Limits.idle())
	}
	return err
}

// armWrite gives a response write connections.max.idle.ms to complete, so a
// client that stops reading cannot hold the connection forever.
func (c *conn) armWrite() {
	if d := c.b.cfg.Limits.idle(); d > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(d))
	}
}
