package broker

// ConsumerGroupHeartbeat (KIP-848).
//
// The consumer group protocol: members heartbeat their subscription and
// owned partitions, and the coordinator answers with their member epoch
// and assignment, computed by a server-side assignor (uniform or range,
// chosen with ServerAssignor; the group uses the most requested one). v1
// has client-generated member ids and topic regexes (RE2 syntax, as
// Kafka's RE2/J, matched against whole names). See coordinator/consumer.go
// (membership kept in __consumer_offsets, online migration from and to
// classic groups in consumer_migrate.go, regexes in consumer_regex.go).
// As Kafka's KafkaApis: READ on the group, then DESCRIBE on every topic
// named in SubscribedTopicNames (TOPIC_AUTHORIZATION_FAILED if one is
// refused); a regex resolves to the topics the member whose heartbeat
// started the resolution may DESCRIBE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerConsumerGroupHeartbeat serves ConsumerGroupHeartbeat; its versions are here and nowhere else.
func registerConsumerGroupHeartbeat(r *registry) {
	r.add(kmsg.ConsumerGroupHeartbeat, 0, 1, handleConsumerGroupHeartbeat)
}

func handleConsumerGroupHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	for _, topic := range r.SubscribedTopicNames {
		if !rc.authorize(OpDescribe, ResourceTopic, topic) {
			resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return resp, nil
		}
	}
	cl := requestClient(rc)
	if !rc.isAllowAll() {
		authz, principal, host := rc.authz, rc.principal, rc.clientHost
		cl.CanDescribe = func(topic string) bool { return authz.Authorize(principal, host, OpDescribe, ResourceTopic, topic) }
	}
	return b.groups.ConsumerGroupHeartbeat(r, req.Version, cl), nil
}
