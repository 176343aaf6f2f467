package broker

// Client quota enforcement, as Kafka's ClientQuotaManager with its
// default quota callback. Each quota type (produce: producer_byte_rate,
// fetch: consumer_byte_rate, request: request_percentage) keeps one rate
// sensor per (user, client-id) metric tags; which tags a client gets, and
// which quota bounds them, is Kafka's precedence over the entities the
// image sets (quotaTags, quotaLimit): user+client-id, user+default
// client-id, user, default user+client-id, default user+default
// client-id, default user, client-id, default client-id. Clients that
// share an entity share its sensor. A rate is measured as Kafka's Rate
// over quota.window.num windows of quota.window.size.seconds
// (quotaRate); a value that takes it over the bound is still counted,
// and the throttle time is how long the rate needs to come back to the
// bound: (rate - bound) / bound * window, as Kafka's QuotaUtils. The
// controller mutation quota (controller_mutation_rate, mutationquota.go)
// has the same precedence and sensors, measured instead with Kafka's
// TokenBucket over controller.quota.window.num windows of
// controller.quota.window.size.seconds. With no quota of a type set, that
// type's check is one atomic load.

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-io/strata/metadata"
)

// QuotaConfig is the brokers' quota settings; zero values are Kafka's
// defaults.
type QuotaConfig struct {
	WindowNum  int           // quota.window.num; 0 = 11
	WindowSize time.Duration // quota.window.size.seconds; 0 = 1s
	// ControllerWindowNum and ControllerWindowSize are
	// controller.quota.window.num and
	// controller.quota.window.size.seconds, the controller mutation
	// quota's; 0 = 11 and 1s.
	ControllerWindowNum  int
	ControllerWindowSize time.Duration
	// MaxConnectionCreationRate is max.connection.creation.rate, new
	// connections per second on the broker; 0 = no limit.
	MaxConnectionCreationRate int
}

func (c QuotaConfig) samples() int {
	if c.WindowNum <= 0 {
		return 11
	}
	return c.WindowNum
}

func (c QuotaConfig) windowMs() int64 {
	if c.WindowSize <= 0 {
		return 1000
	}
	return c.WindowSize.Milliseconds()
}

// quotaSample is one window of Kafka's SampledStat.
type quotaSample struct {
	start, lastEvent int64 // ms
	value            float64
}

// quotaRate is Kafka's Rate over a WindowedSum: samples+1 windows of
// windowMs (one extra for the window overlapping the measured span).
type quotaRate struct {
	samples []quotaSample
	current int
}

func (r *quotaRate) currentSample(now int64) *quotaSample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, quotaSample{start: now, lastEvent: now})
	}
	return &r.samples[r.current]
}

// record adds value at now, as SampledStat.record.
func (r *quotaRate) record(samples int, windowMs int64, value float64, now int64) {
	s := r.currentSample(now)
	if now-s.start >= windowMs {
		r.current = (r.current + 1) % (samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, quotaSample{start: now, lastEvent: now})
		} else {
			r.samples[r.current] = quotaSample{start: now, lastEvent: now}
		}
		s = &r.samples[r.current]
	}
	s.value += value
	s.lastEvent = now
}

// purge resets the samples no event touched in the whole measured span.
func (r *quotaRate) purge(samples int, windowMs, now int64) {
	for i := range r.samples {
		if now-r.samples[i].lastEvent >= int64(samples)*windowMs {
			r.samples[i] = quotaSample{start: now, lastEvent: now}
		}
	}
}

