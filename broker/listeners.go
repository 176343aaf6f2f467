package broker

// The client listeners. listeners names one or more NAME://host:port, each
// bound and served as PLAINTEXT, as SSL when Config.ListenerTLS has its
// name (tls.go), with SASL first when Config.ListenerSASL has it (sasl.go),
// and advertised.listeners the
// endpoints this node registers, one per listener name. A connection answers with the endpoints of the
// listener it arrived on, as Kafka's KafkaApis answers with those of
// request.context.listenerName: its services carry that listener's name
// (services.endpoint).

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/strata-io/strata/metadata"
)

// clientListener is one bound client listener.
type clientListener struct {
	name string // upper-case, as cmd/strata normalises it
	ln   net.Listener
	svc  *services    // the broker's services with this listener's name (New)
	tls  *ListenerTLS // an SSL listener's TLS; nil on a PLAINTEXT one
}

// listenerAddr is one NAME://host:port of listeners or advertised.listeners.
type listenerAddr struct {
	name string
	host string
	port int
}

// parseListeners reads a comma-separated list of Kafka's NAME://host:port.
// Each is served as PLAINTEXT whatever its name: the caller maps names to
// security protocols.
func parseListeners(s string) ([]listenerAddr, error) {
	var out []listenerAddr
	for _, l := range strings.Split(s, ",") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		name, addr, ok := strings.Cut(l, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want NAME://host:port", l)
		}
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", l, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%q: bad port", l)
		}
		out = append(out, listenerAddr{name: strings.ToUpper(name), host: host, port: port})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q: no listener", s)
	}
	return out, nil
}

// bindListeners binds every listener, or none: on an error those already
// bound are closed.
// clientListeners are cfg's client listeners, bound (BoundListeners, or
// bound here), and its advertised listeners; none on a controller-only
// node.
func clientListeners(cfg *Config) ([]*clientListener, []listenerAddr, error) {
	if cfg.ControllerOnly {
		return nil, nil, nil
	}
	addrs, err := parseListeners(cfg.Listeners)
	if err != nil {
		return nil, nil, fmt.Errorf("listeners: %w", err)
	}
	adv := cfg.AdvertisedListeners
	if adv == "" {
		adv = cfg.Listeners
	}
	advAddrs, err := parseListeners(adv)
	if err != nil {
		return nil, nil, fmt.Errorf("advertised.listeners: %w", err)
	}
	if cfg.BoundListeners != nil {
		if len(cfg.BoundListeners) != len(addrs) {
			return nil, nil, fmt.Errorf("listeners: %d bound for %d listeners", len(cfg.BoundListeners), len(addrs))
		}
		out := make([]*clientListener, len(addrs))
		for i, a := range addrs {
			out[i] = &clientListener{name: a.name, ln: cfg.BoundListeners[i], tls: cfg.ListenerTLS[a.name]}
		}
		return out, advAddrs, nil
	}
	// Bind first: a taken port fails start-up before the log dir is touched.
	listeners, err := bindListeners(addrs, cfg.ListenerTLS)
	return listeners, advAddrs, err
}

func bindListeners(addrs []listenerAddr, tlsByName map[string]*ListenerTLS) ([]*clientListener, error) {
	var out []*clientListener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", net.JoinHostPort(a.host, strconv.Itoa(a.port)))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("listen on %s: %w", a.name, err), closeListeners(out))
		}
		out = append(out, &clientListener{name: a.name, ln: ln, tls: tlsByName[a.name]})
	}
	return out, nil
}

func closeListeners(ls []*clientListener) error {
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.ln.Close())
	}
	return errors.Join(errs...)
}

// advertisedEndpoints are the endpoints this node registers, one per
// advertised listener: port 0 is the bound port of the listener of that
// name, and an unspecified host its bound address, or loopback when that
// is unspecified too.
func advertisedEndpoints(adv []listenerAddr, bound []*clientListener) []metadata.Endpoint {
	var out []metadata.Endpoint
	for _, a := range adv {
		addr := bound[0].ln.Addr().(*net.TCPAddr)
		for _, l := range bound {
			if l.name == a.name {
				addr = l.ln.Addr().(*net.TCPAddr)
			}
		}
		host, port := a.host, a.port
		if port == 0 {
			port = addr.Port
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
			if !addr.IP.IsUnspecified() {
				host = addr.IP.String()
			}
		}
		out = append(out, metadata.Endpoint{Listener: a.name, Host: host, Port: int32(port)})
	}
	return out
}

// ListenerAddr is the address listener name is bound to; nil when this
// node has no such listener.
func (b *Broker) ListenerAddr(name string) net.Addr {
	for _, l := range b.listeners {
		if l.name == strings.ToUpper(name) {
			return l.ln.Addr()
		}
	}
	return nil
}
