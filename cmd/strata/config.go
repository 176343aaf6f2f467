package main

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/metadata/quorum"
	"github.com/strata-io/strata/metrics"
)

// clustered reports whether this node is one of a cluster: a broker-only
// or controller-only node, or a combined node of several voters. A
// combined node that is the only voter is the single node.
func (s *settings) clustered() bool {
	return len(s.Voters) > 1 || len(s.Bootstrap) > 0 || s.BrokerOnly || s.ControllerOnly
}

// settings is the validated server configuration, with Kafka's key names and meanings.
type settings struct {
	Static                map[string]string    // the implemented keys as given: DescribeConfigs' STATIC_BROKER_CONFIG
	Listeners             string               // the client listener of listeners, normalised (config_listeners.go)
	AdvertisedListeners   string               // its advertised.listeners entry, defaults to it
	ControllerListener    string               // a controller's listener: a combined node's is served only in a cluster
	Voters                []quorum.Voter       // controller.quorum.voters
	Bootstrap             []string             // controller.quorum.bootstrap.servers when the voters are to be learned from them (cluster.go)
	BrokerOnly            bool                 // process.roles=broker: a node of a cluster, an observer of its quorum
	ControllerOnly        bool                 // process.roles=controller: a node of a cluster with no client listener
	Cluster               broker.ClusterConfig // a cluster node's keys (config_cluster.go); a single node ignores them
	Quorum                quorumTimeouts       // a cluster node's controller.quorum.* timeouts (config_cluster.go)
	LogDir                string               // log.dirs / log.dir
	NodeID                int32                // node.id (broker.id accepted as its alias)
	NumPartitions         int32                // num.partitions
	AutoCreateTopics      bool                 // auto.create.topics.enable
	TxnVerification       bool                 // transaction.partition.verification.enable
	UnstableAPIVersions   bool                 // unstable.api.versions.enable
	SegmentBytes          int64                // log.segment.bytes
	SegmentMs             int64                // log.roll.ms / log.roll.hours
	IndexIntervalBytes    int                  // log.index.interval.bytes
	MaxIndexSize          int                  // log.index.size.max.bytes
	MaxMessageBytes       int                  // message.max.bytes
	SocketRequestMaxBytes int32                // socket.request.max.bytes
	FetchSessionSlots     int32                // max.incremental.fetch.session.cache.slots
	TelemetryMaxBytes     int32                // telemetry.max.bytes
	FlushIntervalMessages int64                // log.flush.interval.messages
	MinInSyncReplicas     int                  // min.insync.replicas
	FlushIntervalMs       int64                // log.flush.interval.ms
	TimestampType         string               // log.message.timestamp.type
	TimestampBeforeMaxMs  int64                // log.message.timestamp.before.max.ms
	TimestampAfterMaxMs   int64                // log.message.timestamp.after.max.ms

	OffsetsTopicPartitions       int32  // offsets.topic.num.partitions
	OffsetsRetentionMinutes      int64  // offsets.retention.minutes
	OffsetsRetentionCheckMs      int64  // offsets.retention.check.interval.ms
	GroupMinSessionTimeoutMs     int64  // group.min.session.timeout.ms
	GroupMaxSessionTimeoutMs     int64  // group.max.session.timeout.ms
	GroupInitialRebalanceDelayMs int64  // group.initial.rebalance.delay.ms
	GroupMaxSize                 int    // group.max.size
	MetricsListener              string // metrics.listener (Strata's own key): http://host:port; empty = off

	OffsetsSegmentBytes int32 // offsets.topic.segment.bytes

	Limits limitSettings // max.connections, max.connections.per.ip, connections.max.idle.ms (config_limits.go)

	Retention retentionSettings // log.retention.*, log.segment.delete.delay.ms (config_retention.go)

	Txn txnSettings // transaction coordinator keys (config_txn.go)
	// Tokens are the delegation token keys (config_tokens.go).
	Tokens tokenSettings

	ListenerTLS map[string]*broker.ListenerTLS // the TLS of each SSL client listener, and a controller's SSL controller listener, by name (config_ssl.go)
	// InterBrokerTLS and ControllerTLS are the client sides of the
	// inter-broker and controller listeners of a cluster node, when SSL
	// (config_ssl_cluster.go).
	InterBrokerTLS, ControllerTLS *tls.Config
	// InterBrokerSASL and ControllerSASL are a cluster node's SASL logins
	// to the inter-broker and controller listeners, when they have SASL
	// (config_sasl_cluster.go).
	InterBrokerSASL, ControllerSASL *broker.PeerLogin

	ListenerSASL map[string]*broker.ListenerSASL // the SASL of each SASL client listener, and a controller's SASL controller listener, by name (config_sasl.go)

	Authorizer *broker.StandardAuthorizerConfig // authorizer.class.name's StandardAuthorizer (config_authorizer.go); nil: none

	// KIP-848 consumer groups.
	ConsumerSessionTimeoutMs       int64  // group.consumer.session.timeout.ms
	ConsumerMinSessionTimeoutMs    int64  // group.consumer.min.session.timeout.ms
	ConsumerMaxSessionTimeoutMs    int64  // group.consumer.max.session.timeout.ms
	ConsumerHeartbeatIntervalMs    int64  // group.consumer.heartbeat.interval.ms
	ConsumerMinHeartbeatIntervalMs int64  // group.consumer.min.heartbeat.interval.ms
	ConsumerMaxHeartbeatIntervalMs int64  // group.consumer.max.heartbeat.interval.ms
	ConsumerMaxSize                int    // group.consumer.max.size
	ConsumerMigrationPolicy        string // group.consumer.migration.policy, lower case

	// Log cleaner (compaction).
	CleanerEnable      bool    // log.cleaner.enable
	CleanerBackoffMs   int64   // log.cleaner.backoff.ms
	CleanupCompact     bool    // log.cleanup.policy contains compact (default delete)
	DeleteRetentionMs  int64   // log.cleaner.delete.retention.ms
	MinCompactionLagMs int64   // log.cleaner.min.compaction.lag.ms
	MinCleanableRatio  float64 // log.cleaner.min.cleanable.ratio
}