// windowSize is Rate.windowSize: the span since the oldest sample, at
// least samples-1 whole windows, at least 1 ms.
func (r *quotaRate) windowSize(samples int, windowMs, now int64) int64 {
	r.purge(samples, windowMs, now)
	oldest := r.currentSample(now).start
	for _, s := range r.samples {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full := elapsed / windowMs; full < int64(samples-1) {
		elapsed += (int64(samples-1) - full) * windowMs
	}
	return max(elapsed, 1)
}

// measure is Rate.measure: the samples' sum per second of windowSize.
func (r *quotaRate) measure(samples int, windowMs, now int64) (rate float64, window int64) {
	window = r.windowSize(samples, windowMs, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(window) / 1000), window
}

// quotaTags are a sensor's metric tags (Kafka's user and client-id tags;
// "" for a tag the quota does not distinguish).
type quotaTags struct{ user, clientID string }

// quotaTable is one quota key's limits, from the image.
type quotaTable struct {
	limits map[metadata.QuotaEntity]float64
	// Kafka's QuotaTypes bits: which entity kinds set a quota.
	clientIDQuotas, userQuotas, userClientIDQuotas bool
}

func newQuotaTable(img *metadata.Image, key string) *quotaTable {
	t := &quotaTable{limits: map[metadata.QuotaEntity]float64{}}
	for _, e := range img.Access.ClientQuotas.Entities() {
		v, ok := img.Access.ClientQuotas.Of(e)[key]
		if !ok || e.IP.Set {
			continue
		}
		t.limits[e] = v
		switch {
		case e.User.Set && e.ClientID.Set:
			t.userClientIDQuotas = true
		case e.User.Set:
			t.userQuotas = true
		default:
			t.clientIDQuotas = true
		}
	}
	return t
}

func (t *quotaTable) has(user, client metadata.QuotaName) bool {
	_, ok := t.limits[metadata.QuotaEntity{User: user, ClientID: client}]
	return ok
}

// tags are the metric tags of user and clientID, as Kafka's
// DefaultQuotaCallback.quotaMetricTags.
func (t *quotaTable) tags(user, clientID string) quotaTags {
	switch {
	case !t.userQuotas && !t.userClientIDQuotas:
		return quotaTags{"", clientID}
	case t.userQuotas && !t.clientIDQuotas && !t.userClientIDQuotas:
		return quotaTags{user, ""}
	case t.userClientIDQuotas && !t.clientIDQuotas && !t.userQuotas:
		return quotaTags{user, clientID}
	}
	u, c, def, none := metadata.Named(user), metadata.Named(clientID), metadata.DefaultName(), metadata.QuotaName{}
	switch {
	case t.has(u, c), t.has(u, def):
		return quotaTags{user, clientID}
	case t.has(u, none):
		return quotaTags{user, ""}
	case t.has(def, c), t.has(def, def):
		return quotaTags{user, clientID}
	case t.has(def, none):
		return quotaTags{user, ""}
	}
	return quotaTags{"", clientID}
}

// limit is the quota of tags, as DefaultQuotaCallback.quotaLimit; ok
// false when none applies.
func (t *quotaTable) limit(tags quotaTags) (float64, bool) {
	def, none := metadata.DefaultName(), metadata.QuotaName{}
	var chain [][2]metadata.QuotaName
	switch u, c := metadata.Named(tags.user), metadata.Named(tags.clientID); {
	case tags.user != "" && tags.clientID != "":
		chain = [][2]metadata.QuotaName{{u, c}, {u, def}, {def, c}, {def, def}}
	case tags.user != "":
		chain = [][2]metadata.QuotaName{{u, none}, {def, none}}
	case tags.clientID != "":
		chain = [][2]metadata.QuotaName{{none, c}, {none, def}}
	}
	for _, e := range chain {
		if v, ok := t.limits[metadata.QuotaEntity{User: e[0], ClientID: e[1]}]; ok {
			return v, true
		}
	}
	return 0, false
}

// quotaSensor is one (user, client-id) sensor of a quota type.
type quotaSensor struct {
	rate       quotaRate
	tokens     tokenBucket // the controller mutation quota's measure instead of rate
	lastRecord int64       // ms, for expiry
	throttle   throttleStats
}

// throttleStats are a sensor's throttle-time stats for metrics.
type throttleStats struct {
	count    int64
	totalMs  int64
	recorded float64 // everything recorded (bytes; percent-seconds for the request quota; partition mutations), for the metrics
}

// quotaSensorExpiry is how long an unused sensor is kept: Kafka's
// InactiveSensorExpirationTimeSeconds.
const quotaSensorExpiry = time.Hour

// clientQuotaManager enforces one quota key.
type clientQuotaManager struct {
	key      string
	samples  int
	windowMs int64
	// maxThrottleMs bounds the throttle time (the request quota's one
	// window, ClientRequestQuotaManager); 0: unbounded.
	maxThrottleMs int64

	table   atomic.Pointer[quotaTable] // nil: no quota of this key is set
	mu      sync.Mutex
	sensors quotaSensors[quotaTags]
}

func newClientQuotaManager(cfg QuotaConfig, key string) *clientQuotaManager {
	return &clientQuotaManager{key: key, samples: cfg.samples(), windowMs: cfg.windowMs()}
}

// update takes the quotas of img.
func (m *clientQuotaManager) update(img *metadata.Image) {
	t := newQuotaTable(img, m.key)
	if len(t.limits) == 0 {
		m.table.Store(nil)
		return
	}
	m.table.Store(t)
}

// enabled reports whether any quota of the key is set.
func (m *clientQuotaManager) enabled() bool { return m.table.Load() != nil }

// principalName is the name part of a KafkaPrincipal string (User:alice).
func principalName(principal string) string {
	if i := strings.IndexByte(principal, ':'); i >= 0 {
		return principal[i+1:]
	}
	return principal
}

// record adds value for the client at now and returns the throttle time
// in ms, 0 when the client is within its quota or has none, as Kafka's
// recordAndGetThrottleTimeMs.
func (m *clientQuotaManager) record(principal, clientID string, value float64, now time.Time) int64 {
	t := m.table.Load()
	if t == nil {
		return 0
	}
	tags := t.tags(principalName(principal), clientID)
	bound, ok := t.limit(tags)
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensor(tags, nowMs)
	s.rate.record(m.samples, m.windowMs, value, nowMs)
	s.throttle.recorded += value
	if !ok {
		return 0
	}
	rate, window := s.rate.measure(m.samples, m.windowMs, nowMs)
	if rate <= bound {
		return 0
	}
	ms := int64(math.Round((rate - bound) / bound * float64(window)))
	if m.maxThrottleMs > 0 {
		ms = min(ms, m.maxThrottleMs)
	}
	return ms
}

// unrecord takes back a value recorded at now (a throttled fetch is
// answered empty), as Kafka's unrecordQuotaSensor.
func (m *clientQuotaManager) unrecord(principal, clientID string, value float64, now time.Time) {
	t := m.table.Load()
	if t == nil {
		return
	}
	tags := t.tags(principalName(principal), clientID)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensor(tags, now.UnixMilli())
	s.rate.record(m.samples, m.windowMs, -value, now.UnixMilli())
	s.throttle.recorded -= value
}

// throttled counts a throttle of ms for the client's sensor.
func (m *clientQuotaManager) throttled(principal, clientID string, ms int64, now time.Time) {
	t := m.table.Load()
	if t == nil {
		return
	}
	tags := t.tags(principalName(principal), clientID)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensor(tags, now.UnixMilli())
	s.throttle.count++
	s.throttle.totalMs += ms
}

// maxValueInWindow is the most one request can record without being
// throttled for sure, Kafka's getMaxValueInQuotaWindow: the quota over
// samples-1 windows; MaxFloat64 without a quota.
func (m *clientQuotaManager) maxValueInWindow(principal, clientID string) float64 {
	t := m.table.Load()
	if t == nil {
		return math.MaxFloat64
	}
	bound, ok := t.limit(t.tags(principalName(principal), clientID))
	if !ok {
		return math.MaxFloat64
	}
	return bound * float64(m.samples-1) * float64(m.windowMs) / 1000
}

// sensor is the sensor of tags; m.mu is held.
func (m *clientQuotaManager) sensor(tags quotaTags, nowMs int64) *quotaSensor {
	return m.sensors.get(tags, nowMs)
}

// quotaSensors are sensors by key, each made when first asked for; those
// unused for quotaSensorExpiry go, checked at most once a minute, as
// Kafka's sensors expire. The zero value is empty; its owner's lock
// guards it.
type quotaSensors[K comparable] struct {
	byKey map[K]*quotaSensor
	swept int64
}

func (q *quotaSensors[K]) get(k K, nowMs int64) *quotaSensor {
	if nowMs-q.swept >= time.Minute.Milliseconds() {
		q.swept = nowMs
		for key, s := range q.byKey {
			if nowMs-s.lastRecord >= quotaSensorExpiry.Milliseconds() {
				delete(q.byKey, key)
			}
		}
	}
	s := q.byKey[k]
	if s == nil {
		if q.byKey == nil {
			q.byKey = map[K]*quotaSensor{}
		}
		s = &quotaSensor{}
		q.byKey[k] = s
	}
	s.lastRecord = nowMs
	return s
}

// clientQuotas are a broker's quota managers.
type clientQuotas struct {
	produce, fetch, request *clientQuotaManager
	mutation                *clientQuotaManager // controller_mutation_rate, mutationquota.go
	conns                   *connectionRates    // connquotas.go
}

func newClientQuotas(cfg QuotaConfig) *clientQuotas {
	q := &clientQuotas{
		produce: newClientQuotaManager(cfg, quotaProducerByteRate),
		fetch:   newClientQuotaManager(cfg, quotaConsumerByteRate),
		request: newClientQuotaManager(cfg, quotaRequestPercentage),
		mutation: newClientQuotaManager(QuotaConfig{WindowNum: cfg.ControllerWindowNum, WindowSize: cfg.ControllerWindowSize},
			quotaControllerMutationRate),
		conns: newConnectionRates(cfg),
	}
	q.request.maxThrottleMs = cfg.windowMs()
	return q
}

func (q *clientQuotas) update(img *metadata.Image) {
	q.produce.update(img)
	q.fetch.update(img)
	q.request.update(img)
	q.mutation.update(img)
	q.conns.update(img)
}

// EachClientQuota reports every sensor to the metrics (metrics.ClientQuotaStats).
func (q *clientQuotas) EachClientQuota(fn func(quotaType, user, clientID string, throttles, throttleMs int64, measured float64)) {
	for _, m := range []struct {
		name  string
		m     *clientQuotaManager
		scale float64
	}{{"Produce", q.produce, 1}, {"Fetch", q.fetch, 1}, {"Request", q.request, 0.01}, {"ControllerMutation", q.mutation, 1}} {
		m.m.mu.Lock()
		stats := make(map[quotaTags]throttleStats, len(m.m.sensors.byKey))
		for tags, s := range m.m.sensors.byKey {
			stats[tags] = s.throttle
		}
		m.m.mu.Unlock()
		for tags, s := range stats {
			fn(m.name, tags.user, tags.clientID, s.count, s.totalMs, s.recorded*m.scale)
		}
	}
}
