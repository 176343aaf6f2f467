package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/local"
	"github.com/strata-io/strata/metadata/quorum"
	"github.com/strata-io/strata/metrics"
	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// Config is the broker's part of server.properties, already validated.
type Config struct {
	Listeners           string // the client listeners, NAME://host:port,..., each served as PLAINTEXT or SSL (listeners.go)
	AdvertisedListeners string // advertised.listeners: the endpoints registered; empty means Listeners
	LogDirs             string // log.dirs: one directory
	NodeID              int32  // node.id
	NumPartitions       int32  // num.partitions: default for auto-created topics
	AutoCreateTopics    bool   // auto.create.topics.enable
	// UnstableAPIVersions is Kafka's internal unstable.api.versions.enable:
	// the keys of unstableRegistrations are served too.
	UnstableAPIVersions bool
	// NoTxnVerification is transaction.partition.verification.enable=false.
	NoTxnVerification     bool
	SocketRequestMaxBytes int32 // socket.request.max.bytes
	Log                   storage.Config
	Groups                coordinator.GroupConfig
	Txns                  coordinator.TxnConfig
	Shares                coordinator.ShareConfig
	LogRequests           bool              // --log-requests: log every decoded request and response
	MetricsListener       string            // metrics.listener: http://host:port for /metrics and /healthz; empty = off
	Build                 metrics.BuildInfo // which build this is: the strata_build_info gauge

	// Limits are max.connections, max.connections.per.ip and
	// connections.max.idle.ms (limits.go).
	Limits ConnLimits
	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots:
	// the fetch sessions kept (fetch_session.go); 0 means Kafka's default,
	// 1000, and a negative value none (Kafka's 0).
	FetchSessionCacheSlots int
	// TelemetryMaxBytes is telemetry.max.bytes: the largest metrics push
	// a client may send (telemetry.go); 0 means Kafka's default, 1 MiB.
	TelemetryMaxBytes int32
	// Quotas are the client quotas' windows and
	// max.connection.creation.rate (quotas.go).
	Quotas QuotaConfig
	// DelegationTokens are the delegation.token.* keys
	// (delegationtoken_auth.go).
	DelegationTokens DelegationTokenConfig
	// Authorizer decides what each request may do (authz.go); nil allows
	// everything, as Kafka without authorizer.class.name.
	Authorizer Authorizer
	// StandardAuthorizer, when set, is the Authorizer instead: Kafka's
	// StandardAuthorizer on the ACLs of the metadata image, which the ACL
	// APIs then change (standardauthorizer.go).
	StandardAuthorizer *StandardAuthorizerConfig
	// StaticConfigs are the server.properties keys and values as given,
	// reported by DescribeConfigs as STATIC_BROKER_CONFIG; nil = derive
	// them from Log (configs.go).
	StaticConfigs map[string]string
	// FS is the file system of the log dir; nil = the operating system's.
	// Tests pass errorfs or memfs to fail or crash the broker's disk.
	FS vfs.FS
	// Metadata is the cluster's metadata store when this node is one broker
	// of a cluster (a controller quorum's, metadata/quorum): the image it
	// holds decides the topics, their replicas and leaders, and storage
	// follows it (hosting.go). nil is the single node: its image is read
	// from the log dir's files and each change is written back to them
	// (image.go).
	Metadata metadata.Store
	// Cluster is this node's part in a cluster (cluster.go); zero on a
	// single node.
	Cluster ClusterConfig
	// Quorum is the controller quorum this node is a voter of, when it is a
	// node of a cluster: Metadata is it, the node runs the controller
	// (controller.go) and the broker lifecycle (lifecycle.go), and forwards
	// admin changes to the active controller (forward.go). nil on a single
	// node.
	Quorum *quorum.Store
	// Quorum is an observer (a non-voter) on a broker-only node
	// (process.roles=broker): it runs the broker lifecycle and forwards,
	// and no controller.
	//
	// ControllerListener is the Kafka side of the controller listener
	// (quorum.ControllerListener.Kafka), served with Quorum by a node with
	// the controller role; nil on a broker-only node.
	ControllerListener net.Listener
	// ControllerOnly is a node of process.roles=controller: it serves only
	// its controller listener, has no client listener (Listeners is
	// ignored), and does not register as a broker.
	ControllerOnly bool
	// ListenerTLS is the TLS of each SSL client listener, by its
	// upper-case name (tls.go); the others are PLAINTEXT.
	ListenerTLS map[string]*ListenerTLS
	// ListenerSASL is the SASL of each SASL_PLAINTEXT and SASL_SSL client
	// listener, and of such a controller listener, by its upper-case name
	// (sasl.go); a SASL_SSL one has its ListenerTLS too.
	ListenerSASL map[string]*ListenerSASL
	// BoundListeners, when set, are the client listeners already bound,
	// in the order of Listeners: a broker-only node's carry raft's
	// connections too (quorum.NewBrokerListeners).
	BoundListeners []net.Listener
	// AlterPartition sends this node's leaders' ISR changes to the active
	// controller (isr.go); nil decides them on Metadata itself.
	AlterPartition AlterPartitionFunc
	// Clock is the broker's clock: storage's (segment.ms, retention, flush.ms,
	// the cleaner, revivals, timestamp bounds), Fetch's max wait and
	// OffsetCommit's retention; nil = the real one. Socket deadlines
	// (connections.max.idle.ms) stay on the real clock, which the kernel
	// keeps, and durations measured for metrics are real time.
	Clock clockwork.Clock
}

