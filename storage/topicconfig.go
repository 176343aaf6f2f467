package storage

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// topicConfigKind is how a Kafka topic config value is parsed and validated
// (Kafka's ConfigDef type plus its validator).
type topicConfigKind struct {
	parse func(v string) (int64, error) // nil for non-integer kinds
	min   int64
	enum  []string // allowed values (lower case when fold); for lists, allowed items
	list  bool     // comma-separated list
	fold  bool     // case-insensitive, as Kafka parses booleans
	ratio bool     // a double in [0, 1]
}

func intKind(min int64) topicConfigKind {
	return topicConfigKind{parse: parseInt32, min: min}
}

func longKind(min int64) topicConfigKind {
	return topicConfigKind{parse: parseInt64, min: min}
}

var (
	boolKind  = topicConfigKind{enum: []string{"true", "false"}, fold: true}
	ratioKind = topicConfigKind{ratio: true}
	anyKind   = topicConfigKind{}
)

func parseInt32(v string) (int64, error) { return strconv.ParseInt(v, 10, 32) }
func parseInt64(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }

// topicConfigs lists the Kafka topic-level configs Strata accepts, with
// Kafka's validation (LogConfig's ConfigDef). Only the ones applied in
// WithTopicConfigs change behaviour; the rest are kept for DescribeConfigs.
var topicConfigs = map[string]topicConfigKind{
	// Applied.
	"segment.bytes":             intKind(14), // LegacyRecord.RECORD_OVERHEAD_V0
	"segment.ms":                longKind(1),
	"index.interval.bytes":      intKind(0),
	"segment.index.bytes":       intKind(4),
	"max.message.bytes":         intKind(0),
	"flush.messages":            longKind(1),
	"flush.ms":                  longKind(0),
	"cleanup.policy":            {list: true, enum: []string{"compact", "delete"}},
	"delete.retention.ms":       longKind(0),
	"min.compaction.lag.ms":     longKind(0),
	"min.cleanable.dirty.ratio": ratioKind,
	// Accepted and kept.
	"compression.type":                        {enum: []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}},
	"compression.gzip.level":                  intKind(math.MinInt32),
	"compression.lz4.level":                   intKind(math.MinInt32),
	"compression.zstd.level":                  intKind(math.MinInt32),
	"file.delete.delay.ms":                    longKind(0),
	"follower.replication.throttled.replicas": {list: true},
	"leader.replication.throttled.replicas":   {list: true},
	"local.retention.bytes":                   longKind(-2),
	"local.retention.ms":                      longKind(-2),
	"max.compaction.lag.ms":                   longKind(1),
	"message.downconversion.enable":           boolKind,
	"message.format.version":                  anyKind,
	"message.timestamp.after.max.ms":          longKind(0),
	"message.timestamp.before.max.ms":         longKind(0),
	"message.timestamp.difference.max.ms":     longKind(0),
	"message.timestamp.type":                  {enum: []string{"CreateTime", "LogAppendTime"}},
	"min.insync.replicas":                     intKind(1),
	"preallocate":                             boolKind,
	"remote.log.copy.disable":                 boolKind,
	"remote.log.delete.on.disable":            boolKind,
	"remote.storage.enable":                   boolKind,
	"retention.bytes":                         longKind(math.MinInt64),
	"retention.ms":                            longKind(-1),
	"segment.jitter.ms":                       longKind(0),
	"unclean.leader.election.enable":          boolKind,
}

func invalidConfig(key, value, why string) error {
	return fmt.Errorf("topic config %s=%q: %s: %w", key, value, why, kerr.InvalidConfig)
}

// validateTopicConfig checks one value and returns its number for numeric
// kinds. Like Kafka's ConfigDef, surrounding whitespace is ignored and
// booleans are case-insensitive.
func validateTopicConfig(key, raw string) (int64, error) {
	kind, ok := topicConfigs[key]
	if !ok {
		return 0, fmt.Errorf("unknown topic config %q: %w", key, kerr.InvalidConfig)
	}
	v := strings.TrimSpace(raw)
	switch {
	case kind.parse != nil:
		n, err := kind.parse(v)
		if err != nil {
			return 0, invalidConfig(key, raw, "not a valid number")
		}
		if n < kind.min {
			return 0, invalidConfig(key, raw, fmt.Sprintf("value must be at least %d", kind.min))
		}
		return n, nil
	case kind.ratio:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, invalidConfig(key, raw, "value must be a number between 0 and 1")
		}
	case kind.list:
		if v == "" {
			break
		}
		for _, item := range strings.Split(v, ",") {
			if err := checkEnum(key, raw, strings.TrimSpace(item), kind.enum); err != nil {
				return 0, err
			}
		}
	case kind.fold:
		if err := checkEnum(key, raw, strings.ToLower(v), kind.enum); err != nil {
			return 0, err
		}
	default:
		if err := checkEnum(key, raw, v, kind.enum); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

func checkEnum(key, raw, v string, allowed []string) error {
	if len(allowed) == 0 {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return invalidConfig(key, raw, "must be one of "+strings.Join(allowed, ", "))
}

// WithTopicConfigs overlays Kafka topic-level configs on c. segment.bytes,
// segment.ms, index.interval.bytes, segment.index.bytes, max.message.bytes,
// flush.messages, flush.ms, cleanup.policy (Compact when it lists
// "compact"), delete.retention.ms, min.compaction.lag.ms and
// min.cleanable.dirty.ratio, retention.ms, retention.bytes (NoDelete when
// cleanup.policy lacks "delete") and file.delete.delay.ms change the
// returned Config; the other known
// Kafka topic configs are validated and otherwise ignored (the caller keeps
// the map). An unknown key or an invalid value yields kerr.InvalidConfig
// wrapped with a message naming the key. Keys are checked in sorted order so
// the reported key is deterministic.
func (c Config) WithTopicConfigs(m map[string]string) (Config, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n, err := validateTopicConfig(k, m[k])
		if err != nil {
			return c, err
		}
		switch k {
		case "segment.bytes":
			c.SegmentBytes = n
		case "segment.ms":
			c.SegmentMs = n
		case "index.interval.bytes":
			c.IndexIntervalBytes = int(n)
		case "segment.index.bytes":
			c.MaxIndexSize = int(n)
		case "max.message.bytes":
			c.MaxMessageBytes = int(n)
		case "flush.messages":
			c.FlushIntervalMessages = n
		case "flush.ms":
			c.FlushIntervalMs = n
		case "cleanup.policy":
			c.Compact, c.NoDelete = false, true
			for _, item := range strings.Split(m[k], ",") {
				switch strings.TrimSpace(item) {
				case "compact":
					c.Compact = true
				case "delete":
					c.NoDelete = false
				}
			}
		case "message.timestamp.type":
			c.CheckTimestamps = strings.TrimSpace(m[k]) == "CreateTime"
		case "message.timestamp.before.max.ms":
			c.TimestampBeforeMaxMs = n
		case "message.timestamp.after.max.ms":
			c.TimestampAfterMaxMs = n
		case "delete.retention.ms":
			c.DeleteRetentionMs = n
		case "min.compaction.lag.ms":
			c.MinCompactionLagMs = n
		case "retention.ms":
			c.RetentionMs = n
		case "retention.bytes":
			c.RetentionBytes = n
		case "file.delete.delay.ms":
			c.FileDeleteDelayMs = n
		case "min.cleanable.dirty.ratio":
			c.MinCleanableDirtyRatio, _ = strconv.ParseFloat(strings.TrimSpace(m[k]), 64)
		}
	}
	return c, nil
}
