package broker

// GetTelemetrySubscriptions and PushTelemetry (KIP-714 client metrics),
// as Kafka 4.4's ClientMetricsManager serves them.
//
// GetTelemetrySubscriptions gives a client (a new client instance id when
// it sends none) what the CLIENT_METRICS subscriptions that match it ask
// (clientmetrics.go): the union of their metrics ("*" alone when one asks
// for all), the shortest of their push intervals (5 minutes when none
// matches), the subscription id (a CRC32C of the metrics and the
// interval, XORed with the instance id's hash: it changes whenever
// either does), the compression types accepted (zstd, lz4, gzip,
// snappy, Kafka's order) and telemetry.max.bytes. A client's
// subscription is evaluated again as soon as it changes. Asking again
// before the push interval has passed since the last request is
// THROTTLING_QUOTA_EXCEEDED.
//
// PushTelemetry checks, in Kafka's order: an instance id that is null or
// reserved is INVALID_REQUEST; a push after a terminating one
// INVALID_REQUEST; one before the push interval has passed (the first
// after a GetTelemetrySubscriptions may come early: clients jitter it),
// unless terminating, THROTTLING_QUOTA_EXCEEDED; a subscription id not the
// client's current one UNKNOWN_SUBSCRIPTION_ID; a compression type Kafka
// does not know UNSUPPORTED_COMPRESSION_TYPE; metrics larger than
// telemetry.max.bytes TELEMETRY_TOO_LARGE. The accepted metrics, an OTLP
// MetricsData, decompressed, are kept as the client's latest values and
// served on /metrics (telemetry_store.go); a payload that does not decode
// is INVALID_RECORD, as Kafka answers when its exporter fails.
//
// Neither is authorized, as in Kafka. Client instances live in this
// broker's memory only, each for max(60 s, 3 push intervals) after its
// last request, at most 16384 of them (Kafka's cache), as Kafka keeps
// them. As Kafka's ClientMetricsManager does (its
// ClientConnectionDisconnectListener), the broker remembers the connection
// an instance was created on (and created again on, when its subscription
// changed), and when that connection closes the instance and its series
// go at once; an instance's expiry forgets the connection of its last
// request.
//
// Differences from Kafka: Kafka serves these two keys only when a metrics
// reporter implementing ClientTelemetry is configured, and hands the
// payload to it; Strata always serves them and is its own receiver.
// Strata answers DeltaTemporality false, so clients push cumulative sums,
// which Prometheus wants (Kafka answers true). The subscription id is
// computed over the metrics sorted by name, not in the order of Java's
// HashSet, so the same subscription has another id than on Kafka (ids
// are opaque to clients).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/internal/otlp"
	"github.com/strata-io/strata/metadata"
)

// registerTelemetry serves GetTelemetrySubscriptions and PushTelemetry; their versions are here and nowhere else.
func registerTelemetry(r *registry) {
	r.add(kmsg.GetTelemetrySubscriptions, 0, 0, handleGetTelemetrySubscriptions)
	r.add(kmsg.PushTelemetry, 0, 0, handlePushTelemetry)
}

const (
	// maxClientInstances is Kafka's ClientMetricsManager CACHE_MAX_SIZE.
	maxClientInstances = 16384
	// minClientExpiry is Kafka's DEFAULT_CACHE_EXPIRY_MS.
	minClientExpiry = 60 * time.Second
	// DefaultTelemetryMaxBytes is Kafka's telemetry.max.bytes default.
	DefaultTelemetryMaxBytes = 1 << 20
)

// acceptedCompressionTypes are Kafka's SUPPORTED_COMPRESSION_TYPES, in
// its order of preference.
var acceptedCompressionTypes = []int8{batch.CodecZstd, batch.CodecLZ4, batch.CodecGzip, batch.CodecSnappy}

// clientInstance is what a broker knows of one client instance (Kafka's
// ClientMetricsInstance).
type clientInstance struct {
	id    [16]byte
	attrs map[string]string // the match attributes, set at its first request

	subscriptionID int32
	metrics        []string
	intervalMs     int32

	lastGet, lastPush time.Time
	terminating       bool
	lastSeen          time.Time
	lastConn          *conn // the connection of its last request

	series map[string]*clientSeries // its latest pushed values (telemetry_store.go)
}

func (ci *clientInstance) expiry() time.Duration {
	return max(minClientExpiry, 3*time.Duration(ci.intervalMs)*time.Millisecond)
}