// defaultSettings are the defaults of configdef: Kafka's, except for
// listeners and log.dirs which suit a developer machine: loopback only and
// ./data.
func defaultSettings() settings {
	return settings{
		Listeners:             def("listeners").Default,
		AdvertisedListeners:   def("listeners").Default,
		LogDir:                def("log.dirs").Default,
		NodeID:                int32(defaultInt("node.id")),
		NumPartitions:         int32(defaultInt("num.partitions")),
		AutoCreateTopics:      defaultBool("auto.create.topics.enable"),
		TxnVerification:       defaultBool("transaction.partition.verification.enable"),
		UnstableAPIVersions:   defaultBool("unstable.api.versions.enable"),
		SegmentBytes:          defaultInt("log.segment.bytes"),
		SegmentMs:             defaultInt("log.roll.hours") * 3600 * 1000,
		IndexIntervalBytes:    int(defaultInt("log.index.interval.bytes")),
		MaxIndexSize:          int(defaultInt("log.index.size.max.bytes")),
		MaxMessageBytes:       int(defaultInt("message.max.bytes")),
		SocketRequestMaxBytes: int32(defaultInt("socket.request.max.bytes")),
		FetchSessionSlots:     int32(defaultInt("max.incremental.fetch.session.cache.slots")),
		TelemetryMaxBytes:     int32(defaultInt("telemetry.max.bytes")),
		FlushIntervalMessages: defaultInt("log.flush.interval.messages"),
		MinInSyncReplicas:     int(defaultInt("min.insync.replicas")),
		FlushIntervalMs:       defaultInt("log.flush.interval.ms"),
		TimestampType:         def("log.message.timestamp.type").Default,
		TimestampBeforeMaxMs:  defaultInt("log.message.timestamp.before.max.ms"),
		TimestampAfterMaxMs:   defaultInt("log.message.timestamp.after.max.ms"),

		OffsetsTopicPartitions:       int32(defaultInt("offsets.topic.num.partitions")),
		OffsetsRetentionMinutes:      defaultInt("offsets.retention.minutes"),
		OffsetsRetentionCheckMs:      defaultInt("offsets.retention.check.interval.ms"),
		GroupMinSessionTimeoutMs:     defaultInt("group.min.session.timeout.ms"),
		GroupMaxSessionTimeoutMs:     defaultInt("group.max.session.timeout.ms"),
		GroupInitialRebalanceDelayMs: defaultInt("group.initial.rebalance.delay.ms"),
		GroupMaxSize:                 int(defaultInt("group.max.size")),
		OffsetsSegmentBytes:          int32(defaultInt("offsets.topic.segment.bytes")),
		Limits:                       defaultLimitSettings(),
		Retention:                    defaultRetentionSettings(),
		Txn:                          defaultTxnSettings(),
		Tokens:                       defaultTokenSettings(),

		ConsumerSessionTimeoutMs:       defaultInt("group.consumer.session.timeout.ms"),
		ConsumerMinSessionTimeoutMs:    defaultInt("group.consumer.min.session.timeout.ms"),
		ConsumerMaxSessionTimeoutMs:    defaultInt("group.consumer.max.session.timeout.ms"),
		ConsumerHeartbeatIntervalMs:    defaultInt("group.consumer.heartbeat.interval.ms"),
		ConsumerMinHeartbeatIntervalMs: defaultInt("group.consumer.min.heartbeat.interval.ms"),
		ConsumerMaxHeartbeatIntervalMs: defaultInt("group.consumer.max.heartbeat.interval.ms"),
		ConsumerMaxSize:                int(defaultInt("group.consumer.max.size")),
		ConsumerMigrationPolicy:        def("group.consumer.migration.policy").Default,

		CleanerEnable:      defaultBool("log.cleaner.enable"),
		CleanerBackoffMs:   defaultInt("log.cleaner.backoff.ms"),
		CleanupCompact:     slices.Contains(strings.Split(def("log.cleanup.policy").Default, ","), "compact"),
		DeleteRetentionMs:  defaultInt("log.cleaner.delete.retention.ms"),
		MinCompactionLagMs: defaultInt("log.cleaner.min.compaction.lag.ms"),
		MinCleanableRatio:  defaultFloat("log.cleaner.min.cleanable.ratio"),
	}
}

