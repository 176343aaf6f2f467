package main

// End-to-end tests of the connection limits: max.connections,
// max.connections.per.ip, connections.max.idle.ms, a client that never reads
// its responses, and the memory 1,000 idle connections cost.

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersions does one ApiVersions round trip on c: the broker has accepted
// and is serving the connection once it returns.
func apiVersions(t *testing.T, c net.Conn) {
	t.Helper()
	rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), 0, 1)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitClosed requires the broker to close c within d, without c writing.
func waitClosed(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", d)
	}
	if err == nil {
		t.Fatalf("read a byte from a connection the broker should have closed")
	}
}

// servedWithin polls, with new connections, until one is served.
func servedWithin(t *testing.T, addr string, d time.Duration) net.Conn {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		c := dial(t, addr)
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write(apiVersionsFrame()); err == nil {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err == nil {
				body := make([]byte, binary.BigEndian.Uint32(size[:]))
				if _, err := io.ReadFull(c, body); err == nil {
					_ = c.SetDeadline(time.Time{})
					return c
				}
			}
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no connection served within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func apiVersionsFrame() []byte {
	return requestFrame(kmsg.NewPtrApiVersionsRequest(), 0, 1)
}

// requestFrame frames req by hand at the given version (see rawRequest).
func requestFrame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	buf := make([]byte, 4, 64)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(version))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, uint16(len("strata-e2e")))
	buf = append(buf, "strata-e2e"...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

func TestMaxConnectionsPerIP(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "max.connections.per.ip=2")
	// startBroker's readiness probe may still hold a slot until the broker
	// sees it close, so the two admitted connections retry.
	a := servedWithin(t, p.addr, 10*time.Second)
	servedWithin(t, p.addr, 10*time.Second)
	over := dial(t, p.addr) // the kernel completes the handshake; the broker closes it
	waitClosed(t, over, 10*time.Second)
	p.waitLog(regexp.MustCompile(`rejected connection.*max.connections.per.ip`), 5*time.Second)
	apiVersions(t, a) // the two admitted ones are unaffected
	a.Close()
	servedWithin(t, p.addr, 10*time.Second) // a slot is free again once the broker sees a go
}

// TestMaxConnections: at max.connections the broker stops accepting, as
// Kafka's acceptor does; a further connection waits in the kernel's backlog
// unanswered and is served as soon as one of the others closes.
func TestMaxConnections(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "max.connections=3")
	var conns []net.Conn
	for range 3 {
		conns = append(conns, servedWithin(t, p.addr, 10*time.Second))
	}
	over := dial(t, p.addr)
	p.waitLog(regexp.MustCompile(`not accepting connections until one closes.*max.connections\)`), 5*time.Second)
	if _, err := over.Write(apiVersionsFrame()); err != nil {
		t.Fatal(err)
	}
	_ = over.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [1]byte
	var ne net.Error
	if n, err := over.Read(b[:]); n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a connection over max.connections was answered or closed: %d bytes, %v", n, err)
	}
	conns[0].Close()
	_ = over.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(over, size[:]); err != nil {
		t.Fatalf("the waiting connection was not served after a slot freed: %v", err)
	}
	if _, err := io.ReadFull(over, make([]byte, binary.BigEndian.Uint32(size[:]))); err != nil {
		t.Fatal(err)
	}
	apiVersions(t, over)
}

func TestIdleConnectionClosed(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "connections.max.idle.ms=400")
	idle, busy := dial(t, p.addr), dial(t, p.addr)
	apiVersions(t, idle)
	start := time.Now()
	// busy sends a request every 100 ms for 1.2 s: never idle for 400 ms.
	for i := range 12 {
		rawRequest(t, busy, kmsg.NewPtrApiVersionsRequest(), 0, int32(i))
		time.Sleep(100 * time.Millisecond)
	}
	waitClosed(t, idle, 10*time.Second)
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Fatalf("idle connection closed after %v, before connections.max.idle.ms", el)
	}
	apiVersions(t, busy)
	waitClosed(t, busy, 10*time.Second)
	if out := p.out.String(); regexp.MustCompile(`WARN.*closing connection`).MatchString(out) {
		t.Errorf("an idle close logged a warning:\n%s", out)
	}
}

