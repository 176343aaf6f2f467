package broker

// CLIENT_METRICS config resources (KIP-714's client metrics
// subscriptions, Kafka 4.4's ClientMetricsConfigs): a named subscription
// says which metrics (name prefixes, "*" for all) the clients it matches
// push and how often (interval.ms, 100 to 3600000, default 5 minutes);
// match is a list of attribute=regex pairs over client_id,
// client_instance_id, client_software_name, client_software_version,
// client_source_address and client_source_port, all of which must match
// (a full match, as Java's Matcher.matches), an empty list matching every
// client. They are set with IncrementalAlterConfigs or AlterConfigs,
// described by DescribeConfigs and listed by ListConfigResources, as Kafka
// serves them, and kept as ConfigRecords of the subscription's resource in
// the metadata image (the quorum log on a cluster, so every node serves
// the same subscriptions; strata-client-metrics.json on one node). A
// subscription whose configs are all deleted is gone. telemetry.go
// serves the subscriptions to clients.
//
// Validation is Kafka's ClientMetricsConfigs.validate of the whole new
// set: an empty name or an unknown config or an interval out of range is
// INVALID_REQUEST, a value of the wrong type or a malformed match pattern
// INVALID_CONFIG, with Kafka's messages. Describing and changing them
// needs DESCRIBE_CONFIGS or ALTER_CONFIGS on the cluster
// (CLUSTER_AUTHORIZATION_FAILED), as Kafka's ConfigHelper and controller
// check.

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
)

// configSourceClientMetrics is DescribeConfigs' CLIENT_METRICS_CONFIG
// source.
const configSourceClientMetrics = 7

// Client metrics configs and their limits (Kafka's ClientMetricsConfigs).
const (
	clientMetricsMetrics  = "metrics"
	clientMetricsInterval = "interval.ms"
	clientMetricsMatch    = "match"

	defaultPushIntervalMs = 5 * 60 * 1000
	minPushIntervalMs     = 100
	maxPushIntervalMs     = 3600000
)

// clientMetricsDefs are the configs of a subscription, in Kafka's
// definition order.
var clientMetricsDefs = []configdef.Def{
	{Name: clientMetricsMetrics, Type: configdef.List, Doc: "Telemetry metric name prefix list"},
	{Name: clientMetricsInterval, Type: configdef.Int, Default: strconv.Itoa(defaultPushIntervalMs), Doc: "Metrics push interval in milliseconds"},
	{Name: clientMetricsMatch, Type: configdef.List, Doc: "Client match criteria"},
}

// clientMatchAttributes are the attributes a match pattern may name.
var clientMatchAttributes = []string{
	"client_instance_id", "client_id", "client_software_name", "client_software_version",
	"client_source_address", "client_source_port",
}

func clientMetricsResource(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ClientMetricsResource, Name: name}
}

// checkedClientMetrics checks the name of a CLIENT_METRICS resource
// DescribeConfigs asks about.
func checkedClientMetrics(name string) error {
	if name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "Client metrics subscription name must not be empty")
	}
	return nil
}

// clientMetricsConfigs is a copy of the subscription's configs in the
// image.
func (b *services) clientMetricsConfigs(name string) map[string]string {
	return maps.Clone(b.meta.Image().Configs.Of(clientMetricsResource(name)))
}

// describeClientMetrics lists a subscription's configs, its own values or
// Kafka's defaults, as Kafka's ConfigHelper: a set value has one synonym
// of source CLIENT_METRICS_CONFIG, a default none.
func (b *services) describeClientMetrics(name string, names map[string]bool, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	set := b.clientMetricsConfigs(name)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, def := range clientMetricsDefs {
		if names != nil && !names[def.Name] {
			continue
		}
		v, source := def.Default, int8(configSourceDefault)
		var syns []configSynonym
		if own, ok := set[def.Name]; ok {
			v, source = own, configSourceClientMetrics
			if def.Type == configdef.List {
				v = strings.Join(splitList(own), ",")
			} else {
				v = strings.TrimSpace(own)
			}
			syns = []configSynonym{{def.Name, &v, source}}
		}
		out = append(out, describedConfig(def.Name, def.Type, &v, source, false, def.Doc, syns, synonyms, docs))
	}
	return out
}

func clientMetricsDef(name string) (configdef.Def, bool) {
	i := slices.IndexFunc(clientMetricsDefs, func(d configdef.Def) bool { return d.Name == name })
	if i < 0 {
		return configdef.Def{}, false
	}
	return clientMetricsDefs[i], true
}

