package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-io/strata/metadata/quorum"
)

// This file reads the listener and KRaft keys of a Kafka server.properties with
// the checks of Kafka's KafkaConfig.validateValues for each process.roles, so a
// stock KRaft file starts Strata as that node. A combined node
// (broker,controller) that is the only voter is the single node: the
// controller listener is checked but not bound. With several voters it is a
// node of a cluster, serving its controller listener (cluster.go). A
// controller-only node serves only its controller listener; a broker-only node
// serves its client listeners and is an observer of the voters' quorum. Every
// client listener is served, each answering with its own endpoints
// (broker/listeners.go). A node whose quorum is named only by
// controller.quorum.bootstrap.servers learns its voters from them. What
// Strata cannot do (join an external quorum as a new voter, GSSAPI or
// OAUTHBEARER between cluster nodes) is refused rather than ignored.

// listenerEndpoint is one entry of listeners or advertised.listeners.
type listenerEndpoint struct {
	name     string // upper-case, as Kafka's ListenerName.normalised
	host     string
	port     int
	protocol string // security protocol from the effective listener.security.protocol.map
}

func (e listenerEndpoint) String() string {
	return e.name + "://" + net.JoinHostPort(e.host, strconv.Itoa(e.port))
}

// securityProtocols are Kafka's SecurityProtocol names.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// kraftKeys only mean something on a KRaft node.
var kraftKeys = []string{"controller.listener.names", "controller.quorum.voters", "controller.quorum.bootstrap.servers"}

// csvList splits a comma-separated value into its trimmed, non-empty items, as
// Kafka's Csv.parseCsvList and LIST-typed keys do.
func csvList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// loadListenerSettings sets s.Listeners, s.AdvertisedListeners and
// s.ControllerListener from listeners, advertised.listeners,
// listener.security.protocol.map, inter.broker.listener.name,
// security.inter.broker.protocol, process.roles, controller.listener.names,
// controller.quorum.voters and controller.quorum.bootstrap.servers.
func loadListenerSettings(p *propReader, s *settings) {
	if p.err != nil {
		return
	}
	kraft, brokerRole, controllerRole := loadProcessRoles(p)
	if p.err != nil {
		return
	}
	s.BrokerOnly, s.ControllerOnly = kraft && !controllerRole, kraft && !brokerRole
	if kraft && strings.TrimSpace(p.props["node.id"]) == "" && strings.TrimSpace(p.props["broker.id"]) == "" {
		p.fail("node.id", p.props["node.id"], "missing; it is required when process.roles is set")
		return
	}
	if !kraft {
		for _, k := range kraftKeys {
			if v, ok := p.get(k); ok && v != "" {
				p.fail(k, p.props[k], "needs process.roles=broker,controller")
				return
			}
		}
	}
	if v, ok := p.get("control.plane.listener.name"); ok && v != "" {
		p.fail("control.plane.listener.name", p.props["control.plane.listener.name"], "is not supported in KRaft mode")
		return
	}
	controllerNames := []string{}
	for _, n := range csvList(p.props["controller.listener.names"]) {
		controllerNames = append(controllerNames, strings.ToUpper(n))
	}
	isController := func(e listenerEndpoint) bool { return slices.Contains(controllerNames, e.name) }

	protocols, ok := protocolMap(p, kraft, controllerNames)
	if !ok {
		return
	}
	listenersValue := def("listeners").Default
	if v, ok := p.get("listeners"); ok {
		listenersValue = v
	}
	listeners, err := parseEndpoints(listenersValue, protocols, false)
	if err != nil {
		p.fail("listeners", p.props["listeners"], err.Error())
		return
	}
	advertised := listeners
	if v, ok := p.get("advertised.listeners"); ok {
		if advertised, err = parseEndpoints(v, protocols, true); err != nil {
			p.fail("advertised.listeners", p.props["advertised.listeners"], err.Error())
			return
		}
	}
	var clients, controllers, advertisedClients []listenerEndpoint
	for _, e := range listeners {
		if isController(e) {
			controllers = append(controllers, e)
		} else {
			clients = append(clients, e)
		}
	}
	for _, e := range advertised {
		if !isController(e) {
			advertisedClients = append(advertisedClients, e)
		}
	}
	switch {
	case s.BrokerOnly:
		if !checkBrokerOnly(p, s, controllerNames, protocols, controllers) {
			return
		}
	case s.ControllerOnly:
		if len(clients) > 0 {
			p.fail("listeners", p.props["listeners"],
				"the listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller")
			return
		}
		if !checkQuorum(p, s, s.NodeID, controllerNames, listeners, advertised, controllers) ||
			!checkClusterSecurity(p, s, "", protocols, controllerNames) {
			return
		}
		loadSSLCluster(p, s, "", protocols, controllerNames)
		loadSASLCluster(p, s, "", protocols, controllerNames, controllers)
		s.ControllerListener = controllers[0].String()
		s.Listeners, s.AdvertisedListeners = "", ""
		return
	case kraft:
		if !checkQuorum(p, s, s.NodeID, controllerNames, listeners, advertised, controllers) {
			return
		}
	}
	interBroker, ok := checkBrokerListeners(p, protocols, listeners, advertisedClients)
	if !ok || !checkClusterSecurity(p, s, interBroker, protocols, controllerNames) {
		return
	}
	loadSSLListeners(p, s, clients)
	loadSASLListeners(p, s, clients)
	loadSSLCluster(p, s, interBroker, protocols, controllerNames)
	var served []listenerEndpoint // the controller listener, when this node serves it
	if kraft && !s.BrokerOnly {
		served = controllers
	}
	loadSASLCluster(p, s, interBroker, protocols, controllerNames, served)
	// checkBrokerListeners made sure advertisedClients is non-empty and a
	// subset of the client listeners: a listener left out of it is served
	// but registers no endpoint, as in Kafka.
	s.Listeners = joinEndpoints(clients)
	s.AdvertisedListeners = joinEndpoints(advertisedClients)
	if kraft && !s.BrokerOnly {
		s.ControllerListener = controllers[0].String()
	}
}

