package broker

// DescribeCluster.
//
// The cluster is the metadata image's: the cluster id from meta.properties,
// the lowest live broker as the controller id (Kafka reports a random live
// broker to clients; on one node both are node.id) and each registered
// broker at its advertised address on the client listener, without a rack
// (Strata's node registers none). EndpointType (v1) 1
// asks for brokers; 2 (controllers) sent to a broker is
// MISMATCHED_ENDPOINT_TYPE and any other UNSUPPORTED_ENDPOINT_TYPE (v0:
// INVALID_REQUEST), as Kafka's AuthHelper.computeDescribeClusterResponse
// answers. The cluster's authorized operations are computed when asked
// for (0 without DESCRIBE on the cluster), else Kafka's "not requested"
// value, -2^31. IncludeFencedBrokers (v2, KIP-1073) adds the fenced
// brokers on the listener, marked IsFenced, as Kafka's getBrokerNodes.
//
// On a controller listener (KIP-919, what an admin client given
// --bootstrap-controller asks first) it lists the quorum's voters at their
// controller listeners, with the active controller as ControllerId (-1
// while none is known), and requires ALTER on the cluster, as Kafka's
// ControllerApis; EndpointType 1 there is MISMATCHED_ENDPOINT_TYPE. Voters
// are never fenced there: the controller ignores IncludeFencedBrokers, as
// Kafka's.

import (
	"fmt"
	"math"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerDescribeCluster serves DescribeCluster; its versions are here and nowhere else.
func registerDescribeCluster(r *registry) { r.add(kmsg.DescribeCluster, 0, 2, handleDescribeCluster) }

const (
	endpointTypeBroker     = 1
	endpointTypeController = 2
)

// endpointTypeError is the error of a DescribeCluster for endpoint type
// got sent to a listener of endpoint type want, nil when they match.
func endpointTypeError(version int16, got, want int8) (int16, *string) {
	switch {
	case got == want:
		return 0, nil
	case got != endpointTypeBroker && got != endpointTypeController:
		code := kerr.UnsupportedEndpointType.Code
		if version == 0 {
			code = kerr.InvalidRequest.Code
		}
		return code, kmsg.StringPtr(fmt.Sprintf("Unsupported endpoint type %d", got))
	}
	code := kerr.MismatchedEndpointType.Code
	if version == 0 {
		code = kerr.InvalidRequest.Code
	}
	return code, kmsg.StringPtr(fmt.Sprintf("The request was sent to an endpoint of type %d, but we wanted an endpoint of type %d", want, got))
}

func handleDescribeCluster(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.EndpointType = r.EndpointType
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.Version == 0 {
		r.EndpointType = endpointTypeBroker // v0 has no endpoint type: brokers
	}
	if resp.ErrorCode, resp.ErrorMessage = endpointTypeError(req.Version, r.EndpointType, endpointTypeBroker); resp.ErrorCode != 0 {
		return resp, nil
	}
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = rc.clusterAuthorizedOperations()
	}
	resp.ClusterID = b.clusterID()
	img := b.meta.Image()
	resp.ControllerID = b.controllerID(img, true)
	for _, reg := range img.Cluster.Brokers() {
		host, port, listens := b.endpoint(reg)
		if !listens || reg.Fenced && !r.IncludeFencedBrokers {
			continue
		}
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID, br.Host, br.Port, br.IsFenced = reg.ID, host, port, reg.Fenced
		if reg.Rack != "" {
			rack := reg.Rack
			br.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, br)
	}
	return resp, nil
}

// handleDescribeCluster answers DescribeCluster on the controller
// listener: the quorum's voters.
func (c *controller) handleDescribeCluster(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DescribeClusterRequest)
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.EndpointType = r.EndpointType
	resp.ClusterAuthorizedOperations = math.MinInt32
	if rc.req.Version == 0 {
		r.EndpointType = endpointTypeBroker
	}
	if resp.ErrorCode, resp.ErrorMessage = endpointTypeError(rc.req.Version, r.EndpointType, endpointTypeController); resp.ErrorCode != 0 {
		return resp, nil
	}
	if !rc.authorizeCluster(OpAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	voters, err := c.store.CurrentVoters()
	if err != nil {
		resp.ErrorCode = c.errCode(kmsg.DescribeCluster, err)
		return resp, nil
	}
	resp.ClusterID, resp.ControllerID = c.clusterID, -1
	leader, known := c.store.Leader()
	for _, v := range voters {
		host, port, err := net.SplitHostPort(v.Addr)
		n, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			continue
		}
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID, br.Host, br.Port = v.ID, host, int32(n)
		resp.Brokers = append(resp.Brokers, br)
		if known && v.ID == leader {
			resp.ControllerID = leader
		}
	}
	return resp, nil
}
