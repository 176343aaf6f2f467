package broker

// DescribeConfigs.
//
// TOPIC resources list every topic config Kafka defines that Strata
// accepts (configdef.Topics), sorted by name, with the value in
// effect and its source (configs.go); v1+ adds the synonyms when asked,
// v3+ the config type and, when asked, the documentation. BROKER resources
// named after node.id list the broker configs that can change dynamically
// (the topic configs' log.* synonyms) and the read-only settings Strata
// implements, and this node's dynamic listener key and trust stores
// (tlsreload.go); the cluster default resource (name "") lists only the
// dynamic default configs, as Kafka. GROUP resources list Kafka's group
// configs with the group's own values or the broker's (groupconfigs.go);
// an empty group name is INVALID_REQUEST. CLIENT_METRICS resources list a
// subscription's metrics, interval.ms and match (clientmetrics.go); an
// empty name is INVALID_REQUEST. Passwords are sensitive, without
// their values. ConfigNames filters by name; unknown names are
// left out.
//
// Errors per resource, as Kafka: an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION, an invalid name INVALID_TOPIC_EXCEPTION, a
// broker id other than node.id or "" INVALID_REQUEST, and the BROKER_LOGGER
// resource type INVALID_REQUEST.
//
// Differences from Kafka: a broker resource lists the configs Strata
// implements, not Kafka's few hundred; without
// server.properties keys (a broker built in a test) a log setting counts as
// STATIC_BROKER_CONFIG when it differs from Kafka's default.

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
)

// registerDescribeConfigs serves DescribeConfigs; its versions are here and nowhere else.
func registerDescribeConfigs(r *registry) { r.add(kmsg.DescribeConfigs, 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range r.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var names map[string]bool
		if rr.ConfigNames != nil {
			names = make(map[string]bool, len(rr.ConfigNames))
			for _, n := range rr.ConfigNames {
				names[n] = true
			}
		}
		synonyms, docs := r.IncludeSynonyms && req.Version >= 1, r.IncludeDocumentation && req.Version >= 3
		if err := configRefused(rc, OpDescribeConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.DescribeConfigs, err), errorMessage(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			topic, err := b.configTopic(rr.ResourceName)
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				err = kafkaerr.New(kerr.UnknownTopicOrPartition, "") // Kafka's ConfigHelper sets the code alone
			}
			if err != nil {
				res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.DescribeConfigs, err), errorMessage(err)
				break
			}
			src := b.brokerConfigSources()
			for _, def := range configdef.Topics() {
				if names == nil || names[def.Name] {
					res.Configs = append(res.Configs, describeTopicConfig(def, topic, src, synonyms, docs))
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			node, err := b.configBroker(rr.ResourceName)
			if err != nil {
				res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.DescribeConfigs, err), errorMessage(err)
				break
			}
			res.Configs = b.describeBrokerConfigs(node >= 0, names, synonyms, docs)
		case kmsg.ConfigResourceTypeGroupConfig:
			if err := describedGroup(rr.ResourceName); err != nil {
				res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.DescribeConfigs, err), errorMessage(err)
				break
			}
			res.Configs = b.describeGroupConfigs(rr.ResourceName, names, synonyms, docs)
		case kmsg.ConfigResourceTypeClientMetrics:
			if err := checkedClientMetrics(rr.ResourceName); err != nil {
				res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.DescribeConfigs, err), errorMessage(err)
				break
			}
			res.Configs = b.describeClientMetrics(rr.ResourceName, names, synonyms, docs)
		default:
			err := unsupportedResource(rr.ResourceType)
			res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.DescribeConfigs, err), errorMessage(err)
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// configTopic resolves a TOPIC resource to a copy of the topic's configs
// in the metadata image.
func (b *services) configTopic(name string) (map[string]string, error) {
	if name == "" {
		return nil, kafkaerr.New(kerr.InvalidTopicException, "Topic name is invalid: the empty string is not allowed")
	}
	img := b.meta.Image()
	if img.Topics.ByName(name) == nil {
		if err := checkNewTopicName(img, name); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return nil, err // an invalid name
		}
		return nil, unknownConfigTopic(name)
	}
	return maps.Clone(img.Configs.Of(metadata.ConfigResource{Type: metadata.TopicResource, Name: name})), nil
}

// alteredConfigTopic is configTopic for a change of the resource's
// configs, whose empty name Kafka's controller refuses as a default topic
// resource.
func (b *services) alteredConfigTopic(name string) (map[string]string, error) {
	if name == "" {
		return nil, kafkaerr.New(kerr.InvalidRequest, "Default topic resources are not allowed.")
	}
	return b.configTopic(name)
}

// unknownConfigTopic is the error of a TOPIC resource naming no topic, as
// Kafka's controller checks a config change's resource exists.
func unknownConfigTopic(name string) error {
	return kafkaerr.New(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", name)
}

// brokerConfigs are copies of the dynamic broker configs in the metadata
// image: the cluster default ones and node id's own.
func (b *services) brokerConfigs(id int32) (clusterDefault, node map[string]string) {
	img := b.meta.Image()
	return maps.Clone(img.Configs.Of(metadata.ConfigResource{Type: metadata.BrokerResource})),
		maps.Clone(img.Configs.Of(metadata.ConfigResource{Type: metadata.BrokerResource, Name: strconv.Itoa(int(id))}))
}

// configBroker resolves a BROKER resource to a node id, -1 for "", the
// cluster default. A broker takes only its own node.id, as Kafka's
// ConfigAdminManager (clients send a node's resource to that node); the
// controller listener, serving the changes brokers forward, takes any
// node's, as Kafka's controller does.
func (b *services) configBroker(name string) (node int32, err error) {
	if name == "" {
		return -1, nil
	}
	id, perr := strconv.ParseInt(name, 10, 32)
	if perr == nil && (int32(id) == b.cfg.NodeID || b.controllerListener && id >= 0) {
		return int32(id), nil
	}
	return -1, kafkaerr.New(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", b.cfg.NodeID, name)
}

func unsupportedResource(t kmsg.ConfigResourceType) error {
	return fmt.Errorf("unsupported resource type %s: %w", t, kerr.InvalidRequest)
}
