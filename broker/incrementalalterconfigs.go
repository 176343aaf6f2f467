package broker

// IncrementalAlterConfigs.
//
// Each resource's operations apply to its current dynamic configs (a
// topic's overrides, or the cluster-default or this node's dynamic broker
// configs, or a group's configs, or a client metrics subscription's), and the result replaces them as
// AlterConfigs does (see
// alterconfigs.go for validation, persistence and errors). SET sets a
// value, DELETE removes it (back to the default; deleting an unset config
// is fine), APPEND and SUBTRACT add or remove items of a LIST config
// (cleanup.policy, the throttled replica lists) starting from the current
// value or Kafka's default; on other configs they are INVALID_CONFIG, as
// an unknown operation is INVALID_REQUEST. A config named twice in one
// resource, a resource named twice and a null value for SET, APPEND or
// SUBTRACT are INVALID_REQUEST.

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/internal/kafkaerr"
)

// registerIncrementalAlterConfigs serves IncrementalAlterConfigs; its versions are here and nowhere else.
func registerIncrementalAlterConfigs(r *registry) {
	r.add(kmsg.IncrementalAlterConfigs, 0, 1, handleIncrementalAlterConfigs)
}

func handleIncrementalAlterConfigs(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	seen := map[configResource]int{}
	for _, rr := range r.Resources {
		seen[configResource{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range r.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if seen[configResource{rr.ResourceType, rr.ResourceName}] > 1 {
			err = kafkaerr.New(kerr.InvalidRequest, "Each resource must appear at most once.")
		} else if err = configRefused(rc, OpAlterConfigs, rr.ResourceType, rr.ResourceName); err == nil {
			err = b.alterIncrementally(rr, r.ValidateOnly)
		}
		res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.IncrementalAlterConfigs, err), errorMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func (b *services) alterIncrementally(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	next, err := b.incrementalNext(rr)
	if err != nil {
		return err
	}
	return b.replaceConfigs(rr.ResourceType, rr.ResourceName, next, validateOnly)
}

// incrementalNext is what rr's operations make of its resource's dynamic
// configs.
func (b *services) incrementalNext(rr kmsg.IncrementalAlterConfigsRequestResource) (map[string]string, error) {
	var current map[string]string
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		var err error
		if current, err = b.alteredConfigTopic(rr.ResourceName); err != nil {
			return nil, err
		}
	case kmsg.ConfigResourceTypeBroker:
		node, err := b.configBroker(rr.ResourceName)
		if err != nil {
			return nil, err
		}
		def, own := b.brokerConfigs(node)
		current = def
		if node >= 0 {
			current = own
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if err := alteredGroup(rr.ResourceName); err != nil {
			return nil, err
		}
		current = b.groupConfigs(rr.ResourceName)
	case kmsg.ConfigResourceTypeClientMetrics:
		current = b.clientMetricsConfigs(rr.ResourceName)
	default:
		return nil, unsupportedResource(rr.ResourceType)
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	// Duplicate keys, then null values, as Kafka's ConfigAdminManager.
	named := map[string]bool{}
	var nulls []string
	for _, c := range rr.Configs {
		if named[c.Name] {
			return nil, kafkaerr.New(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		named[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return nil, kafkaerr.New(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	for _, c := range rr.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			items, err := b.listConfig(rr.ResourceType, c.Op, c.Name, next)
			if err != nil {
				return nil, err
			}
			for _, v := range splitList(*c.Value) {
				has := slices.Contains(items, v)
				switch {
				case c.Op == kmsg.IncrementalAlterConfigOpAppend && !has:
					items = append(items, v)
				case c.Op == kmsg.IncrementalAlterConfigOpSubtract && has:
					items = slices.DeleteFunc(items, func(s string) bool { return s == v })
				}
			}
			next[c.Name] = strings.Join(items, ",")
		default:
			return nil, kafkaerr.New(kerr.InvalidRequest, "Unknown operations type %d", c.Op)
		}
	}
	return next, nil
}

// listConfig returns the current items of a LIST config: its value in
// configs, else Kafka's default. Other configs are INVALID_CONFIG with
// Kafka's messages: the broker's ConfigAdminManager's for a broker config,
// the controller's for a topic config.
func (b *services) listConfig(typ kmsg.ConfigResourceType, op kmsg.IncrementalAlterConfigOp, name string, configs map[string]string) ([]string, error) {
	switch typ {
	case kmsg.ConfigResourceTypeGroupConfig:
		return groupListConfig(op, name, configs)
	case kmsg.ConfigResourceTypeClientMetrics:
		return clientMetricsListConfig(op, name, configs)
	}
	key := name
	if typ == kmsg.ConfigResourceTypeBroker {
		topicKey, _, ok := configdef.BrokerSynonymOf(name)
		if def, known := configdef.BrokerDef(name); !ok || !known || def.Type != configdef.List {
			if !known {
				return nil, kafkaerr.New(kerr.InvalidConfig, "Unknown config name: %s", name)
			}
			return nil, kafkaerr.New(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", strings.ToLower(op.String()), name)
		}
		key = topicKey
	}
	def, ok := configdef.TopicDef(key)
	if !ok || def.Type != configdef.List {
		return nil, kafkaerr.New(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", op, name)
	}
	if v, ok := configs[name]; ok {
		return splitList(v), nil
	}
	return splitList(def.Default), nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