// Broker is one Strata node.
type Broker struct {
	cfg    Config
	logger *zap.Logger
	clock  clockwork.Clock
	frames framePool // big Produce frame buffers shared by the connections (conn.go)
	logs   *storage.Manager
	meta   metadata.Store // the metadata image handlers read and change (image.go)
	pids   *coordinator.ProducerIDs
	groups *coordinator.Groups
	txns   *coordinator.Txns
	shares *coordinator.ShareCoordinator

	replicas  *replica.Manager         // this node's replica of every partition
	unpublish func()                   // ends the publisher's subscription (publisher.go)
	unreload  func()                   // ends the subscription that reloads the listeners' TLS (tlsreload.go)
	fetchers  *replicaFetchers         // a cluster node's fetchers from its partitions' leaders (fetcher.go); nil on a single node
	markers   *clusterMarkers          // a cluster node's transaction markers to other leaders (txnmarkers.go); nil on a single node
	local     coordinator.MarkerWriter // markers on the partitions this node leads (WriteTxnMarkers)
	isr       *isrManager              // a cluster node's leaders' ISR changes (isr.go); nil on a single node

	listeners []*clientListener // the client listeners, as listeners names them (listeners.go)

	acceptMu sync.Mutex // held by an accept loop adding a connection (add)
	mu       sync.Mutex
	conns    map[*conn]struct{}
	perIP    map[string]int // open connections by remote IP (limits.go)
	// slotFreed is signalled (with mu) when a connection closes or shutdown
	// starts: the accept loops wait on it at max.connections (limits.go).
	slotFreed  *sync.Cond
	fullLogged time.Time // when waitForSlot last logged (limits.go)
	closing    bool
	shutdown   chan struct{} // closed when Shutdown starts: wakes long polls
	inflight   sync.WaitGroup

	metrics    *metrics.Metrics // nil when metrics.listener is off; see metrics.go
	metricsSrv *metrics.Server

	apis  *registry  // the keys and versions served, and their handlers
	svc   *services  // what handlers see of the broker
	authz Authorizer // cfg.Authorizer, or allowAll

	quotas *clientQuotas     // the client quotas of the image (quotas.go)
	tokens *delegationTokens // delegation tokens' HMACs and logins (delegationtoken_auth.go)

	fetchSessions *fetchSessionCache // nil when there are none (Config.FetchSessionCacheSlots)
	sharing       *shareManager      // share-partitions and share sessions (sharepartitions.go)
	telemetry     *telemetry         // KIP-714 client instances and their metrics (telemetry.go)

	// A cluster node's controller, lifecycle and forwarder; nil on one node.
	controller *controller
	life       *lifecycle
	forward    *forwarder
}

