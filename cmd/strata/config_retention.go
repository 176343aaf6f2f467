package main

import (
	"strings"

	"github.com/strata-io/strata/storage"
)

// retentionSettings are the broker's retention keys (Kafka's
// ServerLogConfigs), the defaults of the topic configs retention.ms,
// retention.bytes and file.delete.delay.ms.
type retentionSettings struct {
	RetentionMs     int64 // log.retention.ms, else .minutes, else .hours (168); negative = unlimited (-1)
	RetentionBytes  int64 // log.retention.bytes, -1 = unlimited
	CheckIntervalMs int64 // log.retention.check.interval.ms
	SegmentDeleteMs int64 // log.segment.delete.delay.ms (file.delete.delay.ms of topics)
	NoDelete        bool  // log.cleanup.policy lacks delete
}

func defaultRetentionSettings() retentionSettings {
	return retentionSettings{
		RetentionMs:     defaultInt("log.retention.hours") * 3600 * 1000,
		RetentionBytes:  defaultInt("log.retention.bytes"),
		CheckIntervalMs: defaultInt("log.retention.check.interval.ms"),
		SegmentDeleteMs: defaultInt("log.segment.delete.delay.ms"),
	}
}

// loadRetentionSettings reads the retention keys with Kafka's validation:
// log.retention.ms wins over .minutes, which wins over .hours; a negative
// result means unlimited (-1), as Kafka's KafkaConfig.logRetentionTimeMillis.
func loadRetentionSettings(p *propReader, s *settings) {
	r := &s.Retention
	if hours, ok := p.integer("log.retention.hours"); ok {
		r.RetentionMs = hours * 3600 * 1000
	}
	if minutes, ok := p.integer("log.retention.minutes"); ok {
		r.RetentionMs = minutes * 60 * 1000
	}
	p.setInt64(&r.RetentionMs, "log.retention.ms")
	if r.RetentionMs < 0 {
		r.RetentionMs = -1
	}
	p.setInt64(&r.RetentionBytes, "log.retention.bytes")
	p.setInt64(&r.CheckIntervalMs, "log.retention.check.interval.ms")
	p.setInt64(&r.SegmentDeleteMs, "log.segment.delete.delay.ms")
	if v, ok := p.get("log.cleanup.policy"); ok {
		r.NoDelete = true
		for _, item := range strings.Split(v, ",") {
			if strings.TrimSpace(item) == "delete" {
				r.NoDelete = false
			}
		}
	}
}

// apply sets the retention fields of the storage defaults.
func (r retentionSettings) apply(c *storage.Config) {
	c.NoDelete = r.NoDelete
	c.RetentionMs = r.RetentionMs
	c.RetentionBytes = r.RetentionBytes
	c.FileDeleteDelayMs = r.SegmentDeleteMs
	c.RetentionCheckIntervalMs = r.CheckIntervalMs
}