// def is the definition of a key loadSettings reads; one missing from
// configdef is a bug TestDefaults catches.
func def(key string) configdef.Def {
	d, ok := configdef.BrokerDef(key)
	if !ok {
		panic("configdef has no server.properties key " + key)
	}
	return d
}

// implemented says whether loadSettings reads key: configdef defines it.
func implemented(key string) bool {
	_, ok := configdef.BrokerDef(key)
	return ok
}

func defaultInt(key string) int64 { return def(key).DefaultInt() }

func defaultBool(key string) bool { return def(key).Default == "true" }

func defaultFloat(key string) float64 {
	f, err := strconv.ParseFloat(def(key).Default, 64)
	if err != nil {
		panic(fmt.Sprintf("configdef: default of %s: %v", key, err))
	}
	return f
}

// configError is an invalid value for a key; its message names both.
type configError struct {
	Key, Value, Reason string
}

func (e *configError) Error() string {
	return fmt.Sprintf("invalid value %q for configuration %s: %s", e.Value, e.Key, e.Reason)
}

// ignoredKeys are common Kafka broker keys that have no meaning for a single-node
// broker yet; a Kafka server.properties contains many of them, so they are only
// mentioned at debug level rather than warned about.
var ignoredKeys = []string{
	"num.network.threads", "num.io.threads",
	"num.replica.fetchers", "num.recovery.threads.per.data.dir", "queued.max.requests",
	"zookeeper.connect", "zookeeper.connection.timeout.ms", "metadata.log.dir",
	"log.flush.scheduler.interval.ms", "log.flush.offset.checkpoint.interval.ms",
	"log.flush.start.offset.checkpoint.interval.ms",
	"log.preallocate",
	"delete.topic.enable", "compression.type",
	"request.timeout.ms",
	"metric.reporters",
	"fetch.max.bytes", "producer.id.expiration.ms",
	"initial.broker.registration.timeout.ms", "num.replica.alter.log.dirs.threads",
}

