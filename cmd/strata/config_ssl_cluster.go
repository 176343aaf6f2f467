package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-io/strata/broker"
)

// TLS between the nodes of a cluster. A node dials other nodes'
// inter-broker listener (follower fetchers, transaction markers) and
// controller listener (registration, heartbeats, forwarded requests, raft,
// voter discovery) with the client side of that listener's ssl.* keys, as
// Kafka's inter-broker and KRaft clients use the listener's config: its
// key store is the node's certificate, its trust store verifies the peer,
// and ssl.endpoint.identification.algorithm (https, Kafka's default, or
// empty) says whether the peer's host name is checked too. A broker-only
// node's inter-broker listener carries raft's connections from the
// active controller, which dials it as it dials controllers: the two
// listeners must have the same security protocol.

// checkClusterSecurity refuses, on a broker-only node, an inter-broker
// listener whose security protocol is not the controller listener's. A
// single node dials neither.
func checkClusterSecurity(p *propReader, s *settings, interBroker string, protocols map[string]string, controllerNames []string) bool {
	if !s.clustered() {
		return true
	}
	if s.BrokerOnly && len(controllerNames) > 0 && protocols[interBroker] != protocols[controllerNames[0]] {
		p.fail("listener.security.protocol.map", p.props["listener.security.protocol.map"], fmt.Sprintf(
			"on a broker-only node the inter-broker listener %s (%s) carries the metadata quorum's connections from the active controller, "+
				"which dials it as its controller listener %s (%s): the two must have the same security protocol",
			interBroker, protocols[interBroker], controllerNames[0], protocols[controllerNames[0]]))
		return false
	}
	return true
}

// loadSSLCluster sets, on a node of a cluster, the client sides of its
// inter-broker and controller listeners when they are SSL or SASL_SSL,
// and the controller listener's server side on a node that serves it
// (with ssl.client.auth only from the listener's prefix on SASL_SSL, as
// on a client listener).
func loadSSLCluster(p *propReader, s *settings, interBroker string, protocols map[string]string, controllerNames []string) {
	if p.err != nil || !s.clustered() {
		return
	}
	if lt := s.ListenerTLS[interBroker]; lt != nil {
		s.InterBrokerTLS = lt.Client
	}
	if len(controllerNames) == 0 || protocols[controllerNames[0]] != "SSL" && protocols[controllerNames[0]] != "SASL_SSL" {
		return
	}
	name := controllerNames[0]
	r := sslReader{p: p, prefix: "listener.name." + strings.ToLower(name) + "."}
	lt := sslListenerSides(r, name, !s.BrokerOnly)
	if p.err != nil {
		return
	}
	if _, ok := p.get(r.prefix + "ssl.client.auth"); !ok && protocols[name] == "SASL_SSL" && lt.Config != nil {
		lt.Config.ClientAuth = tls.NoClientCert
	}
	s.ControllerTLS = lt.Client
	if !s.BrokerOnly {
		if s.ListenerTLS == nil {
			s.ListenerTLS = map[string]*broker.ListenerTLS{}
		}
		s.ListenerTLS[name] = lt
	}
}

// sslClient is the client side of a listener whose server side is server.
func sslClient(r sslReader, server *tls.Config) *tls.Config {
	cfg := &tls.Config{Certificates: server.Certificates, RootCAs: server.ClientCAs,
		MinVersion: server.MinVersion, MaxVersion: server.MaxVersion, CipherSuites: server.CipherSuites}
	alg, name, ok := r.get("ssl.endpoint.identification.algorithm")
	if !ok {
		alg = "https"
	}
	switch strings.ToLower(alg) {
	case "https":
	case "":
		// The chain alone: Go verifies the host name with it, so its own
		// check is off and the chain is verified here.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChain(cfg.RootCAs)
	default:
		r.fail(name, fmt.Sprintf("unsupported endpoint identification algorithm %s; strata has https (the peer's host name is checked) and empty (it is not)", alg))
		return nil
	}
	return cfg
}

// verifyChain verifies a server's certificate chain against roots (nil:
// the system's), whatever host names it has.
func verifyChain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}
