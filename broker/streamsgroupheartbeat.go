package broker

// StreamsGroupHeartbeat (KIP-1071).
//
// The streams group protocol: Kafka Streams members heartbeat their
// topology (on joining), process, endpoint and owned tasks, and the
// coordinator answers with their member epoch and active, standby and
// warm-up tasks from its sticky task assignor (coordinator/streams*.go).
// As Kafka's KafkaApis: group READ is required (GROUP_AUTHORIZATION_FAILED);
// a topology using Kafka's internal topics or invalid topic names is
// STREAMS_INVALID_TOPOLOGY; DESCRIBE on every topic of the topology is
// required (TOPIC_AUTHORIZATION_FAILED); the internal topics (repartition
// and changelog) the group lacks are created with the partition counts
// the coordinator derived and the configs the member sent, where CREATE on
// the cluster or the topic allows, else the MISSING_INTERNAL_TOPICS status
// says "Unauthorized to CREATE on topics ...". Kafka creates them in the
// background after answering; Strata creates them before answering, so
// the next heartbeat finds them. Differences from Kafka: see
// coordinator/streams.go (no warm-up tasks, no initial rebalance delay).

import (
	"errors"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/storage"
)

// registerStreamsGroupHeartbeat serves StreamsGroupHeartbeat; its versions are here and nowhere else.
func registerStreamsGroupHeartbeat(r *registry) {
	r.add(kmsg.StreamsGroupHeartbeat, 0, 1, handleStreamsGroupHeartbeat)
}

func handleStreamsGroupHeartbeat(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	fail := func(err *kerr.Error, msg string) (kmsg.Response, error) {
		resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.ErrorCode = err.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if !rc.authorize(OpRead, ResourceGroup, r.Group) {
		return fail(kerr.GroupAuthorizationFailed, "")
	}
	if r.Topology != nil {
		topics := topologyTopics(r.Topology)
		var internal, invalid []string
		for _, t := range topics {
			if storage.IsInternalTopic(t) || t == "__share_group_state" {
				internal = append(internal, t)
			} else if storage.ValidateTopicName(t) != nil {
				invalid = append(invalid, t)
			}
		}
		if len(internal) > 0 {
			return fail(kerr.StreamsInvalidTopology, "Use of Kafka internal topics "+strings.Join(internal, ",")+" in a Kafka Streams topology is prohibited.")
		}
		if len(invalid) > 0 {
			return fail(kerr.StreamsInvalidTopology, "Topic names "+strings.Join(invalid, ",")+" are not valid topic names.")
		}
		for _, t := range topics {
			if !rc.authorize(OpDescribe, ResourceTopic, t) {
				return fail(kerr.TopicAuthorizationFailed, "")
			}
		}
	}
	resp, missing := b.groups.StreamsGroupHeartbeat(r, requestClient(rc))
	if len(missing) == 0 {
		return resp, nil
	}
	var denied []string
	for _, t := range missing {
		if !rc.authorizeCluster(OpCreate) && !rc.authorize(OpCreate, ResourceTopic, t.Name) {
			denied = append(denied, t.Name)
			continue
		}
		b.createStreamsInternalTopic(t)
	}
	if len(denied) > 0 {
		msg := "Unauthorized to CREATE on topics " + strings.Join(denied, ",") + "."
		i := slices.IndexFunc(resp.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool { return s.StatusCode == 3 })
		if i >= 0 {
			resp.Status[i].StatusDetail += "; " + msg
		} else {
			st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
			st.StatusCode, st.StatusDetail = 3, msg
			resp.Status = append(resp.Status, st)
		}
	}
	return resp, nil
}

// createStreamsInternalTopic creates a repartition or changelog topic of a
// streams group, as Kafka's AutoTopicCreationManager.createStreamsInternalTopics.
func (b *services) createStreamsInternalTopic(t coordinator.StreamsInternalTopic) {
	layout := replicaLayout{partitions: t.Partitions, rf: defaultReplicationFactor(b.cfg, t.Name)}
	if t.ReplicationFactor > 0 {
		layout.rf = t.ReplicationFactor
	}
	var err error
	if b.forward != nil {
		_, err = b.forward.createTopic(b.meta, t.Name, layout, t.Configs)
	} else {
		_, err = proposeTopic(b.meta, t.Name, layout, t.Configs)
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
	case err != nil:
		b.logger.Warn("creating a streams internal topic", zap.String("topic", t.Name), zap.Error(err))
	default:
		b.logger.Info("created a streams internal topic", zap.String("topic", t.Name), zap.Int32("partitions", t.Partitions))
	}
}

// topologyTopics is every topic a topology names: source, repartition sink
// and source, and changelog topics, each once, in order.
func topologyTopics(t *kmsg.StreamsGroupHeartbeatRequestTopology) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, st := range t.Subtopologies {
		for _, name := range st.SourceTopics {
			add(name)
		}
		for _, name := range st.RepartitionSinkTopics {
			add(name)
		}
		for _, ti := range st.RepartitionSourceTopics {
			add(ti.Topic)
		}
		for _, ti := range st.StateChangelogTopics {
			add(ti.Topic)
		}
	}
	return out
}