// ignoredPrefixes cover the families of such keys; the keys among them that
// turn on a missing feature are refused first (config_unsupported.go).
var ignoredPrefixes = []string{
	"log.retention.", "log.cleaner.", "log.roll.jitter.", "transaction.state.log.",
	"transaction.", "offsets.", "group.", "replica.", "controller.", "ssl.", "sasl.",
	"listener.name.", "metadata.", "zookeeper.", "quota.", "metrics.", "leader.imbalance.",
	"remote.log.", "max.connection", "socket.listen.", "share.coordinator.",
}

// keyKind says how loadSettings treats a key.
func keyKind(key string) string {
	switch {
	case implemented(key):
		return "implemented"
	case slices.Contains(clusterKeys, key):
		return "cluster"
	case isSSLKey(key):
		return "ssl"
	case isSASLKey(key):
		return "sasl"
	case slices.Contains(ignoredKeys, key):
		return "ignored"
	case strings.HasPrefix(key, "socket.") && strings.HasSuffix(key, ".buffer.bytes"):
		return "ignored"
	}
	for _, p := range ignoredPrefixes {
		if strings.HasPrefix(key, p) {
			return "ignored"
		}
	}
	return "unknown"
}

// parseOverride splits a --override argument, key=value as for kafka-server-start.
func parseOverride(arg string) (key, value string, err error) {
	key, value, ok := strings.Cut(arg, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return "", "", fmt.Errorf("--override %q: want key=value", arg)
	}
	return key, value, nil
}

