package broker

// A BROKER config resource naming another node is refused by the node a
// client sends it to, before the rest of the request is forwarded, as
// Kafka's ConfigAdminManager.preprocess does: Kafka's admin client sends
// a node's resource to that node, so the active controller, which takes
// any node's (configBroker), is never asked to change another node's
// config through this one.

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// splitForwarded is the part of req to forward, nil when none is left, and
// merge, which adds this node's own answers to the controller's response
// (to an empty one when nothing was forwarded).
func splitForwarded(req kmsg.Request, node int32) (forward kmsg.Request, merge func(kmsg.Response) kmsg.Response) {
	same := func(resp kmsg.Response) kmsg.Response { return resp }
	switch r := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		var keep []kmsg.IncrementalAlterConfigsRequestResource
		var refused []kmsg.IncrementalAlterConfigsResponseResource
		for _, res := range r.Resources {
			if msg := otherNode(res.ResourceType, res.ResourceName, node); msg != nil {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, kerr.InvalidRequest.Code, msg
				refused = append(refused, rr)
				continue
			}
			keep = append(keep, res)
		}
		if len(refused) == 0 {
			return req, same
		}
		merge = func(resp kmsg.Response) kmsg.Response {
			ir := resp.(*kmsg.IncrementalAlterConfigsResponse)
			ir.Resources = append(ir.Resources, refused...)
			return ir
		}
		if len(keep) == 0 {
			return nil, merge
		}
		rest := *r
		rest.Resources = keep
		return &rest, merge
	case *kmsg.AlterConfigsRequest:
		var keep []kmsg.AlterConfigsRequestResource
		var refused []kmsg.AlterConfigsResponseResource
		for _, res := range r.Resources {
			if msg := otherNode(res.ResourceType, res.ResourceName, node); msg != nil {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = res.ResourceType, res.ResourceName, kerr.InvalidRequest.Code, msg
				refused = append(refused, rr)
				continue
			}
			keep = append(keep, res)
		}
		if len(refused) == 0 {
			return req, same
		}
		merge = func(resp kmsg.Response) kmsg.Response {
			ar := resp.(*kmsg.AlterConfigsResponse)
			ar.Resources = append(ar.Resources, refused...)
			return ar
		}
		if len(keep) == 0 {
			return nil, merge
		}
		rest := *r
		rest.Resources = keep
		return &rest, merge
	}
	return req, same
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
