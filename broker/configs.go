package broker

// Config values, sources and synonyms shared by DescribeConfigs,
// AlterConfigs and IncrementalAlterConfigs.
//
// A topic config's value comes from, in Kafka's order: the topic's own
// override (DYNAMIC_TOPIC_CONFIG), this node's dynamic broker config
// (DYNAMIC_BROKER_CONFIG), the cluster-default dynamic broker config
// (DYNAMIC_DEFAULT_BROKER_CONFIG), server.properties
// (STATIC_BROKER_CONFIG), Kafka's default (DEFAULT_CONFIG). The broker
// configs are the topic config's synonyms (segment.bytes <-
// log.segment.bytes; retention.ms <- log.retention.ms, .minutes, .hours),
// scaled to the topic config's unit.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

// Config sources, as DescribeConfigs numbers them (the others are in
// createtopics.go).
const (
	configSourceDynamicBroker        = 2 // DYNAMIC_BROKER_CONFIG
	configSourceDynamicDefaultBroker = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
)

// configSynonym is one candidate source of a config's value.
type configSynonym struct {
	name   string
	value  *string
	source int8
}

// brokerConfigSources are the three layers of broker configs.
type brokerConfigSources struct {
	node, clusterDefault, static map[string]string
}

func (b *services) brokerConfigSources() brokerConfigSources {
	def, node := b.logs.BrokerConfigs()
	return brokerConfigSources{node: node, clusterDefault: def, static: b.staticConfigs()}
}

// staticConfigs are the server.properties keys as given
// (Config.StaticConfigs) or, when the broker was built without them (tests),
// the log settings that differ from Kafka's defaults.
func (b *services) staticConfigs() map[string]string {
	if b.cfg.StaticConfigs != nil {
		return b.cfg.StaticConfigs
	}
	out := map[string]string{}
	c, d := b.cfg.Log, storage.DefaultConfig()
	set := func(key string, v, def int64) {
		if v != def {
			out[key] = strconv.FormatInt(v, 10)
		}
	}
	set("log.segment.bytes", c.SegmentBytes, d.SegmentBytes)
	set("log.roll.ms", c.SegmentMs, d.SegmentMs)
	set("log.index.interval.bytes", int64(c.IndexIntervalBytes), int64(d.IndexIntervalBytes))
	set("log.index.size.max.bytes", int64(c.MaxIndexSize), int64(d.MaxIndexSize))
	set("message.max.bytes", int64(c.MaxMessageBytes), int64(d.MaxMessageBytes))
	set("log.flush.interval.messages", c.FlushIntervalMessages, d.FlushIntervalMessages)
	set("log.flush.interval.ms", c.FlushIntervalMs, d.FlushIntervalMs)
	set("log.retention.ms", c.RetentionMs, d.RetentionMs)
	set("log.retention.bytes", c.RetentionBytes, d.RetentionBytes)
	set("log.segment.delete.delay.ms", c.FileDeleteDelayMs, d.FileDeleteDelayMs)
	set("log.cleaner.delete.retention.ms", c.DeleteRetentionMs, d.DeleteRetentionMs)
	set("log.cleaner.min.compaction.lag.ms", c.MinCompactionLagMs, d.MinCompactionLagMs)
	return out
}

// topicConfigSynonyms lists where a topic config's value may come from,
// highest priority first, ending with Kafka's default.
func topicConfigSynonyms(def storage.TopicConfigDef, topic map[string]string, src brokerConfigSources) []configSynonym {
	var out []configSynonym
	if v, ok := topic[def.Name]; ok {
		out = append(out, configSynonym{def.Name, &v, configSourceTopic})
	}
	layers := []struct {
		m      map[string]string
		source int8
	}{{src.node, configSourceDynamicBroker}, {src.clusterDefault, configSourceDynamicDefaultBroker}, {src.static, configSourceStaticBroker}}
	for _, layer := range layers {
		for _, s := range def.Synonyms {
			if v, ok := layer.m[s.Name]; ok {
				out = append(out, configSynonym{s.Name, &v, layer.source})
			}
		}
	}
	// Kafka's default belongs to the last synonym (log.retention.hours=168),
	// or to the topic config itself when it has none.
	name, value := def.Name, def.Default
	if n := len(def.Synonyms); n > 0 {
		s := def.Synonyms[n-1]
		name = s.Name
		if s.Scale > 1 {
			if d, err := strconv.ParseInt(def.Default, 10, 64); err == nil && d >= 0 {
				value = strconv.FormatInt(d/s.Scale, 10)
			}
		}
	}
	out = append(out, configSynonym{name, &value, configSourceDefault})
	return out
}

