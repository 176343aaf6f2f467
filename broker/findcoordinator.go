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
// Key type 2 (KIP-932) is a share-partition's key, group:topicId:partition,
// coordinated by the leader of its partition of __share_group_state
// (created on first need, share.coordinator.state.topic.num.partitions):
// from v6 only, for a principal that may CLUSTER_ACTION the cluster (else
// the whole request is CLUSTER_AUTHORIZATION_FAILED), a key Kafka cannot
// parse INVALID_REQUEST, as Kafka's getCoordinator.

import (
	"encoding/base64"
	"strconv"
	"strings"

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
	if r.CoordinatorType == 2 && req.Version >= 6 && !rc.authorizeCluster(OpClusterAction) {
		return shareCoordinatorRefused(r), nil
	}
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
	case 2:
		if k, ok := parseShareKey(key); ok && version >= 6 {
			topic, partition = coordinator.ShareStateTopic, b.shares.PartitionFor(k)
		} else {
			err = kerr.InvalidRequest
		}
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
// to access group: Group authorization failed.", "Transactional ID"),
// also answered by the share group offset requests (sharegroupoffsets.go).
var refusalMessages = map[*kerr.Error]string{
	kerr.GroupAuthorizationFailed:           "Group authorization failed.",
	kerr.TopicAuthorizationFailed:           "Topic authorization failed.",
	kerr.TransactionalIDAuthorizationFailed: "Transactional Id authorization failed.",
}

// shareCoordinatorRefused is Kafka's answer when the principal may not
// CLUSTER_ACTION the cluster: getCoordinator throws, and every key of the
// request is CLUSTER_AUTHORIZATION_FAILED with the error's message and no
// node (FindCoordinatorResponse.prepareErrorResponse).
func shareCoordinatorRefused(r *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	msg := kerr.ClusterAuthorizationFailed.Description
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		c.ErrorCode, c.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}

// parseShareKey is Kafka's SharePartitionKey.getInstance: the group (which
// may hold ':'), the topic id and the partition, the last two after the
// last two ':' (trailing empty parts dropped, as Java's split), re-rendered
// as the share coordinator hashes it; false for a key Kafka refuses.
func parseShareKey(key string) (string, bool) {
	parts := strings.Split(key, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	n := len(parts)
	if n < 3 || len(parts[n-2]) > 24 {
		return "", false
	}
	group := strings.Join(parts[:n-2], ":")
	id, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[n-2], "="))
	if strings.TrimSpace(group) == "" || err != nil || len(id) != 16 {
		return "", false
	}
	partition, err := strconv.ParseInt(parts[n-1], 10, 32)
	if err != nil {
		return "", false
	}
	return coordinator.ShareKey(group, [16]byte(id), int32(partition)), true
}