// New opens the log directory (running recovery) and binds the listeners.
func New(cfg Config, logger *zap.Logger) (*Broker, error) {
	if err := openSASL(cfg.ListenerSASL, logger); err != nil {
		return nil, err
	}
	listeners, advAddrs, err := clientListeners(&cfg)
	if err != nil {
		return nil, err
	}
	var met *metrics.Metrics // created before the logs so fsyncs and recoveries are counted from the start
	if cfg.MetricsListener != "" {
		met = metrics.New()
	}
	fsys := cfg.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	clock := cfg.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	pids, err := coordinator.OpenProducerIDs(fsys, cfg.LogDirs)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("producer ids: %w", err), closeListeners(listeners))
	}
	endpoints := advertisedEndpoints(advAddrs, listeners)
	events := storage.TeeEventListener(storage.LoggingListener(logger), met.StorageEvents())
	logs, err := storage.OpenManager(fsys, cfg.LogDirs, cfg.Log, storage.ManagerOptions{Logger: logger, NodeID: cfg.NodeID, ClusterID: cfg.Cluster.ClusterID,
		Events: &events, Clock: clock, ReserveProducerIDs: pids.Reserve})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open log dir %s: %w", cfg.LogDirs, err), closeListeners(listeners))
	}
	var fwd *forwarder
	if cfg.Quorum != nil {
		fwd = &forwarder{store: cfg.Quorum, node: cfg.NodeID, sec: cfg.Cluster.controller(), logger: logger, maxIdle: cfg.Limits.idle() / 2}
	}
	var replicas *replica.Manager
	var meta metadata.Store
	var follower *imageHost
	var fetchers *replicaFetchers
	var isr *isrManager
	if cfg.Metadata != nil {
		repl := withReplicationDefaults(cfg.Cluster)
		replicas = replica.NewClusterManager(cfg.NodeID, repl.ReplicaLagTimeMax, clock.Now)
		meta = cfg.Metadata
		follower = &imageHost{logs: logs, node: cfg.NodeID, logger: logger, stopReplicas: replicas.StopReplicas}
		follower.caughtUp.Store(cfg.Quorum == nil) // a shared store's image is current, never replayed
		fetchers = &replicaFetchers{node: cfg.NodeID, cfg: repl.ReplicaFetch, listener: repl.InterBrokerListener, sec: repl.interBroker(),
			logs: logs, replicas: replicas, logger: logger.Named("replica-fetcher"), threads: map[fetcherKey]*fetcherThread{}}
		alter := cfg.AlterPartition
		switch {
		case alter == nil && cfg.Quorum != nil:
			alter = func(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
				return fwd.alterPartition(ctx, meta, req)
			}
		case alter == nil:
			alter = storeAlterPartition(meta)
		}
		isr = &isrManager{node: cfg.NodeID, alter: alter, replicas: replicas, logs: logs, maxLag: repl.ReplicaLagTimeMax,
			now: clock.Now, logger: logger.Named("isr"), done: make(chan struct{})}
		replicas.SetISREligible(func(id int32) bool {
			b, registered := meta.Image().Cluster.Broker(id)
			return registered && !b.Fenced
		})
	} else {
		if replicas, err = replica.NewManager(logs, cfg.NodeID); err != nil {
			return nil, errors.Join(fmt.Errorf("replicas: %w", err), logs.Close(), closeListeners(listeners))
		}
		img, err := imageOf(logs, registerRecord(cfg.NodeID, endpoints))
		if err != nil {
			return nil, errors.Join(err, logs.Close(), closeListeners(listeners))
		}
		meta = local.New(img, logHost{logs: logs, node: cfg.NodeID}.commit)
		if err := finalizeDefaultFeatures(meta); err != nil {
			return nil, errors.Join(err, logs.Close(), closeListeners(listeners))
		}
	}
	if fwd == nil {
		pids.OnBlock(func(end int64) {
			if _, err := meta.Propose(metadata.ProducerIdsRecord{BrokerID: cfg.NodeID, NextProducerID: end}); err != nil {
				logger.Error("the metadata image cannot record a producer id block", zap.Int64("end", end), zap.Error(err))
			}
		})
	}
	create := func(name string, partitions int32, configs map[string]string) (*storage.Topic, error) {
		var err error
		layout := replicaLayout{partitions: partitions, rf: defaultReplicationFactor(&cfg, name)}
		if fwd != nil {
			_, err = fwd.createTopic(meta, name, layout, configs)
		} else {
			_, err = proposeTopic(meta, name, layout, configs)
		}
		if err != nil {
			return nil, err
		}
		return logs.Topic(name), nil
	}
	groupCfg, txnCfg := coordinatorConfigs(&cfg, clock)
	groupCfg.GroupOverrides = groupOverrides(meta, cfg.StaticConfigs)
	groupCfg.PartitionRacks = partitionRacks(meta)
	groupCfg.StreamsSettings = streamsSettings(meta, cfg.StaticConfigs)
	groupCfg.ShareSettings = shareSettings(meta, cfg.StaticConfigs)
	shareState := &shareStateClient{node: cfg.NodeID, listener: withReplicationDefaults(cfg.Cluster).InterBrokerListener, meta: meta,
		logger: logger.Named("share-state")}
	groupCfg.ShareInitialize, groupCfg.ShareDelete = shareState.initialize, shareState.delete
	txnCfg.TransactionVersion = func() int16 { return meta.Image().Features.Level(transactionVersionFeature) }
	groups, err := coordinator.OpenGroups(logs, replicas, create, groupCfg, logger)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("group coordinator: %w", err), logs.Close(), closeListeners(listeners))
	}
	shutdown := make(chan struct{})
	local := coordinator.LocalMarkers(logs, replicas, groups)
	var markers *clusterMarkers
	if cfg.Metadata != nil {
		markers = &clusterMarkers{node: cfg.NodeID, listener: withReplicationDefaults(cfg.Cluster).InterBrokerListener, sec: cfg.Cluster.interBroker(),
			meta: meta, local: local, stop: shutdown, logger: logger.Named("txn-markers"), idle: map[string][]*ctrlClient{}}
		txnCfg.Markers = markers
	}
	txns, err := coordinator.OpenTxns(logs, replicas, create, pids, groups, txnCfg, logger)
	if err != nil {
		groups.Close()
		return nil, errors.Join(fmt.Errorf("transaction coordinator: %w", err), logs.Close(), closeListeners(listeners))
	}
	shareCfg := cfg.Shares
	shareCfg.Clock = clock
	shares := coordinator.OpenShareCoordinator(logs, replicas, create, shareCfg, logger)
	shareState.shares, shareState.peers = shares, markers
	pub := &publisher{node: cfg.NodeID, logs: logs, replicas: replicas, groups: groups, txns: txns, shares: shares, logger: logger,
		host: follower, fetchers: fetchers, seen: metadata.Empty}
	b := &Broker{
		cfg:       cfg,
		logger:    logger,
		clock:     clock,
		logs:      logs,
		meta:      meta,
		replicas:  replicas,
		fetchers:  fetchers,
		markers:   markers,
		local:     local,
		isr:       isr,
		pids:      pids,
		groups:    groups,
		txns:      txns,
		shares:    shares,
		listeners: listeners,
		conns:     make(map[*conn]struct{}),
		shutdown:  shutdown,
		metrics:   met,
		apis:      newRegistry(cfg.UnstableAPIVersions),
		authz:     cfg.Authorizer,
		forward:   fwd,
		quotas:    newClientQuotas(cfg.Quotas),
	}
	b.tokens = newDelegationTokens(cfg.DelegationTokens, meta.Image, clock.Now)
	b.telemetry = newTelemetry(cfg.TelemetryMaxBytes, clock.Now)
	b.sharing = newShareManager(clock, logger, shares)
	switch slots := cfg.FetchSessionCacheSlots; {
	case slots == 0:
		b.fetchSessions = newFetchSessionCache(defaultFetchSessionSlots, minFetchSessionEviction)
	case slots > 0:
		b.fetchSessions = newFetchSessionCache(slots, minFetchSessionEviction)
	}
	if cfg.StandardAuthorizer != nil {
		b.authz = newStandardAuthorizer(cfg.StandardAuthorizer, meta)
	}
	if b.authz == nil {
		b.authz = allowAll{}
	}
	b.unpublish = meta.Subscribe(func(_, new *metadata.Image) { pub.update(new); b.quotas.update(new) })
	pub.update(meta.Image())
	b.quotas.update(meta.Image())
	if cfg.Metadata != nil && cfg.Cluster.AutoLeaderRebalance && cfg.Cluster.LeaderImbalanceCheckInterval > 0 {
		go balanceLeaders(meta, cfg.Cluster.LeaderImbalanceCheckInterval, b.shutdown, logger)
	}
	go sweepDelegationTokens(meta, b.tokens, func() bool { return cfg.Quorum == nil || cfg.Quorum.IsLeader() }, clock.Now, b.shutdown, logger)
	if fwd != nil {
		b.registerDescribeQuorum()
		b.registerRaftVoters()
		b.registerUnregisterBroker()
		b.registerUnregisterController()
		fwd.forwarding(b.apis)
	}
	reloadingTLS(b.apis, cfg.NodeID)
	b.svc = newServices(b, "")
	svc := b.svc
	b.unreload = meta.Subscribe(func(old, new *metadata.Image) { svc.reloadListenerTLS(old, new, false) })
	svc.reloadListenerTLS(nil, meta.Image(), false)
	if len(listeners) > 0 {
		b.svc.listener = listeners[0].name
	}
	b.slotFreed = sync.NewCond(&b.mu)
	if err := b.openMetrics(); err != nil {
		if fetchers != nil {
			fetchers.close()
		}
		shares.Close()
		return nil, errors.Join(err, logs.Close(), closeListeners(listeners))
	}
	if cfg.ControllerListener != nil {
		b.controller = newController(cfg.Quorum, cfg.Cluster, cfg.Cluster.ClusterID, logger)
	}
	if cfg.Quorum != nil && !cfg.ControllerOnly {
		b.life = newLifecycle(cfg.Quorum, cfg.NodeID, cfg.Cluster, cfg.Cluster.ClusterID,
			registerRecord(cfg.NodeID, endpoints).Endpoints,
			pub.caughtUp, logger)
		pids.AllocateFrom(func() (int64, int64, error) { return fwd.allocateProducerIDs(b.life.epoch.Load()) })
	}
	if isr != nil {
		b.svc.isr = isr
		isr.start()
	}
	for _, l := range listeners {
		svc := *b.svc
		svc.listener = l.name
		l.svc = &svc
	}
	return b, nil
}

