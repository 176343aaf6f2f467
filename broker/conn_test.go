package broker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// rawConn is a bare TCP client that frames requests by hand, for what a
// well-behaved client library would never send.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, b *Broker) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// send writes one request with a v1 or v2 header, as the version requires.
func (c *rawConn) send(key, version int16, correlationID int32, body []byte, flexible bool) {
	c.t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, 0)
	frame = binary.BigEndian.AppendUint16(frame, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(correlationID))
	frame = binary.BigEndian.AppendUint16(frame, 4)
	frame = append(frame, "test"...)
	if flexible {
		frame = append(frame, 0)
	}
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) sendRequest(req kmsg.Request, version int16, correlationID int32) {
	req.SetVersion(version)
	c.send(req.Key(), version, correlationID, req.AppendTo(nil), req.IsFlexible())
}

// recv reads one response frame and returns its correlation id and the
// bytes after the header of the given version.
func (c *rawConn) recv(flexibleHeader bool) (int32, []byte, error) {
	frame, err := protocol.ReadFrame(c.r, 1<<30, nil)
	if err != nil {
		return 0, nil, err
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	if flexibleHeader {
		body = body[1:]
	}
	return corr, body, nil
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	b := startBroker(t, nil)
	c := dialRaw(t, b)
	for i := int32(0); i < 20; i++ {
		if i%2 == 0 {
			c.sendRequest(kmsg.NewPtrApiVersionsRequest(), 0, i)
		} else {
			c.sendRequest(kmsg.NewPtrMetadataRequest(), 1, i)
		}
	}
	for i := int32(0); i < 20; i++ {
		corr, _, err := c.recv(false)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if corr != i {
			t.Fatalf("response %d carries correlation id %d", i, corr)
		}
	}
}

func TestApiVersionsAtUnknownVersionGetsOurRanges(t *testing.T) {
	b := startBroker(t, nil)
	c := dialRaw(t, b)
	c.send(int16(kmsg.ApiVersions), 99, 7, []byte{0, 0, 0}, true)
	corr, body, err := c.recv(false)
	if err != nil {
		t.Fatal(err)
	}
	if corr != 7 {
		t.Fatalf("correlation id %d, want 7", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	if len(resp.ApiKeys) != len(ServedVersions()) {
		t.Fatalf("%d keys advertised, want %d", len(resp.ApiKeys), len(ServedVersions()))
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.ApiVersions) && k.MaxVersion != 5 {
			t.Fatalf("ApiVersions max %d, want 5", k.MaxVersion)
		}
	}
}

func TestUnsupportedKeyClosesConnection(t *testing.T) {
	b := startBroker(t, nil)
	c := dialRaw(t, b)
	c.sendRequest(kmsg.NewPtrLeaderAndISRRequest(), 1, 1) // a key Strata does not serve (ZooKeeper-era, gone from Kafka 4)
	if _, _, err := c.recv(false); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("want the connection closed, got %v", err)
	}
}

func TestOversizedFrameClosesOnlyThatConnection(t *testing.T) {
	b := startBroker(t, nil)
	other := dialRaw(t, b)
	c := dialRaw(t, b)
	if _, err := c.nc.Write([]byte{0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.recv(false); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("want the connection closed, got %v", err)
	}
	other.sendRequest(kmsg.NewPtrApiVersionsRequest(), 3, 9)
	if corr, _, err := other.recv(false); err != nil || corr != 9 {
		t.Fatalf("other connection: corr %d, err %v", corr, err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	b := startBroker(t, nil)
	key := int16(kmsg.ApiVersions)
	a := b.apis.apis[key]
	a.serve = func(*reqCtx) (kmsg.Response, error) { panic("boom") }
	b.apis.apis[key] = a

	c := dialRaw(t, b)
	c.sendRequest(kmsg.NewPtrApiVersionsRequest(), 0, 1)
	if _, _, err := c.recv(false); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("want the connection closed, got %v", err)
	}
	other := dialRaw(t, b)
	other.sendRequest(kmsg.NewPtrMetadataRequest(), 1, 2)
	if corr, _, err := other.recv(false); err != nil || corr != 2 {
		t.Fatalf("broker did not survive the panic: corr %d, err %v", corr, err)
	}
}
