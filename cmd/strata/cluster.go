package main

// A node of a cluster (settings.clustered): before the broker starts, the
// metadata quorum is opened in <log dir>/__strata_metadata. A node with
// the controller role binds its controller listener and is a voter on it;
// a controller-only node serves nothing else. A broker-only node binds its
// client listeners here, so that they carry raft's connections too, and is
// an observer of the quorum: the active controller makes it one when it
// registers. There is no format step: a voter whose metadata dir is empty
// bootstraps the quorum with the voters of its server.properties, as every
// node of a Kafka cluster is formatted with the same voters; an observer's
// stays empty until the leader sends it the log. A node whose quorum is
// named only by controller.quorum.bootstrap.servers first learns the
// voters from those controllers (quorum.DiscoverVoters), waiting until it
// can, and keeps them in its metadata dir. A controller that is not one of
// them is an observer until AddRaftVoter makes it a voter; the voters it
// learned, which name the cluster's id, stay those in its dir.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/quorum"
)

// startQuorum opens the quorum on this node's listeners and points cfg
// at them; stop closes them after the broker stopped.
func startQuorum(s settings, cfg *broker.Config, log *zap.Logger) (stop func() error, err error) {
	logger := log.With(zap.String("component", "metadata quorum"))
	dir := filepath.Join(s.LogDir, quorum.DirName)
	var cl *quorum.ControllerListener
	var opened atomic.Pointer[quorum.Store]
	image := func() *metadata.Image {
		if st := opened.Load(); st != nil {
			return st.Image()
		}
		return nil
	}
	if s.BrokerOnly {
		cl, err = brokerListeners(s, image, logger)
	} else if cl, err = controllerListener(s, image, logger); err == nil {
		cl.ServeIdentity(s.NodeID, func() string {
			if st := opened.Load(); st != nil {
				if voters, err := st.CurrentVoters(); err == nil {
					return quorum.FormatVoters(voters)
				}
			}
			return ""
		})
	}
	if err != nil {
		return nil, err
	}
	if s.Voters == nil {
		if err := learnVoters(&s, dir, cl, log); err != nil {
			cl.Close()
			return nil, err
		}
	}
	// A controller not among the voters it learned waits to be added as one
	// (AddRaftVoter); raft's own configuration decides once it is.
	observer := !slices.ContainsFunc(s.Voters, func(v quorum.Voter) bool { return v.ID == s.NodeID })
	qcfg := quorum.Config{NodeID: s.NodeID, Dir: dir, Voters: s.Voters, Logger: logger, Observer: observer,
		Transport: cl.Transport(s.Quorum.Request, logger), HeartbeatTimeout: s.Quorum.Fetch, ElectionTimeout: max(s.Quorum.Election, s.Quorum.Fetch)}
	store, err := quorum.Open(qcfg)
	if err != nil {
		cl.Close()
		return nil, err
	}
	opened.Store(store)
	cfg.Metadata, cfg.Quorum, cfg.Cluster = store, store, s.Cluster
	switch {
	case s.BrokerOnly:
		cfg.BoundListeners = cl.KafkaListeners()
		log.Info("broker-only node of a cluster: an observer of the metadata quorum on the client listeners",
			zap.String("controller.quorum.voters", s.Cluster.Voters), zap.String("cluster.id", s.Cluster.ClusterID))
	default:
		cl.NotifyRaftConnClosed(store.RaftConnClosed)
		cfg.ControllerListener, cfg.ControllerOnly = cl.Kafka(), s.ControllerOnly
		log.Info("node of a cluster: serving the controller listener", zap.String("controller.listener", s.ControllerListener),
			zap.Bool("controller_only", s.ControllerOnly),
			zap.String("controller.quorum.voters", s.Cluster.Voters), zap.String("cluster.id", s.Cluster.ClusterID))
	}
	return func() error { return errors.Join(store.Close(), cl.Close()) }, nil
}

