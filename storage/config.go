package storage

import "github.com/strata-io/strata/internal/configdef"

// Config holds the per-log settings. Each field names the Kafka broker
// setting and the topic-level override it mirrors.
type Config struct {
	SegmentBytes          int64 // log.segment.bytes / segment.bytes, default 1073741824
	SegmentMs             int64 // log.roll.ms / segment.ms, default 604800000
	IndexIntervalBytes    int   // log.index.interval.bytes / index.interval.bytes, 4096
	MaxIndexSize          int   // log.index.size.max.bytes / segment.index.bytes, 10485760
	MaxMessageBytes       int   // message.max.bytes / max.message.bytes, 1048588
	FlushIntervalMessages int64 // log.flush.interval.messages / flush.messages, math.MaxInt64
	FlushIntervalMs       int64 // log.flush.interval.ms / flush.ms, math.MaxInt64
	MinInSyncReplicas     int   // min.insync.replicas: the in-sync replicas an acks=all write needs, 1 (package replica reads it)

	// Compaction (cleaner.go).
	Compact                bool    // log.cleanup.policy / cleanup.policy contains "compact", default false
	DeleteRetentionMs      int64   // log.cleaner.delete.retention.ms / delete.retention.ms, 86400000
	MinCompactionLagMs     int64   // log.cleaner.min.compaction.lag.ms / min.compaction.lag.ms, 0
	MinCleanableDirtyRatio float64 // log.cleaner.min.cleanable.ratio / min.cleanable.dirty.ratio, 0.5

	// Retention (retention.go).
	NoDelete          bool  // log.cleanup.policy / cleanup.policy lacks "delete" (zero value: delete, Kafka's default)
	RetentionMs       int64 // log.retention.ms (.minutes, .hours) / retention.ms, 604800000; -1 = unlimited
	RetentionBytes    int64 // log.retention.bytes / retention.bytes, -1 = unlimited
	FileDeleteDelayMs int64 // log.segment.delete.delay.ms / file.delete.delay.ms, 60000

	// Timestamp bounds on client batches (Append), Kafka's LogValidator
	// check for CreateTime topics. The zero Config checks nothing;
	// DefaultConfig and the broker's settings turn the check on.
	CheckTimestamps      bool  // log.message.timestamp.type / message.timestamp.type is CreateTime (Kafka checks nothing for LogAppendTime)
	TimestampBeforeMaxMs int64 // log.message.timestamp.before.max.ms / message.timestamp.before.max.ms, math.MaxInt64
	TimestampAfterMaxMs  int64 // log.message.timestamp.after.max.ms / message.timestamp.after.max.ms, 3600000

	// Broker-only cleaner settings, read by the Manager from its defaults.
	CleanerDisable   bool  // !log.cleaner.enable (default enabled)
	CleanerBackoffMs int64 // log.cleaner.backoff.ms, 15000
	// RetentionCheckIntervalMs is log.retention.check.interval.ms (300000),
	// how often the Manager applies retention; broker-only.
	RetentionCheckIntervalMs int64
}

// kafkaDefaults is Kafka's broker defaults: every topic config's default
// (configdef) applied as a topic override would be, and the defaults of the
// broker-only settings.
var kafkaDefaults = func() Config {
	c := Config{
		CleanerBackoffMs:         mustBrokerDef("log.cleaner.backoff.ms").DefaultInt(),
		RetentionCheckIntervalMs: mustBrokerDef("log.retention.check.interval.ms").DefaultInt(),
	}
	c, err := c.WithTopicConfigs(configdef.TopicDefaults())
	if err != nil {
		panic("configdef: a topic config default is invalid: " + err.Error())
	}
	return c
}()

func mustBrokerDef(key string) configdef.Def {
	d, ok := configdef.BrokerDef(key)
	if !ok {
		panic("configdef has no broker config " + key)
	}
	return d
}

// DefaultConfig returns Kafka's broker defaults.
func DefaultConfig() Config { return kafkaDefaults }