// joinEndpoints is es in Kafka's NAME://host:port,... form.
func joinEndpoints(es []listenerEndpoint) string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.String()
	}
	return strings.Join(out, ",")
}

// loadProcessRoles reads process.roles: absent or empty is Strata's own
// single-node mode (kraft false); otherwise broker, controller or both.
func loadProcessRoles(p *propReader) (kraft, broker, controller bool) {
	v, ok := p.get("process.roles")
	if !ok || v == "" {
		return false, false, false
	}
	raw := p.props["process.roles"]
	roles := csvList(v)
	for i, r := range roles {
		if r != "broker" && r != "controller" {
			p.fail("process.roles", raw, fmt.Sprintf("unknown process role '%s' (only 'broker' and 'controller' are allowed roles)", r))
			return false, false, false
		}
		if slices.Contains(roles[:i], r) {
			p.fail("process.roles", raw, "duplicate role names")
			return false, false, false
		}
	}
	return true, slices.Contains(roles, "broker"), slices.Contains(roles, "controller")
}

// checkBrokerOnly holds a broker-only node's controller keys to Kafka's
// rules: a controller listener name that no listener of its own has, with a
// security protocol; this node not a voter. Strata's broker-only node needs
// the voters of controller.quorum.voters, or learns them from the
// controllers of controller.quorum.bootstrap.servers (cluster.go).
func checkBrokerOnly(p *propReader, s *settings, controllerNames []string, protocols map[string]string, controllers []listenerEndpoint) bool {
	if len(controllerNames) == 0 {
		p.fail("controller.listener.names", p.props["controller.listener.names"],
			"must contain at least one value when running KRaft with just the broker role")
		return false
	}
	if len(controllers) > 0 {
		p.fail("controller.listener.names", p.props["controller.listener.names"],
			"must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role")
		return false
	}
	for _, n := range controllerNames {
		if _, ok := protocols[n]; !ok {
			p.fail("controller.listener.names", p.props["controller.listener.names"],
				fmt.Sprintf("controller listener with name %s not found in listener.security.protocol.map", n))
			return false
		}
	}
	raw := p.props["controller.quorum.voters"]
	v, _ := p.get("controller.quorum.voters")
	if v == "" {
		if b, _ := p.get("controller.quorum.bootstrap.servers"); b != "" {
			entries, ok := bootstrapServers(p)
			s.Bootstrap = entries
			return ok
		}
		p.fail("controller.quorum.voters", raw,
			"with process.roles set, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers "+
				"or controller.quorum.voters must contain a parseable set of controllers")
		return false
	}
	voters, err := quorum.ParseVoters(strings.Join(csvList(v), ","))
	if err != nil {
		p.fail("controller.quorum.voters", raw, err.Error())
		return false
	}
	if slices.ContainsFunc(voters, func(v quorum.Voter) bool { return v.ID == s.NodeID }) {
		p.fail("controller.quorum.voters", raw,
			fmt.Sprintf("if process.roles contains just the 'broker' role, the node id %d must not be included in the set of voters", s.NodeID))
		return false
	}
	s.Voters = voters
	return true
}

