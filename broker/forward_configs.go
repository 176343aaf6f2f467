package broker

// A BROKER config resource naming another node is refused by the node a
// client sends it to, before the rest of the request is forwarded, as
// Kafka's ConfigAdminManager.preprocess does: Kafka's admin client sends
// a node's resource to that node, so the active controller, which takes
// any node's (configBroker), is never asked to change another node's
// config through this one. A change of this node's own resource is
// checked here first for what only this node can check, its listeners'
// key and trust stores (tlsreload.go), as ConfigAdminManager validates a
// broker's own config change before forwarding it.

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// splitForwarded is the part of req to forward, nil when none is left, and
// merge, which adds this node's own answers to the controller's response
// (to an empty one when nothing was forwarded).
func splitForwarded(req kmsg.Request, node int32, svc *services) (forward kmsg.Request, merge func(kmsg.Response) kmsg.Response) {
	same := func(resp kmsg.Response) kmsg.Response { return resp }
	switch r := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		keep, refused := splitResources(r.Resources, node,
			func(q kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
				return q.ResourceType, q.ResourceName
			},
			func(q kmsg.IncrementalAlterConfigsRequestResource) error {
				next, err := svc.incrementalNext(q)
				if err != nil {
					return nil // the controller answers it
				}
				return svc.checkListenerTLS(next)
			},
			func(q kmsg.IncrementalAlterConfigsRequestResource, msg *string) kmsg.IncrementalAlterConfigsResponseResource {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = q.ResourceType, q.ResourceName, kerr.InvalidRequest.Code, msg
				return rr
			})
		if len(refused) == 0 {
			return req, same
		}
		rest := *r
		rest.Resources = keep
		return forwardedRest(&rest, len(keep)), func(resp kmsg.Response) kmsg.Response {
			ir := resp.(*kmsg.IncrementalAlterConfigsResponse)
			ir.Resources = append(ir.Resources, refused...)
			return ir
		}
	case *kmsg.AlterConfigsRequest:
		keep, refused := splitResources(r.Resources, node,
			func(q kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
				return q.ResourceType, q.ResourceName
			},
			func(q kmsg.AlterConfigsRequestResource) error {
				configs := make(map[string]string, len(q.Configs))
				for _, c := range q.Configs {
					if c.Value == nil {
						return nil // the controller answers it
					}
					configs[c.Name] = *c.Value
				}
				return svc.checkListenerTLS(configs)
			},
			func(q kmsg.AlterConfigsRequestResource, msg *string) kmsg.AlterConfigsResponseResource {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = q.ResourceType, q.ResourceName, kerr.InvalidRequest.Code, msg
				return rr
			})
		if len(refused) == 0 {
			return req, same
		}
		rest := *r
		rest.Resources = keep
		return forwardedRest(&rest, len(keep)), func(resp kmsg.Response) kmsg.Response {
			ar := resp.(*kmsg.AlterConfigsResponse)
			ar.Resources = append(ar.Resources, refused...)
			return ar
		}
	}
	return req, same
}

// splitResources keeps the resources of all this node may forward and
// answers the others with refuse: BROKER resources naming another node,
// and this node's own when check refuses them.
func splitResources[Q, A any](all []Q, node int32, resource func(Q) (kmsg.ConfigResourceType, string), check func(Q) error,
	refuse func(Q, *string) A) (keep []Q, refused []A) {
	for _, q := range all {
		typ, name := resource(q)
		if msg := otherNode(typ, name, node); msg != nil {
			refused = append(refused, refuse(q, msg))
			continue
		}
		if typ == kmsg.ConfigResourceTypeBroker && name != "" {
			if err := check(q); err != nil {
				refused = append(refused, refuse(q, errorMessage(err)))
				continue
			}
		}
		keep = append(keep, q)
	}
	return keep, refused
}

// forwardedRest is rest, or nil when it holds no resource to forward.
func forwardedRest(rest kmsg.Request, resources int) kmsg.Request {
	if resources == 0 {
		return nil
	}
	return rest
}

// otherNode is the error message for a BROKER resource naming a node
// other than node, nil for any other resource.
func otherNode(typ kmsg.ConfigResourceType, name string, node int32) *string {
	if typ != kmsg.ConfigResourceTypeBroker || name == "" {
		return nil
	}
	if id, err := strconv.ParseInt(name, 10, 32); err == nil && int32(id) == node {
		return nil
	}
	msg := fmt.Sprintf("unexpected broker id, expected %d or empty string, but received %s", node, name)
	return &msg
}
