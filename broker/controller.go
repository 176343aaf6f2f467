package broker

// The controller of a cluster node (Config.Quorum): while this node leads
// the metadata quorum it is the active controller, as Kafka's
// QuorumController, and answers the brokers' BrokerRegistration and
// BrokerHeartbeat (ClusterControlManager, BrokerHeartbeatManager) and
// AllocateProducerIds (ProducerIdControlManager) on the controller
// listener (controllerlistener.go). On another node these are
// NOT_CONTROLLER, and the brokers look for the leader. Each of them, and
// AlterPartition, needs CLUSTER_ACTION on the cluster first, as Kafka's
// ControllerApis asks: the nodes' own principal (a super user) has it.
//
// A registered broker has a session. The active controller fences a
// broker whose session passes broker.session.timeout.ms without a
// heartbeat, as Kafka does, and, where Strata differs, at once when the
// connection its heartbeats come on closes: a killed process's sockets are
// closed by its kernel, so the cluster learns of it within milliseconds.
// A read timeout or this node's own shutdown is not such a close. A node
// that becomes the active controller starts every broker's session afresh,
// as Kafka's new controller does; until a broker's first heartbeat reaches
// it there is no connection to watch, so, where Strata differs again, it
// asks every sessionProbeEvery whether that broker's listener is still
// there (quorum.ListenerGone) and fences it at once when it refuses: a
// broker that died with the previous controller, or just after, or the
// previous controller's own broker on a combined node, need not wait out
// its session.
//
// Fencing a broker is one change (fenceRecords): FenceBrokerRecord, and
// for each partition whose ISR holds it, a PartitionChangeRecord (the
// partition change builder's, partitionchange.go) taking it out of the ISR (except that the ISR never becomes empty: Kafka keeps its
// last member) and, for the ones it led, electing the first unfenced ISR
// member in replica order, or no leader (-1) if there is none, unless
// unclean.leader.election.enable lets any unfenced replica lead. The new
// leader starts a new leader epoch. Unfencing (UnfenceBrokerRecord, once
// the broker's metadata caught up with its registration) gives it the
// leaderless partitions whose ISR holds it. A broker that asks to shut
// down (WantShutDown) is fenced the same way, its leadership moving first
// in the same change, and told ShouldShutDown: Strata's controlled
// shutdown is one step where Kafka's waits for the leaders to move.

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/quorum"
)

// producerIDBlock is how many producer ids AllocateProducerIds hands out,
// Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
const producerIDBlock = 1000

// sessionProbeTimeout bounds probeSession's dial and its wait on a
// listener that accepted it; sessionProbeEvery is how often a session
// without a connection is probed.
const (
	sessionProbeTimeout = 250 * time.Millisecond
	sessionProbeEvery   = 200 * time.Millisecond
)

// controllerTick is how often the controller checks its leadership and
// the brokers' sessions.
const controllerTick = 20 * time.Millisecond

type controller struct {
	store     *quorum.Store
	cfg       ClusterConfig
	clusterID string
	logger    *zap.Logger

	mu       sync.Mutex
	active   bool
	sessions map[int32]*brokerSession

	stop chan struct{}
	done chan struct{}
}

// brokerSession is a registered broker's liveness as the active
// controller sees it.
type brokerSession struct {
	epoch    int64
	deadline time.Time
	conn     *conn // the connection its last request came on; nil before
	// probed is when probeSession last asked after it while conn was
	// nil; probing while it does.
	probed  time.Time
	probing bool
}

func newController(store *quorum.Store, cfg ClusterConfig, clusterID string, logger *zap.Logger) *controller {
	c := &controller{store: store, cfg: cfg, clusterID: clusterID, logger: logger.With(zap.String("role", "controller")),
		sessions: map[int32]*brokerSession{}, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *controller) close() {
	close(c.stop)
	<-c.done
}

func (c *controller) run() {
	defer close(c.done)
	t := time.NewTicker(controllerTick)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		expired, probes := c.tick(time.Now())
		c.finalizeFeatures()
		for _, s := range expired {
			c.fence(s.id, s.epoch, "broker.session.timeout.ms passed without a heartbeat")
		}
		for _, p := range probes {
			go c.probeSession(p)
		}
	}
}

type expired struct {
	id    int32
	epoch int64
}

// sessionProbe is a session without a connection to probe: the broker's
// registration and the address of its listener.
type sessionProbe struct {
	expired
	addr string
}

