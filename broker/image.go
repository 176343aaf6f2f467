package broker

// The metadata image handlers read and change (package metadata): this
// node's registration, the topics and dynamic configs, and the producer id
// blocks. The image decides: a handler checks a change against the latest
// image and proposes it as Kafka's metadata records (Store.Update,
// changes.go); the store makes the change durable through logHost.commit
// before it publishes, and on one node durable is storage opening or
// removing the logs the image says this node hosts and writing
// strata-topics.json, strata-broker-configs.json,
// strata-group-configs.json and strata-client-metrics.json, and the access
// state (SCRAM credentials, ...) and the finalized features as their records in strata-access.json and
// strata-features.json. At start the image is read back from those files
// (imageOf).

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/local"
	"github.com/strata-io/strata/storage"
)

// imageOf is the image of what the log dir keeps, with reg as this node's
// registration: its topics with their ids, partitions, leader epochs and
// configs, and the dynamic broker configs. This node leads, and is the
// only replica of, every partition.
func imageOf(logs *storage.Manager, reg metadata.RegisterBrokerRecord) (*metadata.Image, error) {
	records := []metadata.Record{reg}
	node := reg.BrokerID
	for _, t := range logs.Topics() {
		records = append(records, metadata.TopicRecord{Name: t.Name, TopicID: t.ID})
		for _, p := range t.Partitions() {
			records = append(records, metadata.PartitionRecord{PartitionID: p.Index, TopicID: t.ID,
				Replicas: []int32{node}, ISR: []int32{node}, Leader: node, LeaderEpoch: p.LeaderEpoch()})
		}
		records = append(records, configRecords(metadata.ConfigResource{Type: metadata.TopicResource, Name: t.Name}, nil, t.ConfigMap())...)
	}
	clusterDefault, own := logs.BrokerConfigs()
	records = append(records, configRecords(metadata.ConfigResource{Type: metadata.BrokerResource}, nil, clusterDefault)...)
	records = append(records, configRecords(metadata.ConfigResource{Type: metadata.BrokerResource, Name: strconv.Itoa(int(node))}, nil, own)...)
	groups, err := logs.GroupConfigs()
	if err != nil {
		return nil, err
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		records = append(records, configRecords(metadata.ConfigResource{Type: metadata.GroupResource, Name: g}, nil, groups[g])...)
	}
	subs, err := logs.ClientMetricsConfigs()
	if err != nil {
		return nil, err
	}
	for _, s := range slices.Sorted(maps.Keys(subs)) {
		records = append(records, configRecords(clientMetricsResource(s), nil, subs[s])...)
	}
	for _, state := range []struct {
		what string
		read func() ([]byte, error)
	}{{"access state", logs.AccessState}, {"finalized features", logs.FeatureState}} {
		data, err := state.read()
		if err != nil {
			return nil, err
		}
		if data != nil {
			kept, err := metadata.DecodeBatch(data)
			if err != nil {
				return nil, fmt.Errorf("the log dir's %s: %w", state.what, err)
			}
			records = append(records, kept...)
		}
	}
	d := metadata.NewDelta(metadata.Empty)
	for _, r := range records {
		if err := d.Replay(r); err != nil {
			return nil, fmt.Errorf("the log dir's topics as a metadata image: %w", err)
		}
	}
	return d.Apply(), nil
}

// registerRecord registers this node with its advertised endpoints, one
// per client listener.
func registerRecord(node int32, endpoints []metadata.Endpoint) metadata.RegisterBrokerRecord {
	return metadata.RegisterBrokerRecord{BrokerID: node, Endpoints: endpoints}
}

// configRecords are the ConfigRecords taking res's configs from had to want.
func configRecords(res metadata.ConfigResource, had, want map[string]string) []metadata.Record {
	var out []metadata.Record
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := had[k]; !ok || v != want[k] {
			out = append(out, metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k, Value: new(want[k])})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(had)) {
		if _, ok := want[k]; !ok {
			out = append(out, metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: k})
		}
	}
	return out
}

