package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-io/strata/storage"
)

// Storage is what the partition collector reads on every scrape;
// *storage.Manager implements it.
type Storage interface {
	Topics() []*storage.Topic
	OfflinePartitions() []storage.OfflinePartition
}

type storageSource struct{ s Storage }

// SetStorage makes scrapes report every partition's offsets and whether it
// is offline, drop the traffic counters of topics that no longer exist, and
// /healthz answer 503 while a partition is offline.
func (m *Metrics) SetStorage(s Storage) {
	if m != nil {
		m.storage.Store(&storageSource{s})
	}
}

// GroupOffsets reports committed consumer group offsets. The group
// coordinator implements it and hands itself to SetGroupOffsets; each
// scrape then reports strata_group_committed_offset and strata_group_lag
// (high watermark minus committed offset, at least 0) for partitions that
// exist.
type GroupOffsets interface {
	// CommittedOffsets calls fn once per committed (group, topic,
	// partition). It must not block on the caller.
	CommittedOffsets(fn func(group, topic string, partition int32, offset int64))
}

type groupSource struct{ g GroupOffsets }

// SetGroupOffsets installs the source of committed offsets (the hook for
// group lag).
func (m *Metrics) SetGroupOffsets(g GroupOffsets) {
	if m != nil {
		m.groups.Store(&groupSource{g})
	}
}

var (
	topicBytesInDesc = prometheus.NewDesc(TopicBytesIn,
		"Record batch bytes appended by Produce, per topic.", []string{"topic"}, nil)
	topicRecordsInDesc = prometheus.NewDesc(TopicRecordsIn,
		"Records appended by Produce (the batch headers' record counts), per topic.", []string{"topic"}, nil)
	topicBytesOutDesc = prometheus.NewDesc(TopicBytesOut,
		"Record batch bytes sent in Fetch responses, per topic.", []string{"topic"}, nil)
	logEndDesc = prometheus.NewDesc(PartitionLogEndOffset,
		"Offset the next appended record will get.", []string{"topic", "partition"}, nil)
	logStartDesc = prometheus.NewDesc(PartitionLogStart,
		"First offset still in the log.", []string{"topic", "partition"}, nil)
	sizeDesc = prometheus.NewDesc(PartitionSizeBytes,
		"Bytes of the partition's segment files.", []string{"topic", "partition"}, nil)
	offlineDesc = prometheus.NewDesc(PartitionOffline,
		"1 while the partition's log has failed (a write error, e.g. a full disk) and refuses writes, else 0.",
		[]string{"topic", "partition"}, nil)
	highWatermarkDesc = prometheus.NewDesc(PartitionHighWatermark,
		"Offset up to which records are visible to consumers.", []string{"topic", "partition"}, nil)
	groupOffsetDesc = prometheus.NewDesc(GroupCommittedOffset,
		"Offset a consumer group committed.", []string{"group", "topic", "partition"}, nil)
	groupLagDesc = prometheus.NewDesc(GroupLag,
		"High watermark minus the group's committed offset (0 when ahead).", []string{"group", "topic", "partition"}, nil)
)

// topicCollector emits the per-topic traffic counters.
type topicCollector struct{ m *Metrics }

func (c *topicCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- topicBytesInDesc
	ch <- topicRecordsInDesc
	ch <- topicBytesOutDesc
}

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	var exists map[string]bool
	if src := c.m.storage.Load(); src != nil {
		topics := src.s.Topics()
		exists = make(map[string]bool, len(topics))
		for _, t := range topics {
			exists[t.Name] = true
		}
	}
	c.m.topics.Range(func(k, v any) bool {
		name, s := k.(string), v.(*TopicStats)
		if exists != nil && !exists[name] {
			c.m.topics.Delete(name)
			return true
		}
		ch <- prometheus.MustNewConstMetric(topicBytesInDesc, prometheus.CounterValue, float64(s.bytesIn.Load()), name)
		ch <- prometheus.MustNewConstMetric(topicRecordsInDesc, prometheus.CounterValue, float64(s.recordsIn.Load()), name)
		ch <- prometheus.MustNewConstMetric(topicBytesOutDesc, prometheus.CounterValue, float64(s.bytesOut.Load()), name)
		return true
	})
}

// storageCollector reads partition offsets, and group offsets, on scrape.
type storageCollector struct{ m *Metrics }

func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- logEndDesc
	ch <- logStartDesc
	ch <- highWatermarkDesc
	ch <- sizeDesc
	ch <- offlineDesc
	ch <- groupOffsetDesc
	ch <- groupLagDesc
}

type topicPartition struct {
	topic     string
	partition int32
}

func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.m.storage.Load()
	if src == nil {
		return
	}
	groups := c.m.groups.Load()
	var hws map[topicPartition]int64
	if groups != nil {
		hws = make(map[topicPartition]int64)
	}
	for _, t := range src.s.Topics() {
		for _, p := range t.Partitions() {
			part := strconv.Itoa(int(p.Index))
			hw := p.Log.HighWatermark()
			ch <- prometheus.MustNewConstMetric(logEndDesc, prometheus.GaugeValue, float64(p.Log.LogEndOffset()), t.Name, part)
			ch <- prometheus.MustNewConstMetric(logStartDesc, prometheus.GaugeValue, float64(p.Log.LogStartOffset()), t.Name, part)
			ch <- prometheus.MustNewConstMetric(highWatermarkDesc, prometheus.GaugeValue, float64(hw), t.Name, part)
			ch <- prometheus.MustNewConstMetric(sizeDesc, prometheus.GaugeValue, float64(p.Log.Size()), t.Name, part)
			offline := 0.0
			if p.Log.Failed() != nil {
				offline = 1
			}
			ch <- prometheus.MustNewConstMetric(offlineDesc, prometheus.GaugeValue, offline, t.Name, part)
			if hws != nil {
				hws[topicPartition{t.Name, p.Index}] = hw
			}
		}
	}
	if groups == nil {
		return
	}
	groups.g.CommittedOffsets(func(group, topic string, partition int32, offset int64) {
		hw, ok := hws[topicPartition{topic, partition}]
		if !ok {
			return
		}
		part := strconv.Itoa(int(partition))
		ch <- prometheus.MustNewConstMetric(groupOffsetDesc, prometheus.GaugeValue, float64(offset), group, topic, part)
		ch <- prometheus.MustNewConstMetric(groupLagDesc, prometheus.GaugeValue, float64(max(hw-offset, 0)), group, topic, part)
	})
}
