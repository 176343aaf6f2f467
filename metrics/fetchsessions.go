package metrics

import "github.com/prometheus/client_golang/prometheus"

// Fetch session cache metric names: Kafka's FetchSessionCache gauges
// NumIncrementalFetchSessions and NumIncrementalFetchPartitionsCached,
// and its IncrementalFetchSessionEvictionsPerSec meter as a counter (the
// rate is the scraper's to take).
const (
	IncrementalFetchSessions         = "strata_incremental_fetch_sessions"
	IncrementalFetchPartitionsCached = "strata_incremental_fetch_partitions_cached"
	IncrementalFetchSessionEvictions = "strata_incremental_fetch_session_evictions_total"
)

// FetchSessionStats reports the broker's fetch session cache; the cache
// implements it and is handed to SetFetchSessions.
type FetchSessionStats interface {
	// Stats is the sessions cached, the partitions they hold, and the
	// sessions evicted so far.
	Stats() (sessions, partitions, evictions int64)
}

type fetchSessionSource struct{ s FetchSessionStats }

// SetFetchSessions installs the source of the fetch session metrics.
func (m *Metrics) SetFetchSessions(s FetchSessionStats) {
	if m != nil {
		m.fetchSessions.Store(&fetchSessionSource{s})
	}
}

var (
	fetchSessionsDesc  = prometheus.NewDesc(IncrementalFetchSessions, "Incremental fetch sessions (KIP-227) in the broker's cache (Kafka's NumIncrementalFetchSessions).", nil, nil)
	fetchPartsDesc     = prometheus.NewDesc(IncrementalFetchPartitionsCached, "Partitions the cached fetch sessions hold (Kafka's NumIncrementalFetchPartitionsCached).", nil, nil)
	fetchEvictionsDesc = prometheus.NewDesc(IncrementalFetchSessionEvictions, "Fetch sessions evicted to make room for new ones (Kafka's IncrementalFetchSessionEvictionsPerSec).", nil, nil)
)

// fetchSessionCollector emits the cache's metrics on scrape.
type fetchSessionCollector struct{ m *Metrics }

func (c *fetchSessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fetchSessionsDesc
	ch <- fetchPartsDesc
	ch <- fetchEvictionsDesc
}

func (c *fetchSessionCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.fetchSessions.Load()
	if src == nil {
		return
	}
	sessions, partitions, evictions := src.s.Stats()
	ch <- prometheus.MustNewConstMetric(fetchSessionsDesc, prometheus.GaugeValue, float64(sessions))
	ch <- prometheus.MustNewConstMetric(fetchPartsDesc, prometheus.GaugeValue, float64(partitions))
	ch <- prometheus.MustNewConstMetric(fetchEvictionsDesc, prometheus.CounterValue, float64(evictions))
}