// errNotHosted refuses a change storage has no way to make durable on one
// node (a partition without this node among its replicas, two admin
// operations in one change).
var errNotHosted = errors.New("not a change a single node's storage can make durable")

// logHost makes a metadata change durable in storage, the host of the
// logs the image gives this node (every partition: on one node it is each
// one's only replica): a new topic, added partitions, a deleted topic, a
// topic's or the broker's new dynamic configs, one per change, in
// storage's order (the
// partition dirs, then the registry, then its list of deleted topics). A
// partition's new leader or ISR, on replicas that keep this node, has
// nothing to write: the log stays, and the publisher tells the replica
// layer (publisher.go). The image read back at start (imageOf) makes this
// node the leader of every partition again.
// Storage's errors come back as they are, so clients read the same
// messages as before.
type logHost struct {
	logs *storage.Manager
	node int32
}

var _ local.Commit = logHost{}.commit

// commit makes the change records make of old (into new) durable.
func (h logHost) commit(old, new *metadata.Image, records []metadata.Record) error {
	var ops []func() error
	keys := map[any]bool{}
	add := func(key any, op func() error) {
		if !keys[key] {
			keys[key] = true
			ops = append(ops, op)
		}
	}
	created := map[string]bool{}
	for _, r := range records {
		switch r := r.(type) {
		case metadata.RegisterBrokerRecord, metadata.ProducerIdsRecord:
			// The registration is this process's configuration; a producer
			// id block is durable in the producer-ids file before it is
			// proposed.
		case metadata.TopicRecord:
			t := new.Topics.ByID(r.TopicID)
			if t == nil {
				return fmt.Errorf("topic %s created and removed: %w", r.Name, errNotHosted)
			}
			created[r.Name] = true
			add(r.TopicID, func() error { return h.createTopic(new, t) })
		case metadata.PartitionRecord:
			t := new.Topics.ByID(r.TopicID)
			if t == nil {
				return fmt.Errorf("partition %d of a removed topic: %w", r.PartitionID, errNotHosted)
			}
			if !slices.Contains(r.Replicas, h.node) {
				return fmt.Errorf("partition %d of topic %s on replicas %v: %w", r.PartitionID, t.Name, r.Replicas, errNotHosted)
			}
			if !created[t.Name] {
				add(r.TopicID, func() error { return h.logs.CreatePartitions(t.Name, int32(len(t.Partitions)), false) })
			}
		case metadata.PartitionChangeRecord:
			// A new leader or ISR is the image's alone: the replica layer,
			// told by the publisher, records a leader epoch this node
			// leads at in the log's leader-epoch-checkpoint.
			t := new.Topics.ByID(r.TopicID)
			if t == nil {
				return fmt.Errorf("change of partition %d of a removed topic: %w", r.PartitionID, errNotHosted)
			}
			if p, _ := t.Partition(r.PartitionID); !slices.Contains(p.Replicas, h.node) {
				return fmt.Errorf("partition %d of topic %s moved to replicas %v: %w", r.PartitionID, t.Name, p.Replicas, errNotHosted)
			}
		case metadata.RemoveTopicRecord:
			t := old.Topics.ByID(r.TopicID)
			if t == nil {
				return fmt.Errorf("removal of a topic created in the same change: %w", errNotHosted)
			}
			add(r.TopicID, func() error { return h.deleteTopic(t.Name) })
		case metadata.AccessRecord:
			add("access", func() error { return h.setAccess(new) })
		case metadata.FeatureLevelRecord:
			add("features", func() error { return h.setFeatures(new) })
		case metadata.ConfigRecord:
			res := metadata.ConfigResource{Type: r.ResourceType, Name: r.ResourceName}
			switch {
			case res.Type == metadata.GroupResource:
				add("group configs", func() error { return h.logs.SetGroupConfigs(configsOfType(new, metadata.GroupResource)) })
			case res.Type == metadata.ClientMetricsResource:
				add("client metrics", func() error {
					return h.logs.SetClientMetricsConfigs(configsOfType(new, metadata.ClientMetricsResource))
				})
			case res.Type != metadata.TopicResource || !created[res.Name]:
				add(res, func() error { return h.setConfigs(res, new.Configs.Of(res)) })
			}
		default:
			return fmt.Errorf("%T: %w", r, errNotHosted)
		}
	}
	switch len(ops) {
	case 0:
		return nil
	case 1:
		return ops[0]()
	default:
		return fmt.Errorf("%d operations in one change: %w", len(ops), errNotHosted)
	}
}

