package broker

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/protocol"
)

// keepFrameBuf is the largest request buffer a connection keeps between
// requests; a larger one (a big produce) goes to the broker's framePool after use.
const keepFrameBuf = 1 << 20

// framePool holds Produce request buffers larger than keepFrameBuf, shared
// by the connections. A fast producer sends frames of several hundred KiB to
// several MiB whose sizes vary, so a connection's own buffer kept growing
// past keepFrameBuf, was dropped, and the next frame grew a fresh one
// (allocate, zero, copy): that was the top of the broker's CPU profile under
// one fast producer. A pooled buffer is only taken for a frame whose size it
// already covers, so a lying size field still allocates nothing up front.
// (A sync.Pool loses a buffer put on one P and asked for on another.)
// Each broker has its own (Broker.frames): no process-wide state.
type framePool struct {
	sync.Mutex
	free  [][]byte
	bytes int
}

const (
	// poolFrameMin is the smallest frame read into a pooled buffer: below it
	// a connection's own buffer is grown, as before.
	poolFrameMin = 64 << 10
	// bigFramesMaxBytes bounds the memory a framePool keeps; a buffer above
	// bigFrameMax is never kept.
	bigFramesMaxBytes = 64 << 20
	bigFrameMax       = 16 << 20
)

// get takes the smallest pooled buffer of at least n bytes, or nil.
func (bigFrames *framePool) get(n int) []byte {
	bigFrames.Lock()
	defer bigFrames.Unlock()
	best := -1
	for i, b := range bigFrames.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(bigFrames.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := bigFrames.free[best]
	last := len(bigFrames.free) - 1
	bigFrames.free[best] = bigFrames.free[last]
	bigFrames.free[last] = nil
	bigFrames.free = bigFrames.free[:last]
	bigFrames.bytes -= cap(b)
	return b[:0]
}

// put returns a buffer no request refers to any more, evicting smaller
// ones to stay under bigFramesMaxBytes.
func (bigFrames *framePool) put(b []byte) {
	if cap(b) > bigFrameMax {
		return
	}
	bigFrames.Lock()
	defer bigFrames.Unlock()
	for bigFrames.bytes+cap(b) > bigFramesMaxBytes && len(bigFrames.free) > 0 {
		small := 0
		for i, f := range bigFrames.free {
			if cap(f) < cap(bigFrames.free[small]) {
				small = i
			}
		}
		if cap(bigFrames.free[small]) >= cap(b) {
			return
		}
		bigFrames.bytes -= cap(bigFrames.free[small])
		last := len(bigFrames.free) - 1
		bigFrames.free[small] = bigFrames.free[last]
		bigFrames.free[last] = nil
		bigFrames.free = bigFrames.free[:last]
	}
	bigFrames.free = append(bigFrames.free, b[:0])
	bigFrames.bytes += cap(b)
}

// frameBuf is the buffer to read the next frame into: the connection's own,
// or a pooled one when the frame waiting in the reader needs more.
func (c *conn) frameBuf() []byte {
	hdr, err := c.r.Peek(4)
	if err != nil {
		return c.frame
	}
	n := int(int32(binary.BigEndian.Uint32(hdr)))
	if n <= cap(c.frame) || n < poolFrameMin || n > int(c.b.cfg.SocketRequestMaxBytes) {
		return c.frame
	}
	if b := c.b.frames.get(n); b != nil {
		return b
	}
	return c.frame
}

type conn struct {
	b      *Broker
	nc     net.Conn
	r      *bufio.Reader
	log    *zap.Logger
	frame  []byte
	out    []byte
	remote string
	host   string // the client's IP address (reqCtx.clientHost)
	ip     string // counted against max.connections.per.ip (limits.go)

	sniffed bool // the first frame was checked for TLS or HTTP (sniffFirstFrame)

	// An SSL listener's connection: its listener's TLS and nc as a
	// *tls.Conn; nil on a PLAINTEXT listener. principal is the client's
	// (tls.go), User:ANONYMOUS until then.
	tls       *ListenerTLS
	tlsConn   *tls.Conn
	principal string
	// sasl is a SASL listener's (sasl.go): the connection authenticates
	// before its first request is served. nil on other listeners. session
	// is its authenticated session (sasl_reauth.go).
	sasl    *ListenerSASL
	session saslSession

	fetchErr int16 // top-level error code of the fetch response just written, for metrics

	// softwareName and softwareVersion are what the client said it is in
	// ApiVersions v3+, which telemetry subscriptions match (telemetry.go).
	softwareName, softwareVersion string

	// start is when the request being served was read; mute is how long
	// the connection stays muted after its response (conn_quota.go).
	start time.Time
	mute  time.Duration

	rc reqCtx // the request being served

	// apis and svc are what the connection serves: the broker's APIs, or on
	// the controller listener the controller's (controllerlistener.go),
	// whose onClose is told why the connection ended.
	apis    *registry
	svc     *services
	onClose func(c *conn, err error)
}

func newConn(b *Broker, nc net.Conn) *conn {
	remote := nc.RemoteAddr().String()
	return &conn{
		b:      b,
		nc:     nc,
		r:      bufio.NewReaderSize(nc, 64<<10),
		log:    b.logger.With(zap.String("remote", remote)),
		remote: remote,
		host:   hostAddress(nc.RemoteAddr()),
		apis:   b.apis,
		svc:    b.svc,

		principal: anonymousPrincipal,
	}
}

// stopReading makes a connection blocked waiting for its next request give
// up, so Shutdown need not wait for idle clients.
func (c *conn) stopReading() {
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) serve() {
	defer c.b.untrack(c)
	defer c.b.sharing.connClosed(c)
	defer c.nc.Close()
	if err := c.handshake(); err != nil {
		c.logClose(err)
		return
	}
	if c.sasl != nil {
		if err := c.authenticateSASL(nil); err != nil {
			c.logClose(err)
			return
		}
	}
	for {
		if err := c.serveOneRecovered(); err != nil {
			c.logClose(err)
			if c.onClose != nil {
				c.onClose(c, err)
			}
			return
		}
	}
}

// serveOneRecovered turns a panic in a handler into the end of this one
// connection, logged with its stack, so one bad request cannot take the
// broker and every other client down with it.
func (c *conn) serveOneRecovered() (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("handler panicked", zap.Any("panic", r), zap.StackSkip("stack", 1))
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return c.serveOne()
}

// errNotKafka is the end of a connection whose first bytes are another
// protocol's: a client configured for TLS, or a browser or HTTP tool pointed
// at the Kafka port. Its size field would be an invalid frame size, a
// message that leaves the user guessing.
var errNotKafka = errors.New("not a Kafka client")

// sniffFirstFrame names a first frame that is a TLS ClientHello (a
// handshake record, 0x16, of SSL 3.0 to TLS 1.3, 0x03 0x00-0x04) or an HTTP
// request (a method, or HTTP/2's "PRI * HTTP/2.0" preface). As a Kafka size
// field these are frames of 369 MB or more, which no client sends as its
// first request. Later frames are not sniffed: their size is checked as
// usual.
func (c *conn) sniffFirstFrame() error {
	hdr, err := c.r.Peek(4)
	if err != nil {
		// No size yet: ReadFrame meets the same error and reports it.
		return nil
	}
	if hdr[0] == 0x16 && hdr[1] == 0x03 && hdr[2] <= 0x04 {
		return fmt.Errorf("%w: first bytes % x look like TLS: this listener is PLAINTEXT", errNotKafka, hdr[:3])
	}
	switch string(hdr) {
	case "GET ", "POST", "HEAD", "PUT ", "DELE", "PATC", "OPTI", "CONN", "TRAC", "PRI ":
		return fmt.Errorf("%w: first bytes %q look like HTTP: this is a Kafka listener", errNotKafka, hdr)
	}
	return nil
}

// logClose writes the one line a closed connection gets; a client hanging
// up between requests, or a shutdown, is not an error.
func (c *conn) logClose(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, errIdle), c.b.isClosing() && errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, errSASLFailed):
		c.log.Debug("connection closed", zap.Error(err))
	case errors.Is(err, errSASLSessionExpired):
		c.log.Info("closing connection", zap.Error(err))
	default:
		c.log.Warn("closing connection", zap.Error(err))
	}
}

