package broker

// The Kafka side of a cluster node's controller listener
// (quorum.ControllerListener.Kafka): connections served with the
// controller's registry, the controller's APIs (controller.go) and the
// admin changes other brokers forward to it (forward.go), as Kafka's
// ControllerApis serves the CONTROLLER listener.

import (
	"errors"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// controllerRegistry is what the controller listener serves: ApiVersions,
// SaslHandshake and SaslAuthenticate (sasl.go), the controller's APIs
// (DescribeQuorum among them), the admin changes brokers forward, in an
// Envelope (envelope.go) or not, and DescribeAcls.
func (b *Broker) controllerRegistry() *registry {
	r := &registry{apis: map[int16]api{}}
	registerApiVersions(r)
	registerSASL(r)
	b.controller.register(r)
	local := newRegistry(false) // the admin handlers, not forwarding again
	// DescribeAcls too, as Kafka's ControllerApis serves kafka-acls
	// --bootstrap-controller.
	for _, k := range append([]kmsg.Key{kmsg.DescribeACLs}, forwardedKeys...) {
		if a, ok := local.apis[int16(k)]; ok {
			r.apis[int16(k)] = a
		}
	}
	r.add(kmsg.Envelope, 0, 0, handleEnvelope(r))
	return r
}

// serveController accepts the controller listener's Kafka connections
// until Shutdown.
func (b *Broker) serveController(ln net.Listener) {
	apis := b.controllerRegistry()
	svc := *b.svc
	svc.served, svc.controllerListener = apis.ranges(), true
	name, _, _ := strings.Cut(b.cfg.Cluster.ControllerListener, "://")
	lt := b.cfg.ListenerTLS[name] // its handshake is the quorum's (tlsConner)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !b.isClosing() && !errors.Is(err, net.ErrClosed) {
				b.logger.Error("the controller listener stopped accepting", zap.Error(err))
			}
			return
		}
		nc, tc := serverTLS(nc, lt)
		c := newConn(b, nc)
		c.apis, c.svc, c.onClose = apis, &svc, b.controller.connClosed
		c.sasl = b.cfg.ListenerSASL[name]
		if tc != nil {
			c.tls, c.tlsConn = lt, tc
		}
		if !b.track(c) {
			nc.Close()
			return
		}
		go c.serve()
	}
}
