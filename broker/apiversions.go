package broker

// ApiVersions.
//
// Advertises exactly the broker's registry (handlers.go). A request at a version we do not
// serve is answered at v0 with UNSUPPORTED_VERSION and our ranges (KIP-511),
// by conn.serveOne before the body is parsed. v3+ answers the supported and
// the finalized features (features.go). v5 (KIP-1242) checks the ClusterId
// and NodeId a client names on a client listener, as Kafka 4.4's brokers
// do: a ClusterId without a NodeId is INVALID_REQUEST, another cluster's
// or node's is REBOOTSTRAP_REQUIRED, both with no ApiKeys and no features;
// a null ClusterId is not checked, and the controller listener checks
// neither, as Kafka's controllers do not.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerApiVersions serves ApiVersions; its versions are here and nowhere else.
func registerApiVersions(r *registry) { r.add(kmsg.ApiVersions, 0, 5, handleApiVersions) }

func handleApiVersions(rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.Body.(*kmsg.ApiVersionsRequest)
	if req.ClusterID != nil && !rc.svc.controllerListener {
		switch {
		case req.NodeID < 0:
			return errorAPIVersions(kerr.InvalidRequest.Code), nil
		case *req.ClusterID != rc.svc.clusterID() || req.NodeID != rc.svc.cfg.NodeID:
			return errorAPIVersions(kerr.RebootstrapRequired.Code), nil
		}
	}
	if rc.conn != nil && rc.req.Version >= 3 {
		rc.conn.softwareName, rc.conn.softwareVersion = req.ClientSoftwareName, req.ClientSoftwareVersion
	}
	resp := apiVersionsResponse(rc.svc.served, 0)
	setFeatures(resp, rc.svc.meta.Image(), rc.svc.cfg.Quorum != nil)
	return resp, nil
}

func unsupportedAPIVersions(served []VersionRange) kmsg.Response {
	return apiVersionsResponse(served, kerr.UnsupportedVersion.Code)
}

// errorAPIVersions is the answer of a v5 check that failed: Kafka's
// ApiVersionsResponse with only the error code.
func errorAPIVersions(code int16) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = code
	return resp
}

func apiVersionsResponse(served []VersionRange, code int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = code
	for _, r := range served {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.Key, r.Min, r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
