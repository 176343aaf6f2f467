package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/protocol"
)

// proxy accepts Kafka clients and pairs each with its own upstream
// connection.
type proxy struct {
	upstream string
	advHost  string // written into Metadata and FindCoordinator responses
	advPort  int32
	maxFrame int32
	log      *zap.Logger
	ln       net.Listener

	nextID atomic.Uint64
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// newProxy binds listen. advertise (host:port) is what rewritten responses
// name; empty means the bound address (0.0.0.0 and :: become 127.0.0.1).
func newProxy(listen, upstream, advertise string, maxFrame int32, log *zap.Logger) (*proxy, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("--upstream %q: want host:port: %w", upstream, err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", listen, err)
	}
	if advertise == "" {
		a := ln.Addr().(*net.TCPAddr)
		host := a.IP.String()
		if a.IP.IsUnspecified() {
			host = "127.0.0.1"
		}
		advertise = net.JoinHostPort(host, strconv.Itoa(a.Port))
	}
	host, portStr, err := net.SplitHostPort(advertise)
	port, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || port == 0 {
		ln.Close()
		return nil, fmt.Errorf("--advertise %q: want host:port with a port from 1 to 65535", advertise)
	}
	return &proxy{
		upstream: upstream, advHost: host, advPort: int32(port), maxFrame: maxFrame,
		log: log, ln: ln, conns: make(map[net.Conn]struct{}),
	}, nil
}

// Addr is the bound listen address.
func (p *proxy) Addr() net.Addr { return p.ln.Addr() }

// serve accepts clients until close; it then returns nil.
func (p *proxy) serve() error {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		if !p.track(c) {
			c.Close()
			return nil
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// close stops accepting, cuts every connection and waits for their
// goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// pending is what the response reader needs to decode a response: the
// request's key and version, by correlation id.
type pending struct {
	mu sync.Mutex
	m  map[int32]inflight
}

type inflight struct {
	key, version int16
	sent         time.Time
}

func (q *pending) put(corr int32, f inflight) {
	q.mu.Lock()
	q.m[corr] = f
	q.mu.Unlock()
}

func (q *pending) take(corr int32) (inflight, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f, ok := q.m[corr]
	delete(q.m, corr)
	return f, ok
}

// handle proxies one client connection until either side closes.
func (p *proxy) handle(client net.Conn) {
	log := p.log.With(zap.Uint64("conn", p.nextID.Add(1)), zap.String("client", client.RemoteAddr().String()))
	defer client.Close()
	up, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		log.Warn("cannot reach upstream", zap.String("upstream", p.upstream), zap.Error(err))
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		up.Close()
		return
	}
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.untrack(up)
	log.Debug("connected", zap.String("upstream", up.RemoteAddr().String()))

	q := &pending{m: make(map[int32]inflight)}
	done := make(chan error, 1)
	go func() { done <- p.responses(up, client, q, log) }()
	reqErr := p.requests(client, up, q, log)
	up.Close()
	client.Close()
	respErr := <-done
	for _, err := range []error{reqErr, respErr} {
		if err != nil && !isClosed(err) {
			log.Warn("connection ended", zap.Error(err))
		}
	}
	log.Debug("disconnected")
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded)
}

// requests forwards client frames upstream unchanged, logging each decoded.
func (p *proxy) requests(client, up net.Conn, q *pending, log *zap.Logger) error {
	var buf []byte
	for {
		frame, err := protocol.ReadFrame(client, p.maxFrame, buf)
		if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		buf = frame[:0]
		req, err := decodeRequest(frame)
		if req == nil {
			return fmt.Errorf("request header: %w", err)
		}
		fields := []zap.Field{
			zap.String("api", kmsg.NameForKey(req.Key)), zap.Int16("version", req.Version),
			zap.Int32("correlation_id", req.CorrelationID), zap.Stringp("client_id", req.ClientID),
		}
		if err != nil {
			log.Warn("request not decoded", append(fields, zap.Int("bytes", len(frame)), zap.Error(err))...)
		} else {
			log.Info("request", append(fields, zap.Any("body", req.Body))...)
		}
		if pr, ok := req.Body.(*kmsg.ProduceRequest); !ok || pr.Acks != 0 {
			q.put(req.CorrelationID, inflight{key: req.Key, version: req.Version, sent: time.Now()})
		}
		if err := writeFrame(up, frame); err != nil {
			return fmt.Errorf("forward request: %w", err)
		}
	}
}

// responses forwards upstream frames to the client, logging each decoded
// and rewriting the broker addresses of Metadata and FindCoordinator.
func (p *proxy) responses(up, client net.Conn, q *pending, log *zap.Logger) error {
	for {
		frame, err := protocol.ReadFrame(up, 1<<30, nil)
		if err != nil {
			return fmt.Errorf("read response: %w", err)
		}
		if len(frame) < 4 {
			return fmt.Errorf("response of %d bytes has no correlation id", len(frame))
		}
		corr := int32(binary.BigEndian.Uint32(frame))
		f, ok := q.take(corr)
		if !ok {
			log.Warn("response to no known request, forwarded as is", zap.Int32("correlation_id", corr))
			if err := writeFrame(client, frame); err != nil {
				return fmt.Errorf("forward response: %w", err)
			}
			continue
		}
		fields := []zap.Field{
			zap.String("api", kmsg.NameForKey(f.key)), zap.Int16("version", f.version),
			zap.Int32("correlation_id", corr), zap.Duration("latency", time.Since(f.sent)),
		}
		resp, hdrLen, err := decodeResponse(f.key, f.version, frame)
		if err != nil {
			log.Warn("response not decoded, forwarded as is", append(fields, zap.Int("bytes", len(frame)), zap.Error(err))...)
		} else {
			if p.rewrite(resp) {
				frame = resp.AppendTo(append([]byte(nil), frame[:hdrLen]...))
			}
			log.Info("response", append(fields, zap.Any("body", resp))...)
		}
		if err := writeFrame(client, frame); err != nil {
			return fmt.Errorf("forward response: %w", err)
		}
	}
}

// rewrite points broker addresses at the proxy; it reports whether resp
// changed.
func (p *proxy) rewrite(resp kmsg.Response) bool {
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			r.Brokers[i].Host, r.Brokers[i].Port = p.advHost, p.advPort
		}
		return len(r.Brokers) > 0
	case *kmsg.FindCoordinatorResponse:
		if r.Version < 4 {
			if r.ErrorCode != 0 {
				return false
			}
			r.Host, r.Port = p.advHost, p.advPort
			return true
		}
		changed := false
		for i := range r.Coordinators {
			if r.Coordinators[i].ErrorCode == 0 {
				r.Coordinators[i].Host, r.Coordinators[i].Port = p.advHost, p.advPort
				changed = true
			}
		}
		return changed
	}
	return false
}

