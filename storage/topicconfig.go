package storage

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/internal/configdef"
)

func invalidConfig(key, value, why string) error {
	return fmt.Errorf("topic config %s=%q: %s: %w", key, value, why, kerr.InvalidConfig)
}

// validateTopicConfig checks one value against its definition
// (configdef) and returns its number for Int and Long configs. Like Kafka's
// ConfigDef, surrounding whitespace is ignored and booleans are
// case-insensitive.
func validateTopicConfig(key, raw string) (int64, error) {
	def, ok := configdef.TopicDef(key)
	if !ok {
		return 0, fmt.Errorf("unknown topic config %q: %w", key, kerr.InvalidConfig)
	}
	v := strings.TrimSpace(raw)
	switch def.Type {
	case configdef.Int, configdef.Long:
		bits := 64
		if def.Type == configdef.Int {
			bits = 32
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return 0, invalidConfig(key, raw, "not a valid number")
		}
		if n < def.Check.Min {
			return 0, invalidConfig(key, raw, fmt.Sprintf("value must be at least %d", def.Check.Min))
		}
		return n, nil
	case configdef.Double:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, invalidConfig(key, raw, "value must be a number between 0 and 1")
		}
	case configdef.List:
		if v == "" {
			break
		}
		for _, item := range strings.Split(v, ",") {
			if err := checkEnum(key, raw, strings.TrimSpace(item), def.Check.OneOf); err != nil {
				return 0, err
			}
		}
	case configdef.Boolean:
		if err := checkEnum(key, raw, strings.ToLower(v), []string{"true", "false"}); err != nil {
			return 0, err
		}
	default:
		if err := checkEnum(key, raw, v, def.Check.OneOf); err != nil {
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
// flush.messages, flush.ms, min.insync.replicas, cleanup.policy (Compact when it lists
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
		case "min.insync.replicas":
			c.MinInSyncReplicas = int(n)
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