// validateClientMetrics is Kafka's ClientMetricsConfigs.validate.
func validateClientMetrics(name string, configs map[string]string) error {
	if name == "" {
		return kafkaerr.New(kerr.InvalidRequest, "Subscription name can't be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		if _, ok := clientMetricsDef(k); !ok {
			return kafkaerr.New(kerr.InvalidRequest, "Unknown client metrics configuration: %s", k)
		}
	}
	for _, k := range []string{clientMetricsMetrics, clientMetricsMatch} {
		if v, ok := configs[k]; ok {
			seen := map[string]bool{}
			for _, item := range splitList(v) {
				if seen[item] {
					return kafkaerr.New(kerr.InvalidConfig, "Configuration '%s' values must not be duplicated.", k)
				}
				seen[item] = true
			}
		}
	}
	if v, ok := configs[clientMetricsInterval]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return kafkaerr.New(kerr.InvalidConfig, "Invalid value %s for configuration %s: Not a number of type INT", v, clientMetricsInterval)
		}
		if n < minPushIntervalMs || n > maxPushIntervalMs {
			return kafkaerr.New(kerr.InvalidRequest, "Invalid value %d for %s, interval must be between 100 and 3600000 (1 hour)", n, clientMetricsInterval)
		}
	}
	if v, ok := configs[clientMetricsMatch]; ok {
		if _, err := parseClientMatch(splitList(v)); err != nil {
			return err
		}
	}
	return nil
}

// compiledPatterns caches the regexes of match patterns: every telemetry
// request evaluates the subscriptions it matches.
var compiledPatterns sync.Map // string -> *regexp.Regexp

// parseClientMatch is Kafka's parseMatchingPatterns: attribute=regex
// pairs, the regex anchored at both ends as Java's Matcher.matches.
func parseClientMatch(patterns []string) (map[string]*regexp.Regexp, error) {
	out := make(map[string]*regexp.Regexp, len(patterns))
	for _, p := range patterns {
		parts := strings.Split(p, "=")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1] // Java's String.split drops trailing empty strings
		}
		if len(parts) != 2 || !slices.Contains(clientMatchAttributes, strings.TrimSpace(parts[0])) {
			return nil, kafkaerr.New(kerr.InvalidConfig, "Illegal client matching pattern: %s", p)
		}
		expr := strings.TrimSpace(parts[1])
		re, ok := compiledPatterns.Load(expr)
		if !ok {
			c, err := regexp.Compile(`^(?:` + expr + `)$`)
			if err != nil {
				return nil, kafkaerr.New(kerr.InvalidConfig, "Illegal client matching pattern: %s", p)
			}
			re, _ = compiledPatterns.LoadOrStore(expr, c)
		}
		out[strings.TrimSpace(parts[0])] = re.(*regexp.Regexp)
	}
	return out, nil
}

// replaceClientMetrics sets a subscription's whole set of configs once
// they validate; no configs removes it.
func (b *services) replaceClientMetrics(name string, configs map[string]string, validateOnly bool) error {
	if err := validateClientMetrics(name, configs); err != nil {
		return err
	}
	return b.replaceConfigsOf(clientMetricsResource(name), configs, validateOnly, func(*metadata.Image) error { return nil })
}

// clientMetricsListConfig is the current items of a subscription's LIST
// config, for APPEND and SUBTRACT; interval.ms and unknown names are
// INVALID_CONFIG, as Kafka's controller answers.
func clientMetricsListConfig(op kmsg.IncrementalAlterConfigOp, name string, configs map[string]string) ([]string, error) {
	def, ok := clientMetricsDef(name)
	if !ok || def.Type != configdef.List {
		return nil, kafkaerr.New(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", op, name)
	}
	return splitList(configs[name]), nil
}

// clientSubscription is one subscription as telemetry.go evaluates it.
type clientSubscription struct {
	name       string
	metrics    []string
	intervalMs int32
	match      map[string]*regexp.Regexp
}

// clientSubscriptions are the image's subscriptions, by name.
func clientSubscriptions(img *metadata.Image) []clientSubscription {
	var out []clientSubscription
	for _, res := range img.Configs.Resources() {
		if res.Type != metadata.ClientMetricsResource {
			continue
		}
		c := img.Configs.Of(res)
		sub := clientSubscription{name: res.Name, metrics: splitList(c[clientMetricsMetrics]), intervalMs: defaultPushIntervalMs}
		if v, ok := c[clientMetricsInterval]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil {
				sub.intervalMs = int32(n)
			}
		}
		match, err := parseClientMatch(splitList(c[clientMetricsMatch]))
		if err != nil {
			continue // validated when set: not from this broker's image
		}
		sub.match = match
		out = append(out, sub)
	}
	return out
}

// matches reports whether a client with attrs is one the subscription
// speaks to: every pattern matches its attribute, which the client has.
func (s clientSubscription) matches(attrs map[string]string) bool {
	for k, re := range s.match {
		v, ok := attrs[k]
		if !ok || !re.MatchString(v) {
			return false
		}
	}
	return true
}
