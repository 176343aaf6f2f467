package metrics

import "github.com/prometheus/client_golang/prometheus"

// Client quota metric names, Kafka's Produce, Fetch, Request and
// ControllerMutation quota sensors' throttle-time, byte-rate,
// request-time and mutation-rate as counters (rates and averages are the
// scraper's to take).
const (
	ClientQuotaThrottles      = "strata_client_quota_throttles_total"
	ClientQuotaThrottleTimeMs = "strata_client_quota_throttle_time_ms_total"
	ClientBytes               = "strata_client_bytes_total"
	ClientRequestTimeSeconds  = "strata_client_request_time_seconds_total"
	ClientPartitionMutations  = "strata_client_partition_mutations_total"
)

// ClientQuotaStats reports what the client quotas measured; the broker's
// quota managers implement it and hand themselves to SetClientQuotas.
type ClientQuotaStats interface {
	// EachClientQuota calls fn once per sensor: its quota type (Produce,
	// Fetch, Request or ControllerMutation), its user and client-id tags
	// ("" for a tag the quota does not tell apart, as Kafka's), the
	// throttles it caused and their total time, and what it measured:
	// bytes for Produce and Fetch, seconds of request handling for
	// Request, partitions created and deleted for ControllerMutation. It
	// must not block on the caller.
	EachClientQuota(fn func(quotaType, user, clientID string, throttles, throttleMs int64, measured float64))
}

type quotaSource struct{ q ClientQuotaStats }

// SetClientQuotas installs the source of the client quota metrics.
func (m *Metrics) SetClientQuotas(q ClientQuotaStats) {
	if m != nil {
		m.quotas.Store(&quotaSource{q})
	}
}

var (
	quotaLabels         = []string{"quota", "user", "client_id"}
	quotaThrottlesDesc  = prometheus.NewDesc(ClientQuotaThrottles, "Responses throttled for a client quota, by quota type and the quota's user and client-id tags.", quotaLabels, nil)
	quotaThrottleMsDesc = prometheus.NewDesc(ClientQuotaThrottleTimeMs, "Total throttle time given for a client quota, in ms.", quotaLabels, nil)
	clientBytesDesc     = prometheus.NewDesc(ClientBytes, "Bytes a client quota counted (Produce: request bytes; Fetch: response bytes), while a quota of the type is set.", quotaLabels, nil)
	clientRequestDesc   = prometheus.NewDesc(ClientRequestTimeSeconds, "Request handling time the request_percentage quota counted, while one is set.", []string{"user", "client_id"}, nil)
	clientMutationsDesc = prometheus.NewDesc(ClientPartitionMutations, "Partitions created and deleted that the controller_mutation_rate quota counted (on the node that decided them), while one is set.", []string{"user", "client_id"}, nil)
)

// quotaCollector emits the client quota sensors on scrape.
type quotaCollector struct{ m *Metrics }

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- quotaThrottlesDesc
	ch <- quotaThrottleMsDesc
	ch <- clientBytesDesc
	ch <- clientRequestDesc
	ch <- clientMutationsDesc
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.quotas.Load()
	if src == nil {
		return
	}
	src.q.EachClientQuota(func(quotaType, user, clientID string, throttles, throttleMs int64, measured float64) {
		ch <- prometheus.MustNewConstMetric(quotaThrottlesDesc, prometheus.CounterValue, float64(throttles), quotaType, user, clientID)
		ch <- prometheus.MustNewConstMetric(quotaThrottleMsDesc, prometheus.CounterValue, float64(throttleMs), quotaType, user, clientID)
		switch quotaType {
		case "Request":
			ch <- prometheus.MustNewConstMetric(clientRequestDesc, prometheus.CounterValue, measured, user, clientID)
		case "ControllerMutation":
			ch <- prometheus.MustNewConstMetric(clientMutationsDesc, prometheus.CounterValue, measured, user, clientID)
		default:
			ch <- prometheus.MustNewConstMetric(clientBytesDesc, prometheus.CounterValue, measured, quotaType, user, clientID)
		}
	})
}
