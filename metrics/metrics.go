// Package metrics is Strata's Prometheus instrumentation: request counts,
// errors and latencies by API, bytes and records per topic, connections,
// partition offsets read from storage on scrape, and consumer group lag once
// the group coordinator reports committed offsets. Server (server.go) serves
// it over HTTP at /metrics, next to /healthz.
//
// It uses github.com/prometheus/client_golang: pure Go (static CGO_ENABLED=0
// builds are unaffected), the reference implementation of the text and
// protobuf exposition formats with content negotiation, correct histograms,
// and the Go runtime and process collectors operators expect
// (go_goroutines, process_resident_memory_bytes, ...).
//
// Every method is safe on a nil *Metrics and does nothing, so the broker
// calls its hooks unconditionally and metrics.listener off costs one nil
// check per hook. The hot path is cheap: one labelled-child lookup per
// request, and per topic of a produce or fetch one sync.Map load and atomic
// adds; per-topic series are emitted by a collector at scrape time.
package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

// Metric names. They are part of Strata's operator interface (README).
const (
	RequestsTotal           = "strata_requests_total"
	PartitionErrorsTotal    = "strata_partition_errors_total"
	RequestDurationSeconds  = "strata_request_duration_seconds"
	ConnectionsOpen         = "strata_connections_open"
	ConnectionsAccepted     = "strata_connections_accepted_total"
	ConnectionsClosed       = "strata_connections_closed_total"
	TopicBytesIn            = "strata_topic_bytes_in_total"
	TopicRecordsIn          = "strata_topic_records_in_total"
	TopicBytesOut           = "strata_topic_bytes_out_total"
	PartitionLogEndOffset   = "strata_partition_log_end_offset"
	PartitionLogStart       = "strata_partition_log_start_offset"
	PartitionHighWatermark  = "strata_partition_high_watermark"
	GroupCommittedOffset    = "strata_group_committed_offset"
	GroupLag                = "strata_group_lag"
	PartitionSizeBytes      = "strata_partition_size_bytes"
	PartitionOffline        = "strata_partition_offline"
	RecoverySegmentsChecked = "strata_recovery_segments_checked_total"
	RecoveryBytesDropped    = "strata_recovery_bytes_dropped_total"
	RecoveryBatchesDropped  = "strata_recovery_batches_dropped_total"
	FsyncDurationSeconds    = "strata_fsync_duration_seconds"
	BuildInfoMetric         = "strata_build_info"
	// Kafka's socket-server-metrics of SASL, by listener.
	SuccessfulAuthentications   = "strata_successful_authentication_total"
	SuccessfulReauthentications = "strata_successful_reauthentication_total"
	FailedAuthentications       = "strata_failed_authentication_total"
	FailedReauthentications     = "strata_failed_reauthentication_total"
	// The StandardAuthorizer's decisions (Kafka's authorizer-metrics,
	// KIP-801), by operation and resource type.
	AuthorizationsAllowed = "strata_authorization_allowed_total"
	AuthorizationsDenied  = "strata_authorization_denied_total"
)

// fsyncBuckets span a page-cache-only fsync (tens of microseconds) to a
// slow disk under load.
var fsyncBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5,
}

// latencyBuckets span a sub-millisecond produce to a long-polling fetch
// (fetch.max.wait.ms defaults to 500 ms; clients may ask for more).
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

// Metrics holds one broker's metrics and the registry they are served from.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec   // api, version, error
	partitionErrors *prometheus.CounterVec   // api, error
	latency         *prometheus.HistogramVec // api
	connsOpen       prometheus.Gauge
	connsAccepted   prometheus.Counter
	connsClosed     prometheus.Counter
	fsync           prometheus.Histogram
	// auths counts SASL authentications by outcome (auths[reauth][ok]),
	// each by listener.
	auths [2][2]*prometheus.CounterVec
	// authz counts the authorizer's decisions (authz[allowed]).
	authz [2]*prometheus.CounterVec
	// recovery sums what log recovery checked and dropped, at start and at
	// revivals (storage's OnRecovered and OnLogRevived events).
	recoverySegments, recoveryBytes, recoveryBatches prometheus.Counter

	topics  sync.Map // topic name -> *TopicStats
	storage atomic.Pointer[storageSource]
	groups  atomic.Pointer[groupSource]
	build   atomic.Pointer[BuildInfo] // build.go
	ready   atomic.Bool
	quotas  atomic.Pointer[quotaSource] // client quotas (quotas.go)

	fetchSessions atomic.Pointer[fetchSessionSource]    // the fetch session cache (fetchsessions.go)
	telemetry     atomic.Pointer[clientTelemetrySource] // pushed client metrics (clienttelemetry.go)
}

