package metadata

import (
	"errors"
	"fmt"
	"maps"
)

// ErrInvalidRecord wraps every record a Delta refuses: one that does not
// fit the image it is replayed on.
var ErrInvalidRecord = errors.New("invalid metadata record")

// Delta is a set of changes to an image, made by replaying records in
// order (Kafka's MetadataDelta); Apply returns the image with them. The
// base image is never modified. A Delta is not safe for concurrent use.
type Delta struct {
	base *Image

	brokers map[int32]*BrokerRegistration // nil value: unregistered
	topics  map[[16]byte]*TopicImage      // nil value: removed
	configs map[ConfigResource]map[string]*string
	nextPID *int64
	access  accessDelta
	feats   featuresDelta
}

// NewDelta starts a delta on base.
func NewDelta(base *Image) *Delta {
	return &Delta{base: base}
}

// Replay applies one record to the delta. A record that does not fit (a
// partition of an unknown topic, a second topic of the same name, ...) is
// refused with an error wrapping ErrInvalidRecord and changes nothing.
func (d *Delta) Replay(r Record) error {
	switch r := r.(type) {
	case RegisterBrokerRecord:
		d.putBroker(r.BrokerID, &BrokerRegistration{ID: r.BrokerID, IncarnationID: r.IncarnationID, Epoch: r.BrokerEpoch,
			Endpoints: r.Endpoints, Rack: r.Rack, Fenced: r.Fenced})
	case FenceBrokerRecord:
		return d.setFenced(r.ID, r.Epoch, true)
	case UnfenceBrokerRecord:
		return d.setFenced(r.ID, r.Epoch, false)
	case UnregisterBrokerRecord:
		if !d.hasBroker(r.BrokerID) {
			return fmt.Errorf("%w: unregister unknown broker %d", ErrInvalidRecord, r.BrokerID)
		}
		d.putBroker(r.BrokerID, nil)
	case TopicRecord:
		if r.TopicID == ([16]byte{}) {
			return fmt.Errorf("%w: topic %q with the zero id", ErrInvalidRecord, r.Name)
		}
		if d.topicByName(r.Name) != nil || d.topic(r.TopicID) != nil {
			return fmt.Errorf("%w: topic %q (id %x) exists", ErrInvalidRecord, r.Name, r.TopicID)
		}
		d.putTopic(&TopicImage{Name: r.Name, ID: r.TopicID})
	case PartitionRecord:
		return d.replayPartition(r)
	case PartitionChangeRecord:
		return d.replayPartitionChange(r)
	case RemoveTopicRecord:
		t := d.topic(r.TopicID)
		if t == nil {
			return fmt.Errorf("%w: remove unknown topic id %x", ErrInvalidRecord, r.TopicID)
		}
		d.removeTopic(r.TopicID)
		res := ConfigResource{Type: TopicResource, Name: t.Name}
		for name := range d.configsOf(res) {
			d.setConfig(res, name, nil)
		}
	case ConfigRecord:
		d.setConfig(ConfigResource{Type: r.ResourceType, Name: r.ResourceName}, r.Name, r.Value)
	case FeatureLevelRecord:
		return d.feats.replay(d.base.Features, r)
	case AccessRecord:
		return d.access.replay(&d.base.Access, r)
	case ProducerIdsRecord:
		if r.NextProducerID < d.nextProducerID() {
			return fmt.Errorf("%w: producer ids would go back from %d to %d", ErrInvalidRecord, d.nextProducerID(), r.NextProducerID)
		}
		next := r.NextProducerID
		d.nextPID = &next
	default:
		return fmt.Errorf("%w: unknown record type %T", ErrInvalidRecord, r)
	}
	return nil
}

func (d *Delta) replayPartition(r PartitionRecord) error {
	t := d.topic(r.TopicID)
	if t == nil {
		return fmt.Errorf("%w: partition %d of unknown topic id %x", ErrInvalidRecord, r.PartitionID, r.TopicID)
	}
	if r.PartitionID < 0 || int(r.PartitionID) > len(t.Partitions) {
		return fmt.Errorf("%w: partition %d of topic %s, which has %d", ErrInvalidRecord, r.PartitionID, t.Name, len(t.Partitions))
	}
	parts := append([]PartitionRegistration(nil), t.Partitions...)
	reg := PartitionRegistration{Replicas: r.Replicas, ISR: r.ISR, AddingReplicas: emptyAsNil(r.AddingReplicas),
		RemovingReplicas: emptyAsNil(r.RemovingReplicas), Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch}
	if int(r.PartitionID) == len(parts) {
		parts = append(parts, reg)
	} else {
		parts[r.PartitionID] = reg
	}
	d.putTopic(&TopicImage{Name: t.Name, ID: t.ID, Partitions: parts})
	return nil
}

func (d *Delta) replayPartitionChange(r PartitionChangeRecord) error {
	t := d.topic(r.TopicID)
	if t == nil {
		return fmt.Errorf("%w: change of partition %d of unknown topic id %x", ErrInvalidRecord, r.PartitionID, r.TopicID)
	}
	p, ok := t.Partition(r.PartitionID)
	if !ok {
		return fmt.Errorf("%w: change of unknown partition %d of topic %s", ErrInvalidRecord, r.PartitionID, t.Name)
	}
	if r.Leader != NoLeaderChange {
		p.Leader = r.Leader
		p.LeaderEpoch++
	}
	if r.ISR != nil {
		p.ISR = r.ISR
	}
	if r.Replicas != nil {
		p.Replicas = r.Replicas
	}
	if r.AddingReplicas != nil {
		p.AddingReplicas = emptyAsNil(r.AddingReplicas)
	}
	if r.RemovingReplicas != nil {
		p.RemovingReplicas = emptyAsNil(r.RemovingReplicas)
	}
	p.PartitionEpoch++
	parts := append([]PartitionRegistration(nil), t.Partitions...)
	parts[r.PartitionID] = p
	d.putTopic(&TopicImage{Name: t.Name, ID: t.ID, Partitions: parts})
	return nil
}