// tick follows the quorum's leadership and returns the sessions that
// expired and those without a connection that are due a probe.
func (c *controller) tick(now time.Time) (out []expired, probes []sessionProbe) {
	leader := c.store.IsLeader()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case leader && !c.active:
		c.active = true
		c.sessions = map[int32]*brokerSession{}
		for _, b := range c.store.Image().Cluster.Brokers() {
			if !b.Fenced {
				c.sessions[b.ID] = &brokerSession{epoch: b.Epoch, deadline: now.Add(c.cfg.SessionTimeout)}
			}
		}
		c.logger.Info("this node is the active controller", zap.Int("sessions", len(c.sessions)))
	case !leader && c.active:
		c.active = false
		c.sessions = map[int32]*brokerSession{}
		c.logger.Info("this node is no longer the active controller")
	}
	if c.active {
		// A broker registered in an entry this controller had not applied
		// when it took over, or one a fencing failed for, gets a session.
		for _, b := range c.store.Image().Cluster.Brokers() {
			if s := c.sessions[b.ID]; !b.Fenced && (s == nil || s.epoch != b.Epoch) {
				c.sessions[b.ID] = &brokerSession{epoch: b.Epoch, deadline: now.Add(c.cfg.SessionTimeout)}
			}
		}
	}
	img := c.store.Image()
	for id, s := range c.sessions {
		switch {
		case now.After(s.deadline):
			out = append(out, expired{id, s.epoch})
			delete(c.sessions, id)
		case s.conn == nil && !s.probing && now.Sub(s.probed) >= sessionProbeEvery:
			if b, ok := img.Cluster.Broker(id); ok && len(b.Endpoints) > 0 {
				s.probing = true
				probes = append(probes, sessionProbe{expired{id, s.epoch}, c.brokerAddr(b.Endpoints)})
			}
		}
	}
	return out, probes
}

// brokerAddr is the address of a broker's inter-broker listener among
// endpoints, or of its first.
func (c *controller) brokerAddr(endpoints []metadata.Endpoint) string {
	e := endpoints[0]
	for _, ep := range endpoints {
		if ep.Listener == c.cfg.InterBrokerListener {
			e = ep
		}
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// finalizeFeatures finalizes the default feature levels once, as the
// first active controller of a new cluster: Kafka's writes the bootstrap
// metadata's FeatureLevelRecords (features.go). Until that change
// commits, each tick tries again.
func (c *controller) finalizeFeatures() {
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if !active || c.store.Image().Features.Bootstrapped() {
		return
	}
	if err := finalizeDefaultFeatures(c.store); err != nil {
		c.logger.Warn("cannot finalize the default feature levels yet", zap.Error(err))
		return
	}
	c.logger.Info("finalized the default feature levels", zap.Any("levels", c.store.Image().Features.Finalized()))
}

// probeSession fences a broker whose session has no connection yet if
// its listener is gone (quorum.ListenerGone: its process is). Any other
// answer leaves it to its heartbeats or its session.
func (c *controller) probeSession(p sessionProbe) {
	gone := quorum.ListenerGone(p.addr, sessionProbeTimeout)
	c.mu.Lock()
	s := c.sessions[p.id]
	still := s != nil && s.epoch == p.epoch && s.conn == nil
	if s != nil {
		s.probing, s.probed = false, time.Now()
	}
	c.mu.Unlock()
	if gone && still {
		c.fence(p.id, p.epoch, "no heartbeat reached this controller since it took over, and the broker's listener refuses connections")
	}
}

// touch renews broker id's session at epoch, bound to conn.
func (c *controller) touch(id int32, epoch int64, cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions[id] = &brokerSession{epoch: epoch, deadline: time.Now().Add(c.cfg.SessionTimeout), conn: cn}
}

// heartbeating reports whether broker id's session at epoch is bound to
// a connection its heartbeats come on.
func (c *controller) heartbeating(id int32, epoch int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	return s != nil && s.epoch == epoch && s.conn != nil
}

// sessionAlive reports whether broker id has a live session at epoch.
func (c *controller) sessionAlive(id int32, epoch int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	return s != nil && s.epoch == epoch && time.Now().Before(s.deadline)
}

// connClosed fences the brokers whose heartbeats came on cn, unless it
// ended by a read timeout or the broker's own shutdown.
func (c *controller) connClosed(cn *conn, err error) {
	if errors.Is(err, errIdle) || errors.Is(err, os.ErrDeadlineExceeded) || cn.b.isClosing() {
		return
	}
	c.mu.Lock()
	var gone []expired
	for id, s := range c.sessions {
		if s.conn == cn {
			gone = append(gone, expired{id, s.epoch})
			delete(c.sessions, id)
		}
	}
	c.mu.Unlock()
	for _, g := range gone {
		c.fence(g.id, g.epoch, "its heartbeat connection closed: "+err.Error())
	}
}

// fence fences broker id's registration at epoch, if it is still that
// one, unfenced, and no heartbeat came since it was judged gone: a
// session timeout, a closed connection or a probe judge a session that
// has no connection, and a heartbeat that lands before the fencing
// commits (it may already have unfenced the broker again) binds one.
func (c *controller) fence(id int32, epoch int64, why string) {
	start := time.Now()
	var changed bool
	_, err := c.store.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		b, ok := img.Cluster.Broker(id)
		if !ok || b.Epoch != epoch || b.Fenced || c.heartbeating(id, epoch) {
			return nil, nil
		}
		changed = true
		return fenceRecords(img, id, epoch, c.cfg.UncleanLeaderElection), nil
	})
	switch {
	case err != nil:
		c.logger.Warn("cannot fence a broker", zap.Int32("broker", id), zap.Int64("broker_epoch", epoch), zap.String("why", why), zap.Error(err))
	case changed:
		c.logger.Info("fenced a broker", zap.Int32("broker", id), zap.Int64("broker_epoch", epoch), zap.String("why", why),
			zap.Duration("took", time.Since(start)))
	}
}

