package storage

import (
	"time"

	"go.uber.org/zap"
)

// EventListener is told what storage does, as pebble's EventListener: a
// struct of optional funcs, each nil one skipped. Storage reports through it
// instead of logging these events itself; LoggingListener writes the log
// lines, and TeeEventListener adds more listeners (metrics). Funcs are
// called synchronously, OnLogFailed, OnSegmentRolled and OnSegmentsDeleted
// under the log's lock, so none may block or call back into the log.
type EventListener struct {
	// OnRecovered: a log dir's partitions are open, recovered where the
	// previous run did not shut down cleanly.
	OnRecovered func(RecoveryInfo)
	// OnLogTruncated: a log's recovery (at open or revival) cut an invalid
	// tail and dropped the segments after it.
	OnLogTruncated func(LogTruncationInfo)
	// OnSegmentRolled: a log started a new active segment.
	OnSegmentRolled func(SegmentRollInfo)
	// OnLogFailed: a write, fsync or truncate failed; the log refuses
	// writes until revived.
	OnLogFailed func(LogFailureInfo)
	// OnLogRevived: a failed log was recovered in place and takes writes.
	OnLogRevived func(LogRevivalInfo)
	// OnSegmentsDeleted: retention or DeleteRecords renamed segments
	// .deleted; they are removed after file.delete.delay.ms.
	OnSegmentsDeleted func(SegmentDeletionInfo)
	// OnLogCleaned: a compaction pass over a log finished.
	OnLogCleaned func(LogCleanInfo)
	// OnTopicCreated, OnPartitionsAdded, OnTopicDeleted: the admin
	// operations' results.
	OnTopicCreated    func(TopicInfo)
	OnPartitionsAdded func(PartitionsAddedInfo)
	OnTopicDeleted    func(TopicInfo)
	// OnFsync: a segment fsync took Duration.
	OnFsync func(time.Duration)
}

// LogInfo names the log an event is about: its directory and, for a log a
// Manager opened, its topic and partition.
type LogInfo struct {
	Topic     string // empty for a log opened alone (OpenLog)
	Partition int32
	Dir       string
}

// RecoveryInfo is a log dir open: how long it took and, summed over its
// partitions, what recovery checked and dropped.
type RecoveryInfo struct {
	Dir           string
	Partitions    int
	Took          time.Duration
	CleanShutdown bool
	Report        RecoveryReport // DroppedFrom unused: see Truncated
	Truncated     []string       // "<topic>-<partition> from offset <n>" per log recovery cut
}

// LogTruncationInfo is what a recovery dropped from one log, and why.
type LogTruncationInfo struct {
	LogInfo
	Reason               error // what was invalid at the cut
	BytesDropped         int64
	LaterSegmentsDropped int
	LaterBatchesDropped  int
	LogEndOffset         int64
	TruncatedSegment     int64 // base of the segment cut, -1 when only whole segments went
	TruncatedAt          int64 // its new size
}

// LogCleanInfo is a finished compaction pass.
type LogCleanInfo struct {
	LogInfo
	Stats CleanStats
}

// SegmentRollInfo is a roll: Base is the new active segment's base offset.
type SegmentRollInfo struct {
	LogInfo
	Base int64
}

// LogFailureInfo is a log failing with Err.
type LogFailureInfo struct {
	LogInfo
	Err error
}

// LogRevivalInfo is a revival: the log's new end and what its recovery
// checked and dropped.
type LogRevivalInfo struct {
	LogInfo
	LogEndOffset int64
	Report       RecoveryReport
}

// SegmentDeletionInfo is segments renamed for deletion, for Reason
// (retention by time or size, or the log start offset).
type SegmentDeletionInfo struct {
	LogInfo
	Reason         string
	Segments       int
	Bytes          int64
	FirstBase      int64
	LogStartOffset int64
}

// TopicInfo is a created or deleted topic.
type TopicInfo struct {
	Topic      string
	ID         [16]byte
	Partitions int32 // at creation
}

// PartitionsAddedInfo is a topic grown from From to To partitions.
type PartitionsAddedInfo struct {
	Topic string
	From  int
	To    int32
}

