package broker

// AlterConfigs.
//
// Kafka's legacy semantics: the configs given replace the resource's whole
// set of dynamic configs, so a config not named goes back to its default.
// TOPIC resources replace the topic's overrides (validated as in
// CreateTopics, persisted in strata-topics.json, applied to the open logs
// at once). BROKER resources replace the dynamic broker configs of the
// cluster default (name "") or of this node (name = node.id), persisted in
// strata-broker-configs.json and checked as Kafka 4.4 checks them
// (storage's checkDynamicBrokerConfigs: Kafka's non-dynamic keys, per-broker
// keys at the default level, unprefixed key and trust stores and
// ill-typed values are INVALID_REQUEST); the broker synonyms of topic
// configs (log.retention.ms, log.segment.bytes, ...) apply to every topic
// and, per node, a listener's key and trust stores (tlsreload.go) to the
// listener; the others are kept and described, as Kafka keeps them.
// GROUP resources replace a group's configs (groupconfigs.go),
// CLIENT_METRICS resources a subscription's (clientmetrics.go). A null value is INVALID_REQUEST, a
// resource named twice INVALID_REQUEST, an invalid value INVALID_CONFIG,
// an unknown topic UNKNOWN_TOPIC_OR_PARTITION. ValidateOnly checks
// everything and changes nothing.
//
// Difference from Kafka: the BROKER_LOGGER resource type is not served
// (INVALID_REQUEST).

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
)

// registerAlterConfigs serves AlterConfigs; its versions are here and nowhere else.
func registerAlterConfigs(r *registry) { r.add(kmsg.AlterConfigs, 0, 2, handleAlterConfigs) }

type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

func handleAlterConfigs(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := kmsg.NewPtrAlterConfigsResponse()
	seen := map[configResource]int{}
	for _, rr := range r.Resources {
		seen[configResource{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range r.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		configs := make(map[string]string, len(rr.Configs))
		var err error
		var nulls []string
		for _, c := range rr.Configs {
			if c.Value == nil {
				nulls = append(nulls, c.Name)
				continue
			}
			configs[c.Name] = *c.Value
		}
		if len(nulls) > 0 {
			err = kafkaerr.New(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
		}
		// Duplicates, then authorization, then the values, as the KRaft
		// controller.
		if refused := configRefused(rc, OpAlterConfigs, rr.ResourceType, rr.ResourceName); refused != nil {
			err = refused
		}
		if seen[configResource{rr.ResourceType, rr.ResourceName}] > 1 {
			err = kafkaerr.New(kerr.InvalidRequest, "Each resource must appear at most once.")
		}
		if err == nil {
			err = b.replaceConfigs(rr.ResourceType, rr.ResourceName, configs, r.ValidateOnly)
		}
		res.ErrorCode, res.ErrorMessage = b.errorCode(kmsg.AlterConfigs, err), errorMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// replaceConfigs sets the whole dynamic config set of a resource.
func (b *services) replaceConfigs(typ kmsg.ConfigResourceType, name string, configs map[string]string, validateOnly bool) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if _, err := b.alteredConfigTopic(name); err != nil {
			return err
		}
		res := metadata.ConfigResource{Type: metadata.TopicResource, Name: name}
		return b.replaceConfigsOf(res, configs, validateOnly, func(img *metadata.Image) error {
			if img.Topics.ByName(name) == nil {
				return unknownConfigTopic(name)
			}
			return b.logs.AlterTopicConfigs(name, configs, true)
		})
	case kmsg.ConfigResourceTypeBroker:
		node, err := b.configBroker(name)
		if err != nil {
			return err
		}
		res := metadata.ConfigResource{Type: metadata.BrokerResource}
		if node >= 0 {
			res.Name = strconv.Itoa(int(node))
		}
		return b.replaceConfigsOf(res, configs, validateOnly, func(*metadata.Image) error {
			if err := b.logs.AlterBrokerConfigs(configs, node >= 0, true); err != nil {
				return err
			}
			if node == b.cfg.NodeID && !b.controllerListener {
				return b.checkListenerTLS(configs)
			}
			return nil
		})
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.replaceGroupConfigs(name, configs, validateOnly)
	case kmsg.ConfigResourceTypeClientMetrics:
		return b.replaceClientMetrics(name, configs, validateOnly)
	default:
		return unsupportedResource(typ)
	}
}