func (c *conn) serveOne() error {
	c.armIdle()
	if !c.sniffed {
		c.sniffed = true
		if err := c.sniffFirstFrame(); err != nil {
			return err
		}
	}
	frame, err := protocol.ReadFrame(c.r, c.b.cfg.SocketRequestMaxBytes, c.frameBuf())
	if err != nil {
		return c.idleErr(err)
	}
	start := time.Now()
	c.start = start
	req, err := protocol.ParseRequest(frame, c.apis.supports)
	// kmsg decodes byte fields as slices of the frame. Produce and Fetch
	// never keep them past the request, so their buffer is reused; other
	// requests (JoinGroup metadata, SyncGroup assignments) may be kept by the
	// coordinator, so their frame is left to them. A frame above keepFrameBuf
	// goes back to the frame pool once the request is answered.
	if req != nil && (req.Key == int16(kmsg.Produce) || req.Key == int16(kmsg.Fetch)) {
		if cap(frame) <= keepFrameBuf {
			c.frame = frame[:0]
		} else {
			defer c.b.frames.put(frame)
		}
	} else {
		c.frame = nil
	}
	if err != nil {
		if errors.Is(err, protocol.ErrUnsupported) && req.Key == int16(kmsg.ApiVersions) {
			return c.write(protocol.AppendResponse(c.out[:0], &protocol.Request{
				Key: req.Key, Version: 0, CorrelationID: req.CorrelationID,
			}, unsupportedAPIVersions(c.svc.served)))
		}
		return err
	}
	if c.sasl != nil {
		if handled, err := c.saslSessionCheck(req); handled {
			return err
		}
	}
	if c.b.cfg.LogRequests {
		c.log.Info("request", zap.String("api", kmsg.NameForKey(req.Key)), zap.Int16("version", req.Version),
			zap.Int32("correlation_id", req.CorrelationID), zap.Any("body", req.Body))
	}
	// One request at a time per connection, so its context is reused.
	c.rc = reqCtx{
		principal:          c.principal,
		tokenAuthenticated: c.session.tokenAuthenticated,
		clientAddr:         c.remote,
		clientHost:         c.host,
		listener:           c.svc.listener,
		req:                req,
		svc:                c.svc,
		authz:              c.b.authz,
		conn:               c,
	}
	if req.Key == int16(kmsg.Fetch) {
		c.rc.fetch = c
	}
	resp, err := c.apis.apis[req.Key].serve(&c.rc)
	if err == nil && req.Key != int16(kmsg.Fetch) {
		c.mute = c.throttleResponse(req, start, resp)
	}
	c.rc = reqCtx{} // an idle connection keeps no request (and frame) alive
	if err == nil && resp != nil {
		err = c.reply(req, resp)
	}
	c.observe(req, start, resp, err)
	if mute := c.mute; err == nil && mute > 0 {
		c.mute = 0
		c.waitMuted(mute)
	}
	return err
}

// reply encodes and sends resp.
func (c *conn) reply(req *protocol.Request, resp kmsg.Response) error {
	resp.SetVersion(req.Version)
	if c.b.cfg.LogRequests {
		c.log.Info("response", zap.String("api", kmsg.NameForKey(req.Key)), zap.Int16("version", req.Version),
			zap.Int32("correlation_id", req.CorrelationID), zap.Any("body", resp))
	}
	c.out = protocol.AppendResponse(c.out[:0], req, resp)
	err := c.write(c.out)
	if cap(c.out) > keepFrameBuf {
		c.out = nil
	}
	return err
}

func (c *conn) write(p []byte) error {
	c.armWrite()
	_, err := c.nc.Write(p)
	return err
}
