package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/strata-io/strata/broker"
)

// SASL between the nodes of a cluster (broker/peerlogin.go,
// metadata/quorum/sasl.go). An inter-broker listener mapped to
// SASL_PLAINTEXT or SASL_SSL is dialed with
// sasl.mechanism.inter.broker.protocol, a controller listener with
// sasl.mechanism.controller.protocol, both GSSAPI by default as in Kafka;
// the login is the username and password options of that listener's JAAS
// configuration of the mechanism, which Kafka's inter-broker and KRaft
// clients read (JaasContext.Type.SERVER). Kafka's check holds: the
// inter-broker mechanism must be enabled on the inter-broker listener.
// Strata also checks what would otherwise fail only once the nodes dial:
// a controller's own controller listener must enable the controller
// mechanism, and a broker-only node's inter-broker listener, which the
// active controller dials for raft as it dials controllers, must enable
// it too. PLAIN and SCRAM are served between nodes; GSSAPI is not served
// at all, and OAUTHBEARER's client side (a token endpoint) is not.

// peerMechanisms are the mechanisms a node logs in to other nodes with.
var peerMechanisms = []string{broker.MechanismPlain, broker.MechanismScramSHA256, broker.MechanismScramSHA512}

// isSASL says whether security protocol sp has SASL.
func isSASL(sp string) bool { return sp == "SASL_PLAINTEXT" || sp == "SASL_SSL" }

// loadSASLCluster sets, on a node of a cluster, the SASL logins to the
// inter-broker and controller listeners when they have SASL, and the
// controller listener's SASL on a node that serves it.
func loadSASLCluster(p *propReader, s *settings, interBroker string, protocols map[string]string, controllerNames []string, controllers []listenerEndpoint) {
	if p.err != nil || !s.clustered() {
		return
	}
	if isSASL(protocols[interBroker]) {
		key := "sasl.mechanism.inter.broker.protocol"
		m := peerMechanism(p, key)
		if p.err != nil {
			return
		}
		if ls := s.ListenerSASL[interBroker]; ls == nil || !slices.Contains(ls.Mechanisms, m) {
			p.fail(key, p.props[key], "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication")
			return
		}
		s.InterBrokerSASL = peerLogin(p, interBroker, m)
	}
	if len(controllerNames) == 0 || !isSASL(protocols[controllerNames[0]]) {
		return
	}
	name := controllerNames[0]
	key := "sasl.mechanism.controller.protocol"
	m := peerMechanism(p, key)
	if p.err != nil {
		return
	}
	if s.BrokerOnly {
		if ls := s.ListenerSASL[interBroker]; ls == nil || !slices.Contains(ls.Mechanisms, m) {
			p.fail(key, p.props[key], fmt.Sprintf("on a broker-only node the inter-broker listener %s carries the metadata quorum's connections from the active controller, "+
				"which logs in with sasl.mechanism.controller.protocol: it must be included in that listener's sasl.enabled.mechanisms", interBroker))
			return
		}
	} else if len(controllers) > 0 {
		e := controllers[0]
		delay := broker.DefaultFailedAuthenticationDelay
		p.millis(&delay, "connection.failed.authentication.delay.ms", 0, math.MaxInt32)
		ls := saslListener(sslReader{p: p, prefix: "listener.name." + strings.ToLower(e.name) + "."}, e, delay)
		if p.err != nil {
			return
		}
		if !slices.Contains(ls.Mechanisms, m) {
			p.fail(key, p.props[key], fmt.Sprintf("the controller listener %s must include sasl.mechanism.controller.protocol in its sasl.enabled.mechanisms: "+
				"the other controllers log in to it with that mechanism", e.name))
			return
		}
		if s.ListenerSASL == nil {
			s.ListenerSASL = map[string]*broker.ListenerSASL{}
		}
		s.ListenerSASL[e.name] = ls
	}
	s.ControllerSASL = peerLogin(p, name, m)
}

// peerMechanism reads key, a mechanism this node logs in with.
func peerMechanism(p *propReader, key string) string {
	m, ok := p.get(key)
	if !ok {
		m = "GSSAPI" // Kafka's default
	}
	m = strings.TrimSpace(m)
	switch {
	case slices.Contains(peerMechanisms, m):
	case m == "GSSAPI":
		feature := "the SASL mechanism GSSAPI (Kerberos) between nodes"
		if !ok {
			feature += " (Kafka's default when " + key + " is unset)"
		}
		p.err = &unsupportedError{Key: key, Value: p.props[key], Feature: feature + "; strata logs in to other nodes with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"}
	case m == broker.MechanismOAuthBearer:
		p.err = &unsupportedError{Key: key, Value: p.props[key], Feature: "OAUTHBEARER between nodes (a token endpoint's client); strata logs in to other nodes with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"}
	default:
		p.fail(key, p.props[key], fmt.Sprintf("unknown SASL mechanism %s; Kafka's are GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER", m))
	}
	return m
}

// peerLogin is the login of mechanism m to listener: the username and
// password options of its JAAS configuration of m.
func peerLogin(p *propReader, listener, m string) *broker.PeerLogin {
	r := sslReader{p: p, prefix: "listener.name." + strings.ToLower(listener) + "."}
	entry, ok := mechanismJAAS(r, listener, m, "", "")
	if !ok {
		return nil
	}
	user, pass := entry.options["username"], entry.options["password"]
	if user == "" {
		p.fail(r.prefix+strings.ToLower(m)+".sasl.jaas.config", "[hidden]", fmt.Sprintf(
			"no username option: this node logs in to the other nodes' %s listener with the username and password of its JAAS configuration of %s", listener, m))
		return nil
	}
	return &broker.PeerLogin{Mechanism: m, Username: user, Password: pass}
}
