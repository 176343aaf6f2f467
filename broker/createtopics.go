package broker

// CreateTopics.
//
// Checks follow the KRaft controller (ControllerApis.createTopics and
// ReplicationControlManager.createTopics), in its order and with its
// messages: a name given twice in one request gets INVALID_REQUEST
// "Duplicate topic name." once, after the other results; then, per topic,
// the name and whether it exists (in the metadata image), null config
// values, config values, the partition layout, and finally the creation
// itself: proposed to the image, which storage makes durable (changes.go).
//
// The layout is either counts or a manual assignment, never both (giving an
// assignment with NumPartitions or ReplicationFactor other than -1 is
// INVALID_REQUEST). NumPartitions -1 is num.partitions; ReplicationFactor -1
// is default.replication.factor in a cluster and 1 on a single node. Counts
// are placed over the registered brokers as Kafka's StripedReplicaPlacer
// places them (placement.go); more replicas than brokers is
// INVALID_REPLICATION_FACTOR. A manual assignment must give every partition
// 0..n-1 a list of registered brokers, each once, all lists of one length;
// on one node the only such list is [node.id].
//
// ValidateOnly runs every check and creates nothing; its result carries topic
// id zero, where Kafka draws a random id it then discards. The v5+ result
// carries the partition count, the replication factor and the topic's
// configs. A topic's partitions are charged to the client's
// controller_mutation_rate last (mutationquota.go), validate-only too.
//
// Difference from Kafka: the configs returned are the ones Strata applies to
// a log (flush.*, index.interval.bytes, max.message.bytes, segment.*), with
// their effective values, plus any other config the request set; Kafka lists
// every topic config it knows. TimeoutMillis is ignored: creation is local
// and finishes before the response, so there is nothing to wait for.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// registerCreateTopics serves CreateTopics; its versions are here and nowhere else.
func registerCreateTopics(r *registry) { r.add(kmsg.CreateTopics, 2, 7, handleCreateTopics) }

// Config sources, as DescribeConfigs numbers them.
const (
	configSourceTopic        = 1 // DYNAMIC_TOPIC_CONFIG
	configSourceStaticBroker = 4 // STATIC_BROKER_CONFIG
	configSourceDefault      = 5 // DEFAULT_CONFIG
)

// appliedConfig is a topic config that changes how a log is written, read
// from a storage.Config.
type appliedConfig struct {
	name  string
	value func(storage.Config) int64
}

var appliedConfigs = []appliedConfig{
	{"flush.messages", func(c storage.Config) int64 { return c.FlushIntervalMessages }},
	{"flush.ms", func(c storage.Config) int64 { return c.FlushIntervalMs }},
	{"index.interval.bytes", func(c storage.Config) int64 { return int64(c.IndexIntervalBytes) }},
	{"max.message.bytes", func(c storage.Config) int64 { return int64(c.MaxMessageBytes) }},
	{"segment.bytes", func(c storage.Config) int64 { return c.SegmentBytes }},
	{"segment.index.bytes", func(c storage.Config) int64 { return int64(c.MaxIndexSize) }},
	{"segment.ms", func(c storage.Config) int64 { return c.SegmentMs }},
}

