package storage

import "math"

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

// DefaultConfig returns Kafka's broker defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           1 << 30,
		SegmentMs:              7 * 24 * 60 * 60 * 1000,
		IndexIntervalBytes:     4096,
		MaxIndexSize:           10 << 20,
		MaxMessageBytes:        1048588,
		FlushIntervalMessages:  math.MaxInt64,
		FlushIntervalMs:        math.MaxInt64,
		DeleteRetentionMs:      24 * 60 * 60 * 1000,
		MinCleanableDirtyRatio: 0.5,
		CleanerBackoffMs:       15000,

		CheckTimestamps:      true,
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  60 * 60 * 1000,

		RetentionMs:              7 * 24 * 60 * 60 * 1000,
		RetentionBytes:           -1,
		FileDeleteDelayMs:        60000,
		RetentionCheckIntervalMs: 300000,
	}
}
