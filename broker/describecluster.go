package broker

// DescribeCluster.
//
// The cluster is the metadata image's: the cluster id from meta.properties,
// the lowest live broker as the controller id (Kafka reports a random live
// broker to clients; on one node both are node.id) and each registered
// broker at its advertised address on the client listener, without a rack
// (Strata's node registers none). EndpointType (v1) 1
// asks for brokers; 2 (controllers) is UNSUPPORTED_ENDPOINT_TYPE, as a
// Kafka broker answers. Authorized operations are not computed (no ACLs):
// ClusterAuthorizedOperations is Kafka's "not requested" value, -2^31.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerDescribeCluster serves DescribeCluster; its versions are here and nowhere else.
func registerDescribeCluster(r *registry) { r.add(kmsg.DescribeCluster, 0, 1, handleDescribeCluster) }

const endpointTypeBroker = 1

func handleDescribeCluster(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.EndpointType = r.EndpointType
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.Version >= 1 && r.EndpointType != endpointTypeBroker {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "The controller endpoints are not served by a broker; use endpoint type 1 (brokers)."
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp.ClusterID = b.clusterID()
	img := b.meta.Image()
	resp.ControllerID = b.controllerID(img, true)
	for _, reg := range b.liveBrokers(img) {
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID = reg.ID
		br.Host, br.Port, _ = b.endpoint(reg)
		if reg.Rack != "" {
			rack := reg.Rack
			br.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, br)
	}
	return resp, nil
}
