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
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/configdef"
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
	def, node := b.brokerConfigs(b.cfg.NodeID)
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
func topicConfigSynonyms(def configdef.Def, topic map[string]string, src brokerConfigSources) []configSynonym {
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
func describeTopicConfig(def configdef.Def, topic map[string]string, src brokerConfigSources, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	syns := topicConfigSynonyms(def, topic, src)
	first := syns[0]
	value := *first.value
	if first.source != configSourceTopic && first.source != configSourceDefault {
		for _, s := range def.Synonyms {
			if s.Name == first.name {
				value = configdef.ScaleBrokerValue(value, s.Scale)
			}
		}
	}
	if first.source == configSourceDefault {
		value = def.Default
	}
	return describedConfig(def.Name, def.Type, &value, first.source, false, def.Doc, syns, synonyms, docs)
}

// describedConfig is one entry of a DescribeConfigs answer: the value and
// source given, its synonyms and documentation when the request asks.
func describedConfig(name string, typ configdef.Type, value *string, source int8, readOnly bool, doc string, syns []configSynonym,
	synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
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
	return c
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }

// readOnlyConfigValues are the values of the read-only broker configs
// DescribeConfigs lists (configdef's Described keys), from the broker's
// settings.
var readOnlyConfigValues = map[string]func(b *services) string{
	"advertised.listeners": func(b *services) string {
		if b.cfg.AdvertisedListeners == "" {
			return b.cfg.Listeners
		}
		return b.cfg.AdvertisedListeners
	},
	"auto.create.topics.enable":                 func(b *services) string { return strconv.FormatBool(b.cfg.AutoCreateTopics) },
	"transaction.partition.verification.enable": func(b *services) string { return strconv.FormatBool(!b.cfg.NoTxnVerification) },
	"broker.id":                       func(b *services) string { return i64(int64(b.cfg.NodeID)) },
	"listeners":                       func(b *services) string { return b.cfg.Listeners },
	"log.dirs":                        func(b *services) string { return b.cfg.LogDirs },
	"log.retention.check.interval.ms": func(b *services) string { return i64(b.cfg.Log.RetentionCheckIntervalMs) },
	"node.id":                         func(b *services) string { return i64(int64(b.cfg.NodeID)) },
	"num.partitions":                  func(b *services) string { return i64(int64(b.cfg.NumPartitions)) },
	"socket.request.max.bytes":        func(b *services) string { return i64(int64(b.cfg.SocketRequestMaxBytes)) },
}

// describeBrokerConfigs lists the configs of a BROKER resource: for the
// node (name = node.id) every config with its effective value, for the
// cluster default (name "") only the dynamic default configs, as Kafka.
func (b *services) describeBrokerConfigs(node bool, names map[string]bool, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	src := b.brokerConfigSources()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	add := func(name string, typ configdef.Type, value *string, source int8, readOnly bool, doc string, syns []configSynonym) {
		if names != nil && !names[name] {
			return
		}
		out = append(out, describedConfig(name, typ, value, source, readOnly, doc, syns, synonyms, docs))
	}
	for _, def := range configdef.Topics() {
		for i, s := range def.Synonyms {
			if !node {
				if v, ok := src.clusterDefault[s.Name]; ok {
					add(s.Name, configdef.SynonymType(def, s), &v, configSourceDynamicDefaultBroker, false, def.Doc,
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
			add(s.Name, configdef.SynonymType(def, s), value, source, configdef.IsNonDynamicBroker(s.Name), def.Doc, syns)
		}
	}
	if node {
		for _, d := range configdef.Brokers() {
			if !d.Described {
				continue
			}
			v := readOnlyConfigValues[d.Name](b)
			source := int8(configSourceDefault)
			if _, ok := src.static[d.Name]; ok {
				source = configSourceStaticBroker
			}
			add(d.Name, d.Type, &v, source, true, d.Doc, []configSynonym{{d.Name, &v, source}})
		}
		for _, name := range slices.Sorted(maps.Keys(src.node)) {
			if _, key, ok := configdef.ListenerSSLKey(name); ok {
				v := src.node[name]
				add(name, configdef.ListenerSSLType(key), &v, configSourceDynamicBroker, false, "", []configSynonym{{name, &v, configSourceDynamicBroker}})
			}
		}
	}
	b.describeOtherDynamicBrokerConfigs(node, src, add)
	// Secrets are described, never shown (Kafka's ConfigDef.Type.PASSWORD),
	// and so are keys Kafka does not know (of no type), as Kafka describes
	// them.
	for i := range out {
		if t := out[i].ConfigType; configdef.IsSensitive(out[i].Name) || t == kmsg.ConfigType(configdef.Password) || t == 0 {
			out[i].Value, out[i].IsSensitive = nil, true
			for j := range out[i].ConfigSynonyms {
				out[i].ConfigSynonyms[j].Value = nil
			}
		}
	}
	slices.SortFunc(out, func(x, y kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// describeOtherDynamicBrokerConfigs describes the dynamic broker configs
// kept that are neither synonyms of topic configs nor a listener's key and
// trust stores, as Kafka describes them: one of Kafka's dynamic configs
// with its value, its layers and Kafka's default; a listener-prefixed one
// read-only, typed as the config it prefixes; a key Kafka does not know
// read-only, sensitive, without a type. The node's resource shows Kafka's
// dynamic configs set at either level, the cluster default's only its own.
func (b *services) describeOtherDynamicBrokerConfigs(node bool, src brokerConfigSources,
	add func(name string, typ configdef.Type, value *string, source int8, readOnly bool, doc string, syns []configSynonym)) {
	layers := []struct {
		m      map[string]string
		source int8
	}{{src.node, configSourceDynamicBroker}, {src.clusterDefault, configSourceDynamicDefaultBroker}}
	if !node {
		layers = layers[1:]
	}
	seen := map[string]bool{}
	for i, layer := range layers {
		for _, name := range slices.Sorted(maps.Keys(layer.m)) {
			if _, _, ok := configdef.BrokerSynonymOf(name); ok || seen[name] {
				continue
			}
			if _, _, ok := configdef.ListenerSSLKey(name); ok {
				continue
			}
			seen[name] = true
			base, prefixed := configdef.ListenerBase(name)
			d, known := configdef.DynamicBrokerDef(base)
			v := layer.m[name]
			switch {
			case known && !prefixed:
				var syns []configSynonym
				for _, l := range layers[i:] {
					if lv, ok := l.m[name]; ok {
						syns = append(syns, configSynonym{name, &lv, l.source})
					}
				}
				if d.Default != "" {
					def := d.Default
					syns = append(syns, configSynonym{name, &def, configSourceDefault})
				}
				add(name, d.Type, &v, layer.source, false, "", syns)
			case known:
				add(name, d.Type, &v, layer.source, true, "", []configSynonym{{name, &v, layer.source}})
			case node && i > 0:
				// A key Kafka does not know shows on its own level only.
			default:
				add(name, 0, nil, layer.source, true, "", []configSynonym{{name, nil, layer.source}})
			}
		}
	}
}