// loadSettings validates props (the file with the overrides applied) over the
// defaults. It returns the first invalid value, checking keys in a fixed order, and
// refuses keys of features Strata does not have yet. Other keys it does not
// implement are logged: a warning for unknown ones, a debug line for common Kafka
// keys that do not apply.
func loadSettings(props map[string]string, log *zap.Logger) (settings, error) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if f := unsupportedFeature(k, props[k]); f != "" {
			return defaultSettings(), &unsupportedError{Key: k, Value: props[k], Feature: f}
		}
	}
	static := map[string]string{}
	for _, k := range keys {
		switch keyKind(k) {
		case "implemented":
			static[k] = strings.TrimSpace(props[k])
		case "ignored":
			log.Debug("configuration key not implemented by strata, ignored", zap.String("key", k))
		case "cluster":
			// Read by loadClusterSettings; a single node has no use for it.
		case "ssl":
			// Read for each SSL listener (config_ssl.go).
		case "sasl":
			// Read for each SASL listener (config_sasl.go).
		case "unknown":
			log.Warn("unknown configuration key, ignored", zap.String("key", k), zap.String("value", props[k]))
		}
	}

	s := defaultSettings()
	s.Static = static
	p := propReader{props: props}
	// log.dirs wins over log.dir, as in Kafka.
	for _, key := range []string{"log.dir", "log.dirs"} {
		if v, ok := p.get(key); ok {
			dir, err := parseLogDirs(v)
			if err != nil {
				return s, &configError{key, props[key], err.Error()}
			}
			s.LogDir = dir
		}
	}
	p.setInt32(&s.NodeID, "broker.id")
	p.setInt32(&s.NodeID, "node.id")
	if b, ok := props["broker.id"]; ok && p.err == nil {
		if n, ok := props["node.id"]; ok && strings.TrimSpace(b) != strings.TrimSpace(n) {
			p.fail("broker.id", b, "differs from node.id "+strings.TrimSpace(n)+"; they are the same setting")
		}
	}
	loadListenerSettings(&p, &s)
	p.setInt32(&s.NumPartitions, "num.partitions")
	p.boolean(&s.AutoCreateTopics, "auto.create.topics.enable")
	p.boolean(&s.TxnVerification, "transaction.partition.verification.enable")
	p.boolean(&s.UnstableAPIVersions, "unstable.api.versions.enable")
	p.setInt64(&s.SegmentBytes, "log.segment.bytes")
	rollHours := defaultInt("log.roll.hours")
	p.setInt64(&rollHours, "log.roll.hours")
	s.SegmentMs = rollHours * 3600 * 1000
	p.setInt64(&s.SegmentMs, "log.roll.ms") // wins over log.roll.hours
	p.setInt(&s.IndexIntervalBytes, "log.index.interval.bytes")
	p.setInt(&s.MaxIndexSize, "log.index.size.max.bytes")
	p.setInt(&s.MaxMessageBytes, "message.max.bytes")
	p.setInt32(&s.SocketRequestMaxBytes, "socket.request.max.bytes")
	p.setInt32(&s.FetchSessionSlots, "max.incremental.fetch.session.cache.slots")
	p.setInt32(&s.TelemetryMaxBytes, "telemetry.max.bytes")
	p.setInt64(&s.FlushIntervalMessages, "log.flush.interval.messages")
	p.setInt(&s.MinInSyncReplicas, "min.insync.replicas")
	p.setInt64(&s.FlushIntervalMs, "log.flush.interval.ms")
	p.enum(&s.TimestampType, "log.message.timestamp.type")
	p.setInt64(&s.TimestampBeforeMaxMs, "log.message.timestamp.before.max.ms")
	p.setInt64(&s.TimestampAfterMaxMs, "log.message.timestamp.after.max.ms")
	p.setInt32(&s.OffsetsTopicPartitions, "offsets.topic.num.partitions")
	p.setInt64(&s.OffsetsRetentionMinutes, "offsets.retention.minutes")
	p.setInt64(&s.OffsetsRetentionCheckMs, "offsets.retention.check.interval.ms")
	// offsets.commit.timeout.ms is validated only: a commit is answered
	// once its single local append returns.
	p.integer("offsets.commit.timeout.ms")
	p.setInt64(&s.GroupMinSessionTimeoutMs, "group.min.session.timeout.ms")
	p.setInt64(&s.GroupMaxSessionTimeoutMs, "group.max.session.timeout.ms")
	p.setInt64(&s.GroupInitialRebalanceDelayMs, "group.initial.rebalance.delay.ms")
	p.setInt(&s.GroupMaxSize, "group.max.size")
	p.setInt32(&s.OffsetsSegmentBytes, "offsets.topic.segment.bytes")
	loadConsumerGroupSettings(&p, &s)
	loadCleanerSettings(&p, &s)
	loadLimitSettings(&p, &s)
	loadRetentionSettings(&p, &s)
	loadTxnSettings(&p, &s)
	loadTokenSettings(&p, &s)
	loadAuthorizerSettings(&p, &s)
	if v, ok := p.get("metrics.listener"); ok && v != "" && p.err == nil {
		if _, err := metrics.ParseListener(v); err != nil {
			p.fail("metrics.listener", props["metrics.listener"], err.Error())
		}
		s.MetricsListener = v
	}
	loadClusterSettings(&p, &s, log)
	if p.err == nil && s.ControllerListener != "" && !s.clustered() {
		log.Info("combined node: serving the broker role; the controller listener is validated but not served, "+
			"strata has no separate controller quorum yet", zap.String("controller.listener", s.ControllerListener))
	}
	return s, p.err
}

