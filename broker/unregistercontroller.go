package broker

// UnregisterController (key 94, v0), what kafka-cluster
// unregister-controller sends: Kafka 4.4's active controller removes a
// controller's registration (ClusterControlManager.unregisterController),
// once metadata.version is at least 4.4-IV2 (33); below it every request
// is UNSUPPORTED_VERSION, "The current MetadataVersion is too old to
// support controller unregistration.", and the tool prints "The target
// cluster does not support the controller unregistration API.". Without
// ALTER on the cluster it is CLUSTER_AUTHORIZATION_FAILED; a controller
// that is not the active one answers NOT_CONTROLLER; the active one asked
// to unregister itself INVALID_REQUEST, "Controller cannot unregister
// itself while it is active.", before the metadata.version is looked at,
// as QuorumController checks; a broker forwards it (forward.go), as
// Kafka's brokers do.
//
// Strata's metadata.version goes up to 14 (features.go): its controllers
// are the quorum's raft voters and keep no registrations (3.7-IV0's
// KIP-919), so there is nothing to unregister and every request is
// answered as a Kafka 4.4 controller at that metadata.version answers it;
// kafka-metadata-quorum remove-controller takes a controller out
// (raftvoters.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errControllerUnregistrationUnsupported is Kafka's message below 4.4-IV2.
const errControllerUnregistrationUnsupported = "The current MetadataVersion is too old to support controller unregistration."

// registerUnregisterController serves it on a client listener, for the
// forwarding to wrap.
func (b *Broker) registerUnregisterController() {
	b.apis.add(kmsg.UnregisterController, 0, 0, func(rc *reqCtx) (kmsg.Response, error) { return b.controller.handleUnregisterController(rc) })
}

func (c *controller) handleUnregisterController(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.UnregisterControllerRequest)
	resp := kmsg.NewPtrUnregisterControllerResponse()
	switch {
	case !rc.authorizeCluster(OpAlter):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	case !c.isActive():
		resp.ErrorCode = kerr.NotController.Code
	case r.ControllerID == c.store.NodeID():
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("Controller cannot unregister itself while it is active.")
	default:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = kmsg.StringPtr(errControllerUnregistrationUnsupported)
	}
	return resp, nil
}
