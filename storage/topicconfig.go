package storage

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/internal/kafkaerr"
)

// validateTopicConfig checks one topic config value against its
// definition (configdef) and returns its number for Int and Long configs;
// an unknown key is INVALID_CONFIG with Kafka's message
// (LogConfig.validateNames).
func validateTopicConfig(key, raw string) (int64, error) {
	def, ok := configdef.TopicDef(key)
	if !ok {
		return 0, kafkaerr.New(kerr.InvalidConfig, "Unknown topic config name: %s", key)
	}
	return validateConfig(def, raw)
}

// validateConfig checks a value as Kafka's ConfigDef parses and validates
// it: surrounding whitespace is ignored and booleans are case-insensitive.
// A value refused is INVALID_CONFIG with ConfigException's message
// ("Invalid value <value> for configuration <name>: <why>"), the value as
// Kafka prints it: as given when it does not parse, parsed when out of
// range, the item of a list that is not allowed.
func validateConfig(def configdef.Def, raw string) (int64, error) {
	v := strings.TrimSpace(raw)
	switch def.Type {
	case configdef.Int, configdef.Long:
		bits, typ := 64, "LONG"
		if def.Type == configdef.Int {
			bits, typ = 32, "INT"
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return 0, invalidValue(def.Name, raw, "Not a number of type "+typ)
		}
		if n < def.Check.Min {
			return 0, invalidValue(def.Name, strconv.FormatInt(n, 10), fmt.Sprintf("Value must be at least %d", def.Check.Min))
		}
		return n, nil
	case configdef.Double:
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
			return 0, invalidValue(def.Name, raw, "Not a number of type DOUBLE")
		case f < 0:
			return 0, invalidValue(def.Name, javaDouble(f), "Value must be at least 0")
		case f > 1:
			return 0, invalidValue(def.Name, javaDouble(f), "Value must be no more than 1")
		}
	case configdef.List:
		if v == "" {
			break
		}
		for _, item := range strings.Split(v, ",") {
			if err := checkEnum(def, strings.TrimSpace(item)); err != nil {
				return 0, err
			}
		}
	case configdef.Boolean:
		if b := strings.ToLower(v); b != "true" && b != "false" {
			return 0, invalidValue(def.Name, raw, "Expected value to be either true or false")
		}
	default:
		if err := checkEnum(def, v); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// invalidValue is Kafka's ConfigException(name, value, why) as a response
// carries it.
func invalidValue(name, value, why string) error {
	return kafkaerr.New(kerr.InvalidConfig, "Invalid value %s for configuration %s: %s", value, name, why)
}

// checkEnum is Kafka's ValidString.
func checkEnum(def configdef.Def, v string) error {
	if len(def.Check.OneOf) == 0 || slices.Contains(def.Check.OneOf, v) {
		return nil
	}
	return invalidValue(def.Name, v, "String must be one of: "+strings.Join(def.Check.OneOf, ", "))
}

// javaDouble is f as Java's Double.toString writes it, which Kafka's
// messages print: 2.0, 1.5E-4, 1.0E7, Infinity.
func javaDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mantissa, exp, _ := strings.Cut(strconv.FormatFloat(f, 'E', -1, 64), "E")
	if !strings.Contains(mantissa, ".") {
		mantissa += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mantissa + "E" + strconv.Itoa(e)
}

// WithTopicConfigs overlays Kafka topic-level configs on c. segment.bytes,
// segment.ms, index.interval.bytes, segment.index.bytes, max.message.bytes,
// flush.messages, flush.ms, min.insync.replicas, cleanup.policy (Compact when it lists
// "compact"), delete.retention.ms, min.compaction.lag.ms and
// min.cleanable.dirty.ratio, retention.ms, retention.bytes (NoDelete when
// cleanup.policy lacks "delete") and file.delete.delay.ms change the
// returned Config; the other known
// Kafka topic configs are validated and otherwise ignored (the caller keeps
// the map). An unknown key or an invalid value is kerr.InvalidConfig with
// Kafka's message, which names the key. Keys are checked in sorted order so
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

// ValidateConfig checks a value of a config Strata does not keep itself
// (a group's, whose storage is the metadata image) as validateConfig
// does.
func ValidateConfig(def configdef.Def, raw string) error {
	_, err := validateConfig(def, raw)
	return err
}