// New returns metrics registered in a fresh registry, with the Go runtime
// and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RequestsTotal,
			Help: "Requests served, by API, API version and the response's top-level error code (NONE when zero or when the API has none; DISCONNECTED when the request closed the connection).",
		}, []string{"api", "version", "error"}),
		partitionErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: PartitionErrorsTotal,
			Help: "Non-zero error codes in the per-partition (or, for topic-level APIs such as CreateTopics, per-topic) entries of responses, by API and error.",
		}, []string{"api", "error"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    RequestDurationSeconds,
			Help:    "Time from a request's last byte read to its response's last byte written, by API; a fetch includes its long-poll wait.",
			Buckets: latencyBuckets,
		}, []string{"api"}),
		connsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: ConnectionsOpen, Help: "Client connections currently open.",
		}),
		connsAccepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: ConnectionsAccepted, Help: "Client connections accepted.",
		}),
		connsClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: ConnectionsClosed, Help: "Client connections closed.",
		}),
	}
	m.fsync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    FsyncDurationSeconds,
		Help:    "Duration of each fsync of a segment file.",
		Buckets: fsyncBuckets,
	})
	m.recoverySegments = prometheus.NewCounter(prometheus.CounterOpts{Name: RecoverySegmentsChecked,
		Help: "Segments whose batches log recovery validated (at start after an unclean shutdown, and when a failed partition revives)."})
	m.recoveryBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: RecoveryBytesDropped,
		Help: "Bytes log recovery cut from partition logs: invalid tails and the segments after them (never acknowledged data)."})
	m.recoveryBatches = prometheus.NewCounter(prometheus.CounterOpts{Name: RecoveryBatchesDropped,
		Help: "Whole batches in the segments log recovery dropped after a cut."})
	for i, c := range []struct{ name, help string }{
		{FailedAuthentications, "SASL authentications that failed, by listener (Kafka's failed-authentication-total)."},
		{SuccessfulAuthentications, "SASL authentications that succeeded, by listener (Kafka's successful-authentication-total)."},
		{FailedReauthentications, "SASL re-authentications (KIP-368) that failed, by listener (Kafka's failed-reauthentication-total)."},
		{SuccessfulReauthentications, "SASL re-authentications (KIP-368) that succeeded, by listener (Kafka's successful-reauthentication-total)."},
	} {
		m.auths[i/2][i%2] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: c.name, Help: c.help}, []string{"listener"})
		m.reg.MustRegister(m.auths[i/2][i%2])
	}
	for i, c := range []struct{ name, help string }{
		{AuthorizationsDenied, "Authorizations the authorizer denied, by operation and resource type (Kafka's authorization-denied-rate-per-minute)."},
		{AuthorizationsAllowed, "Authorizations the authorizer allowed, by operation and resource type (Kafka's authorization-allowed-rate-per-minute)."},
	} {
		m.authz[i] = prometheus.NewCounterVec(prometheus.CounterOpts{Name: c.name, Help: c.help}, []string{"operation", "resource_type"})
		m.reg.MustRegister(m.authz[i])
	}
	m.reg.MustRegister(m.requests, m.partitionErrors, m.latency, m.connsOpen, m.connsAccepted, m.connsClosed, m.fsync,
		m.recoverySegments, m.recoveryBytes, m.recoveryBatches,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&topicCollector{m: m}, &storageCollector{m: m}, &buildCollector{m: m}, &quotaCollector{m: m},
		&fetchSessionCollector{m: m}, &telemetryCollector{m: m})
	return m
}

// Registry is the registry the metrics are served from; a caller may
// register more collectors in it.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// SetReady says whether the broker is serving; /healthz answers 200 only
// while it is.
func (m *Metrics) SetReady(ready bool) {
	if m != nil {
		m.ready.Store(ready)
	}
}

// Ready reports what SetReady last said.
func (m *Metrics) Ready() bool { return m != nil && m.ready.Load() }

// ConnOpened counts an accepted connection.
func (m *Metrics) ConnOpened() {
	if m != nil {
		m.connsAccepted.Inc()
		m.connsOpen.Inc()
	}
}

// StorageEvents is the listener that feeds storage's events to the metrics:
// fsync durations and recovery's counts; the zero listener for nil metrics.
func (m *Metrics) StorageEvents() storage.EventListener {
	if m == nil {
		return storage.EventListener{}
	}
	return storage.EventListener{
		OnRecovered:  func(i storage.RecoveryInfo) { m.recovered(i.Report) },
		OnLogRevived: func(i storage.LogRevivalInfo) { m.recovered(i.Report) },
		OnFsync:      m.Fsync,
	}
}

