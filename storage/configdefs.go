package storage

import (
	"sort"
	"strconv"
	"strings"
)

// Config types as DescribeConfigs v3+ numbers them (Kafka's ConfigDef.Type).
const (
	ConfigTypeBoolean int8 = 1
	ConfigTypeString  int8 = 2
	ConfigTypeInt     int8 = 3
	ConfigTypeLong    int8 = 5
	ConfigTypeDouble  int8 = 6
	ConfigTypeList    int8 = 7
)

// BrokerSynonym is a broker config that sets a topic config's default:
// the topic value is the broker value times Scale (1 for non-numbers).
type BrokerSynonym struct {
	Name  string
	Scale int64
}

// TopicConfigDef describes one Kafka topic config: its type, Kafka's
// default, the broker configs that provide the default (highest priority
// first, as Kafka's ServerTopicConfigSynonyms) and its documentation.
type TopicConfigDef struct {
	Name     string
	Type     int8
	Default  string
	Synonyms []BrokerSynonym
	Doc      string
}

func syn(names ...string) []BrokerSynonym {
	out := make([]BrokerSynonym, len(names))
	for i, n := range names {
		out[i] = BrokerSynonym{Name: n, Scale: 1}
	}
	return out
}

const maxLong = "9223372036854775807"

// topicConfigDefs is every topic config Strata accepts (topicConfigs), with
// Kafka 4.1's defaults and broker synonyms, sorted by name.
var topicConfigDefs = []TopicConfigDef{
	{"cleanup.policy", ConfigTypeList, "delete", syn("log.cleanup.policy"), "The retention policy of old log segments: delete, compact or both."},
	{"compression.gzip.level", ConfigTypeInt, "-1", syn("compression.gzip.level"), "The compression level for gzip."},
	{"compression.lz4.level", ConfigTypeInt, "9", syn("compression.lz4.level"), "The compression level for lz4."},
	{"compression.type", ConfigTypeString, "producer", syn("compression.type"), "The final compression type of the topic; producer keeps the producer's codec. Strata stores batches as produced."},
	{"compression.zstd.level", ConfigTypeInt, "3", syn("compression.zstd.level"), "The compression level for zstd."},
	{"delete.retention.ms", ConfigTypeLong, "86400000", syn("log.cleaner.delete.retention.ms"), "How long tombstones are kept in a compacted topic."},
	{"file.delete.delay.ms", ConfigTypeLong, "60000", syn("log.segment.delete.delay.ms"), "How long a deleted segment's files stay (renamed .deleted) before they are removed."},
	{"flush.messages", ConfigTypeLong, maxLong, syn("log.flush.interval.messages"), "Fsync after this many messages."},
	{"flush.ms", ConfigTypeLong, maxLong, syn("log.flush.interval.ms"), "Fsync when the oldest unflushed message is this old."},
	{"follower.replication.throttled.replicas", ConfigTypeList, "", syn("follower.replication.throttled.replicas"), "Replicas to throttle on the follower side (no effect on one node)."},
	{"index.interval.bytes", ConfigTypeInt, "4096", syn("log.index.interval.bytes"), "How often an offset index entry is added."},
	{"leader.replication.throttled.replicas", ConfigTypeList, "", syn("leader.replication.throttled.replicas"), "Replicas to throttle on the leader side (no effect on one node)."},
	{"local.retention.bytes", ConfigTypeLong, "-2", syn("log.local.retention.bytes"), "Local retention with tiered storage (not supported)."},
	{"local.retention.ms", ConfigTypeLong, "-2", syn("log.local.retention.ms"), "Local retention with tiered storage (not supported)."},
	{"max.compaction.lag.ms", ConfigTypeLong, maxLong, syn("log.cleaner.max.compaction.lag.ms"), "The longest a message stays uncompacted (accepted, not enforced)."},
	{"max.message.bytes", ConfigTypeInt, "1048588", syn("message.max.bytes"), "The largest record batch size allowed."},
	{"message.downconversion.enable", ConfigTypeBoolean, "true", syn("log.message.downconversion.enable"), "Down-conversion for old consumers (not needed: Strata serves magic 2 only)."},
	{"message.format.version", ConfigTypeString, "3.0-IV1", syn("log.message.format.version"), "Deprecated; ignored."},
	{"message.timestamp.after.max.ms", ConfigTypeLong, "3600000", syn("log.message.timestamp.after.max.ms"), "How far ahead of the broker's clock a CreateTime record may be stamped; checked on each batch's first and max timestamps."},
	{"message.timestamp.before.max.ms", ConfigTypeLong, maxLong, syn("log.message.timestamp.before.max.ms"), "How far behind the broker's clock a CreateTime record may be stamped; checked on each batch's first and max timestamps."},
	{"message.timestamp.difference.max.ms", ConfigTypeLong, maxLong, syn("log.message.timestamp.difference.max.ms"), "Deprecated; ignored."},
	{"message.timestamp.type", ConfigTypeString, "CreateTime", syn("log.message.timestamp.type"), "CreateTime or LogAppendTime. LogAppendTime turns the timestamp bounds off, as in Kafka, but Strata keeps the producer's timestamps."},
	{"min.cleanable.dirty.ratio", ConfigTypeDouble, "0.5", syn("log.cleaner.min.cleanable.ratio"), "The dirty share of the log that triggers cleaning."},
	{"min.compaction.lag.ms", ConfigTypeLong, "0", syn("log.cleaner.min.compaction.lag.ms"), "The least time a message stays uncompacted."},
	{"min.insync.replicas", ConfigTypeInt, "1", syn("min.insync.replicas"), "Minimum in-sync replicas for acks=all (one node: always 1)."},
	{"preallocate", ConfigTypeBoolean, "false", syn("log.preallocate"), "Preallocate segment files (accepted, not applied)."},
	{"remote.log.copy.disable", ConfigTypeBoolean, "false", nil, "Tiered storage (not supported)."},
	{"remote.log.delete.on.disable", ConfigTypeBoolean, "false", nil, "Tiered storage (not supported)."},
	{"remote.storage.enable", ConfigTypeBoolean, "false", nil, "Tiered storage (not supported)."},
	{"retention.bytes", ConfigTypeLong, "-1", syn("log.retention.bytes"), "Delete old segments while the partition is larger than this; -1 = no limit."},
	{"retention.ms", ConfigTypeLong, "604800000", []BrokerSynonym{{"log.retention.ms", 1}, {"log.retention.minutes", 60000}, {"log.retention.hours", 3600000}},
		"Delete segments whose newest record is older than this; -1 = no limit."},
	{"segment.bytes", ConfigTypeInt, "1073741824", syn("log.segment.bytes"), "The segment file size."},
	{"segment.index.bytes", ConfigTypeInt, "10485760", syn("log.index.size.max.bytes"), "The offset and time index size."},
	{"segment.jitter.ms", ConfigTypeLong, "0", []BrokerSynonym{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", 3600000}}, "Roll jitter (accepted, not applied)."},
	{"segment.ms", ConfigTypeLong, "604800000", []BrokerSynonym{{"log.roll.ms", 1}, {"log.roll.hours", 3600000}}, "Roll a segment after this time."},
	{"unclean.leader.election.enable", ConfigTypeBoolean, "false", syn("unclean.leader.election.enable"), "Unclean leader election (no effect on one node)."},
}

// TopicConfigDefs returns the topic configs Strata knows, sorted by name.
func TopicConfigDefs() []TopicConfigDef { return topicConfigDefs }

// TopicConfigDefFor returns the definition of a topic config.
func TopicConfigDefFor(name string) (TopicConfigDef, bool) {
	i := sort.Search(len(topicConfigDefs), func(i int) bool { return topicConfigDefs[i].Name >= name })
	if i < len(topicConfigDefs) && topicConfigDefs[i].Name == name {
		return topicConfigDefs[i], true
	}
	return TopicConfigDef{}, false
}

// BrokerSynonymOf returns the topic config a broker config provides the
// default of, and its scale; ok is false for other broker configs.
func BrokerSynonymOf(brokerKey string) (topicKey string, scale int64, ok bool) {
	for _, d := range topicConfigDefs {
		for _, s := range d.Synonyms {
			if s.Name == brokerKey {
				return d.Name, s.Scale, true
			}
		}
	}
	return "", 0, false
}

// ScaleBrokerValue converts a broker config value to its topic config's
// unit (e.g. log.retention.hours to retention.ms); a negative scaled time
// means unlimited (-1), as Kafka reads log.retention.*.
func ScaleBrokerValue(value string, scale int64) string {
	if scale == 1 {
		return strings.TrimSpace(value)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil {
		return value // validation reports it
	}
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*scale, 10)
}

// brokerToTopicConfigs maps broker configs (each a synonym) to the topic
// configs they default, the highest-priority synonym winning.
func brokerToTopicConfigs(broker map[string]string) map[string]string {
	out := map[string]string{}
	for _, d := range topicConfigDefs {
		for _, s := range d.Synonyms {
			if v, ok := broker[s.Name]; ok {
				out[d.Name] = ScaleBrokerValue(v, s.Scale)
				break
			}
		}
	}
	return out
}