// loadConsumerGroupSettings reads the KIP-848 group.consumer.* keys with
// Kafka's checks (GroupCoordinatorConfig): each at least 1, the session
// timeout and heartbeat interval within their min and max, and the
// heartbeat interval below the session timeout.
func loadConsumerGroupSettings(p *propReader, s *settings) {
	p.setInt64(&s.ConsumerSessionTimeoutMs, "group.consumer.session.timeout.ms")
	p.setInt64(&s.ConsumerMinSessionTimeoutMs, "group.consumer.min.session.timeout.ms")
	p.setInt64(&s.ConsumerMaxSessionTimeoutMs, "group.consumer.max.session.timeout.ms")
	p.setInt64(&s.ConsumerHeartbeatIntervalMs, "group.consumer.heartbeat.interval.ms")
	p.setInt64(&s.ConsumerMinHeartbeatIntervalMs, "group.consumer.min.heartbeat.interval.ms")
	p.setInt64(&s.ConsumerMaxHeartbeatIntervalMs, "group.consumer.max.heartbeat.interval.ms")
	p.setInt(&s.ConsumerMaxSize, "group.consumer.max.size")
	if v, ok := p.get("group.consumer.migration.policy"); ok {
		// Kafka's CaseInsensitiveValidString.
		if values := def("group.consumer.migration.policy").Check.OneOf; slices.Contains(values, strings.ToLower(v)) {
			s.ConsumerMigrationPolicy = strings.ToLower(v)
		} else {
			p.fail("group.consumer.migration.policy", p.props["group.consumer.migration.policy"],
				"must be one of (case insensitive): "+strings.Join(values, ", "))
		}
	}
	if p.err != nil {
		return
	}
	check := func(ok bool, key string, value int64, reason string) {
		if !ok {
			p.fail(key, strconv.FormatInt(value, 10), reason)
		}
	}
	check(s.ConsumerMaxSessionTimeoutMs >= s.ConsumerMinSessionTimeoutMs, "group.consumer.max.session.timeout.ms",
		s.ConsumerMaxSessionTimeoutMs, "must be greater than or equal to group.consumer.min.session.timeout.ms")
	check(s.ConsumerSessionTimeoutMs >= s.ConsumerMinSessionTimeoutMs, "group.consumer.session.timeout.ms",
		s.ConsumerSessionTimeoutMs, "must be greater than or equal to group.consumer.min.session.timeout.ms")
	check(s.ConsumerSessionTimeoutMs <= s.ConsumerMaxSessionTimeoutMs, "group.consumer.session.timeout.ms",
		s.ConsumerSessionTimeoutMs, "must be less than or equal to group.consumer.max.session.timeout.ms")
	check(s.ConsumerMaxHeartbeatIntervalMs >= s.ConsumerMinHeartbeatIntervalMs, "group.consumer.max.heartbeat.interval.ms",
		s.ConsumerMaxHeartbeatIntervalMs, "must be greater than or equal to group.consumer.min.heartbeat.interval.ms")
	check(s.ConsumerHeartbeatIntervalMs >= s.ConsumerMinHeartbeatIntervalMs, "group.consumer.heartbeat.interval.ms",
		s.ConsumerHeartbeatIntervalMs, "must be greater than or equal to group.consumer.min.heartbeat.interval.ms")
	check(s.ConsumerHeartbeatIntervalMs <= s.ConsumerMaxHeartbeatIntervalMs, "group.consumer.heartbeat.interval.ms",
		s.ConsumerHeartbeatIntervalMs, "must be less than or equal to group.consumer.max.heartbeat.interval.ms")
	check(s.ConsumerHeartbeatIntervalMs < s.ConsumerSessionTimeoutMs, "group.consumer.heartbeat.interval.ms",
		s.ConsumerHeartbeatIntervalMs, "must be less than group.consumer.session.timeout.ms")
}

