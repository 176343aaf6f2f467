package storage

import (
	"errors"
	"math"
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

// TestWithTopicConfigsRejects: an unknown key or a value Kafka's ConfigDef
// refuses is INVALID_CONFIG with Kafka's message word for word (4.1.1's).
func TestWithTopicConfigsRejects(t *testing.T) {
	for _, tc := range []struct{ key, value, msg string }{
		{"segment.bytes", "13", "Invalid value 13 for configuration segment.bytes: Value must be at least 14"},
		{"segment.bytes", "4294967296", "Invalid value 4294967296 for configuration segment.bytes: Not a number of type INT"}, // does not fit Kafka's INT
		{"segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number of type INT"},
		{"segment.ms", " 0 ", "Invalid value 0 for configuration segment.ms: Value must be at least 1"},
		{"segment.index.bytes", "3", "Invalid value 3 for configuration segment.index.bytes: Value must be at least 4"},
		{"flush.messages", "0", "Invalid value 0 for configuration flush.messages: Value must be at least 1"},
		{"flush.ms", "-1", "Invalid value -1 for configuration flush.ms: Value must be at least 0"},
		{"max.message.bytes", "-1", "Invalid value -1 for configuration max.message.bytes: Value must be at least 0"},
		{"retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"retention.ms", "1d", "Invalid value 1d for configuration retention.ms: Not a number of type LONG"},
		{"cleanup.policy", "compact,forever", "Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete"},
		{"compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"},
		{"min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{"min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", "-1e-4", "Invalid value -1.0E-4 for configuration min.cleanable.dirty.ratio: Value must be at least 0"},
		{"min.cleanable.dirty.ratio", "half", "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"},
		{"message.timestamp.type", "createtime", "Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"no.such.config", "1", "Unknown topic config name: no.such.config"},
	} {
		_, err := DefaultConfig().WithTopicConfigs(map[string]string{tc.key: tc.value, "segment.jitter.ms": "10"})
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s=%s: error %v, want InvalidConfig", tc.key, tc.value, err)
			continue
		}
		if err.Error() != tc.msg {
			t.Errorf("%s=%s: error %q, want Kafka's %q", tc.key, tc.value, err, tc.msg)
		}
	}
}