func (m *Metrics) recovered(r storage.RecoveryReport) {
	m.recoverySegments.Add(float64(r.SegmentsChecked))
	m.recoveryBytes.Add(float64(r.BytesDropped))
	m.recoveryBatches.Add(float64(r.BatchesDropped))
}

// Fsync records the duration of one segment fsync (storage's OnFsync event).
func (m *Metrics) Fsync(d time.Duration) {
	if m != nil {
		m.fsync.Observe(d.Seconds())
	}
}

// ConnClosed counts a closed connection.
func (m *Metrics) ConnClosed() {
	if m != nil {
		m.connsClosed.Inc()
		m.connsOpen.Dec()
	}
}

// Authentication counts one SASL authentication (or re-authentication) on
// listener, succeeded or failed.
func (m *Metrics) Authentication(listener string, reauth, ok bool) {
	if m == nil {
		return
	}
	i, j := 0, 0
	if reauth {
		i = 1
	}
	if ok {
		j = 1
	}
	m.auths[i][j].WithLabelValues(listener).Inc()
}

// Authorization counts one decision of the authorizer.
func (m *Metrics) Authorization(operation, resourceType string, allowed bool) {
	if m == nil {
		return
	}
	i := 0
	if allowed {
		i = 1
	}
	m.authz[i].WithLabelValues(operation, resourceType).Inc()
}

// Disconnected is the error label of a request that ended its connection
// (a failed write, a handler error) instead of being answered.
const Disconnected = -32768

// Request records one served request: its API, version, the response's
// top-level error code (or Disconnected) and how long it took.
func (m *Metrics) Request(key, version, errorCode int16, d time.Duration) {
	if m == nil {
		return
	}
	api := apiName(key)
	m.requests.WithLabelValues(api, versionLabel(version), ErrorName(errorCode)).Inc()
	m.latency.WithLabelValues(api).Observe(d.Seconds())
}

// PartitionError counts a non-zero error code in one partition or topic
// entry of a response; a zero code is ignored.
func (m *Metrics) PartitionError(key, errorCode int16) {
	if m == nil || errorCode == 0 {
		return
	}
	m.partitionErrors.WithLabelValues(apiName(key), ErrorName(errorCode)).Inc()
}

// TopicStats are one topic's traffic counters. Methods on a nil
// *TopicStats do nothing.
type TopicStats struct {
	bytesIn, recordsIn, bytesOut atomic.Int64
}

// Produced counts record batch bytes and records appended to the topic.
func (s *TopicStats) Produced(bytes, records int64) {
	if s != nil {
		s.bytesIn.Add(bytes)
		s.recordsIn.Add(records)
	}
}

// Fetched counts record batch bytes sent to consumers of the topic.
func (s *TopicStats) Fetched(bytes int64) {
	if s != nil {
		s.bytesOut.Add(bytes)
	}
}

// Topic returns the counters of an existing topic, creating them on first
// use; nil when m is nil. Call it only for topics that exist, so that
// clients naming unknown topics cannot create series. Counters of deleted
// topics are dropped at the next scrape.
func (m *Metrics) Topic(name string) *TopicStats {
	if m == nil {
		return nil
	}
	if s, ok := m.topics.Load(name); ok {
		return s.(*TopicStats)
	}
	s, _ := m.topics.LoadOrStore(name, new(TopicStats))
	return s.(*TopicStats)
}

// apiNames and versionLabels are precomputed so labelling a request
// allocates nothing.
var (
	apiNames      [kmsg.MaxKey + 1]string
	versionLabels [64]string
	errorNames    = map[int16]string{0: "NONE", Disconnected: "DISCONNECTED"}
)

func init() {
	for k := range apiNames {
		apiNames[k] = kmsg.NameForKey(int16(k))
	}
	for v := range versionLabels {
		versionLabels[v] = strconv.Itoa(v)
	}
	for code := int16(-1); code < 1000; code++ {
		if e := kerr.TypedErrorForCode(code); e != nil && (e != kerr.UnknownServerError || code == -1) {
			errorNames[code] = e.Message
		}
	}
}

func apiName(key int16) string {
	if key >= 0 && int(key) < len(apiNames) && apiNames[key] != "" {
		return apiNames[key]
	}
	return "Unknown" + strconv.Itoa(int(key))
}

func versionLabel(v int16) string {
	if v >= 0 && int(v) < len(versionLabels) {
		return versionLabels[v]
	}
	return strconv.Itoa(int(v))
}

// ErrorName is the label of a Kafka error code: Kafka's name for it
// (UNKNOWN_TOPIC_OR_PARTITION), NONE for 0, DISCONNECTED for Disconnected,
// and the number for codes franz-go does not know.
func ErrorName(code int16) string {
	if s, ok := errorNames[code]; ok {
		return s
	}
	return strconv.Itoa(int(code))
}