// setFenced fences or unfences the registration of broker id at epoch; a
// record for another epoch is of a registration that was replaced.
func (d *Delta) setFenced(id int32, epoch int64, fenced bool) error {
	b, ok := d.broker(id)
	if !ok {
		return fmt.Errorf("%w: fence or unfence unknown broker %d", ErrInvalidRecord, id)
	}
	if b.Epoch != epoch {
		return fmt.Errorf("%w: fence or unfence broker %d at epoch %d, its registration is at epoch %d", ErrInvalidRecord, id, epoch, b.Epoch)
	}
	b.Fenced = fenced
	d.putBroker(id, &b)
	return nil
}

// broker is the registration of id as of the records so far.
func (d *Delta) broker(id int32) (BrokerRegistration, bool) {
	if b, ok := d.brokers[id]; ok {
		if b == nil {
			return BrokerRegistration{}, false
		}
		return *b, true
	}
	b, ok := d.base.Cluster.brokers[id]
	return b, ok
}

func (d *Delta) hasBroker(id int32) bool {
	if b, ok := d.brokers[id]; ok {
		return b != nil
	}
	_, ok := d.base.Cluster.brokers[id]
	return ok
}

func (d *Delta) putBroker(id int32, b *BrokerRegistration) {
	if d.brokers == nil {
		d.brokers = map[int32]*BrokerRegistration{}
	}
	d.brokers[id] = b
}

// topic is the topic with id as of the records so far, nil if none.
func (d *Delta) topic(id [16]byte) *TopicImage {
	if t, ok := d.topics[id]; ok {
		return t
	}
	return d.base.Topics.byID[id]
}

func (d *Delta) topicByName(name string) *TopicImage {
	for _, t := range d.topics {
		if t != nil && t.Name == name {
			return t
		}
	}
	if t := d.base.Topics.byName[name]; t != nil {
		if changed, ok := d.topics[t.ID]; !ok || changed != nil {
			return t
		}
	}
	return nil
}

func (d *Delta) putTopic(t *TopicImage) {
	if d.topics == nil {
		d.topics = map[[16]byte]*TopicImage{}
	}
	d.topics[t.ID] = t
}

func (d *Delta) removeTopic(id [16]byte) {
	if d.topics == nil {
		d.topics = map[[16]byte]*TopicImage{}
	}
	d.topics[id] = nil
}

// configsOf is the configs of r as of the records so far.
func (d *Delta) configsOf(r ConfigResource) map[string]string {
	out := maps.Clone(d.base.Configs.byResource[r])
	for name, v := range d.configs[r] {
		if v == nil {
			delete(out, name)
		} else {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = *v
		}
	}
	return out
}

func (d *Delta) setConfig(r ConfigResource, name string, v *string) {
	if d.configs == nil {
		d.configs = map[ConfigResource]map[string]*string{}
	}
	if d.configs[r] == nil {
		d.configs[r] = map[string]*string{}
	}
	d.configs[r][name] = v
}

func (d *Delta) nextProducerID() int64 {
	if d.nextPID != nil {
		return *d.nextPID
	}
	return d.base.ProducerIDs.NextProducerID
}

// Apply returns the image the records replayed so far make of the base.
// Parts of the base no record touched are shared with it.
func (d *Delta) Apply() *Image {
	img := *d.base
	if d.brokers != nil {
		brokers := maps.Clone(d.base.Cluster.brokers)
		if brokers == nil {
			brokers = map[int32]BrokerRegistration{}
		}
		for id, b := range d.brokers {
			if b == nil {
				delete(brokers, id)
			} else {
				brokers[id] = *b
			}
		}
		img.Cluster = ClusterImage{brokers: brokers}
	}
	if d.topics != nil {
		byName := maps.Clone(d.base.Topics.byName)
		byID := maps.Clone(d.base.Topics.byID)
		if byName == nil {
			byName, byID = map[string]*TopicImage{}, map[[16]byte]*TopicImage{}
		}
		// Every changed topic leaves first, then the live ones come back:
		// one delta may remove a topic and create another of its name.
		for id := range d.topics {
			if old := byID[id]; old != nil {
				delete(byName, old.Name)
				delete(byID, id)
			}
		}
		for id, t := range d.topics {
			if t != nil {
				byName[t.Name], byID[id] = t, t
			}
		}
		img.Topics = TopicsImage{byName: byName, byID: byID}
	}
	if d.configs != nil {
		byResource := maps.Clone(d.base.Configs.byResource)
		if byResource == nil {
			byResource = map[ConfigResource]map[string]string{}
		}
		for r := range d.configs {
			if c := d.configsOf(r); len(c) > 0 {
				byResource[r] = c
			} else {
				delete(byResource, r)
			}
		}
		img.Configs = ConfigsImage{byResource: byResource}
	}
	if d.nextPID != nil {
		img.ProducerIDs = ProducerIDsImage{NextProducerID: *d.nextPID}
	}
	img.Access = d.access.apply(d.base.Access)
	img.Features = d.feats.apply(d.base.Features)
	return &img
}

// emptyAsNil keeps "none" one value in an image: nil.
func emptyAsNil(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return s
}