// LoggingListener logs every event as storage always has, with the same
// messages and fields.
func LoggingListener(logger *zap.Logger) EventListener {
	if logger == nil {
		logger = zap.NewNop()
	}
	return EventListener{
		OnRecovered: func(i RecoveryInfo) {
			fields := []zap.Field{zap.String("dir", i.Dir), zap.Int("partitions", i.Partitions), zap.Duration("took", i.Took)}
			r := i.Report
			if i.CleanShutdown || r.SegmentsChecked == 0 {
				logger.Info("log dir open", fields...)
				return
			}
			fields = append(fields, zap.Int("segmentsChecked", r.SegmentsChecked), zap.Int64("bytesChecked", r.BytesChecked),
				zap.Int64("bytesDropped", r.BytesDropped), zap.Int("batchesDropped", r.BatchesDropped))
			if len(i.Truncated) > 0 {
				fields = append(fields, zap.Strings("truncated", i.Truncated))
			}
			logger.Info("log dir recovered after an unclean shutdown", fields...)
		},
		OnLogTruncated: func(i LogTruncationInfo) {
			fields := append(i.fields(), zap.Error(i.Reason), zap.Int64("bytesDropped", i.BytesDropped),
				zap.Int("laterSegmentsDropped", i.LaterSegmentsDropped), zap.Int("laterBatchesDropped", i.LaterBatchesDropped),
				zap.Int64("logEndOffset", i.LogEndOffset))
			if i.TruncatedSegment >= 0 {
				fields = append(fields, zap.Int64("truncatedSegment", i.TruncatedSegment), zap.Int64("truncatedAt", i.TruncatedAt))
			}
			logger.Warn("log recovery truncated the log", fields...)
		},
		OnLogCleaned: func(i LogCleanInfo) {
			st := i.Stats
			logger.Info("cleaned log", append(i.fields(), zap.Int64("firstDirty", st.FirstDirty), zap.Int64("end", st.End),
				zap.Int("segmentsBefore", st.SegmentsBefore), zap.Int("segmentsAfter", st.SegmentsAfter),
				zap.Int64("bytesBefore", st.BytesBefore), zap.Int64("bytesAfter", st.BytesAfter),
				zap.Int64("recordsRead", st.RecordsRead), zap.Int64("recordsKept", st.RecordsKept),
				zap.Duration("took", st.Duration))...)
		},
		OnSegmentRolled: func(i SegmentRollInfo) {
			logger.Debug("rolled segment", append(i.fields(), zap.String("dir", i.Dir), zap.Int64("base", i.Base))...)
		},
		OnLogFailed: func(i LogFailureInfo) {
			logger.Error("partition log failed, refusing writes until a write in its log dir succeeds again",
				append(i.fields(), zap.String("dir", i.Dir), zap.Error(i.Err))...)
		},
		OnLogRevived: func(i LogRevivalInfo) {
			r := i.Report
			logger.Info("partition log revived", append(i.fields(), zap.String("dir", i.Dir), zap.Int64("logEndOffset", i.LogEndOffset),
				zap.Int("segmentsChecked", r.SegmentsChecked), zap.Int64("bytesChecked", r.BytesChecked),
				zap.Int64("bytesDropped", r.BytesDropped), zap.Int("batchesDropped", r.BatchesDropped))...)
		},
		OnSegmentsDeleted: func(i SegmentDeletionInfo) {
			logger.Info("deleted segments", append(i.fields(), zap.String("reason", i.Reason), zap.Int("segments", i.Segments),
				zap.Int64("bytes", i.Bytes), zap.Int64("firstBase", i.FirstBase), zap.Int64("logStartOffset", i.LogStartOffset))...)
		},
		OnTopicCreated: func(i TopicInfo) {
			logger.Info("created topic", zap.String("topic", i.Topic), zap.String("id", uuidString(i.ID)), zap.Int32("partitions", i.Partitions))
		},
		OnPartitionsAdded: func(i PartitionsAddedInfo) {
			logger.Info("added partitions", zap.String("topic", i.Topic), zap.Int("from", i.From), zap.Int32("to", i.To))
		},
		OnTopicDeleted: func(i TopicInfo) {
			logger.Info("deleted topic", zap.String("topic", i.Topic), zap.String("id", uuidString(i.ID)))
		},
	}
}

// fields are the ones a log's own logger carried: topic and partition for a
// Manager's log, then the log's directory.
func (i LogInfo) fields() []zap.Field {
	var f []zap.Field
	if i.Topic != "" {
		f = append(f, zap.String("topic", i.Topic), zap.Int32("partition", i.Partition))
	}
	return append(f, zap.String("log", i.Dir))
}

// TeeEventListener returns a listener calling a's func, then b's, for every
// event.
func TeeEventListener(a, b EventListener) EventListener {
	return EventListener{
		OnRecovered:       tee(a.OnRecovered, b.OnRecovered),
		OnLogTruncated:    tee(a.OnLogTruncated, b.OnLogTruncated),
		OnLogCleaned:      tee(a.OnLogCleaned, b.OnLogCleaned),
		OnSegmentRolled:   tee(a.OnSegmentRolled, b.OnSegmentRolled),
		OnLogFailed:       tee(a.OnLogFailed, b.OnLogFailed),
		OnLogRevived:      tee(a.OnLogRevived, b.OnLogRevived),
		OnSegmentsDeleted: tee(a.OnSegmentsDeleted, b.OnSegmentsDeleted),
		OnTopicCreated:    tee(a.OnTopicCreated, b.OnTopicCreated),
		OnPartitionsAdded: tee(a.OnPartitionsAdded, b.OnPartitionsAdded),
		OnTopicDeleted:    tee(a.OnTopicDeleted, b.OnTopicDeleted),
		OnFsync:           tee(a.OnFsync, b.OnFsync),
	}
}

func tee[T any](a, b func(T)) func(T) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(v T) { a(v); b(v) }
}

// forLog is the listener of one of the Manager's logs: it names the
// partition in per-log events and runs the Manager's own hooks first.
func (m *Manager) forLog(topic string, partition int32) EventListener {
	e := m.events
	name := func(i *LogInfo) { i.Topic, i.Partition = topic, partition }
	e.OnLogTruncated = func(i LogTruncationInfo) { name(&i.LogInfo); call(m.events.OnLogTruncated, i) }
	e.OnLogCleaned = func(i LogCleanInfo) { name(&i.LogInfo); call(m.events.OnLogCleaned, i) }
	e.OnSegmentRolled = func(i SegmentRollInfo) { name(&i.LogInfo); call(m.events.OnSegmentRolled, i) }
	e.OnLogFailed = func(i LogFailureInfo) { m.logFailed(); name(&i.LogInfo); call(m.events.OnLogFailed, i) }
	e.OnLogRevived = func(i LogRevivalInfo) { name(&i.LogInfo); call(m.events.OnLogRevived, i) }
	e.OnSegmentsDeleted = func(i SegmentDeletionInfo) {
		m.segmentsDeleted()
		name(&i.LogInfo)
		call(m.events.OnSegmentsDeleted, i)
	}
	return e
}

// call calls fn with v if fn is set.
func call[T any](fn func(T), v T) {
	if fn != nil {
		fn(v)
	}
}