// learnVoters sets s's voters from its metadata dir, or else from the
// controllers of controller.quorum.bootstrap.servers, asking them every
// discoverEvery until they tell them, and keeps them in the dir; a
// controller names itself to raft by its own entry.
func learnVoters(s *settings, dir string, cl *quorum.ControllerListener, log *zap.Logger) error {
	voters, ok, err := quorum.LoadVoters(dir)
	if err != nil {
		return err
	}
	for logged := false; !ok; {
		var waiting []string
		if voters, waiting, err = quorum.DiscoverVoters(s.Bootstrap, dialSecurity(*s), discoverTimeout); err != nil {
			return fmt.Errorf("controller.quorum.bootstrap.servers: %w", err)
		}
		if ok = len(waiting) == 0; !ok {
			if !logged {
				log.Info("waiting for the controllers of controller.quorum.bootstrap.servers to answer, to learn the voters",
					zap.Strings("waiting", waiting))
				logged = true
			}
			time.Sleep(discoverEvery)
		}
	}
	self := slices.IndexFunc(voters, func(v quorum.Voter) bool { return v.ID == s.NodeID })
	switch {
	case s.BrokerOnly && self >= 0:
		return fmt.Errorf("controller.quorum.bootstrap.servers: broker-only node %d is one of the voters %s", s.NodeID, quorum.FormatVoters(voters))
	case !s.BrokerOnly && self < 0:
		log.Info("this controller is not one of the voters: an observer of the quorum until kafka-metadata-quorum add-controller makes it one",
			zap.Int32("node.id", s.NodeID), zap.String("voters", quorum.FormatVoters(voters)))
	case !s.BrokerOnly:
		if err := cl.SetSelf(voters[self].Addr); err != nil {
			return err
		}
	}
	if err := quorum.SaveVoters(dir, voters); err != nil {
		return err
	}
	s.Voters = voters
	s.Cluster.Voters = quorum.FormatVoters(voters)
	s.Cluster.ClusterID = clusterID(voters)
	log.Info("the voters of the metadata quorum", zap.String("voters", s.Cluster.Voters), zap.String("cluster.id", s.Cluster.ClusterID))
	return nil
}

// discoverTimeout bounds one question to a bootstrap server;
// discoverEvery is the wait before asking those that did not answer again.
const (
	discoverTimeout = time.Second
	discoverEvery   = 200 * time.Millisecond
)

// controllerListener binds the controller listener of a node with the
// controller role. Raft names it by its voter entry; a node still to learn
// its voters starts with its listener's own address.
func controllerListener(s settings, image func() *metadata.Image, logger *zap.Logger) (*quorum.ControllerListener, error) {
	name, addr, _ := strings.Cut(s.ControllerListener, "://")
	self := addr
	for _, v := range s.Voters {
		if v.ID == s.NodeID {
			self = v.Addr
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controller listener %s: %w", s.ControllerListener, err)
	}
	sec := dialSecurity(s)
	if lt := s.ListenerTLS[name]; lt != nil {
		sec.TLS.Listeners = []*tls.Config{lt.Config}
	}
	sec.SASL.Listeners = []func(net.Conn) error{nodeAuthenticator(s, name, image)}
	cl, err := quorum.NewControllerListener(ln, self, sec, logger)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("controller listener %s: %w", s.ControllerListener, err)
	}
	return cl, nil
}

// brokerListeners binds a broker-only node's client listeners, in the
// order of s.Listeners. The address raft knows it by is its inter-broker
// listener's advertised endpoint, the one the active controller adds it
// at.
func brokerListeners(s settings, image func() *metadata.Image, logger *zap.Logger) (*quorum.ControllerListener, error) {
	var lns []net.Listener
	fail := func(err error) (*quorum.ControllerListener, error) {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, err
	}
	bound := map[string]net.Addr{}
	sec := dialSecurity(s)
	for _, l := range csvList(s.Listeners) {
		name, addr, _ := strings.Cut(l, "://")
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fail(fmt.Errorf("listen on %s: %w", name, err))
		}
		lns = append(lns, ln)
		var srv *tls.Config
		if lt := s.ListenerTLS[name]; lt != nil {
			srv = lt.Config
		}
		sec.TLS.Listeners = append(sec.TLS.Listeners, srv)
		sec.SASL.Listeners = append(sec.SASL.Listeners, nodeAuthenticator(s, name, image))
		bound[name] = ln.Addr()
	}
	self := ""
	for _, l := range csvList(s.AdvertisedListeners) {
		name, addr, _ := strings.Cut(l, "://")
		if self != "" && name != s.Cluster.InterBrokerListener {
			continue
		}
		host, port, _ := net.SplitHostPort(addr)
		if a, ok := bound[name].(*net.TCPAddr); ok && port == "0" {
			port = strconv.Itoa(a.Port)
		}
		if host == "" {
			host = "127.0.0.1"
		}
		self = net.JoinHostPort(host, port)
	}
	cl, err := quorum.NewBrokerListeners(lns, self, sec, logger)
	if err != nil {
		return fail(fmt.Errorf("listeners %s: %w", s.Listeners, err))
	}
	return cl, nil
}

// dialSecurity is how this node dials the other nodes' controller
// listeners (and, as the active controller, broker-only nodes'
// inter-broker listeners) for raft and AskIdentity: TLS, then SASL.
func dialSecurity(s settings) quorum.Security {
	sec := quorum.Security{TLS: quorum.TLS{Dial: s.ControllerTLS}}
	if s.ControllerSASL != nil {
		sec.SASL.Login = s.ControllerSASL.Login(s.NodeID)
	}
	return sec
}

// nodeAuthenticator authenticates the raft and identity connections of
// listener name, when it has SASL; nil when it has not.
func nodeAuthenticator(s settings, name string, image func() *metadata.Image) func(net.Conn) error {
	ls := s.ListenerSASL[name]
	if ls == nil {
		return nil
	}
	return broker.NodeAuthenticator(ls, s.Authorizer, image)
}
