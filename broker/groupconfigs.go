package broker

// GROUP config resources (KIP-848's group configs, Kafka 4.4's
// GroupConfig): a group's own override of a broker group.* setting
// (consumer.session.timeout.ms overrides group.consumer.session.timeout.ms
// for that group), set with IncrementalAlterConfigs or AlterConfigs and
// listed by DescribeConfigs, as Kafka serves them. They are kept as
// ConfigRecords of the group's resource in the metadata image (the quorum
// log on a cluster, strata-group-configs.json on one node), whether or not
// the group exists, and outlive DeleteGroups, as in Kafka. The consumer
// group coordinator reads a group's consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms at each heartbeat (groupOverrides); the
// share and streams keys are stored and described, as Kafka does, for
// groups Strata does not serve yet.
//
// Validation is Kafka's GroupConfig.validate on the group's whole new set:
// unknown names, duplicate rack tags, each value's type and validator in
// definition order, the broker's min/max bounds, session timeouts above
// heartbeat intervals, the streams assignor and the DLQ topic name; every
// refusal is INVALID_CONFIG with Kafka's message.

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// configSourceGroup is DescribeConfigs' GROUP_CONFIG source.
const configSourceGroup = 8

func groupConfigResource(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.GroupResource, Name: name}
}

// describedGroup checks the name of a GROUP resource DescribeConfigs asks
// about.
func describedGroup(name string) error {
	if name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "Group name must not be empty")
	}
	return nil
}

// alteredGroup checks the name of a GROUP resource a change names, as
// Kafka's controller refuses the default group resource.
func alteredGroup(name string) error {
	if name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "Default group resources are not allowed.")
	}
	return nil
}

// groupConfigs is a copy of the group's configs in the image.
func (b *services) groupConfigs(name string) map[string]string {
	return maps.Clone(b.meta.Image().Configs.Of(groupConfigResource(name)))
}

// groupBrokerValue is a broker group.* setting and its source: as
// server.properties gives it, else Kafka's default.
func (b *services) groupBrokerValue(key string) (string, int8) {
	if v, ok := b.staticConfigs()[key]; ok {
		return strings.TrimSpace(v), configSourceStaticBroker
	}
	if v, ok := configdef.GroupBrokerDefaults[key]; ok {
		return v, configSourceDefault
	}
	def, _ := configdef.BrokerDef(key)
	return def.Default, configSourceDefault
}

