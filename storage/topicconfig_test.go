package storage

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestWithTopicConfigsApplies(t *testing.T) {
	base := DefaultConfig()
	got, err := base.WithTopicConfigs(map[string]string{
		"segment.bytes":             "1048576",
		"segment.ms":                " 60000 ",
		"index.interval.bytes":      "0",
		"segment.index.bytes":       "4096",
		"max.message.bytes":         "2000000",
		"flush.messages":            "1",
		"flush.ms":                  "0",
		"retention.ms":              "-1",
		"cleanup.policy":            "compact,delete",
		"compression.type":          "zstd",
		"min.insync.replicas":       "2",
		"preallocate":               "TRUE",
		"message.timestamp.type":    "LogAppendTime",
		"min.cleanable.dirty.ratio": "0.25",
		"delete.retention.ms":       "1000",
		"min.compaction.lag.ms":     "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{SegmentBytes: 1048576, SegmentMs: 60000, IndexIntervalBytes: 0, MaxIndexSize: 4096,
		MaxMessageBytes: 2000000, FlushIntervalMessages: 1, FlushIntervalMs: 0, MinInSyncReplicas: 2,
		Compact: true, DeleteRetentionMs: 1000, MinCompactionLagMs: 5, MinCleanableDirtyRatio: 0.25, CleanerBackoffMs: 15000,
		RetentionMs: -1, RetentionBytes: -1, FileDeleteDelayMs: 60000, RetentionCheckIntervalMs: 300000,
		// LogAppendTime: Kafka stamps the batch and checks no bounds.
		CheckTimestamps: false, TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: 3600000}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if same, err := base.WithTopicConfigs(nil); err != nil || same != base {
		t.Fatalf("nil map changed config: %+v %v", same, err)
	}
}

func TestWithTopicConfigsRejects(t *testing.T) {
	for _, tc := range []struct{ key, value string }{
		{"segment.bytes", "13"},
		{"segment.bytes", "4294967296"}, // does not fit Kafka's INT
		{"segment.bytes", "abc"},
		{"segment.ms", "0"},
		{"segment.index.bytes", "3"},
		{"flush.messages", "0"},
		{"flush.ms", "-1"},
		{"max.message.bytes", "-1"},
		{"retention.ms", "-2"},
		{"cleanup.policy", "compact,forever"},
		{"compression.type", "brotli"},
		{"preallocate", "yes"},
		{"min.insync.replicas", "0"},
		{"min.cleanable.dirty.ratio", "1.5"},
		{"message.timestamp.type", "createtime"},
		{"no.such.config", "1"},
	} {
		_, err := DefaultConfig().WithTopicConfigs(map[string]string{tc.key: tc.value, "segment.jitter.ms": "10"})
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s=%s: error %v, want InvalidConfig", tc.key, tc.value, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s=%s: error %q does not name the key", tc.key, tc.value, err)
		}
	}
}