// coordinatorConfigs hands the broker's clock to the group and transaction
// coordinators, and in a cluster transaction.state.log.min.isr to the
// transaction coordinator.
func coordinatorConfigs(cfg *Config, clock clockwork.Clock) (coordinator.GroupConfig, coordinator.TxnConfig) {
	groups, txns := cfg.Groups, cfg.Txns
	groups.Clock, txns.Clock = clock, clock
	if cfg.Metadata != nil {
		txns.StateLogMinISR = cfg.Cluster.TxnStateMinISR
	}
	return groups, txns
}

// Addr is the address the first client listener is bound to, a
// controller-only node's controller listener's.
func (b *Broker) Addr() net.Addr {
	if len(b.listeners) == 0 {
		return b.cfg.ControllerListener.Addr()
	}
	return b.listeners[0].ln.Addr()
}

// Serve accepts connections on every client listener until Shutdown; it
// returns nil after a shutdown, or the first listener's accept error.
func (b *Broker) Serve() error {
	b.startMetrics()
	if b.controller != nil {
		go b.serveController(b.cfg.ControllerListener)
	}
	errs := make(chan error, len(b.listeners))
	for _, l := range b.listeners {
		go func() { errs <- b.accept(l) }()
	}
	for range b.listeners {
		if err := <-errs; err != nil {
			return err
		}
	}
	<-b.shutdown // a controller-only node has no client listener to wait on
	return nil
}

