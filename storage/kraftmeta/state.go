package kraftmeta

import "sort"

// state is the metadata replayed so far, as Kafka's MetadataDelta applies
// it: topics by id, configs by resource.
type state struct {
	topics        map[[16]byte]*topicState
	topicConfigs  map[string]map[string]string // by topic name
	brokerConfigs map[string]map[string]string // by resource name
	nextPID       int64
	records       int
	skipped       int

	inTxn   bool
	pending []Record // the open metadata transaction's records
}

type topicState struct {
	name  string
	parts map[int32]*Partition
}

func newState() *state {
	return &state{
		topics:        map[[16]byte]*topicState{},
		topicConfigs:  map[string]map[string]string{},
		brokerConfigs: map[string]map[string]string{},
	}
}

// apply decodes one record value and applies it, or holds it while a
// metadata transaction is open.
func (s *state) apply(value []byte) error {
	rec, err := DecodeRecord(value)
	if err != nil {
		return err
	}
	s.records++
	switch rec.Kind {
	case KindUnknown:
		s.skipped++
	case KindBeginTransaction:
		s.discardTransaction()
		s.inTxn = true
	case KindEndTransaction:
		return s.commitTransaction()
	case KindAbortTransaction:
		s.discardTransaction()
	case KindIgnored:
	default:
		if s.inTxn {
			s.pending = append(s.pending, rec)
			return nil
		}
		return s.replay(rec)
	}
	return nil
}

// discardTransaction drops the open metadata transaction's records (an
// abort, or a log that ends before the transaction did).
func (s *state) discardTransaction() { s.inTxn, s.pending = false, nil }

// commitTransaction replays the open metadata transaction's records.
func (s *state) commitTransaction() error {
	pending := s.pending
	s.discardTransaction()
	for _, rec := range pending {
		if err := s.replay(rec); err != nil {
			return err
		}
	}
	return nil
}

func (s *state) replay(rec Record) error {
	switch rec.Kind {
	case KindTopic:
		s.topics[rec.TopicID] = &topicState{name: rec.TopicName, parts: map[int32]*Partition{}}
	case KindPartition:
		t := s.topics[rec.TopicID]
		if t == nil {
			return corruptionf("partition record for unknown topic id %x", rec.TopicID)
		}
		if rec.PartitionID < 0 {
			return corruptionf("topic %s: partition record with id %d", t.name, rec.PartitionID)
		}
		t.parts[rec.PartitionID] = &Partition{Leader: rec.Leader, LeaderEpoch: rec.LeaderEpoch}
	case KindPartitionChange:
		t := s.topics[rec.TopicID]
		if t == nil {
			return corruptionf("partition change record for unknown topic id %x", rec.TopicID)
		}
		p := t.parts[rec.PartitionID]
		if p == nil {
			return corruptionf("topic %s: partition change record for unknown partition %d", t.name, rec.PartitionID)
		}
		// PartitionRegistration.merge: a new leader (or the same one set
		// again, to fence) starts a new leader epoch.
		if rec.Leader != leaderUnchanged {
			p.Leader = rec.Leader
			p.LeaderEpoch++
		}
	case KindRemoveTopic:
		t := s.topics[rec.TopicID]
		if t == nil {
			return corruptionf("remove topic record for unknown topic id %x", rec.TopicID)
		}
		delete(s.topics, rec.TopicID)
		delete(s.topicConfigs, t.name)
	case KindConfig:
		var configs map[string]map[string]string
		switch rec.ResourceType {
		case ResourceTopic:
			configs = s.topicConfigs
		case ResourceBroker:
			configs = s.brokerConfigs
		default:
			return nil
		}
		c := configs[rec.TopicName]
		if rec.ConfigValue == nil {
			delete(c, rec.ConfigName)
			if len(c) == 0 {
				delete(configs, rec.TopicName)
			}
			return nil
		}
		if c == nil {
			c = map[string]string{}
			configs[rec.TopicName] = c
		}
		c[rec.ConfigName] = *rec.ConfigValue
	case KindProducerIDs:
		s.nextPID = max(s.nextPID, rec.NextProducerID)
	}
	return nil
}

// image fills img's topics and configs from the replayed state.
func (s *state) image(img *Image) error {
	img.Topics = make([]Topic, 0, len(s.topics))
	for id, t := range s.topics {
		if len(t.parts) == 0 {
			return corruptionf("topic %s has no partition records (of a version this reader knows)", t.name)
		}
		parts := make([]Partition, len(t.parts))
		for i := range parts {
			p := t.parts[int32(i)]
			if p == nil {
				return corruptionf("topic %s: partition %d missing of %d", t.name, i, len(parts))
			}
			parts[i] = *p
		}
		img.Topics = append(img.Topics, Topic{Name: t.name, ID: id, Partitions: parts, Configs: s.topicConfigs[t.name]})
	}
	sort.Slice(img.Topics, func(i, j int) bool { return img.Topics[i].Name < img.Topics[j].Name })
	img.BrokerConfigs = s.brokerConfigs
	img.NextProducerID = s.nextPID
	return nil
}