// protocolMap is the effective listener.security.protocol.map. Absent, it is
// Kafka's default (each security protocol maps its own name), and on a KRaft node
// the controller listener names are added as PLAINTEXT unless SSL or SASL is in
// sight, as in KafkaConfig.effectiveListenerSecurityProtocolMap.
func protocolMap(p *propReader, kraft bool, controllerNames []string) (map[string]string, bool) {
	m := map[string]string{}
	v, explicit := p.get("listener.security.protocol.map")
	if !explicit {
		for _, sp := range securityProtocols {
			m[sp] = sp
		}
		if kraft {
			isSecure := func(name string) bool { return name != "PLAINTEXT" && slices.Contains(securityProtocols, name) }
			secure := slices.ContainsFunc(controllerNames, isSecure)
			for _, l := range csvList(p.props["listeners"]) {
				name, _, _ := strings.Cut(l, "://")
				secure = secure || isSecure(strings.ToUpper(strings.TrimSpace(name)))
			}
			if !secure {
				for _, n := range controllerNames {
					m[n] = "PLAINTEXT"
				}
			}
		}
		return m, true
	}
	raw := p.props["listener.security.protocol.map"]
	for _, entry := range csvList(v) {
		name, protocol, ok := strings.Cut(entry, ":")
		name, protocol = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(protocol))
		if !ok || name == "" {
			p.fail("listener.security.protocol.map", raw, fmt.Sprintf("entry %q: want LISTENER_NAME:SECURITY_PROTOCOL", entry))
			return nil, false
		}
		if !slices.Contains(securityProtocols, protocol) {
			p.fail("listener.security.protocol.map", raw, fmt.Sprintf("invalid security protocol `%s`; one of %s", protocol, strings.Join(securityProtocols, ", ")))
			return nil, false
		}
		m[name] = protocol
	}
	return m, true
}