// accept serves l's connections until Shutdown.
func (b *Broker) accept(l *clientListener) error {
	var delay time.Duration
	for {
		if !b.waitForSlot() {
			return nil
		}
		nc, err := l.ln.Accept()
		if err != nil {
			if b.isClosing() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				b.logger.Warn("accept failed, retrying", zap.String("listener", l.name), zap.Error(err), zap.Duration("delay", delay))
				time.Sleep(delay)
				continue
			}
			return fmt.Errorf("accept on %s: %w", l.name, err)
		}
		delay = 0
		if !b.add(nc, l) {
			return nil
		}
	}
}

// add serves nc, accepted on l, unless the broker is closing. The accept
// loops add one connection at a time, so each sees the counts
// max.connections and max.connections.per.ip are held to as the others
// left them (limits.go).
func (b *Broker) add(nc net.Conn, l *clientListener) bool {
	b.acceptMu.Lock()
	defer b.acceptMu.Unlock()
	if !b.waitForSlot() || !b.waitConnectionRate() {
		nc.Close()
		return false
	}
	nc, tc := serverTLS(nc, l.tls)
	c := newConn(b, nc)
	c.svc = l.svc
	c.tls, c.tlsConn = l.tls, tc
	c.sasl = b.cfg.ListenerSASL[l.name]
	if !b.admit(c) {
		return true
	}
	if !b.track(c) {
		nc.Close()
		return false
	}
	go c.serve()
	return true
}

