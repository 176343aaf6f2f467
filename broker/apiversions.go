package broker

// ApiVersions.
//
// Advertises exactly the broker's registry (handlers.go). A request at a version we do not
// serve is answered at v0 with UNSUPPORTED_VERSION and our ranges (KIP-511),
// by conn.serveOne before the body is parsed. No features are finalized.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerApiVersions serves ApiVersions; its versions are here and nowhere else.
func registerApiVersions(r *registry) { r.add(kmsg.ApiVersions, 0, 4, handleApiVersions) }

func handleApiVersions(rc *reqCtx) (kmsg.Response, error) {
	return apiVersionsResponse(rc.svc.served, 0), nil
}

func unsupportedAPIVersions(served []VersionRange) kmsg.Response {
	return apiVersionsResponse(served, kerr.UnsupportedVersion.Code)
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