// telemetry is a broker's client instances and their pushed metrics.
type telemetry struct {
	mu        sync.Mutex
	instances map[[16]byte]*clientInstance
	// conns are the connections instances were created on, each the
	// instance it last created (Kafka's clientConnectionIdMap).
	conns    map[*conn][16]byte
	series   int   // the series the instances hold together
	dropped  int64 // series not kept for want of room
	maxBytes int32
	now      func() time.Time
}

func newTelemetry(maxBytes int32, now func() time.Time) *telemetry {
	if maxBytes <= 0 {
		maxBytes = DefaultTelemetryMaxBytes
	}
	return &telemetry{instances: map[[16]byte]*clientInstance{}, conns: map[*conn][16]byte{}, maxBytes: maxBytes, now: now}
}

// clientAttrs are the match attributes of the client rc comes from.
func clientAttrs(rc *reqCtx, id [16]byte) map[string]string {
	attrs := map[string]string{"client_instance_id": metadata.TopicIDString(id)}
	if rc.req.ClientID != nil {
		attrs["client_id"] = *rc.req.ClientID
	}
	if rc.conn != nil && rc.conn.softwareName != "" {
		attrs["client_software_name"] = rc.conn.softwareName
		attrs["client_software_version"] = rc.conn.softwareVersion
	}
	if rc.clientHost != "" {
		attrs["client_source_address"] = rc.clientHost
	}
	if i := strings.LastIndexByte(rc.clientAddr, ':'); i >= 0 {
		attrs["client_source_port"] = rc.clientAddr[i+1:]
	}
	return attrs
}

// evaluate is what the subscriptions give a client with attrs: Kafka's
// createClientInstance.
func evaluate(subs []clientSubscription, attrs map[string]string, id [16]byte) (metrics []string, intervalMs, subscriptionID int32) {
	intervalMs = defaultPushIntervalMs
	set := map[string]bool{}
	for _, s := range subs {
		if s.matches(attrs) {
			for _, m := range s.metrics {
				set[m] = true
			}
			intervalMs = min(intervalMs, s.intervalMs)
		}
	}
	if set["*"] {
		set = map[string]bool{"*": true}
	}
	metrics = make([]string, 0, len(set))
	for m := range set {
		metrics = append(metrics, m)
	}
	slices.Sort(metrics)
	crc := crc32.Checksum([]byte("["+strings.Join(metrics, ", ")+"]"+strconv.Itoa(int(intervalMs))), crc32.MakeTable(crc32.Castagnoli))
	return metrics, intervalMs, int32(crc) ^ uuidHash(id)
}

// uuidHash is Java's Uuid.hashCode.
func uuidHash(id [16]byte) int32 {
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(h>>32) ^ int32(h)
}

// instance is the client instance id names, created or, when its
// subscription changed, evaluated afresh (Kafka's clientInstance). t.mu
// is held.
func (t *telemetry) instance(rc *reqCtx, id [16]byte, now time.Time) *clientInstance {
	t.expire(now)
	ci := t.instances[id]
	if ci == nil {
		if len(t.instances) >= maxClientInstances {
			t.evictOldest()
		}
		ci = &clientInstance{id: id, attrs: clientAttrs(rc, id)}
		t.instances[id] = ci
	}
	metrics, interval, subID := evaluate(clientSubscriptions(rc.svc.meta.Image()), ci.attrs, id)
	if ci.lastSeen.IsZero() || subID != ci.subscriptionID || interval != ci.intervalMs || !slices.Equal(metrics, ci.metrics) {
		ci.metrics, ci.intervalMs, ci.subscriptionID = metrics, interval, subID
		ci.lastGet, ci.lastPush, ci.terminating = time.Time{}, time.Time{}, false
		if rc.conn != nil {
			t.conns[rc.conn] = id
		}
	}
	ci.lastSeen, ci.lastConn = now, rc.conn
	return ci
}

// expire drops the instances not heard of within their expiry, and
// forgets the connection of each one's last request (Kafka's
// ExpirationTimerTask).
func (t *telemetry) expire(now time.Time) {
	for id, ci := range t.instances {
		if now.Sub(ci.lastSeen) > ci.expiry() {
			delete(t.conns, ci.lastConn)
			t.remove(id)
		}
	}
}

// connClosed drops the instance last created on c, with its series
// (Kafka's ClientConnectionDisconnectListener).
func (t *telemetry) connClosed(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.conns[c]; ok {
		delete(t.conns, c)
		t.remove(id)
	}
}

