package main

import (
	"math"
	"strconv"
	"time"

	"github.com/strata-io/strata/broker"
)

// limitSettings are the connection limits, with Kafka's names and defaults
// (SocketServerConfigs).
type limitSettings struct {
	MaxConnections      int32 // max.connections
	MaxConnectionsPerIP int32 // max.connections.per.ip
	MaxIdleMs           int64 // connections.max.idle.ms; negative disables idle expiry

	MaxConnectionCreationRate        int32 // max.connection.creation.rate
	QuotaWindowNum                   int32 // quota.window.num
	QuotaWindowSizeSeconds           int32 // quota.window.size.seconds
	ControllerQuotaWindowNum         int32 // controller.quota.window.num
	ControllerQuotaWindowSizeSeconds int32 // controller.quota.window.size.seconds
}

func defaultLimitSettings() limitSettings {
	return limitSettings{
		MaxConnections:      int32(defaultInt("max.connections")),
		MaxConnectionsPerIP: int32(defaultInt("max.connections.per.ip")),
		MaxIdleMs:           defaultInt("connections.max.idle.ms"),

		MaxConnectionCreationRate:        int32(defaultInt("max.connection.creation.rate")),
		QuotaWindowNum:                   int32(defaultInt("quota.window.num")),
		QuotaWindowSizeSeconds:           int32(defaultInt("quota.window.size.seconds")),
		ControllerQuotaWindowNum:         int32(defaultInt("controller.quota.window.num")),
		ControllerQuotaWindowSizeSeconds: int32(defaultInt("controller.quota.window.size.seconds")),
	}
}

// loadLimitSettings reads the keys. Kafka accepts 0 for both counts (and 0
// for max.connections.per.ip only with max.connections.per.ip.overrides);
// Strata has neither overrides nor an inter-broker listener, so 0 would
// refuse every client and is rejected. connections.max.idle.ms has no
// validator in Kafka, and a negative value disables idle expiry as there;
// 0, which would close every connection at once, is rejected.
func loadLimitSettings(p *propReader, s *settings) {
	l := &s.Limits
	p.setInt32(&l.MaxConnections, "max.connections")
	p.setInt32(&l.MaxConnectionsPerIP, "max.connections.per.ip")
	p.setInt64(&l.MaxIdleMs, "connections.max.idle.ms")
	p.setInt32(&l.MaxConnectionCreationRate, "max.connection.creation.rate")
	p.setInt32(&l.QuotaWindowNum, "quota.window.num")
	p.setInt32(&l.QuotaWindowSizeSeconds, "quota.window.size.seconds")
	p.setInt32(&l.ControllerQuotaWindowNum, "controller.quota.window.num")
	p.setInt32(&l.ControllerQuotaWindowSizeSeconds, "controller.quota.window.size.seconds")
	if l.MaxIdleMs == 0 && p.err == nil {
		p.fail("connections.max.idle.ms", strconv.FormatInt(l.MaxIdleMs, 10),
			"0 would close every connection at once; use a negative value to never close idle connections")
	}
}

func (l limitSettings) config() broker.ConnLimits {
	idle := time.Duration(l.MaxIdleMs) * time.Millisecond
	if l.MaxIdleMs < 0 {
		idle = -1
	} else if l.MaxIdleMs > math.MaxInt64/int64(time.Millisecond) {
		idle = math.MaxInt64
	}
	return broker.ConnLimits{
		MaxConnections:      int(l.MaxConnections),
		MaxConnectionsPerIP: int(l.MaxConnectionsPerIP),
		MaxIdle:             idle,
	}
}

// quotas are the client quotas' windows, the controller mutation
// quota's, and the broker's connection creation rate (Kafka's default,
// 2^31-1, is none).
func (l limitSettings) quotas() broker.QuotaConfig {
	q := broker.QuotaConfig{WindowNum: int(l.QuotaWindowNum), WindowSize: time.Duration(l.QuotaWindowSizeSeconds) * time.Second,
		ControllerWindowNum: int(l.ControllerQuotaWindowNum), ControllerWindowSize: time.Duration(l.ControllerQuotaWindowSizeSeconds) * time.Second}
	if l.MaxConnectionCreationRate < math.MaxInt32 {
		q.MaxConnectionCreationRate = int(l.MaxConnectionCreationRate)
	}
	return q
}

// fetchSessionSlots is max.incremental.fetch.session.cache.slots as
// broker.Config takes it: Kafka's 0 (no sessions) is negative there.
func fetchSessionSlots(slots int32) int {
	if slots == 0 {
		return -1
	}
	return int(slots)
}