func (b *services) groupBrokerInt(key string) int64 {
	v, _ := b.groupBrokerValue(key)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// groupDefault is the value a group config has when the group does not
// set it: its broker synonym's (the first assignor of
// group.streams.assignors), else its own default.
func (b *services) groupDefault(def configdef.GroupDef) configSynonym {
	if def.BrokerSynonym == "" {
		v := def.Default
		return configSynonym{def.Name, &v, configSourceDefault}
	}
	v, source := b.groupBrokerValue(def.BrokerSynonym)
	if def.Name == "streams.assignor.name" {
		v, _, _ = strings.Cut(v, ",")
		v = strings.TrimSpace(v)
	}
	return configSynonym{def.BrokerSynonym, &v, source}
}

// groupValue is v as Kafka prints a parsed value of def's type.
func groupValue(def configdef.GroupDef, v string) string {
	switch def.Type {
	case configdef.Boolean:
		return strings.ToLower(strings.TrimSpace(v))
	case configdef.List:
		return strings.Join(splitList(v), ",")
	case configdef.Int, configdef.Long:
		return strings.TrimSpace(v)
	}
	return v
}

// describeGroupConfigs lists a group's configs: every key but the
// internal ones, or the keys named.
func (b *services) describeGroupConfigs(name string, names map[string]bool, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	set := b.groupConfigs(name)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, def := range configdef.Groups() {
		if names == nil && def.Internal || names != nil && !names[def.Name] {
			continue
		}
		var syns []configSynonym
		if v, ok := set[def.Name]; ok {
			v = groupValue(def, v)
			syns = append(syns, configSynonym{def.Name, &v, configSourceGroup})
		}
		syns = append(syns, b.groupDefault(def))
		out = append(out, describedConfig(def.Name, def.Type, syns[0].value, syns[0].source, false, def.Doc, syns, synonyms, docs))
	}
	slices.SortFunc(out, func(x, y kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// shareAutoOffsetReset is the by_duration form of share.auto.offset.reset:
// a non-negative ISO-8601 duration, as Java's Duration.parse reads it.
var shareAutoOffsetReset = regexp.MustCompile(`^(?i)P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:[.,]\d{0,9})?S)?)?$`)

func groupConfigInvalid(format string, args ...any) error {
	return kafkaerr.New(kerr.InvalidConfig, format, args...)
}

// validateGroupConfigs is Kafka's GroupConfig.validate of a group's whole
// set of configs against this broker's bounds.
func (b *services) validateGroupConfigs(configs map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if _, ok := configdef.GroupConfigDef(k); !ok {
			return groupConfigInvalid("Unknown group config name: %s", k)
		}
	}
	if v, ok := configs["streams.rack.aware.assignment.tags"]; ok && strings.TrimSpace(v) != "" {
		seen := map[string]bool{}
		for _, tag := range regexp.MustCompile(`\s*,\s*`).Split(strings.TrimSpace(v), -1) {
			if seen[tag] {
				return groupConfigInvalid("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
			}
			seen[tag] = true
		}
	}
	ints := map[string]int64{}
	for _, def := range configdef.Groups() {
		v, ok := configs[def.Name]
		if !ok {
			continue
		}
		if err := storage.ValidateConfig(def.Def, v); err != nil {
			return groupConfigInvalid("%s", kafkaerr.Message(err))
		}
		if def.Name == "share.auto.offset.reset" {
			if err := validateShareAutoOffsetReset(v); err != nil {
				return err
			}
		}
		if def.Type == configdef.Int || def.Type == configdef.Long {
			ints[def.Name], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	for _, bound := range configdef.GroupBounds {
		n, ok := ints[bound.Key]
		if !ok {
			continue
		}
		switch {
		case bound.Min != "" && bound.Max != "":
			lo, hi := b.groupBrokerInt(bound.Min), b.groupBrokerInt(bound.Max)
			if n < lo || n > hi {
				return groupConfigInvalid("%s must be in the range %d to %d inclusive.", bound.Key, lo, hi)
			}
		case bound.Max != "":
			if hi := b.groupBrokerInt(bound.Max); n > hi {
				return groupConfigInvalid("%s must be less than or equal to %d", bound.Key, hi)
			}
		default:
			if lo := b.groupBrokerInt(bound.Min); n < lo {
				return groupConfigInvalid("%s must be greater than or equal to %d", bound.Key, lo)
			}
		}
	}
	if name, ok := configs["streams.assignor.name"]; ok {
		v, _ := b.groupBrokerValue("group.streams.assignors")
		assignors := splitList(v)
		if !slices.Contains(assignors, name) {
			return groupConfigInvalid("streams.assignor.name '%s' is not a registered task assignor. Registered assignors are: [%s].", name, strings.Join(assignors, ", "))
		}
	}
	for _, pair := range configdef.GroupSessionPairs {
		session, hasSession := ints[pair[0]]
		heartbeat, hasHeartbeat := ints[pair[1]]
		if !hasSession && !hasHeartbeat {
			continue
		}
		if !hasSession {
			session = b.groupBrokerInt("group." + pair[0])
		}
		if !hasHeartbeat {
			heartbeat = b.groupBrokerInt("group." + pair[1])
		}
		if session <= heartbeat {
			return groupConfigInvalid("%s must be greater than %s", pair[0], pair[1])
		}
	}
	if v := configs["errors.deadletterqueue.topic.name"]; strings.HasPrefix(v, "__") {
		return groupConfigInvalid("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
	}
	return nil
}

// shareResetDuration is the duration of a by_duration
// share.auto.offset.reset, as Java's Duration.parse reads it.
func shareResetDuration(v string) (time.Duration, bool) {
	s, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(v)), "by_duration:")
	m := shareResetParts.FindStringSubmatch(s)
	if !ok || m == nil || s == "p" || strings.HasSuffix(s, "t") {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * unit
		}
	}
	if frac := m[5]; frac != "" {
		nanos, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		d += time.Duration(nanos)
	}
	return d, true
}

// shareResetParts splits a by_duration's ISO-8601 duration into days,
// hours, minutes, seconds and the seconds' fraction.
var shareResetParts = regexp.MustCompile(`^p(?:(\d+)d)?(?:t(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)(?:[.,](\d{0,9}))?s)?)?$`)

func validateShareAutoOffsetReset(v string) error {
	s := strings.ToLower(strings.TrimSpace(v))
	if s == "earliest" || s == "latest" {
		return nil
	}
	if d, ok := strings.CutPrefix(s, "by_duration:"); ok && shareAutoOffsetReset.MatchString(d) && d != "p" && !strings.HasSuffix(d, "t") {
		return nil
	}
	return groupConfigInvalid("Invalid value %s for configuration share.auto.offset.reset: Invalid value `%s` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v, v)
}

// replaceGroupConfigs sets a group's whole set of configs once they
// validate.
func (b *services) replaceGroupConfigs(name string, configs map[string]string, validateOnly bool) error {
	if err := alteredGroup(name); err != nil {
		return err
	}
	if err := b.validateGroupConfigs(configs); err != nil {
		return err
	}
	return b.replaceConfigsOf(groupConfigResource(name), configs, validateOnly, func(*metadata.Image) error { return nil })
}

// groupOverrides is the coordinator's view of the GROUP configs: a
// group's own consumer session timeout and heartbeat interval, zero where
// it sets none, held to the broker's current bounds as Kafka's
// GroupConfig.evaluate does.
func groupOverrides(meta interface{ Image() *metadata.Image }, static map[string]string) func(group string) (session, heartbeat time.Duration) {
	bound := func(key string) int64 {
		v, ok := static[key]
		if !ok {
			v = configdef.GroupBrokerDefaults[key]
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	get := func(set map[string]string, key string) time.Duration {
		v, ok := set["consumer."+key]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0
		}
		n = max(bound("group.consumer.min."+key), min(n, bound("group.consumer.max."+key)))
		return time.Duration(n) * time.Millisecond
	}
	return func(group string) (time.Duration, time.Duration) {
		set := meta.Image().Configs.Of(groupConfigResource(group))
		if len(set) == 0 {
			return 0, 0
		}
		return get(set, "session.timeout.ms"), get(set, "heartbeat.interval.ms")
	}
}

// groupListConfig is the current items of a group's LIST config, for
// APPEND and SUBTRACT; other configs are INVALID_CONFIG, as Kafka's
// controller answers.
func groupListConfig(op kmsg.IncrementalAlterConfigOp, name string, configs map[string]string) ([]string, error) {
	def, ok := configdef.GroupConfigDef(name)
	if !ok || def.Type != configdef.List {
		return nil, kafkaerr.New(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", op, name)
	}
	if v, ok := configs[name]; ok {
		return splitList(v), nil
	}
	return splitList(def.Default), nil
}
