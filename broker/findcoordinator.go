package broker

// FindCoordinator, versions 0-6.
//
// This node coordinates every group (key type 0) and every transactional
// id (key type 1), so the answer is always this broker's advertised
// address; v4+ answers each key of the batch. Difference from Kafka:
// __consumer_offsets and __transaction_state exist from the first start
// rather than being created by the first FindCoordinator. Key type 2 (share groups) is
// INVALID_REQUEST, as on a Kafka broker without share groups.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

func handleFindCoordinator(b *Broker, _ *conn, req *protocol.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	if req.Version < 4 {
		c := b.findCoordinator(r.CoordinatorKey, r.CoordinatorType)
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		return resp, nil
	}
	for _, key := range r.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, b.findCoordinator(key, r.CoordinatorType))
	}
	return resp, nil
}

func (b *Broker) findCoordinator(key string, keyType int8) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	var err *kerr.Error
	switch keyType {
	case 0, 1:
		c.NodeID, c.Host, c.Port = b.cfg.NodeID, b.advHost, b.advPort
		return c
	default:
		err = kerr.InvalidRequest
	}
	c.ErrorCode = err.Code
	msg := err.Message
	c.ErrorMessage = &msg
	return c
}