func handleCreateTopics(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := kmsg.NewPtrCreateTopicsResponse()
	count := make(map[string]int, len(r.Topics))
	for _, t := range r.Topics {
		count[t.Topic]++
	}
	// CREATE on the cluster creates any topic, else CREATE on the topic,
	// as the KRaft controller (ControllerApis.createTopics).
	clusterCreate := rc.authorizeCluster(OpCreate)
	quota := rc.mutationQuota(strictCreateTopics)
	var dups []kmsg.CreateTopicsResponseTopic
	for _, t := range r.Topics {
		switch n := count[t.Topic]; {
		case n > 1:
			dups = append(dups, createTopicFailed(t.Topic, kerr.InvalidRequest.Code, "Duplicate topic name."))
			count[t.Topic] = -1 // report it once
		case n == 1 && !clusterCreate && !rc.authorize(OpCreate, ResourceTopic, t.Topic):
			resp.Topics = append(resp.Topics, createTopicFailed(t.Topic, kerr.TopicAuthorizationFailed.Code, "Authorization failed."))
		case n == 1:
			st := b.createTopic(t, r.ValidateOnly, &quota)
			if st.ErrorCode == 0 && !rc.authorize(OpDescribeConfigs, ResourceTopic, t.Topic) {
				// Created, but its configs are not the principal's to see.
				st.NumPartitions, st.ReplicationFactor, st.Configs = -1, -1, nil
				st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			resp.Topics = append(resp.Topics, st)
		}
	}
	resp.Topics = append(resp.Topics, dups...)
	resp.ThrottleMillis = quota.throttle()
	return resp, nil
}

// createTopic creates t, or with validateOnly checks it, its partitions
// charged to quota once every other check has passed.
func (b *services) createTopic(t kmsg.CreateTopicsRequestTopic, validateOnly bool, quota *mutationQuota) kmsg.CreateTopicsResponseTopic {
	// Name rules and existence come first in Kafka.
	if err := checkNewTopicName(b.meta.Image(), t.Topic); err != nil {
		return b.createTopicError(t.Topic, err)
	}
	configs := make(map[string]string, len(t.Configs))
	var nulls []string
	for _, c := range t.Configs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		configs[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return createTopicFailed(t.Topic, kerr.InvalidConfig.Code,
			"Null value not supported for topic configs: "+strings.Join(nulls, ","))
	}
	effective, err := b.cfg.Log.WithTopicConfigs(configs)
	if err != nil {
		return b.createTopicError(t.Topic, err)
	}
	layout, code, msg := b.topicLayout(t)
	if code != 0 {
		return createTopicFailed(t.Topic, code, msg)
	}
	// Placement is checked as creation will place, before the quota is
	// charged, as Kafka places first.
	if _, err := partitionRecords(b.meta.Image(), [16]byte{}, 0, layout); err != nil {
		return b.createTopicError(t.Topic, err)
	}
	if !quota.allow(layout.partitions) {
		return createTopicFailed(t.Topic, kerr.ThrottlingQuotaExceeded.Code, throttlingQuotaExceeded)
	}
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = t.Topic
	if !validateOnly {
		if st.TopicID, err = proposeTopic(b.meta, t.Topic, layout, configs); err != nil {
			return b.createTopicError(t.Topic, err)
		}
	}
	st.NumPartitions = layout.partitions
	st.ReplicationFactor = layout.rf
	st.Configs = b.topicConfigs(configs, effective)
	return st
}

// topicLayout validates the partition layout of a new topic and returns
// it, or a Kafka error code and message.
func (b *services) topicLayout(t kmsg.CreateTopicsRequestTopic) (replicaLayout, int16, string) {
	if len(t.ReplicaAssignment) > 0 {
		if t.ReplicationFactor != -1 {
			return replicaLayout{}, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but replication factor was not set to -1."
		}
		if t.NumPartitions != -1 {
			return replicaLayout{}, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but numPartitions was not set to -1."
		}
		manual := make([][]int32, len(t.ReplicaAssignment))
		assigned := make(map[int32]bool, len(t.ReplicaAssignment))
		rf := -1
		for _, a := range t.ReplicaAssignment {
			if assigned[a.Partition] {
				return replicaLayout{}, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Found multiple manual partition assignments for partition %d", a.Partition)
			}
			assigned[a.Partition] = true
			if msg := b.checkReplicas(a.Replicas, rf); msg != "" {
				return replicaLayout{}, kerr.InvalidReplicaAssignment.Code, msg
			}
			rf = len(a.Replicas)
			if a.Partition >= 0 && int(a.Partition) < len(manual) {
				manual[a.Partition] = a.Replicas
			}
		}
		for i := range int32(len(assigned)) {
			if !assigned[i] {
				return replicaLayout{}, kerr.InvalidReplicaAssignment.Code, "partitions should be a consecutive 0-based integer sequence"
			}
		}
		return replicaLayout{partitions: int32(len(manual)), rf: int16(rf), manual: manual}, 0, ""
	}
	if t.ReplicationFactor < -1 || t.ReplicationFactor == 0 {
		return replicaLayout{}, kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value."
	}
	if t.NumPartitions < -1 || t.NumPartitions == 0 {
		return replicaLayout{}, kerr.InvalidPartitions.Code, "Number of partitions was set to an invalid non-positive value."
	}
	l := replicaLayout{partitions: t.NumPartitions, rf: t.ReplicationFactor}
	if l.partitions == -1 {
		l.partitions = b.cfg.NumPartitions
	}
	if l.rf == -1 {
		l.rf = defaultReplicationFactor(b.cfg, t.Topic)
	}
	return l, 0, ""
}

// checkReplicas is ReplicationControlManager.validateManualPartitionAssignment:
// every replica a broker the metadata image registers, none twice, and,
// unless rf is -1, rf of them (the other partitions' count). It returns
// Kafka's message for an invalid list, or "".
func (b *services) checkReplicas(replicas []int32, rf int) string {
	return checkReplicasOn(b.meta.Image(), replicas, rf)
}

// checkReplicasOn is checkReplicas on img.
func checkReplicasOn(img *metadata.Image, replicas []int32, rf int) string {
	if len(replicas) == 0 {
		return "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if _, ok := img.Cluster.Broker(id); !ok {
			return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if rf >= 0 && len(replicas) != rf {
		return fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	return ""
}

// topicConfigs lists a new topic's configs, sorted by name as Kafka sends
// them: the applied ones with their effective values, and every other
// config the request set.
func (b *services) topicConfigs(given map[string]string, effective storage.Config) []kmsg.CreateTopicsResponseTopicConfig {
	defaults := storage.DefaultConfig()
	var out []kmsg.CreateTopicsResponseTopicConfig
	add := func(name, value string, source int8) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = name, &value, source
		out = append(out, c)
	}
	for _, ac := range appliedConfigs {
		source := int8(configSourceDefault)
		_, set := given[ac.name]
		switch {
		case set:
			source = configSourceTopic
		case ac.value(b.cfg.Log) != ac.value(defaults):
			source = configSourceStaticBroker
		}
		add(ac.name, strconv.FormatInt(ac.value(effective), 10), source)
	}
	for name, value := range given {
		if !slices.ContainsFunc(appliedConfigs, func(ac appliedConfig) bool { return ac.name == name }) {
			add(name, value, configSourceTopic)
		}
	}
	slices.SortFunc(out, func(x, y kmsg.CreateTopicsResponseTopicConfig) int { return strings.Compare(x.Name, y.Name) })
	return out
}

func createTopicFailed(name string, code int16, msg string) kmsg.CreateTopicsResponseTopic {
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = name
	st.ErrorCode = code
	st.ErrorMessage = &msg
	return st
}

func (b *services) createTopicError(name string, err error) kmsg.CreateTopicsResponseTopic {
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = name
	st.ErrorCode = b.errorCode(kmsg.CreateTopics, err)
	st.ErrorMessage = errorMessage(err)
	return st
}
