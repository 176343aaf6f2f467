package main

import (
	"errors"
	"math"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
)

func TestLimitSettings(t *testing.T) {
	s, err := loadSettings(nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Limits.config(), (broker.ConnLimits{
		MaxConnections: math.MaxInt32, MaxConnectionsPerIP: math.MaxInt32, MaxIdle: 10 * time.Minute,
	}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}

	valid := []struct {
		props map[string]string
		want  broker.ConnLimits
	}{
		{map[string]string{"max.connections": "5", "max.connections.per.ip": "2", "connections.max.idle.ms": "250"},
			broker.ConnLimits{MaxConnections: 5, MaxConnectionsPerIP: 2, MaxIdle: 250 * time.Millisecond}},
		{map[string]string{"max.connections": " 2147483647 ", "connections.max.idle.ms": "-1"},
			broker.ConnLimits{MaxConnections: math.MaxInt32, MaxConnectionsPerIP: math.MaxInt32, MaxIdle: -1}},
		{map[string]string{"connections.max.idle.ms": "9223372036854775807"},
			broker.ConnLimits{MaxConnections: math.MaxInt32, MaxConnectionsPerIP: math.MaxInt32, MaxIdle: math.MaxInt64}},
	}
	for _, tt := range valid {
		s, err := loadSettings(tt.props, zap.NewNop())
		if err != nil {
			t.Errorf("%v: %v", tt.props, err)
			continue
		}
		if got := s.Limits.config(); got != tt.want {
			t.Errorf("%v: %+v, want %+v", tt.props, got, tt.want)
		}
	}

	invalid := []struct{ key, value string }{
		{"max.connections", "0"},
		{"max.connections", "-1"},
		{"max.connections", "2147483648"},
		{"max.connections", "many"},
		{"max.connections.per.ip", "0"},
		{"max.connections.per.ip", "1.5"},
		{"connections.max.idle.ms", "0"},
		{"connections.max.idle.ms", "10m"},
	}
	for _, tt := range invalid {
		_, err := loadSettings(map[string]string{tt.key: tt.value}, zap.NewNop())
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != tt.key || ce.Value != tt.value {
			t.Errorf("%s=%q: error %v, want a configError naming the key and value", tt.key, tt.value, err)
		}
	}
	for _, k := range []string{"max.connections", "max.connections.per.ip", "connections.max.idle.ms"} {
		if kind := keyKind(k); kind != "implemented" {
			t.Errorf("keyKind(%s) = %s, want implemented", k, kind)
		}
	}
}

// TestQuotaSettings reads quota.window.num, quota.window.size.seconds,
// controller.quota.window.num, controller.quota.window.size.seconds and
// max.connection.creation.rate, whose Kafka default 2^31-1 is no limit.
func TestQuotaSettings(t *testing.T) {
	s, err := loadSettings(nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Limits.quotas(), (broker.QuotaConfig{WindowNum: 11, WindowSize: time.Second, ControllerWindowNum: 11, ControllerWindowSize: time.Second}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	s, err = loadSettings(map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "3", "max.connection.creation.rate": "50",
		"controller.quota.window.num": "4", "controller.quota.window.size.seconds": "5"}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Limits.quotas(), (broker.QuotaConfig{WindowNum: 2, WindowSize: 3 * time.Second, ControllerWindowNum: 4, ControllerWindowSize: 5 * time.Second,
		MaxConnectionCreationRate: 50}); got != want {
		t.Errorf("set: %+v, want %+v", got, want)
	}
	for _, k := range []string{"quota.window.num", "quota.window.size.seconds", "controller.quota.window.num", "controller.quota.window.size.seconds", "max.connection.creation.rate"} {
		if _, err := loadSettings(map[string]string{k: "0"}, zap.NewNop()); err == nil {
			t.Errorf("%s=0 accepted", k)
		}
	}
}
