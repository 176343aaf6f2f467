package broker

// FindCoordinator.
//
// A group (key type 0) or transactional id (key type 1) is coordinated by
// the leader of its partition of __consumer_offsets or
// __transaction_state, as Kafka's getCoordinator: the answer is that
// broker, at the address the metadata image registers for it on the
// client listener (on one node, this one); v4+ answers each key of the
// batch. As in Kafka, the first
// FindCoordinator for a group creates __consumer_offsets
// (offsets.topic.num.partitions partitions) and the first for a
// transactional id creates __transaction_state
// (transaction.state.log.num.partitions), and, as Kafka's getCoordinator,
// the request that creates the topic is answered COORDINATOR_NOT_AVAILABLE
// (clients retry): the creation finishes within the request, so the next
// one finds the coordinator. A failed creation is COORDINATOR_NOT_AVAILABLE
// too, and is tried again by the next request. Error messages are Kafka's:
// the error's description before v4 ("NONE" for success), empty from v4.
// Key type 2 (share groups) is INVALID_REQUEST, as on a Kafka broker
// without share groups.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
)

// registerFindCoordinator serves FindCoordinator; its versions are here and nowhere else.
func registerFindCoordinator(r *registry) { r.add(kmsg.FindCoordinator, 0, 6, handleFindCoordinator) }

func handleFindCoordinator(rc *reqCtx) (kmsg.Response, error) {
	req := rc.req
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := kmsg.NewPtrFindCoordinatorResponse()
	if req.Version < 4 {
		c := coordinatorFor(rc, r.CoordinatorKey, r.CoordinatorType)
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		return resp, nil
	}
	for _, key := range r.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, coordinatorFor(rc, key, r.CoordinatorType))
	}
	return resp, nil
}

// coordinatorFor answers for one key once the principal may describe it:
// DESCRIBE on the group or the transactional id, as Kafka's getCoordinator.
func coordinatorFor(rc *reqCtx, key string, keyType int8) kmsg.FindCoordinatorResponseCoordinator {
	var refused *kerr.Error
	switch {
	case keyType == 0 && !rc.authorize(OpDescribe, ResourceGroup, key):
		refused = kerr.GroupAuthorizationFailed
	case keyType == 1 && !rc.authorize(OpDescribe, ResourceTransactionalID, key):
		refused = kerr.TransactionalIDAuthorizationFailed
	default:
		return rc.svc.findCoordinator(key, keyType, rc.req.Version)
	}
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	c.ErrorCode = refused.Code
	c.ErrorMessage = coordinatorMessage(refused, rc.req.Version)
	return c
}

// findCoordinator answers for one key.
func (b *services) findCoordinator(key string, keyType int8, version int16) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	var err *kerr.Error
	var topic string
	var partition int32
	switch keyType {
	case 0:
		topic, partition = coordinator.OffsetsTopic, b.groups.PartitionFor(key)
	case 1:
		topic, partition = coordinator.TxnStateTopic, b.txns.PartitionFor(key)
	default:
		err = kerr.InvalidRequest
	}
	if topic != "" {
		img := b.meta.Image()
		existed := img.Topics.ByName(topic) != nil
		leader := metadata.NoLeader
		if t := img.Topics.ByName(topic); t != nil {
			if p, ok := t.Partition(partition); ok {
				leader = p.Leader
			}
		}
		reg, registered := img.Cluster.Broker(leader)
		host, port, reachable := b.endpoint(reg)
		switch e := b.internalTopicCreator(topic)(); {
		case e != nil:
			b.logger.Error("find coordinator: creating the internal topic", zap.String("topic", topic), zap.Error(e))
			err = kerr.CoordinatorNotAvailable
		case !existed || !registered || reg.Fenced || !reachable:
			err = kerr.CoordinatorNotAvailable
		default:
			c.NodeID, c.Host, c.Port = reg.ID, host, port
			c.ErrorMessage = coordinatorMessage(nil, version)
			return c
		}
	}
	c.ErrorCode = err.Code
	c.ErrorMessage = coordinatorMessage(err, version)
	return c
}

// coordinatorMessage is Kafka's error_message: before v4 the error's
// Errors.message() ("NONE" for success), from v4 an empty string
// (handleFindCoordinatorRequestV4AndAbove sets none).
func coordinatorMessage(err *kerr.Error, version int16) *string {
	msg := ""
	switch {
	case version >= 4:
	case err == nil:
		msg = "NONE"
	case refusalMessages[err] != "":
		msg = refusalMessages[err]
	default:
		msg = err.Description
	}
	return &msg
}

// refusalMessages are Kafka's Errors.message() of the authorization
// refusals, which franz-go's descriptions word otherwise ("Not authorized
// to access group: Group authorization failed.", "Transactional ID").
var refusalMessages = map[*kerr.Error]string{
	kerr.GroupAuthorizationFailed:           "Group authorization failed.",
	kerr.TransactionalIDAuthorizationFailed: "Transactional Id authorization failed.",
}
