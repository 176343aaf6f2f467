// Package configdef is the one table of the configuration keys Strata knows:
// the topic configs and the server.properties keys, each with its type,
// Kafka's default, validator, broker synonyms, documentation and README row.
// cmd/strata parses server.properties through it, storage validates topic
// configs with it, the broker's DescribeConfigs lists from it, and the
// README's key table is generated from it (go generate).
package configdef

//go:generate go run ./gen -readme ../../README.md

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is a config's type, numbered as DescribeConfigs v3+ sends it
// (Kafka's ConfigDef.Type). It also bounds integers: an Int is 32 bits, a
// Long 64.
type Type int8

// The config types Strata has.
const (
	Boolean Type = 1
	String  Type = 2
	Int     Type = 3
	Short   Type = 4
	Long    Type = 5
	Double  Type = 6
	List    Type = 7
	Class   Type = 8
	// Password is a secret (Kafka's ConfigDef.Type.PASSWORD): described
	// as sensitive, without its value.
	Password Type = 9
)

// Scope says where a config is set.
type Scope uint8

const (
	// Topic configs are set per topic (CreateTopics, AlterConfigs).
	Topic Scope = iota + 1
	// Broker configs are server.properties keys.
	Broker
)

// Check is a config's validator, with Kafka's rules (ConfigDef's
// validators) and the type's: Int and Long values are whole numbers from Min
// to the type's largest; a Boolean is true or false in any case; a String or
// each item of a List is one of OneOf when OneOf is set (case-sensitive, as
// Kafka's ValidString); a Double is a ratio from 0 to 1, the only doubles
// Strata has.
type Check struct {
	Min   int64
	OneOf []string
}

// Max is the largest value of an Int or Long.
func (t Type) Max() int64 {
	if t == Int {
		return math.MaxInt32
	}
	return math.MaxInt64
}

// Synonym is a broker config that gives a topic config its default: the
// topic value is the broker value times Scale (1 for non-numbers).
type Synonym struct {
	Name  string
	Scale int64
}

// Row is a key's row in the README's key table.
type Row struct {
	Keys    string // the key cell when it names more than the key ("`log.dirs` / `log.dir`")
	Default string // the default cell when it is not the Default in backquotes
	Notes   string
}

// Def is one config key.
type Def struct {
	Name    string
	Scope   Scope
	Type    Type
	Default string // Kafka's default (Strata's for listeners and log.dirs); "" when none
	Check   Check
	// Synonyms, of a topic config, are the broker configs that provide its
	// default, highest priority first (Kafka's ServerTopicConfigSynonyms).
	// They are the dynamic broker configs; every other broker config is
	// read-only.
	Synonyms []Synonym
	// Described, for a broker config that is no synonym, says the broker's
	// DescribeConfigs lists it, read-only; the synonyms are always listed.
	Described bool
	Doc       string // DescribeConfigs' documentation
	Row       *Row   // the README row the key leads; nil when another row names it or none does
}

func syn(names ...string) []Synonym {
	out := make([]Synonym, len(names))
	for i, n := range names {
		out[i] = Synonym{Name: n, Scale: 1}
	}
	return out
}

const maxLong = "9223372036854775807"

// topicsByName are the topic configs sorted by name, as DescribeConfigs lists them.
var topicsByName = func() []Def {
	out := slices.Clone(topicDefs)
	for i := range out {
		out[i].Scope = Topic
	}
	slices.SortFunc(out, func(a, b Def) int { return strings.Compare(a.Name, b.Name) })
	return out
}()

// brokers are brokerDefs with their scope.
var brokers = func() []Def {
	out := slices.Clone(brokerDefs)
	for i := range out {
		out[i].Scope = Broker
	}
	return out
}()

// Topics returns the topic configs Strata accepts, sorted by name.
func Topics() []Def { return topicsByName }

// Brokers returns the server.properties keys Strata reads, in the README's order.
func Brokers() []Def { return brokers }

// TopicDef returns the definition of a topic config.
func TopicDef(name string) (Def, bool) {
	i, ok := slices.BinarySearchFunc(topicsByName, name, func(d Def, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return Def{}, false
	}
	return topicsByName[i], true
}

// BrokerDef returns the definition of a server.properties key Strata reads.
func BrokerDef(name string) (Def, bool) {
	i := slices.IndexFunc(brokers, func(d Def) bool { return d.Name == name })
	if i < 0 {
		return Def{}, false
	}
	return brokers[i], true
}

// DefaultInt is the default of an Int or Long config, which must be a whole
// number (TestDefaultsParse).
func (d Def) DefaultInt() int64 {
	n, err := strconv.ParseInt(d.Default, 10, 64)
	if err != nil {
		panic("configdef: the default of " + d.Name + " is no whole number: " + err.Error())
	}
	return n
}

// TopicDefaults are the topic configs' defaults by name.
func TopicDefaults() map[string]string {
	out := make(map[string]string, len(topicsByName))
	for _, d := range topicsByName {
		out[d.Name] = d.Default
	}
	return out
}

// BrokerSynonymOf returns the topic config a broker config provides the
// default of, and its scale; ok is false for other broker configs, which
// cannot change dynamically.
func BrokerSynonymOf(brokerKey string) (topicKey string, scale int64, ok bool) {
	for _, d := range topicsByName {
		for _, s := range d.Synonyms {
			if s.Name == brokerKey {
				return d.Name, s.Scale, true
			}
		}
	}
	return "", 0, false
}

// SynonymType is the type of a topic config's broker synonym: hour and
// minute settings are ints in Kafka, the rest share the topic config's type.
func SynonymType(topic Def, s Synonym) Type {
	if s.Scale > 1 {
		return Int
	}
	return topic.Type
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

// BrokerToTopicConfigs maps broker configs (each a synonym) to the topic
// configs they default, the highest-priority synonym winning.
func BrokerToTopicConfigs(broker map[string]string) map[string]string {
	out := map[string]string{}
	for _, d := range topicsByName {
		for _, s := range d.Synonyms {
			if v, ok := broker[s.Name]; ok {
				out[d.Name] = ScaleBrokerValue(v, s.Scale)
				break
			}
		}
	}
	return out
}
