package main

import (
	"errors"
	"reflect"
	"testing"

	"go.uber.org/zap"

	"github.com/strata-io/strata/storage"
)

func TestRetentionSettings(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  retentionSettings
	}{
		{nil, retentionSettings{RetentionMs: 604800000, RetentionBytes: -1, CheckIntervalMs: 300000, SegmentDeleteMs: 60000}},
		{map[string]string{"log.retention.hours": "1"}, retentionSettings{RetentionMs: 3600000, RetentionBytes: -1, CheckIntervalMs: 300000, SegmentDeleteMs: 60000}},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"}, retentionSettings{RetentionMs: 120000, RetentionBytes: -1, CheckIntervalMs: 300000, SegmentDeleteMs: 60000}},
		{map[string]string{"log.retention.minutes": "2", "log.retention.ms": "5"}, retentionSettings{RetentionMs: 5, RetentionBytes: -1, CheckIntervalMs: 300000, SegmentDeleteMs: 60000}},
		{map[string]string{"log.retention.ms": "-1", "log.retention.bytes": "1000", "log.retention.check.interval.ms": "10",
			"log.segment.delete.delay.ms": "0", "log.cleanup.policy": "compact"},
			retentionSettings{RetentionMs: -1, RetentionBytes: 1000, CheckIntervalMs: 10, SegmentDeleteMs: 0, NoDelete: true}},
		{map[string]string{"log.retention.hours": "-5", "log.cleanup.policy": "compact,delete"}, retentionSettings{RetentionMs: -1, RetentionBytes: -1, CheckIntervalMs: 300000, SegmentDeleteMs: 60000}},
	}
	for _, c := range cases {
		s, err := loadSettings(c.props, zap.NewNop())
		if err != nil {
			t.Fatalf("%v: %v", c.props, err)
		}
		if !reflect.DeepEqual(s.Retention, c.want) {
			t.Errorf("%v: got %+v, want %+v", c.props, s.Retention, c.want)
		}
	}
	for key, bad := range map[string]string{
		"log.retention.ms": "x", "log.retention.hours": "1.5", "log.retention.minutes": "99999999999",
		"log.retention.bytes": "", "log.retention.check.interval.ms": "0", "log.segment.delete.delay.ms": "-1",
	} {
		_, err := loadSettings(map[string]string{key: bad}, zap.NewNop())
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != key {
			t.Errorf("%s=%q: %v, want a config error naming the key", key, bad, err)
		}
	}
	if keyKind("log.retention.check.interval.ms") != "implemented" || keyKind("log.segment.delete.delay.ms") != "implemented" {
		t.Error("retention keys not listed as implemented")
	}
}

func TestRetentionSettingsReachStorage(t *testing.T) {
	props := map[string]string{"log.retention.minutes": "3", "log.retention.bytes": "77", "log.segment.delete.delay.ms": "5"}
	s, err := loadSettings(props, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	cfg := brokerConfig(s, false, buildInfo{})
	if cfg.Log.RetentionMs != 180000 || cfg.Log.RetentionBytes != 77 || cfg.Log.FileDeleteDelayMs != 5 ||
		cfg.Log.RetentionCheckIntervalMs != 300000 || cfg.Log.NoDelete {
		t.Fatalf("storage config %+v", cfg.Log)
	}
	// Kafka's defaults reach storage when nothing is set.
	s, _ = loadSettings(nil, zap.NewNop())
	d := storage.DefaultConfig()
	if got := brokerConfig(s, false, buildInfo{}).Log; got.RetentionMs != d.RetentionMs || got.RetentionBytes != d.RetentionBytes || got.FileDeleteDelayMs != d.FileDeleteDelayMs {
		t.Fatalf("defaults %+v", got)
	}
}