func (b *Broker) isClosing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closing
}

func (b *Broker) track(c *conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.conns[c] = struct{}{}
	b.inflight.Add(1)
	b.metrics.ConnOpened()
	return true
}

func (b *Broker) untrack(c *conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.slotFreed.Broadcast()
	b.mu.Unlock()
	b.release(c)
	b.telemetry.connClosed(c)
	b.metrics.ConnClosed()
	b.inflight.Done()
}

// Shutdown stops accepting, lets every connection finish the request it is
// serving, then closes the logs cleanly (flush, checkpoints, clean-shutdown
// marker). Connections still busy when ctx ends are cut.
func (b *Broker) Shutdown(ctx context.Context) error {
	if b.life != nil && !b.isClosing() {
		b.life.close() // a controlled shutdown, while the listeners still serve
	}
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return errors.New("broker already shut down")
	}
	b.closing = true
	b.slotFreed.Broadcast()
	b.metrics.SetReady(false)
	close(b.shutdown)
	for c := range b.conns {
		c.stopReading()
	}
	b.mu.Unlock()
	closeListeners(b.listeners)
	if b.controller != nil {
		b.cfg.ControllerListener.Close()
	}
	if b.fetchers != nil {
		b.fetchers.close()
	}

	done := make(chan struct{})
	go func() { b.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		b.mu.Lock()
		for c := range b.conns {
			c.nc.Close()
		}
		b.mu.Unlock()
		<-done
	}
	// Blocked JoinGroup and SyncGroup requests were woken by b.shutdown.
	if b.controller != nil {
		b.controller.close()
	}
	if b.forward != nil {
		b.forward.close()
	}
	if b.isr != nil {
		b.isr.close()
	}
	b.unpublish()
	b.unreload()
	b.txns.Close()
	b.sharing.close()
	b.shares.Close()
	if b.markers != nil {
		b.markers.close()
	}
	b.groups.Close()
	if err := b.logs.Close(); err != nil {
		return errors.Join(fmt.Errorf("close logs: %w", err), b.stopMetrics(ctx))
	}
	return b.stopMetrics(ctx)
}
