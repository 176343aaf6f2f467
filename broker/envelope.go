package broker

// Envelope (key 58), as Kafka's brokers forward a client's admin request
// to the active controller (ForwardingManager) and the controller serves
// it (ControllerApis.handleEnvelopeRequest): the request goes inside an
// Envelope with the client's principal (Kafka's DefaultPrincipalData,
// version-prefixed) and address, so the controller authorizes the client,
// not the forwarding node. The forwarding node's own principal must be
// allowed CLUSTER_ACTION on the cluster (a super user, as Kafka requires
// of the inter-broker principal), else the Envelope is
// CLUSTER_AUTHORIZATION_FAILED. Only the controller listener serves it,
// and only for the keys brokers forward.

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/protocol"
)

// envelope wraps req, forwarded for rc's client: its header (the client's
// correlation and client id) and body as the client sent them, its
// principal and its IP address.
func envelope(rc *reqCtx, req kmsg.Request) (*kmsg.EnvelopeRequest, error) {
	env := kmsg.NewPtrEnvelopeRequest()
	clientID := ""
	if rc.req.ClientID != nil {
		clientID = *rc.req.ClientID
	}
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, rc.req.CorrelationID)
	env.RequestData = frame[4:]
	typ, name, ok := strings.Cut(rc.principal, ":")
	if !ok {
		return nil, fmt.Errorf("principal %q is not Type:name", rc.principal)
	}
	p := kmsg.NewDefaultPrincipalData()
	p.Type, p.Name, p.TokenAuthenticated = typ, name, rc.tokenAuthenticated
	env.RequestPrincipal = p.AppendTo(nil)
	ip := net.ParseIP(rc.clientHost)
	if ip == nil {
		return nil, fmt.Errorf("client address %q is not an IP address", rc.clientHost)
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	env.ClientHostAddress = ip
	return env, nil
}

// unwrap is the response to req an Envelope's response carries.
func unwrap(req kmsg.Request, env *kmsg.EnvelopeResponse) (kmsg.Response, error) {
	if env.ErrorCode != 0 {
		return itemsResponse(req, env.ErrorCode)
	}
	body := env.ResponseData
	if len(body) < 4 {
		return nil, fmt.Errorf("envelope response of %d bytes", len(body))
	}
	body = body[4:] // the correlation id
	if protocol.FlexibleResponseHeader(req.Key(), req.GetVersion()) {
		var err error
		if body, err = skipHeaderTags(body); err != nil {
			return nil, fmt.Errorf("envelope response: %w", err)
		}
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("envelope response: decode %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// handleEnvelope serves an Envelope on the controller listener with r's
// handler of the request inside, as that request's client.
func handleEnvelope(r *registry) handler {
	return func(rc *reqCtx) (kmsg.Response, error) {
		env := rc.req.Body.(*kmsg.EnvelopeRequest)
		resp := kmsg.NewPtrEnvelopeResponse()
		if !rc.authorizeCluster(OpClusterAction) {
			resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			return resp, nil
		}
		var p kmsg.DefaultPrincipalData
		if err := p.ReadFrom(env.RequestPrincipal); err != nil {
			resp.ErrorCode = kerr.PrincipalDeserializationFailure.Code
			return resp, nil
		}
		if len(env.ClientHostAddress) != net.IPv4len && len(env.ClientHostAddress) != net.IPv6len {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		inner, err := protocol.ParseRequest(env.RequestData, func(key, version int16) bool {
			return slices.Contains(forwardedKeys, kmsg.Key(key)) && r.supports(key, version)
		})
		if err != nil {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		client := *rc
		client.principal, client.clientHost, client.req = p.Type+":"+p.Name, javaHostAddress(net.IP(env.ClientHostAddress)), inner
		client.tokenAuthenticated, client.forwarded = p.TokenAuthenticated, true
		innerResp, err := r.apis[inner.Key].serve(&client)
		if err != nil {
			// Not a reason to close the forwarding node's connection.
			rc.svc.logger.Warn("refusing a forwarded request", zap.String("request", kmsg.NameForKey(inner.Key)), zap.Error(err))
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		resp.ResponseData = protocol.AppendResponse(nil, inner, innerResp)[4:]
		return resp, nil
	}
}