// fenceRecords fence broker id at epoch and move its partitions' leaders
// (fenceChanges); unclean is unclean.leader.election.enable, which a
// topic's own config overrides.
func fenceRecords(img *metadata.Image, id int32, epoch int64, unclean bool) []metadata.Record {
	records := []metadata.Record{metadata.FenceBrokerRecord{ID: id, Epoch: epoch}}
	return append(records, fenceChanges(img, id, func(topic string) bool { return uncleanElectionFor(img, topic, unclean) })...)
}

// unfenceRecords unfence broker id at epoch and make it the leader of the
// leaderless partitions whose ISR holds it (unfenceChanges).
func unfenceRecords(img *metadata.Image, id int32, epoch int64) []metadata.Record {
	records := []metadata.Record{metadata.UnfenceBrokerRecord{ID: id, Epoch: epoch}}
	return append(records, unfenceChanges(img, id, func(string) bool { return false })...)
}

// registerController adds the controller's own APIs to r.
func (c *controller) register(r *registry) {
	r.add(kmsg.BrokerRegistration, 0, 3, c.handleRegistration)
	r.add(kmsg.BrokerHeartbeat, 0, 1, c.handleHeartbeat)
	r.add(kmsg.AllocateProducerIDs, 0, 0, c.handleAllocateProducerIDs)
	r.add(kmsg.AlterPartition, 0, 3, c.handleAlterPartition)
	r.add(kmsg.DescribeQuorum, 0, 2, c.handleDescribeQuorum)
	r.add(kmsg.DescribeCluster, 0, 2, c.handleDescribeCluster)
	r.add(kmsg.UnregisterBroker, 0, 0, c.handleUnregisterBroker)
	r.add(kmsg.UnregisterController, 0, 0, c.handleUnregisterController)
	r.add(kmsg.AddRaftVoter, 0, 1, c.handleAddRaftVoter)
	r.add(kmsg.RemoveRaftVoter, 0, 0, c.handleRemoveRaftVoter)
}

func (c *controller) isActive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

// errCode is the Kafka code of a controller's error.
func (c *controller) errCode(key kmsg.Key, err error) int16 {
	var ke *kerr.Error
	switch {
	case err == nil:
		return 0
	case errors.Is(err, quorum.ErrNotController):
		return kerr.NotController.Code
	case errors.As(err, &ke):
		return ke.Code
	}
	c.logger.Error("unexpected error, answering UNKNOWN_SERVER_ERROR", zap.String("request", key.Name()), zap.Error(err))
	return kerr.UnknownServerError.Code
}

func (c *controller) handleRegistration(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.BrokerRegistrationRequest)
	resp := kmsg.NewPtrBrokerRegistrationResponse()
	if !rc.authorizeCluster(OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !c.isActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	if r.ClusterID != c.clusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	reg := metadata.RegisterBrokerRecord{BrokerID: r.BrokerID, IncarnationID: r.IncarnationID, Fenced: true}
	for _, l := range r.Listeners {
		reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	if r.Rack != nil {
		reg.Rack = *r.Rack
	}
	_, err := c.store.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		var records []metadata.Record
		if old, ok := img.Cluster.Broker(r.BrokerID); ok {
			if old.IncarnationID != r.IncarnationID && !old.Fenced && c.sessionAlive(old.ID, old.Epoch) {
				return nil, kerr.DuplicateBrokerRegistration
			}
			if !old.Fenced {
				// Its previous run's leadership moves before it is replaced.
				records = fenceRecords(img, old.ID, old.Epoch, c.cfg.UncleanLeaderElection)
			}
		}
		reg.BrokerEpoch = c.store.NextIndex()
		return append(records, reg), nil
	})
	if err == nil && !c.store.IsVoter(r.BrokerID) {
		err = c.addObserver(r.BrokerID, reg.Endpoints)
	}
	if resp.ErrorCode = c.errCode(kmsg.BrokerRegistration, err); resp.ErrorCode == 0 {
		resp.BrokerEpoch = reg.BrokerEpoch
		c.touch(r.BrokerID, reg.BrokerEpoch, rc.conn)
		c.logger.Info("registered a broker", zap.Int32("broker", r.BrokerID), zap.Int64("broker_epoch", reg.BrokerEpoch))
	}
	return resp, nil
}