// loadCleanerSettings reads the broker's log cleaner keys with Kafka's
// validation (CleanerConfig, ServerLogConfigs).
func loadCleanerSettings(p *propReader, s *settings) {
	p.boolean(&s.CleanerEnable, "log.cleaner.enable")
	p.setInt64(&s.CleanerBackoffMs, "log.cleaner.backoff.ms")
	p.setInt64(&s.DeleteRetentionMs, "log.cleaner.delete.retention.ms")
	p.setInt64(&s.MinCompactionLagMs, "log.cleaner.min.compaction.lag.ms")
	if v, ok := p.get("log.cleaner.min.cleanable.ratio"); ok && p.err == nil {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
			p.fail("log.cleaner.min.cleanable.ratio", p.props["log.cleaner.min.cleanable.ratio"], "not a number")
		case f < 0 || f > 1:
			p.fail("log.cleaner.min.cleanable.ratio", p.props["log.cleaner.min.cleanable.ratio"], "must be between 0 and 1")
		default:
			s.MinCleanableRatio = f
		}
	}
	if v, ok := p.get("log.cleanup.policy"); ok && p.err == nil {
		compact := false
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if policies := def("log.cleanup.policy").Check.OneOf; !slices.Contains(policies, item) {
				p.fail("log.cleanup.policy", p.props["log.cleanup.policy"], "each item must be "+strings.Join(policies, " or "))
			}
			compact = compact || item == "compact"
		}
		s.CleanupCompact = compact
	}
}

// propReader parses typed values, keeping the first error so the checks read as a list.
type propReader struct {
	props map[string]string
	err   error
}

// get returns the trimmed value; Kafka trims values of every type it parses.
func (p *propReader) get(key string) (string, bool) {
	v, ok := p.props[key]
	return strings.TrimSpace(v), ok
}

func (p *propReader) fail(key, value, reason string) {
	if p.err == nil {
		p.err = &configError{key, value, reason}
	}
}

// integer parses key as a whole number in its definition's range (from
// Check.Min to the largest Int or Long); ok is false when it is absent or
// invalid.
func (p *propReader) integer(key string) (int64, bool) {
	d := def(key)
	lo, hi := d.Check.Min, d.Type.Max()
	v, ok := p.get(key)
	if !ok || p.err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		p.fail(key, p.props[key], "not a whole number")
		return 0, false
	}
	switch {
	case n < lo:
		p.fail(key, p.props[key], fmt.Sprintf("must be at least %d", lo))
		return 0, false
	case n > hi:
		p.fail(key, p.props[key], fmt.Sprintf("must be at most %d", hi))
		return 0, false
	}
	return n, true
}

func (p *propReader) setInt64(dst *int64, key string) {
	if n, ok := p.integer(key); ok {
		*dst = n
	}
}

func (p *propReader) setInt32(dst *int32, key string) {
	if n, ok := p.integer(key); ok {
		*dst = int32(n)
	}
}

func (p *propReader) setInt(dst *int, key string) {
	if n, ok := p.integer(key); ok {
		*dst = int(n)
	}
}

// boolean accepts true or false in any case, as Kafka's ConfigDef does.
func (p *propReader) boolean(dst *bool, key string) {
	v, ok := p.get(key)
	if !ok || p.err != nil {
		return
	}
	switch strings.ToLower(v) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		p.fail(key, p.props[key], "must be true or false")
	}
}

// enum accepts one of the key's Check.OneOf exactly (Kafka's ValidString
// is case-sensitive).
func (p *propReader) enum(dst *string, key string) {
	values := def(key).Check.OneOf
	v, ok := p.get(key)
	if !ok || p.err != nil {
		return
	}
	if !slices.Contains(values, v) {
		p.fail(key, p.props[key], "must be one of "+strings.Join(values, ", "))
		return
	}
	*dst = v
}

// parseLogDirs accepts a single directory: one log.dir is all the storage supports.
func parseLogDirs(v string) (string, error) {
	var dirs []string
	for _, d := range strings.Split(v, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	switch len(dirs) {
	case 0:
		return "", fmt.Errorf("no directory given")
	case 1:
		return dirs[0], nil
	default:
		return "", fmt.Errorf("%d directories given; strata supports exactly one log directory", len(dirs))
	}
}
