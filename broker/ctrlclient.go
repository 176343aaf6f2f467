package broker

// ctrlClient is a broker's connection to a controller listener: one
// request at a time, as a Kafka broker's NodeToControllerChannelManager
// sends them, for its registration and heartbeats and for the requests it
// forwards (forward.go).

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata/quorum"
	"github.com/strata-io/strata/protocol"
)

// maxControllerResponse bounds a controller's response frame.
const maxControllerResponse = 64 << 20

// controllerRequestTimeout bounds one request to a controller.
const controllerRequestTimeout = 10 * time.Second

type ctrlClient struct {
	addr string
	nc   net.Conn
	r    io.Reader // buffered, but for a login whose connection is handed on (loginConn)
	fmt  *kmsg.RequestFormatter
	corr int32
	buf  []byte
}

// dialController connects to the controller listener at addr (or to
// another broker's inter-broker listener), secured as sec says.
func dialController(addr string, node int32, timeout time.Duration, sec peerSecurity) (*ctrlClient, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err == nil && sec.tls != nil {
		nc, err = quorum.HandshakeClient(nc, sec.tls, addr, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", addr, err)
	}
	c := newCtrlClient(addr, nc, node)
	if sec.login != nil {
		if err := c.login(sec.login); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *ctrlClient) Close() error { return c.nc.Close() }

// request sends req at its version and reads its response within timeout.
func (c *ctrlClient) request(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	c.corr++
	c.buf = c.fmt.AppendRequest(c.buf[:0], req, c.corr)
	c.nc.SetDeadline(time.Now().Add(timeout))
	defer c.nc.SetDeadline(time.Time{})
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, fmt.Errorf("controller %s: %w", c.addr, err)
	}
	frame, err := protocol.ReadFrame(c.r, maxControllerResponse, nil)
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", c.addr, err)
	}
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != c.corr {
		return nil, fmt.Errorf("controller %s: response to another request", c.addr)
	}
	body := frame[4:]
	if protocol.FlexibleResponseHeader(req.Key(), req.GetVersion()) {
		if body, err = skipHeaderTags(body); err != nil {
			return nil, fmt.Errorf("controller %s: %w", c.addr, err)
		}
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("controller %s: decode %s response: %w", c.addr, kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}