// addObserver makes a broker-only node a non-voter of the quorum at the
// endpoint of its inter-broker listener (its first one when it has none
// by that name), so that the metadata log reaches it: every listener of
// such a node carries raft's connections (quorum.NewBrokerListeners).
func (c *controller) addObserver(id int32, endpoints []metadata.Endpoint) error {
	if len(endpoints) == 0 {
		return kerr.InvalidRequest
	}
	addr := c.brokerAddr(endpoints)
	if err := c.store.AddObserver(id, addr); err != nil {
		return err
	}
	c.logger.Info("the broker-only node is an observer of the metadata quorum", zap.Int32("broker", id), zap.String("addr", addr))
	return nil
}

func (c *controller) handleHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.BrokerHeartbeatRequest)
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.IsFenced = true
	if !rc.authorizeCluster(OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !c.isActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	img := c.store.Image()
	reg, ok := img.Cluster.Broker(r.BrokerID)
	switch {
	case !ok:
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp, nil
	case reg.Epoch != r.BrokerEpoch:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	c.touch(r.BrokerID, reg.Epoch, rc.conn)
	caughtUp := r.CurrentMetadataOffset >= reg.Epoch
	var decide func(img *metadata.Image) ([]metadata.Record, error)
	fenced := reg.Fenced
	switch {
	case r.WantShutdown || r.WantFence:
		decide = func(img *metadata.Image) ([]metadata.Record, error) {
			if b, ok := img.Cluster.Broker(reg.ID); !ok || b.Epoch != reg.Epoch || b.Fenced {
				return nil, nil
			}
			return fenceRecords(img, reg.ID, reg.Epoch, c.cfg.UncleanLeaderElection), nil
		}
		fenced = true
	case reg.Fenced && caughtUp:
		decide = func(img *metadata.Image) ([]metadata.Record, error) {
			if b, ok := img.Cluster.Broker(reg.ID); !ok || b.Epoch != reg.Epoch || !b.Fenced {
				return nil, nil
			}
			return unfenceRecords(img, reg.ID, reg.Epoch), nil
		}
		fenced = false
	}
	if decide != nil {
		if _, err := c.store.Update(decide); err != nil {
			resp.ErrorCode = c.errCode(kmsg.BrokerHeartbeat, err)
			return resp, nil
		}
	}
	resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = caughtUp, fenced, r.WantShutdown
	return resp, nil
}

func (c *controller) handleAllocateProducerIDs(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	if !rc.authorizeCluster(OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !c.isActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	var start int64
	_, err := c.store.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		reg, ok := img.Cluster.Broker(r.BrokerID)
		switch {
		case !ok:
			return nil, kerr.BrokerIDNotRegistered
		case reg.Epoch != r.BrokerEpoch:
			return nil, kerr.StaleBrokerEpoch
		}
		start = img.ProducerIDs.NextProducerID
		return []metadata.Record{metadata.ProducerIdsRecord{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch, NextProducerID: start + producerIDBlock}}, nil
	})
	if resp.ErrorCode = c.errCode(kmsg.AllocateProducerIDs, err); resp.ErrorCode == 0 {
		resp.ProducerIDStart, resp.ProducerIDLen = start, producerIDBlock
	}
	return resp, nil
}

// handleAlterPartition decides a partition leader's ISR change on the
// latest image (alterPartition, isr.go); a controller that is not active
// answers NOT_CONTROLLER, and the leader asks again.
func (c *controller) handleAlterPartition(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.AlterPartitionRequest)
	if !rc.authorizeCluster(OpClusterAction) {
		resp := kmsg.NewPtrAlterPartitionResponse()
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !c.isActive() {
		resp := kmsg.NewPtrAlterPartitionResponse()
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	resp, err := storeAlterPartition(c.store)(context.Background(), r)
	if err != nil {
		fail := kmsg.NewPtrAlterPartitionResponse()
		fail.ErrorCode = c.errCode(kmsg.AlterPartition, err)
		return fail, nil
	}
	return resp, nil
}
