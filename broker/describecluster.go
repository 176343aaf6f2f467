package broker

// DescribeCluster.
//
// The cluster is this node: the cluster id from meta.properties, node.id as
// the controller id (Kafka reports a random live broker to clients) and one
// broker at the advertised address, without a rack. EndpointType (v1) 1
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
	resp.ClusterID = b.logs.ClusterID()
	resp.ControllerID = b.cfg.NodeID
	br := kmsg.NewDescribeClusterResponseBroker()
	br.NodeID, br.Host, br.Port = b.cfg.NodeID, b.advHost, b.advPort
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{br}
	return resp, nil
}
