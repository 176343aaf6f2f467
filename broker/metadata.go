package broker

// Metadata.
//
// Brokers, topics and partitions are the metadata image's (image.go): on
// one node, the broker leads every partition, with itself as the only
// replica and ISR.
// A topic that does not exist is created when auto.create.topics.enable is
// set and the request allows it (always before v4): as Kafka 4.1's
// AutoTopicCreationManager (KafkaApis.getTopicMetadata), whatever the
// version, the answer that creates it is UNKNOWN_TOPIC_OR_PARTITION with no
// partitions, and the topic is described from the next request on (clients
// retry). The creation itself finishes within the request. The internal
// topics (__consumer_offsets, __transaction_state) are created by their
// coordinator, with its partition count and configs, and answered the same
// way; a name that cannot be created keeps the error that refused it (an
// invalid name is INVALID_TOPIC_EXCEPTION, as in Kafka). As in Kafka, a
// topic the principal may not DESCRIBE is left out of an all-topics answer
// and is TOPIC_AUTHORIZATION_FAILED when named (by id: without its name),
// and a missing topic is auto-created only with CREATE on the cluster or
// the topic, else TOPIC_AUTHORIZATION_FAILED. Authorized operations are
// computed when asked for (metadataAuthorizedOperations), else "not
// requested" (INT32_MIN). v13's top-level ErrorCode is 0: Kafka sets it
// only in the answer to a request its handler failed on as a whole
// (MetadataRequest.getErrorResponse), which Strata's never does.

import (
	"errors"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// registerMetadata serves Metadata; its versions are here and nowhere else.
func registerMetadata(r *registry) { r.add(kmsg.Metadata, 0, 13, handleMetadata) }

func handleMetadata(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.MetadataRequest)
	resp := kmsg.NewPtrMetadataResponse()
	img := b.meta.Image()
	for _, reg := range b.liveBrokers(img) {
		broker := kmsg.NewMetadataResponseBroker()
		broker.NodeID = reg.ID
		broker.Host, broker.Port, _ = b.endpoint(reg)
		if reg.Rack != "" {
			rack := reg.Rack
			broker.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, broker)
	}
	clusterID := b.clusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = b.controllerID(img, false)
	resp.AuthorizedOperations = math.MinInt32

	if r.Topics == nil || req.Version == 0 && len(r.Topics) == 0 {
		for _, t := range img.Topics.All() {
			if rc.authorizeQuietly(OpDescribe, ResourceTopic, t.Name) {
				resp.Topics = append(resp.Topics, b.describeTopic(img, t, req.Version))
			}
		}
		return metadataAuthorizedOperations(rc, r, resp), nil
	}
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			if t := img.Topics.ByID(rt.TopicID); t != nil && !rc.authorize(OpDescribe, ResourceTopic, t.Name) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID, mt.ErrorCode = rt.TopicID, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, b.describeTopicByID(img, rt.TopicID, req.Version))
			continue
		}
		name := *rt.Topic
		switch {
		case !rc.authorize(OpDescribe, ResourceTopic, name):
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = &name, kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
		case autoCreate && img.Topics.ByName(name) == nil && !rc.authorizeCluster(OpCreate) && !rc.authorize(OpCreate, ResourceTopic, name):
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode = &name, kerr.TopicAuthorizationFailed.Code
			mt.IsInternal = b.internalTopicCreator(name) != nil
			resp.Topics = append(resp.Topics, mt)
		default:
			resp.Topics = append(resp.Topics, b.describeTopicByName(img, name, autoCreate, req.Version))
		}
	}
	return metadataAuthorizedOperations(rc, r, resp), nil
}

// metadataAuthorizedOperations sets the authorized operations r asks for,
// as Kafka's handleTopicMetadataRequest: the cluster's (v8-10) and each
// topic's that the principal may describe; the others stay "not
// requested".
func metadataAuthorizedOperations(rc *reqCtx, r *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) *kmsg.MetadataResponse {
	if r.IncludeClusterAuthorizedOperations && rc.req.Version >= 8 && rc.req.Version <= 10 {
		resp.AuthorizedOperations = rc.clusterAuthorizedOperations()
	}
	if r.IncludeTopicAuthorizedOperations && rc.req.Version >= 8 {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.Topic != nil && t.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.AuthorizedOperations = rc.authorizedOperations(ResourceTopic, *t.Topic)
			}
		}
	}
	return resp
}

func (b *services) describeTopicByID(img *metadata.Image, id [16]byte, version int16) kmsg.MetadataResponseTopic {
	if t := img.Topics.ByID(id); t != nil {
		return b.describeTopic(img, t, version)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.TopicID = id
	mt.ErrorCode = kerr.UnknownTopicID.Code
	return mt
}

func (b *services) describeTopicByName(img *metadata.Image, name string, autoCreate bool, version int16) kmsg.MetadataResponseTopic {
	if t := img.Topics.ByName(name); t != nil {
		return b.describeTopic(img, t, version)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = &name
	mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
	ensure := b.internalTopicCreator(name)
	mt.IsInternal = ensure != nil
	if !autoCreate {
		return mt
	}
	if ensure != nil {
		if err := ensure(); err != nil {
			b.logger.Error("auto-creating an internal topic", zap.String("topic", name), zap.Error(err))
		}
		return mt
	}
	_, err := b.createTopicNamed(name, b.cfg.NumPartitions, nil)
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
	case err != nil:
		b.logger.Info("auto-create refused", zap.String("topic", name), zap.Error(err))
		mt.ErrorCode = b.errorCode(kmsg.Metadata, err)
	default:
		b.logger.Info("auto-created topic", zap.String("topic", name), zap.Int32("partitions", b.cfg.NumPartitions))
	}
	return mt
}

// internalTopicCreator is the coordinator's Ensure for its internal
// topic, nil for other names.
func (b *services) internalTopicCreator(name string) func() error {
	switch name {
	case coordinator.OffsetsTopic:
		return b.groups.Ensure
	case coordinator.TxnStateTopic:
		return b.txns.Ensure
	case coordinator.ShareStateTopic:
		return b.shares.Ensure
	}
	return nil
}

// describeTopic is t's partitions as Kafka's KRaftMetadataCache answers
// them: a leader that is not a live broker on the client listener is -1
// with LEADER_NOT_AVAILABLE (LISTENER_NOT_FOUND from v6 when the broker is
// live but has no such listener); replicas on brokers that are fenced,
// gone or without the listener are offline; v0 lists only live replicas,
// with REPLICA_NOT_AVAILABLE when some are not.
func (b *services) describeTopic(img *metadata.Image, t *metadata.TopicImage, version int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = storage.IsInternalTopic(t.Name)
	mt.AuthorizedOperations = math.MinInt32
	live := func(id int32) bool {
		reg, ok := img.Cluster.Broker(id)
		_, _, listens := b.endpoint(reg)
		return ok && !reg.Fenced && listens
	}
	for i, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(i)
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = p.Replicas
		mp.ISR = p.ISR
		mp.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			if !live(r) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if version == 0 && len(mp.OfflineReplicas) > 0 {
			mp.Replicas = slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return !live(r) })
			mp.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !live(r) })
			mp.ErrorCode = kerr.ReplicaNotAvailable.Code
		}
		if !live(p.Leader) {
			mp.Leader = metadata.NoLeader
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			if reg, ok := img.Cluster.Broker(p.Leader); ok && !reg.Fenced && version >= 6 {
				mp.ErrorCode = kerr.ListenerNotFound.Code
			}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