func (h logHost) createTopic(img *metadata.Image, t *metadata.TopicImage) error {
	configs := maps.Clone(img.Configs.Of(metadata.ConfigResource{Type: metadata.TopicResource, Name: t.Name}))
	_, err := h.logs.CreateTopicWithID(t.Name, t.ID, int32(len(t.Partitions)), configs, nil)
	return err
}

// deleteTopic deletes the topic's logs. Once it has left the registry it
// is deleted: an error after that (a partition dir storage could not
// remove, which its next start removes) is reported, and the image moves
// on.
func (h logHost) deleteTopic(name string) error {
	err := h.logs.DeleteTopic(name)
	if err != nil && h.logs.Topic(name) == nil {
		return local.Durable(err)
	}
	return err
}

// setAccess keeps img's whole access state, so that the file is always
// one image's.
func (h logHost) setAccess(img *metadata.Image) error {
	data, err := metadata.EncodeBatch(metadata.AccessRecords(img))
	if err != nil {
		return err
	}
	return h.logs.SetAccessState(data)
}

// configsOfType is the configs of every resource of type typ in img
// that has some, by name.
func configsOfType(img *metadata.Image, typ metadata.ConfigResourceType) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, res := range img.Configs.Resources() {
		if res.Type == typ {
			out[res.Name] = maps.Clone(img.Configs.Of(res))
		}
	}
	return out
}

// setFeatures keeps img's finalized features, the whole of them.
func (h logHost) setFeatures(img *metadata.Image) error {
	data, err := metadata.EncodeBatch(metadata.FeatureRecords(img))
	if err != nil {
		return err
	}
	return h.logs.SetFeatureState(data)
}

func (h logHost) setConfigs(res metadata.ConfigResource, configs map[string]string) error {
	configs = maps.Clone(configs)
	switch {
	case res.Type == metadata.TopicResource:
		return h.logs.AlterTopicConfigs(res.Name, configs, false)
	case res.Type == metadata.BrokerResource && (res.Name == "" || res.Name == strconv.Itoa(int(h.node))):
		return h.logs.AlterBrokerConfigs(configs, res.Name != "", false)
	default:
		return fmt.Errorf("configs of %d %q: %w", res.Type, res.Name, errNotHosted)
	}
}

// endpoint is broker's address on the client listener; ok is false when
// it has none there (Kafka leaves such brokers out of its answers).
func (b *services) endpoint(reg metadata.BrokerRegistration) (host string, port int32, ok bool) {
	e, ok := reg.Endpoint(b.listener)
	return e.Host, e.Port, ok
}

// liveBrokers are the registered, unfenced brokers with an endpoint on the
// client listener, by id: the brokers clients are told of.
func (b *services) liveBrokers(img *metadata.Image) []metadata.BrokerRegistration {
	var out []metadata.BrokerRegistration
	for _, reg := range img.Cluster.Brokers() {
		if _, _, ok := b.endpoint(reg); ok && !reg.Fenced {
			out = append(out, reg)
		}
	}
	return out
}

// controllerID is what Metadata and DescribeCluster report as the
// controller: Kafka's brokers name a random live broker, Strata the lowest
// (on one node, itself); -1 when none is live. DescribeCluster picks among
// the brokers on this listener, Metadata among all of them (onListener
// false), as Kafka 4.4 answers on a listener no broker advertises.
func (b *services) controllerID(img *metadata.Image, onListener bool) int32 {
	for _, reg := range img.Cluster.Brokers() {
		if _, _, listens := b.endpoint(reg); !reg.Fenced && (listens || !onListener) {
			return reg.ID
		}
	}
	return -1
}