// describeTopicConfig answers one topic config: the first synonym decides
// the value (scaled to the topic config's unit) and the source.
func describeTopicConfig(def storage.TopicConfigDef, topic map[string]string, src brokerConfigSources, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	syns := topicConfigSynonyms(def, topic, src)
	first := syns[0]
	value := *first.value
	if first.source != configSourceTopic && first.source != configSourceDefault {
		for _, s := range def.Synonyms {
			if s.Name == first.name {
				value = storage.ScaleBrokerValue(value, s.Scale)
			}
		}
	}
	if first.source == configSourceDefault {
		value = def.Default
	}
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = def.Name
	c.Value = &value
	c.Source = kmsg.ConfigSource(first.source)
	c.IsDefault = first.source == configSourceDefault
	c.ConfigType = kmsg.ConfigType(def.Type)
	if docs {
		c.Documentation = &def.Doc
	}
	if synonyms {
		for _, s := range syns {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Value, cs.Source = s.name, s.value, kmsg.ConfigSource(s.source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	return c
}

// brokerConfigDef is a broker config DescribeConfigs lists for a BROKER
// resource. Dynamic ones are the topic configs' synonyms; the rest are
// read-only and come from the broker's settings.
type brokerConfigDef struct {
	name     string
	typ      int8
	value    func(b *services) string
	readOnly bool
	doc      string
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }

// staticBrokerConfigs are the read-only broker configs Strata implements.
var staticBrokerConfigs = []brokerConfigDef{
	{"advertised.listeners", storage.ConfigTypeString, func(b *services) string {
		if b.cfg.AdvertisedListeners == "" {
			return b.cfg.Listeners
		}
		return b.cfg.AdvertisedListeners
	}, true, "Listeners published to clients."},
	{"auto.create.topics.enable", storage.ConfigTypeBoolean, func(b *services) string { return strconv.FormatBool(b.cfg.AutoCreateTopics) }, true, "Create topics named in Metadata requests."},
	{"broker.id", storage.ConfigTypeInt, func(b *services) string { return i64(int64(b.cfg.NodeID)) }, true, "Same as node.id."},
	{"listeners", storage.ConfigTypeString, func(b *services) string { return b.cfg.Listeners }, true, "Addresses the broker listens on."},
	{"log.dirs", storage.ConfigTypeString, func(b *services) string { return b.cfg.LogDirs }, true, "The log directory."},
	{"log.retention.check.interval.ms", storage.ConfigTypeLong, func(b *services) string {
		return i64(b.cfg.Log.RetentionCheckIntervalMs)
	}, true, "How often retention is applied."},
	{"node.id", storage.ConfigTypeInt, func(b *services) string { return i64(int64(b.cfg.NodeID)) }, true, "This node's id."},
	{"num.partitions", storage.ConfigTypeInt, func(b *services) string { return i64(int64(b.cfg.NumPartitions)) }, true, "Partitions of auto-created topics."},
	{"socket.request.max.bytes", storage.ConfigTypeInt, func(b *services) string { return i64(int64(b.cfg.SocketRequestMaxBytes)) }, true, "The largest request frame accepted."},
}

// describeBrokerConfigs lists the configs of a BROKER resource: for the
// node (name = node.id) every config with its effective value, for the
// cluster default (name "") only the dynamic default configs, as Kafka.
func (b *services) describeBrokerConfigs(node bool, names map[string]bool, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	src := b.brokerConfigSources()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	add := func(name string, typ int8, value *string, source int8, readOnly bool, doc string, syns []configSynonym) {
		if names != nil && !names[name] {
			return
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source, c.ReadOnly = name, value, kmsg.ConfigSource(source), readOnly
		c.IsDefault = source == configSourceDefault
		c.ConfigType = kmsg.ConfigType(typ)
		if docs {
			c.Documentation = &doc
		}
		if synonyms {
			for _, s := range syns {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = s.name, s.value, kmsg.ConfigSource(s.source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
		}
		out = append(out, c)
	}
	for _, def := range storage.TopicConfigDefs() {
		for i, s := range def.Synonyms {
			if !node {
				if v, ok := src.clusterDefault[s.Name]; ok {
					add(s.Name, brokerType(def.Type, s.Scale), &v, configSourceDynamicDefaultBroker, false, def.Doc,
						[]configSynonym{{s.Name, &v, configSourceDynamicDefaultBroker}})
				}
				continue
			}
			var syns []configSynonym
			for _, layer := range []struct {
				m      map[string]string
				source int8
			}{{src.node, configSourceDynamicBroker}, {src.clusterDefault, configSourceDynamicDefaultBroker}, {src.static, configSourceStaticBroker}} {
				if v, ok := layer.m[s.Name]; ok {
					syns = append(syns, configSynonym{s.Name, &v, layer.source})
				}
			}
			if i == len(def.Synonyms)-1 {
				all := topicConfigSynonyms(def, nil, src)
				syns = append(syns, all[len(all)-1])
			}
			var value *string
			source := int8(configSourceDefault)
			if len(syns) > 0 {
				value, source = syns[0].value, syns[0].source
			}
			add(s.Name, brokerType(def.Type, s.Scale), value, source, false, def.Doc, syns)
		}
	}
	if node {
		for _, d := range staticBrokerConfigs {
			v := d.value(b)
			source := int8(configSourceDefault)
			if _, ok := src.static[d.name]; ok {
				source = configSourceStaticBroker
			}
			add(d.name, d.typ, &v, source, d.readOnly, d.doc, []configSynonym{{d.name, &v, source}})
		}
	}
	slices.SortFunc(out, func(x, y kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// brokerType is the type of a broker synonym: hour and minute settings are
// ints in Kafka, the rest share the topic config's type.
func brokerType(topicType int8, scale int64) int8 {
	if scale > 1 {
		return storage.ConfigTypeInt
	}
	return topicType
}
