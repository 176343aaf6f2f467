package broker

// Connection creation rates, as Kafka's ConnectionQuotas: the broker's
// max.connection.creation.rate across its client listeners, and each
// client address's connection_creation_rate (the quota of its IP entity,
// else of the default IP entity), each a Rate over the client quotas'
// windows (quotas.go). Over the broker's rate the accept loop waits the
// throttle time before it serves the connection and accepts the next, as
// Kafka's acceptor waits; over an address's rate the connection is not
// served and is closed once the throttle time has passed, its attempt not
// counted, as Kafka closes a throttled socket. Throttle times are at most
// one window.

import (
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
)

// ipQuotas are the connection_creation_rate quotas of the image: by
// address (in net.IP's string form) and the default.
type ipQuotas struct {
	byIP       map[string]float64
	def        float64
	hasDefault bool
}

// connectionRates enforces the connection creation rates.
type connectionRates struct {
	samples  int
	windowMs int64
	broker   float64 // max.connection.creation.rate; 0: none

	ips     atomic.Pointer[ipQuotas] // nil: no IP quota is set
	mu      sync.Mutex
	brokerR quotaRate
	perIP   quotaSensors[string]
}

func newConnectionRates(cfg QuotaConfig) *connectionRates {
	return &connectionRates{samples: cfg.samples(), windowMs: cfg.windowMs(), broker: float64(cfg.MaxConnectionCreationRate)}
}

// update takes the IP quotas of img.
func (r *connectionRates) update(img *metadata.Image) {
	q := &ipQuotas{byIP: map[string]float64{}}
	for _, e := range img.Access.ClientQuotas.Entities() {
		v, ok := img.Access.ClientQuotas.Of(e)[quotaConnectionCreationRate]
		switch {
		case !ok || !e.IP.Set:
		case e.IP.Default:
			q.def, q.hasDefault = v, true
		default:
			name := e.IP.Name
			if ip := net.ParseIP(name); ip != nil {
				name = ip.String()
			}
			q.byIP[name] = v
		}
	}
	if len(q.byIP) == 0 && !q.hasDefault {
		r.ips.Store(nil)
		return
	}
	r.ips.Store(q)
}

// throttle records one connection on rate bounded by bound at now and
// returns the throttle time in ms, at most one window.
func (r *connectionRates) throttle(rate *quotaRate, bound float64, now int64) int64 {
	rate.record(r.samples, r.windowMs, 1, now)
	v, window := rate.measure(r.samples, r.windowMs, now)
	if v <= bound {
		return 0
	}
	return min(int64(math.Round((v-bound)/bound*float64(window))), r.windowMs)
}

// brokerThrottle records a new connection against
// max.connection.creation.rate and returns how long to wait before
// serving it.
func (r *connectionRates) brokerThrottle(now time.Time) time.Duration {
	if r.broker <= 0 {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Duration(r.throttle(&r.brokerR, r.broker, now.UnixMilli())) * time.Millisecond
}

// ipThrottle records a new connection from ip against its
// connection_creation_rate and returns how long to hold it before it is
// closed; 0 serves it. A throttled connection is taken back from the
// rate.
func (r *connectionRates) ipThrottle(ip string, now time.Time) time.Duration {
	q := r.ips.Load()
	if q == nil {
		return 0
	}
	bound, ok := q.byIP[ip]
	if !ok {
		if bound, ok = q.def, q.hasDefault; !ok {
			return 0
		}
	}
	nowMs := now.UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.perIP.get(ip, nowMs)
	ms := r.throttle(&s.rate, bound, nowMs)
	if ms > 0 {
		s.rate.record(r.samples, r.windowMs, -1, nowMs)
	}
	return time.Duration(ms) * time.Millisecond
}

// waitConnectionRate holds the accept loop for the broker's connection
// creation rate; false when the broker shuts down meanwhile.
func (b *Broker) waitConnectionRate() bool {
	d := b.quotas.conns.brokerThrottle(time.Now())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-b.shutdown:
		return false
	}
}

// throttledByIP reports whether c's address is over its connection
// creation rate; if so c is closed once the throttle time has passed,
// with one log line.
func (b *Broker) throttledByIP(c *conn, ip string) bool {
	d := b.quotas.conns.ipThrottle(ip, time.Now())
	if d <= 0 {
		return false
	}
	b.logger.Info("throttled connection", zap.String("remote", c.remote), zap.Duration("closed after", d),
		zap.String("reason", "address over its connection_creation_rate quota"))
	time.AfterFunc(d, func() { c.nc.Close() })
	return true
}
