package broker

// ShareGroupHeartbeat (KIP-932), v1.
//
// Share group members heartbeat their subscription and get their member
// epoch and assigned partitions, computed by Kafka's SimpleAssignor (a
// partition may go to several members; no revocation phase); see
// coordinator/share_group.go. A partition is assigned once its share state
// is initialized: the heartbeat that first sees it has the share
// coordinator of each share-partition initialize it
// (InitializeShareGroupState, in process for the share coordinator
// partitions this node leads, over the inter-broker listener for the
// others) before it is answered, and a later heartbeat gets the partition.
// The session timeout is group.share.session.timeout.ms and the heartbeat
// interval group.share.heartbeat.interval.ms, or the group's
// share.session.timeout.ms and share.heartbeat.interval.ms within the
// broker's min/max bounds; group.share.max.size members at most. Member
// epoch -1 leaves. As Kafka 4.4's KafkaApis, READ on the group, a member
// id of 1 to 36 characters (else INVALID_REQUEST, no message) and DESCRIBE
// on every subscribed topic (else TOPIC_AUTHORIZATION_FAILED) come first.
// Below share.version 1 it answers UNSUPPORTED_VERSION (no message)
// before anything else, as Kafka's (features.go). Differs from Kafka:
// members subscribed to different topics are assigned topic by topic.

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/internal/configdef"
	"github.com/strata-io/strata/metadata"
)

// registerShareGroupHeartbeat serves ShareGroupHeartbeat; its versions are here and nowhere else.
func registerShareGroupHeartbeat(r *registry) {
	r.add(kmsg.ShareGroupHeartbeat, 1, 1, handleShareGroupHeartbeat)
}

func handleShareGroupHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	fail := func(err *kerr.Error) (kmsg.Response, error) {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if !rc.svc.shareGroupsEnabled() {
		return fail(kerr.UnsupportedVersion)
	}
	if !rc.authorize(OpRead, ResourceGroup, r.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	if n := len(utf16.Encode([]rune(r.MemberID))); n == 0 || n > 36 { // Java String.length
		return fail(kerr.InvalidRequest)
	}
	for _, topic := range r.SubscribedTopicNames {
		if !rc.authorize(OpDescribe, ResourceTopic, topic) {
			return fail(kerr.TopicAuthorizationFailed)
		}
	}
	return rc.svc.groups.ShareGroupHeartbeat(r, requestClient(rc)), nil
}

// shareSettings is a share group's settings as Kafka's GroupConfig gives
// them: its share.session.timeout.ms, share.heartbeat.interval.ms and
// share.assignment.interval.ms group configs where set, within the broker's group.share.min/max bounds, else
// the broker's group.share.* configs.
func shareSettings(meta interface{ Image() *metadata.Image }, static map[string]string) func(group string) coordinator.ShareSettings {
	broker := func(key string) int64 {
		v, ok := static[key]
		if !ok {
			v, ok = configdef.GroupBrokerDefaults[key]
		}
		if !ok && key == "group.share.max.size" {
			v = "200"
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	return func(group string) coordinator.ShareSettings {
		set := meta.Image().Configs.Of(groupConfigResource(group))
		get := func(key string) time.Duration {
			n := broker("group.share." + key)
			if v, ok := set["share."+key]; ok {
				if m, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					n = max(broker("group.share.min."+key), min(m, broker("group.share.max."+key)))
				}
			}
			return time.Duration(n) * time.Millisecond
		}
		return coordinator.ShareSettings{
			SessionTimeout:     get("session.timeout.ms"),
			HeartbeatInterval:  get("heartbeat.interval.ms"),
			AssignmentInterval: get("assignment.interval.ms"),
			MaxSize:            int(broker("group.share.max.size")),
		}
	}
}

// shareStateClient is how the group coordinator reaches the share
// coordinators (Kafka's persister): each share-partition's request goes to
// the leader of its __share_group_state partition, this node's share
// coordinator in process, another node's over the inter-broker listener.
// Its fields are set once the share coordinator is open, before any
// request is served.
type shareStateClient struct {
	node     int32
	listener string
	meta     metadata.Store
	shares   *coordinator.ShareCoordinator
	peers    *clusterMarkers // nil on a single node
	logger   *zap.Logger
}

// shareTopicPartition is one share-partition of a request.
type shareTopicPartition struct {
	topic     [16]byte
	partition int32
}

// route is the address of the share coordinator of each share-partition,
// "" for this node's.
func (c *shareStateClient) route(group string, parts []shareTopicPartition) (map[shareTopicPartition]string, error) {
	if err := c.shares.Ensure(); err != nil {
		return nil, fmt.Errorf("%s: %w", coordinator.ShareStateTopic, err)
	}
	out := make(map[shareTopicPartition]string, len(parts))
	if c.peers == nil {
		for _, p := range parts {
			out[p] = ""
		}
		return out, nil
	}
	img := c.meta.Image()
	ti := img.Topics.ByName(coordinator.ShareStateTopic)
	for _, p := range parts {
		if ti == nil {
			out[p] = ""
			continue
		}
		sp := c.shares.PartitionFor(coordinator.ShareKey(group, p.topic, p.partition))
		reg, ok := ti.Partition(sp)
		if !ok || reg.Leader < 0 {
			return nil, fmt.Errorf("%s-%d has no leader", coordinator.ShareStateTopic, sp)
		}
		if reg.LeaderIs(c.node) {
			out[p] = ""
			continue
		}
		br, ok := img.Cluster.Broker(reg.Leader)
		ep, hasEP := br.Endpoint(c.listener)
		if !ok || !hasEP {
			return nil, fmt.Errorf("share coordinator %d has no endpoint on listener %s", reg.Leader, c.listener)
		}
		out[p] = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	}
	return out, nil
}

// initialize sends InitializeShareGroupState for req's share-partitions;
// one whose coordinator cannot be reached is COORDINATOR_NOT_AVAILABLE.
func (c *shareStateClient) initialize(req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	var parts []shareTopicPartition
	starts := map[shareTopicPartition]kmsg.InitializeShareGroupStateRequestTopicPartition{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := shareTopicPartition{t.TopicID, p.Partition}
			parts = append(parts, tp)
			starts[tp] = p
		}
	}
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	fail := func(tps []shareTopicPartition, err error) {
		c.logger.Warn("initializing share group state", zap.String("group", req.GroupID), zap.Error(err))
		for _, tp := range tps {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = tp.topic
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode = tp.partition, kerr.CoordinatorNotAvailable.Code
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
		}
	}
	routes, err := c.route(req.GroupID, parts)
	if err != nil {
		fail(parts, err)
		return resp
	}
	for addr, tps := range byAddr(parts, routes) {
		sub := kmsg.NewPtrInitializeShareGroupStateRequest()
		sub.GroupID = req.GroupID
		for _, tp := range tps {
			rt := kmsg.NewInitializeShareGroupStateRequestTopic()
			rt.TopicID, rt.Partitions = tp.topic, []kmsg.InitializeShareGroupStateRequestTopicPartition{starts[tp]}
			sub.Topics = append(sub.Topics, rt)
		}
		if addr == "" {
			resp.Topics = append(resp.Topics, c.shares.InitializeState(sub).Topics...)
			continue
		}
		kresp, err := c.peers.roundTrip(addr, sub, 30*time.Second)
		if err != nil {
			fail(tps, fmt.Errorf("InitializeShareGroupState to %s: %w", addr, err))
			continue
		}
		resp.Topics = append(resp.Topics, kresp.(*kmsg.InitializeShareGroupStateResponse).Topics...)
	}
	return resp
}

// delete sends DeleteShareGroupState for req's share-partitions, as
// initialize does.
func (c *shareStateClient) delete(req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	var parts []shareTopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, shareTopicPartition{t.TopicID, p.Partition})
		}
	}
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	fail := func(tps []shareTopicPartition, err error) {
		c.logger.Warn("deleting share group state", zap.String("group", req.GroupID), zap.Error(err))
		for _, tp := range tps {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = tp.topic
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode = tp.partition, kerr.CoordinatorNotAvailable.Code
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
		}
	}
	routes, err := c.route(req.GroupID, parts)
	if err != nil {
		fail(parts, err)
		return resp
	}
	for addr, tps := range byAddr(parts, routes) {
		sub := kmsg.NewPtrDeleteShareGroupStateRequest()
		sub.GroupID = req.GroupID
		for _, tp := range tps {
			rt := kmsg.NewDeleteShareGroupStateRequestTopic()
			rt.TopicID = tp.topic
			rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			rp.Partition = tp.partition
			rt.Partitions = append(rt.Partitions, rp)
			sub.Topics = append(sub.Topics, rt)
		}
		if addr == "" {
			resp.Topics = append(resp.Topics, c.shares.DeleteState(sub).Topics...)
			continue
		}
		kresp, err := c.peers.roundTrip(addr, sub, 30*time.Second)
		if err != nil {
			fail(tps, fmt.Errorf("DeleteShareGroupState to %s: %w", addr, err))
			continue
		}
		resp.Topics = append(resp.Topics, kresp.(*kmsg.DeleteShareGroupStateResponse).Topics...)
	}
	return resp
}

// byAddr groups share-partitions by their coordinator's address.
func byAddr(parts []shareTopicPartition, routes map[shareTopicPartition]string) map[string][]shareTopicPartition {
	out := map[string][]shareTopicPartition{}
	for _, tp := range parts {
		out[routes[tp]] = append(out[routes[tp]], tp)
	}
	return out
}
