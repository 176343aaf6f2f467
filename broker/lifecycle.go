package broker

// A cluster node's broker lifecycle (Kafka's BrokerLifecycleManager): at
// start it registers with the active controller, found as the metadata
// quorum's leader, with a new incarnation id. A broker-only node knows no
// leader before it registers (the leader makes it an observer of the
// quorum then), so while none is known it asks the voters of
// controller.quorum.voters in turn, as Kafka's broker asks its bootstrap
// controllers; a voter that does not lead answers NOT_CONTROLLER. Then it
// heartbeats every broker.heartbeat.interval.ms over one persistent
// connection, reporting how far its metadata has caught up, which unfences
// it. On NOT_CONTROLLER or a lost connection it goes to the new leader and
// carries on heartbeating with its broker epoch; a registration the
// controller no longer knows (STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED)
// is made again. On shutdown it asks to be shut down (WantShutDown), so its
// leadership moves before it goes.

import (
	"crypto/rand"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/quorum"
)

// lifecycleRetry is the wait before trying a controller again.
const lifecycleRetry = 50 * time.Millisecond

type lifecycle struct {
	store       *quorum.Store
	node        int32
	cfg         ClusterConfig
	clusterID   string
	endpoints   []metadata.Endpoint
	voters      []string // the voters' controller listeners, asked in turn while no leader is known
	nextVoter   int
	incarnation [16]byte
	logger      *zap.Logger
	// caughtUp is called each time the controller unfences this broker:
	// its metadata has caught up with the quorum's.
	caughtUp func()

	// leaderChanged is signalled when the quorum's leader changes: the
	// next heartbeat goes to the new one at once, so that the new
	// controller learns this broker's connection (and fences it the
	// moment it closes) without waiting out a heartbeat interval.
	leaderChanged chan struct{}

	epoch    atomic.Int64 // the broker epoch; -1 while unregistered
	client   *ctrlClient  // run's alone
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func newLifecycle(store *quorum.Store, node int32, cfg ClusterConfig, clusterID string, endpoints []metadata.Endpoint, caughtUp func(), logger *zap.Logger) *lifecycle {
	l := &lifecycle{store: store, node: node, cfg: cfg, clusterID: clusterID, endpoints: endpoints, caughtUp: caughtUp,
		logger: logger.With(zap.String("role", "broker lifecycle")), leaderChanged: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	if voters, err := quorum.ParseVoters(cfg.Voters); err == nil {
		for _, v := range voters {
			l.voters = append(l.voters, v.Addr)
		}
	}
	rand.Read(l.incarnation[:])
	l.epoch.Store(-1)
	go l.run()
	return l
}

// close asks the controller to shut this broker down, then stops.
func (l *lifecycle) close() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

func (l *lifecycle) run() {
	defer close(l.done)
	cancel := l.store.OnLeaderChange(func() {
		select {
		case l.leaderChanged <- struct{}{}:
		default:
		}
	})
	defer cancel()
	fenced := true
	var failingSince time.Time // zero while the controller answers
	warned, refused := false, false
	for {
		wait := l.cfg.HeartbeatInterval
		if err := l.step(&fenced); err != nil {
			l.drop()
			wait = lifecycleRetry
			l.logger.Debug("controller request failed", zap.Error(err))
			if errors.Is(err, kerr.ClusterAuthorizationFailed) && !refused {
				refused = true
				l.logger.Warn("the active controller refuses this broker: this node's principal needs CLUSTER_ACTION on the cluster (super.users, or an ACL)", zap.Error(err))
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if !warned && time.Since(failingSince) > l.cfg.SessionTimeout {
				warned = true
				l.logger.Warn("no active controller has answered for broker.session.timeout.ms; still trying", zap.Error(err))
			}
		} else {
			failingSince, warned, refused = time.Time{}, false, false
			if fenced {
				wait = min(wait, lifecycleRetry)
			}
		}
		select {
		case <-l.stop:
			l.shutdown()
			l.drop()
			return
		case <-time.After(wait):
		case <-l.leaderChanged:
			if l.client != nil && l.client.addr != l.store.LeaderAddr() {
				l.drop()
			}
		}
	}
}

// step registers if need be, else heartbeats.
func (l *lifecycle) step(fenced *bool) error {
	if l.client == nil {
		addr := l.store.LeaderAddr()
		if addr == "" && len(l.voters) > 0 {
			addr = l.voters[l.nextVoter%len(l.voters)]
			l.nextVoter++
		}
		if addr == "" {
			return errNoController
		}
		c, err := dialController(addr, l.node, l.cfg.HeartbeatInterval, l.cfg.controller())
		if err != nil {
			return err
		}
		l.client = c
	}
	if l.epoch.Load() < 0 {
		return l.register()
	}
	resp, err := l.heartbeat(false)
	if err != nil {
		return err
	}
	switch err := kerr.ErrorForCode(resp.ErrorCode); err {
	case nil:
		if resp.IsFenced != *fenced {
			l.logger.Info("the controller changed this broker's state", zap.Bool("fenced", resp.IsFenced), zap.Int64("broker_epoch", l.epoch.Load()))
			if !resp.IsFenced && l.caughtUp != nil {
				l.caughtUp()
			}
		}
		*fenced = resp.IsFenced
		return nil
	case kerr.StaleBrokerEpoch, kerr.BrokerIDNotRegistered:
		l.logger.Info("the controller no longer has this broker's registration; registering again", zap.Error(err))
		l.epoch.Store(-1)
		*fenced = true
		return nil
	default:
		return err
	}
}

func (l *lifecycle) register() error {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(3)
	req.BrokerID, req.ClusterID, req.IncarnationID = l.node, l.clusterID, l.incarnation
	req.PreviousBrokerEpoch = -1
	for _, e := range l.endpoints {
		ln := kmsg.NewBrokerRegistrationRequestListener()
		ln.Name, ln.Host, ln.Port, ln.SecurityProtocol = e.Listener, e.Host, uint16(e.Port), e.SecurityProtocol
		req.Listeners = append(req.Listeners, ln)
	}
	if l.cfg.Rack != "" {
		req.Rack = kmsg.StringPtr(l.cfg.Rack)
	}
	kresp, err := l.client.request(req, l.requestTimeout())
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	l.epoch.Store(resp.BrokerEpoch)
	l.logger.Info("registered with the controller", zap.String("controller", l.client.addr), zap.Int64("broker_epoch", resp.BrokerEpoch))
	return nil
}

func (l *lifecycle) heartbeat(shutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch = l.node, l.epoch.Load()
	req.CurrentMetadataOffset = l.store.AppliedIndex()
	req.WantShutdown = shutdown
	kresp, err := l.client.request(req, l.requestTimeout())
	if err != nil {
		return nil, err
	}
	return kresp.(*kmsg.BrokerHeartbeatResponse), nil
}

// shutdown asks the active controller to fence this broker, moving its
// leadership, before it stops.
func (l *lifecycle) shutdown() {
	if l.epoch.Load() < 0 || l.client == nil && l.step(new(bool)) != nil {
		return
	}
	resp, err := l.heartbeat(true)
	switch {
	case err != nil:
		l.logger.Warn("controlled shutdown: the controller did not answer", zap.Error(err))
	case resp.ErrorCode != 0:
		l.logger.Warn("controlled shutdown refused", zap.Error(kerr.ErrorForCode(resp.ErrorCode)))
	default:
		l.logger.Info("controlled shutdown: the controller moved this broker's leadership", zap.Bool("should_shut_down", resp.ShouldShutdown))
	}
}

// requestTimeout bounds a registration or heartbeat: past the session
// timeout an answer is of no use, the controller has fenced this broker.
func (l *lifecycle) requestTimeout() time.Duration {
	return min(controllerRequestTimeout, l.cfg.SessionTimeout)
}

func (l *lifecycle) drop() {
	if l.client != nil {
		l.client.Close()
		l.client = nil
	}
}
