package broker

// The latest values of the metrics clients push (telemetry.go), served on
// /metrics as strata_client_metric_<name> series labelled by the client
// and the point's attributes (metrics/clienttelemetry.go). A gauge's
// series holds the last value pushed, a cumulative sum's too, a delta
// sum's the sum of the deltas pushed. Cardinality is bounded: a client
// instance keeps at most maxClientSeries series and the broker
// maxTelemetrySeries in all (a new series beyond either is dropped and
// counted), and a client's series go when it expires or the connection it
// was created on closes (telemetry.go).

import (
	"strings"

	"github.com/strata-io/strata/internal/otlp"
	"github.com/strata-io/strata/metrics"
)

const (
	maxClientSeries    = 2000
	maxTelemetrySeries = 100000
)

// clientSeries is one series a client pushed.
type clientSeries struct {
	name    string
	counter bool
	attrs   [][2]string
	value   float64
}

func seriesKey(p otlp.Point) string {
	var b strings.Builder
	b.WriteString(p.Metric)
	for _, a := range p.Attrs {
		b.WriteByte(0)
		b.WriteString(a.Key)
		b.WriteByte(0)
		b.WriteString(a.Value)
	}
	return b.String()
}

// record keeps points as ci's latest values. t.mu is held.
func (t *telemetry) record(ci *clientInstance, points []otlp.Point) {
	if ci.series == nil {
		ci.series = map[string]*clientSeries{}
	}
	for _, p := range points {
		key := seriesKey(p)
		s := ci.series[key]
		if s == nil {
			if len(ci.series) >= maxClientSeries || t.series >= maxTelemetrySeries {
				t.dropped++
				continue
			}
			s = &clientSeries{name: p.Metric, counter: p.Sum && p.Monotonic}
			for _, a := range p.Attrs {
				s.attrs = append(s.attrs, [2]string{a.Key, a.Value})
			}
			ci.series[key] = s
			t.series++
		}
		if p.Sum && p.Delta {
			s.value += p.Value
		} else {
			s.value = p.Value
		}
	}
}

// EachClientMetric calls fn with each series of the client instances
// that have not expired.
func (t *telemetry) EachClientMetric(fn func(metrics.ClientMetric)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.now())
	for _, ci := range t.instances {
		client := []string{ci.attrs["client_instance_id"], ci.attrs["client_id"], ci.attrs["client_software_name"], ci.attrs["client_software_version"]}
		for _, s := range ci.series {
			fn(metrics.ClientMetric{Name: s.name, Counter: s.counter, Client: client, Attrs: s.attrs, Value: s.value})
		}
	}
}

// TelemetryStats is the client instances known and the series dropped.
func (t *telemetry) TelemetryStats() (int, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.now())
	return len(t.instances), t.dropped
}
