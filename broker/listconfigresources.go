package broker

// ListConfigResources (KIP-1142; v0 was ListClientMetricsResources).
//
// v1 lists the config resources of the types asked for, every type when
// none is: the groups that have configs (GROUP), the client metrics
// subscriptions (CLIENT_METRICS, clientmetrics.go), each registered
// broker's id as a BROKER_LOGGER and a BROKER resource, and every topic
// (TOPIC), in Kafka 4.4's order (by type, GROUP first) and by name. A type
// it does not list is UNSUPPORTED_VERSION, as Kafka answers. v0 lists only
// the client metrics resources. It needs DESCRIBE_CONFIGS on the cluster
// (CLUSTER_AUTHORIZATION_FAILED), as in Kafka.
//
// Difference from Kafka: Strata serves no BROKER_LOGGER resource in
// DescribeConfigs, though it lists them as Kafka does.

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// registerListConfigResources serves ListConfigResources; its versions are here and nowhere else.
func registerListConfigResources(r *registry) {
	r.add(kmsg.ListConfigResources, 0, 1, handleListConfigResources)
}

// listedConfigResourceTypes are the types ListConfigResources lists, in
// Kafka's order.
var listedConfigResourceTypes = []kmsg.ConfigResourceType{
	kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics,
	kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeTopic,
}

func handleListConfigResources(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ListConfigResourcesRequest)
	resp := kmsg.NewPtrListConfigResourcesResponse()
	if !rc.authorizeCluster(OpDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	img := rc.svc.meta.Image()
	add := func(t kmsg.ConfigResourceType, name string) {
		res := kmsg.NewListConfigResourcesResponseConfigResource()
		res.Name, res.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, res)
	}
	listTyped := func(t kmsg.ConfigResourceType, typ metadata.ConfigResourceType) {
		for _, res := range img.Configs.Resources() {
			if res.Type == typ {
				add(t, res.Name)
			}
		}
	}
	if rc.req.Version == 0 {
		listTyped(kmsg.ConfigResourceTypeClientMetrics, metadata.ClientMetricsResource)
		return resp, nil
	}
	asked := listedConfigResourceTypes
	if len(r.ResourceTypes) > 0 {
		for _, t := range r.ResourceTypes {
			if !slices.Contains(listedConfigResourceTypes, kmsg.ConfigResourceType(t)) {
				resp.ErrorCode = kerr.UnsupportedVersion.Code
				return resp, nil
			}
		}
		asked = slices.DeleteFunc(slices.Clone(listedConfigResourceTypes), func(t kmsg.ConfigResourceType) bool {
			return !slices.Contains(r.ResourceTypes, int8(t))
		})
	}
	for _, t := range asked {
		switch t {
		case kmsg.ConfigResourceTypeGroupConfig:
			listTyped(t, metadata.GroupResource)
		case kmsg.ConfigResourceTypeClientMetrics:
			listTyped(t, metadata.ClientMetricsResource)
		case kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker:
			for _, reg := range img.Cluster.Brokers() {
				add(t, strconv.Itoa(int(reg.ID)))
			}
		case kmsg.ConfigResourceTypeTopic:
			for _, ti := range img.Topics.All() {
				add(t, ti.Name)
			}
		}
	}
	return resp, nil
}
