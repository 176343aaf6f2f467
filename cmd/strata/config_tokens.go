package main

import (
	"time"

	"github.com/strata-io/strata/broker"
)

// tokenSettings are the delegation token keys, with Kafka's names, defaults
// and ranges.
type tokenSettings struct {
	SecretKey       string // delegation.token.secret.key
	MaxLifetimeMs   int64  // delegation.token.max.lifetime.ms
	ExpiryTimeMs    int64  // delegation.token.expiry.time.ms
	CheckIntervalMs int64  // delegation.token.expiry.check.interval.ms
}

func defaultTokenSettings() tokenSettings {
	return tokenSettings{
		MaxLifetimeMs:   defaultInt("delegation.token.max.lifetime.ms"),
		ExpiryTimeMs:    defaultInt("delegation.token.expiry.time.ms"),
		CheckIntervalMs: defaultInt("delegation.token.expiry.check.interval.ms"),
	}
}

func loadTokenSettings(p *propReader, s *settings) {
	t := &s.Tokens
	if v, ok := p.get("delegation.token.secret.key"); ok {
		t.SecretKey = v
	}
	p.setInt64(&t.MaxLifetimeMs, "delegation.token.max.lifetime.ms")
	p.setInt64(&t.ExpiryTimeMs, "delegation.token.expiry.time.ms")
	p.setInt64(&t.CheckIntervalMs, "delegation.token.expiry.check.interval.ms")
}

func (t tokenSettings) config() broker.DelegationTokenConfig {
	return broker.DelegationTokenConfig{
		SecretKey:     t.SecretKey,
		MaxLifetime:   time.Duration(t.MaxLifetimeMs) * time.Millisecond,
		ExpiryTime:    time.Duration(t.ExpiryTimeMs) * time.Millisecond,
		CheckInterval: time.Duration(t.CheckIntervalMs) * time.Millisecond,
	}
}
