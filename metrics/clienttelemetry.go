package metrics

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Client telemetry (KIP-714) metric names: the metrics clients push are
// served as one family per pushed name, ClientMetricPrefix followed by
// the name with every character Prometheus does not allow in a name made
// '_' (org.apache.kafka.producer.record.send.total is
// strata_client_metric_org_apache_kafka_producer_record_send_total),
// labelled by the client (ClientMetricLabels) and by the point's own
// attributes (topic, node_id, ...: the same rule, and attr_ before a key
// that would take one of the client's labels).
const (
	ClientMetricPrefix       = "strata_client_metric_"
	ClientTelemetryInstances = "strata_client_telemetry_instances"
	ClientTelemetryDropped   = "strata_client_telemetry_dropped_series_total"
)

// ClientMetricLabels are the labels naming the client a pushed series
// comes from.
var ClientMetricLabels = []string{"client_instance_id", "client_id", "client_software_name", "client_software_version"}

// ClientMetric is the latest value of one series a client pushed.
type ClientMetric struct {
	Name    string   // the pushed name
	Counter bool     // a monotonic sum, else a gauge
	Client  []string // the values of ClientMetricLabels
	Attrs   [][2]string
	Value   float64
}

// ClientTelemetryStats reports the series clients pushed; the broker's
// telemetry store implements it and hands itself to SetClientTelemetry.
type ClientTelemetryStats interface {
	// EachClientMetric calls fn for each series kept. It must not block
	// on the caller.
	EachClientMetric(fn func(ClientMetric))
	// TelemetryStats is the client instances known and the series not
	// kept for want of room so far.
	TelemetryStats() (instances int, dropped int64)
}

type clientTelemetrySource struct{ s ClientTelemetryStats }

// SetClientTelemetry installs the source of the client telemetry metrics.
func (m *Metrics) SetClientTelemetry(s ClientTelemetryStats) {
	if m != nil {
		m.telemetry.Store(&clientTelemetrySource{s})
	}
}

var (
	telemetryInstancesDesc = prometheus.NewDesc(ClientTelemetryInstances, "Client instances (KIP-714) the broker knows: those that asked for their subscription or pushed within their expiry.", nil, nil)
	telemetryDroppedDesc   = prometheus.NewDesc(ClientTelemetryDropped, "Pushed series not kept because a client or the broker had as many as it keeps.", nil, nil)
)

// telemetryCollector emits the pushed series on scrape. Their families are
// known only then, so it describes none (an unchecked collector).
type telemetryCollector struct{ m *Metrics }

func (c *telemetryCollector) Describe(chan<- *prometheus.Desc) {}

func (c *telemetryCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.telemetry.Load()
	if src == nil {
		return
	}
	instances, dropped := src.s.TelemetryStats()
	ch <- prometheus.MustNewConstMetric(telemetryInstancesDesc, prometheus.GaugeValue, float64(instances))
	ch <- prometheus.MustNewConstMetric(telemetryDroppedDesc, prometheus.CounterValue, float64(dropped))
	type family struct {
		counter bool
		labels  map[string]bool
		series  []ClientMetric
	}
	families := map[string]*family{}
	src.s.EachClientMetric(func(cm ClientMetric) {
		name := ClientMetricPrefix + promName(cm.Name)
		f := families[name]
		if f == nil {
			f = &family{counter: cm.Counter, labels: map[string]bool{}}
			families[name] = f
		}
		if f.counter != cm.Counter {
			return // one family has one type: the first seen keeps it
		}
		for _, a := range cm.Attrs {
			f.labels[attrLabel(a[0])] = true
		}
		f.series = append(f.series, cm)
	})
	for _, name := range slices.Sorted(maps.Keys(families)) {
		f := families[name]
		labels := append(slices.Clone(ClientMetricLabels), slices.Sorted(maps.Keys(f.labels))...)
		desc := prometheus.NewDesc(name, "The latest value clients pushed of their metric (KIP-714).", labels, nil)
		typ := prometheus.GaugeValue
		if f.counter {
			typ = prometheus.CounterValue
		}
		seen := map[string]bool{}
		for _, cm := range f.series {
			values := make([]string, len(labels))
			copy(values, cm.Client)
			for _, a := range cm.Attrs {
				values[slices.Index(labels, attrLabel(a[0]))] = a[1]
			}
			if key := strings.Join(values, "\x00"); !seen[key] {
				seen[key] = true
				ch <- prometheus.MustNewConstMetric(desc, typ, cm.Value, values...)
			}
		}
	}
}

// attrLabel is the label of a point's attribute.
func attrLabel(key string) string {
	l := promName(key)
	if slices.Contains(ClientMetricLabels, l) || strings.HasPrefix(l, "__") {
		return "attr_" + l
	}
	return l
}

// promName is s with every character outside [a-zA-Z0-9_] made '_', and
// '_' before a leading digit.
func promName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}