// parseEndpoints reads Kafka's NAME://host:port[,...] with each name's security
// protocol. Names are unique; so are the ports of listeners (checkDistinctPorts),
// while advertised listeners may share a port and must not name a non-routable host.
func parseEndpoints(v string, protocols map[string]string, advertised bool) ([]listenerEndpoint, error) {
	var out []listenerEndpoint
	for _, l := range csvList(v) {
		name, hostport, ok := strings.Cut(l, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener %q: want NAME://host:port", l)
		}
		name = strings.ToUpper(name)
		host, portStr, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, fmt.Errorf("listener %q: want NAME://host:port", l)
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("listener %q: port must be a number from 0 to 65535", l)
		}
		if advertised && (host == "0.0.0.0" || host == "::") {
			return nil, fmt.Errorf("listener %q: cannot advertise the non-routable address %s", l, host)
		}
		protocol, ok := protocols[name]
		if !ok {
			return nil, fmt.Errorf("no security protocol defined for listener %s in listener.security.protocol.map", name)
		}
		for _, e := range out {
			if e.name == name {
				return nil, fmt.Errorf("listener name %s appears more than once", name)
			}
		}
		out = append(out, listenerEndpoint{name: name, host: host, port: int(port), protocol: protocol})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no listener given")
	}
	if !advertised {
		if err := checkDistinctPorts(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkDistinctPorts holds listeners to Kafka's CoreUtils.listenerListToEndPoints:
// each has a port of its own (0 aside), except that two may share one when
// one host is an IPv4 address and the other an IPv6 address.
func checkDistinctPorts(listeners []listenerEndpoint) error {
	byPort := map[int][]listenerEndpoint{}
	for _, e := range listeners {
		if e.port != 0 {
			byPort[e.port] = append(byPort[e.port], e)
		}
	}
	for _, e := range listeners {
		same := byPort[e.port]
		if len(same) < 2 {
			continue
		}
		if len(same) == 2 && isIPv4(same[0].host) != isIPv4(same[1].host) && isIP(same[0].host) && isIP(same[1].host) {
			continue
		}
		return fmt.Errorf("listeners %s and %s have the same port %d; each listener must have a different port "+
			"unless exactly one has an IPv4 address and the other an IPv6 address", same[0].name, same[1].name, e.port)
	}
	return nil
}

func isIP(host string) bool { return net.ParseIP(host) != nil }

func isIPv4(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() != nil && !strings.Contains(host, ":")
}

// checkQuorum holds a combined node's controller keys to Kafka's rules, and to
// Strata's: the voters are listed in controller.quorum.voters (a Strata
// node is never formatted, so no dynamic quorum), and with more than one
// this node is one of a cluster (s.Voters).
func checkQuorum(p *propReader, s *settings, nodeID int32, controllerNames []string, listeners, advertised, controllers []listenerEndpoint) bool {
	if len(controllerNames) == 0 || len(controllers) == 0 {
		p.fail("controller.listener.names", p.props["controller.listener.names"],
			"must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role")
		return false
	}
	for _, n := range controllerNames {
		if !slices.ContainsFunc(listeners, func(e listenerEndpoint) bool { return e.name == n }) {
			p.fail("controller.listener.names", p.props["controller.listener.names"],
				fmt.Sprintf("%s does not appear in the 'listeners' configuration; it must when running the KRaft controller role", n))
			return false
		}
	}
	// The controller's own address: its advertised entry, else its listener.
	self := controllers[0]
	for _, e := range advertised {
		if e.name == self.name {
			self = e
		}
	}
	voters, hasVoters := p.get("controller.quorum.voters")
	bootstrap, hasBootstrap := p.get("controller.quorum.bootstrap.servers")
	if voters == "" && bootstrap == "" {
		p.fail("controller.quorum.voters", p.props["controller.quorum.voters"],
			"with process.roles set, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers "+
				"or controller.quorum.voters must contain a parseable set of controllers")
		return false
	}
	if hasVoters && voters != "" {
		entries := csvList(voters)
		var ids []int32
		for _, entry := range entries {
			idText, addr, ok := strings.Cut(entry, "@")
			id, err := strconv.ParseInt(strings.TrimSpace(idText), 10, 32)
			if !ok || err != nil || strings.Contains(addr, "@") {
				p.fail("controller.quorum.voters", p.props["controller.quorum.voters"], fmt.Sprintf("entry %q: want {id}@{host}:{port}", entry))
				return false
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				p.fail("controller.quorum.voters", p.props["controller.quorum.voters"], fmt.Sprintf("entry %q: want {id}@{host}:{port}", entry))
				return false
			}
			ids = append(ids, int32(id))
		}
		if !slices.Contains(ids, nodeID) {
			p.fail("controller.quorum.voters", p.props["controller.quorum.voters"],
				fmt.Sprintf("if process.roles contains the 'controller' role, the node id %d must be included in the set of voters", nodeID))
			return false
		}
		parsed, err := quorum.ParseVoters(strings.Join(entries, ","))
		if err != nil {
			p.fail("controller.quorum.voters", p.props["controller.quorum.voters"], err.Error())
			return false
		}
		s.Voters = parsed
	}
	if hasBootstrap && bootstrap != "" && len(s.Voters) > 1 {
		// The voters are known: the bootstrap servers are how Kafka's
		// brokers find them, and Strata's nodes, voters all, know them.
		for _, e := range csvList(bootstrap) {
			if _, _, err := net.SplitHostPort(e); err != nil {
				p.fail("controller.quorum.bootstrap.servers", p.props["controller.quorum.bootstrap.servers"], fmt.Sprintf("entry %q: want {host}:{port}", e))
				return false
			}
		}
	} else if hasBootstrap && bootstrap != "" {
		entries, ok := bootstrapServers(p)
		if !ok {
			return false
		}
		if len(entries) > 1 {
			// The voters are these controllers, their ids learned from
			// them (cluster.go, quorum.DiscoverVoters).
			s.Bootstrap = entries
			return true
		}
		_, port, err := net.SplitHostPort(entries[0])
		if err != nil {
			p.fail("controller.quorum.bootstrap.servers", p.props["controller.quorum.bootstrap.servers"], "want {host}:{port}")
			return false
		}
		if self.port != 0 && port != strconv.Itoa(self.port) {
			p.fail("controller.quorum.bootstrap.servers", p.props["controller.quorum.bootstrap.servers"],
				fmt.Sprintf("names a controller other than this node's %s listener (port %d); strata cannot join an external quorum", self.name, self.port))
			return false
		}
		s.Voters = []quorum.Voter{{ID: nodeID, Addr: entries[0]}}
	}
	return true
}

// bootstrapServers reads controller.quorum.bootstrap.servers, each entry
// {host}:{port}.
func bootstrapServers(p *propReader) ([]string, bool) {
	v, _ := p.get("controller.quorum.bootstrap.servers")
	entries := csvList(v)
	for _, e := range entries {
		if _, _, err := net.SplitHostPort(e); err != nil {
			p.fail("controller.quorum.bootstrap.servers", p.props["controller.quorum.bootstrap.servers"], fmt.Sprintf("entry %q: want {host}:{port}", e))
			return nil, false
		}
	}
	return entries, true
}

// checkBrokerListeners applies Kafka's checks for every node with the broker
// role: an advertised broker listener exists, advertised names are listener
// names, and the inter-broker listener is one of them. It returns the
// inter-broker listener's name.
func checkBrokerListeners(p *propReader, protocols map[string]string, listeners, advertisedClients []listenerEndpoint) (string, bool) {
	if len(advertisedClients) == 0 {
		p.fail("listeners", p.props["listeners"],
			"there must be at least one broker listener; perhaps all listeners appear in controller.listener.names?")
		return "", false
	}
	for _, a := range advertisedClients {
		if !slices.ContainsFunc(listeners, func(e listenerEndpoint) bool { return e.name == a.name }) {
			p.fail("advertised.listeners", p.props["advertised.listeners"],
				fmt.Sprintf("listener name %s is not defined in listeners; advertised listener names must be equal to or a subset of those", a.name))
			return "", false
		}
	}
	name, hasName := p.get("inter.broker.listener.name")
	if _, hasProtocol := p.props["security.inter.broker.protocol"]; hasName && hasProtocol {
		p.fail("inter.broker.listener.name", p.props["inter.broker.listener.name"], "only one of inter.broker.listener.name and security.inter.broker.protocol should be set")
		return "", false
	}
	key := "inter.broker.listener.name"
	if hasName {
		name = strings.ToUpper(name)
		if _, ok := protocols[name]; !ok {
			p.fail(key, p.props[key], fmt.Sprintf("listener %s not found in listener.security.protocol.map", name))
			return "", false
		}
	} else if v, ok := p.get("security.inter.broker.protocol"); ok {
		key, name = "security.inter.broker.protocol", strings.ToUpper(v)
		if !slices.Contains(securityProtocols, name) {
			p.fail(key, p.props[key], "invalid security protocol; one of "+strings.Join(securityProtocols, ", "))
			return "", false
		}
	} else {
		name = "PLAINTEXT" // security.inter.broker.protocol's default names the listener
	}
	if !slices.ContainsFunc(advertisedClients, func(e listenerEndpoint) bool { return e.name == name }) {
		names := make([]string, len(advertisedClients))
		for i, e := range advertisedClients {
			names[i] = e.name
		}
		p.fail(key, p.props[key], fmt.Sprintf("inter-broker listener %s must be a listener name defined in advertised.listeners; "+
			"the valid options based on the configured listeners are %s", name, strings.Join(names, ",")))
		return "", false
	}
	return name, true
}