// TestStuckReaderIsBoundedAndDropped: a client pipelines Fetch requests for
// 1 MiB of records each and never reads. The broker answers one request at a
// time, so once the socket buffers are full it stops reading; its memory stays
// flat, and after connections.max.idle.ms without progress it drops the
// connection while other clients are served throughout.
func TestStuckReaderIsBoundedAndDropped(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "connections.max.idle.ms=3000")
	cl := newClient(t, p.addr, kgo.ProducerBatchMaxBytes(1<<20))
	createTopic(t, cl, "stuck", 1)
	value := make([]byte, 64<<10)
	var recs []*kgo.Record
	for i := range 64 { // 4 MiB
		value[0] = byte(i)
		recs = append(recs, &kgo.Record{Topic: "stuck", Value: append([]byte(nil), value...)})
	}
	if err := cl.ProduceSync(timeoutCtx(t, time.Minute), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := p.rssKiB()

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 0, 50<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "stuck"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.FetchOffset, rp.LogStartOffset, rp.CurrentLeaderEpoch = 1<<20, 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := requestFrame(req, 11, 7)

	stuck := dial(t, p.addr)
	var sent atomic.Int64
	writerDone := make(chan error, 1)
	go func() {
		for {
			_ = stuck.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := stuck.Write(frame); err != nil {
				writerDone <- err
				return
			}
			sent.Add(1)
		}
	}()
	// While the connection is stuck, another client is served.
	other := dial(t, p.addr)
	var peak int64
	deadline := time.Now().Add(30 * time.Second)
	for done := false; !done; {
		select {
		case err := <-writerDone:
			t.Logf("stuck client's writes ended after %d requests: %v", sent.Load(), err)
			done = true
		case <-time.After(200 * time.Millisecond):
			apiVersions(t, other)
			peak = max(peak, p.rssKiB())
			if time.Now().After(deadline) {
				t.Fatalf("stuck reader not dropped within 30s (connections.max.idle.ms=3000); %d requests sent", sent.Load())
			}
		}
	}
	t.Logf("RSS %d KiB before, peak %d KiB while %d fetch requests (1 MiB responses) went unread", before, peak, sent.Load())
	if growth := peak - before; growth > 64<<10 {
		t.Errorf("RSS grew by %d KiB while a client did not read: the broker buffers without bound", growth)
	}
	p.waitLog(regexp.MustCompile(`closing connection.*(i/o timeout|deadline)`), 5*time.Second)
	apiVersions(t, other)
}

// TestIdleConnectionsMemory measures what 1,000 idle connections cost: each
// is served one ApiVersions request, as a client's first request, and then
// left open. It does not run in parallel: its 1,000 client sockets take
// ephemeral ports that a parallel test's freePort may have just handed out.
func TestIdleConnectionsMemory(t *testing.T) {
	if strataBin == "" {
		t.Skip("end-to-end test; skipped with -short")
	}
	const n = 1000
	p := startBroker(t, "")
	warm := dial(t, p.addr)
	apiVersions(t, warm)
	time.Sleep(200 * time.Millisecond)
	before := p.rssKiB()
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c := dial(t, p.addr)
		rawRequest(t, c, kmsg.NewPtrApiVersionsRequest(), 0, int32(i))
		conns = append(conns, c)
	}
	after := p.rssKiB()
	per := float64(after-before) / n
	t.Logf("%d idle connections: RSS %d KiB before, %d KiB after, %.1f KiB per connection", n, before, after, per)
	if per > 128 {
		t.Errorf("%.1f KiB per idle connection", per)
	}
	for _, c := range conns {
		c.Close()
	}
}
