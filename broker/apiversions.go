package broker

// ApiVersions, versions 0-4.
//
// Advertises exactly protocol.Served(). A request at a version we do not
// serve is answered at v0 with UNSUPPORTED_VERSION and our ranges (KIP-511),
// by conn.serveOne before the body is parsed. No features are finalized.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleApiVersions(_ *Broker, _ *conn, _ *protocol.Request) (kmsg.Response, error) {
	return apiVersionsResponse(0), nil
}

func unsupportedAPIVersions() kmsg.Response {
	return apiVersionsResponse(kerr.UnsupportedVersion.Code)
}

func apiVersionsResponse(code int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = code
	for _, r := range protocol.Served() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.Key, r.Min, r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