func (t *telemetry) evictOldest() {
	var oldest *clientInstance
	for _, ci := range t.instances {
		if oldest == nil || ci.lastSeen.Before(oldest.lastSeen) {
			oldest = ci
		}
	}
	if oldest != nil {
		t.remove(oldest.id)
	}
}

func (t *telemetry) remove(id [16]byte) {
	if ci := t.instances[id]; ci != nil {
		t.series -= len(ci.series)
		delete(t.instances, id)
	}
}

func handleGetTelemetrySubscriptions(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := kmsg.NewPtrGetTelemetrySubscriptionsResponse()
	t := rc.svc.telemetry
	t.mu.Lock()
	defer t.mu.Unlock()
	id := r.ClientInstanceID
	if id == ([16]byte{}) {
		var err error
		if id, err = metadata.RandomUUID(func(u [16]byte) bool { return t.instances[u] != nil }); err != nil {
			return nil, err
		}
	}
	now := t.now()
	ci := t.instance(rc, id, now)
	if since := now.Sub(latest(ci.lastGet, ci.lastPush)); since < time.Duration(ci.intervalMs)*time.Millisecond {
		resp.ErrorCode = kerr.ThrottlingQuotaExceeded.Code
		return resp, nil
	}
	ci.lastGet = now
	resp.ClientInstanceID, resp.SubscriptionID = id, ci.subscriptionID
	resp.AcceptedCompressionTypes = slices.Clone(acceptedCompressionTypes)
	resp.PushIntervalMillis, resp.TelemetryMaxBytes = ci.intervalMs, t.maxBytes
	resp.DeltaTemporality = false
	resp.RequestedMetrics = slices.Clone(ci.metrics)
	return resp, nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func handlePushTelemetry(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.PushTelemetryRequest)
	resp := kmsg.NewPtrPushTelemetryResponse()
	if r.ClientInstanceID == ([16]byte{}) || r.ClientInstanceID == ([16]byte{15: 1}) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	t := rc.svc.telemetry
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	ci := t.instance(rc, r.ClientInstanceID, now)
	code := t.checkPush(r, ci, now)
	ci.terminating = r.Terminating
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if len(r.Metrics) == 0 {
		return resp, nil
	}
	if err := t.keep(ci, r); err != nil {
		rc.svc.logger.Debug("client telemetry not kept", zap.String("client_instance_id", metadata.TopicIDString(ci.id)), zap.Error(err))
		resp.ErrorCode = kerr.InvalidRecord.Code
		if errors.Is(err, batch.ErrTooLarge) {
			resp.ErrorCode = kerr.TelemetryTooLarge.Code
		}
	}
	return resp, nil
}

// checkPush is Kafka's validatePushRequest: the error code of a push ci
// may not make now, 0 when it may.
func (t *telemetry) checkPush(r *kmsg.PushTelemetryRequest, ci *clientInstance, now time.Time) int16 {
	if ci.terminating {
		return kerr.InvalidRequest.Code
	}
	// The first push after a GetTelemetrySubscriptions may come before the
	// interval is up: clients jitter it.
	early := !ci.lastGet.After(ci.lastPush) && now.Sub(ci.lastPush) < time.Duration(ci.intervalMs)*time.Millisecond
	if early && !r.Terminating {
		return kerr.ThrottlingQuotaExceeded.Code
	}
	if !early {
		ci.lastPush = now
	}
	switch {
	case r.SubscriptionID != ci.subscriptionID:
		return kerr.UnknownSubscriptionID.Code
	case r.CompressionType < batch.CodecNone || r.CompressionType > batch.CodecZstd:
		return kerr.UnsupportedCompressionType.Code
	case len(r.Metrics) > int(t.maxBytes):
		return kerr.TelemetryTooLarge.Code
	}
	return 0
}

// keep decodes a push's metrics into ci's latest values.
func (t *telemetry) keep(ci *clientInstance, r *kmsg.PushTelemetryRequest) error {
	data, err := batch.DecompressLimit(int(r.CompressionType), r.Metrics, maxDecompressedTelemetry(t.maxBytes))
	if err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	var points []otlp.Point
	if err := otlp.Decode(data, func(p otlp.Point) { points = append(points, p) }); err != nil {
		return err
	}
	t.record(ci, points)
	return nil
}

// maxDecompressedTelemetry bounds a push's metrics once decompressed:
// OTLP compresses well, but not without end.
func maxDecompressedTelemetry(maxBytes int32) int {
	return int(min(int64(maxBytes)*32, 64<<20))
}