// decodeRequest reads a request's header and body: any key and version
// kmsg knows, whether or not the broker behind serves it. The header is
// returned even when the body does not decode; nil means no header.
func decodeRequest(frame []byte) (*protocol.Request, error) {
	req, err := protocol.ParseRequest(frame, kmsgKnows)
	if err == nil || req == nil || !errors.Is(err, protocol.ErrUnsupported) {
		return req, err
	}
	body := kmsg.RequestForKey(req.Key)
	if body == nil {
		return req, fmt.Errorf("unknown api key %d", req.Key)
	}
	return req, fmt.Errorf("%s v%d is newer than this proxy's kmsg (max v%d)", kmsg.NameForKey(req.Key), req.Version, body.MaxVersion())
}

// kmsgKnows reports whether kmsg can decode key at version.
func kmsgKnows(key, version int16) bool {
	body := kmsg.RequestForKey(key)
	return body != nil && version >= 0 && version <= body.MaxVersion()
}

// decodeResponse decodes a response frame (correlation id first) to a
// request of key at version, returning the header's length: 4, or more
// when the v1 header carries a tag section.
func decodeResponse(key, version int16, frame []byte) (kmsg.Response, int, error) {
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return nil, 0, fmt.Errorf("unknown api key %d", key)
	}
	resp.SetVersion(version)
	r := kbin.Reader{Src: frame[4:]}
	if protocol.FlexibleResponseHeader(key, version) {
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return nil, 0, errors.New("response header tags do not parse")
		}
	}
	hdrLen := len(frame) - len(r.Src)
	if err := resp.ReadFrom(r.Src); err != nil {
		// A broker that does not serve the ApiVersions version asked for
		// answers UNSUPPORTED_VERSION in the v0 layout (KIP-511).
		if key == int16(kmsg.ApiVersions) && version > 0 {
			v0 := kmsg.NewPtrApiVersionsResponse()
			if v0.ReadFrom(r.Src) == nil {
				return v0, hdrLen, nil
			}
		}
		return nil, 0, fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(key), version, err)
	}
	return resp, hdrLen, nil
}

// writeFrame writes a size prefix and body.
func writeFrame(w net.Conn, body []byte) error {
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(body)))
	bufs := net.Buffers{size[:], body}
	_, err := bufs.WriteTo(w)
	return err
}
