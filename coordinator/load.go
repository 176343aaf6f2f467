package coordinator

import (
	"fmt"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// load replays the slot's partition of __consumer_offsets into its shard
// (the latest record per key wins, tombstones delete), from the log start
// to the log end offset, as Kafka loads it on becoming the leader, batch by batch in place (Log.ForEachBatchToEnd), and
// then lets requests in. It returns the number of groups loaded.
func (c *Groups) load(sl *groupSlot) (int, error) {
	p, err := c.offsets.partition(sl.partition)
	if err != nil {
		return 0, err
	}
	// Nothing else touches a loading shard (requests, timers and
	// resigning look at sl.loading first), so the replay runs unlocked.
	s := sl.shard
	s.begin(c.clock.Now())
	err = p.Log.ForEachBatchToEnd(p.Log.LogStartOffset(), func(raw []byte) error {
		select {
		case <-c.stop:
			return errClosedWhileLoading
		default:
		}
		return s.replayBatch(raw)
	})
	if err != nil {
		return 0, fmt.Errorf("%s-%d: %w", OffsetsTopic, sl.partition, err)
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.resigned {
		return 0, nil
	}
	s.begin(c.clock.Now())
	s.activate()
	sl.loading = false
	c.execute(sl)
	c.logger.Debug("loaded "+OffsetsTopic+" partition", zap.Int32("partition", sl.partition),
		zap.Int32("leader_epoch", sl.epoch), zap.Int("groups", len(s.groups)))
	return len(s.groups), nil
}

// replayBatch applies one batch of the partition during load.
func (s *groupShard) replayBatch(raw []byte) error {
	if _, err := forEachRecord(raw, func(b *batchInfo, key, value []byte) error {
		if b.transactional {
			return s.replayTxn(b, key, value)
		}
		return s.replay(key, value)
	}); err != nil {
		return fmt.Errorf("replay batch at offset %d: %w", batch.DecodeHeader(raw).BaseOffset, err)
	}
	return nil
}

// replay applies one record during load.
func (s *groupShard) replay(key, value []byte) error {
	version, err := keyVersion(key)
	if err != nil {
		return err
	}
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("offset commit key: %w", err)
		}
		g := s.replayGroup(k.Group)
		tp := topicPartition{k.Topic, k.Partition}
		if value == nil {
			s.offsets.remove(g.id, tp)
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("offset commit value of group %s: %w", k.Group, err)
		}
		expire := int64(-1)
		if v.Version == 1 {
			expire = v.ExpireTimestamp
		}
		s.offsets.put(g.id, tp, committedOffset{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: expire})
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("group metadata key: %w", err)
		}
		if value == nil {
			// The group's membership goes; its offsets have their own
			// tombstones (Kafka's online upgrade to a consumer group
			// deletes the classic record and keeps the offsets).
			delete(s.groups, k.Group)
			if s.offsets.count(k.Group) > 0 {
				s.replayGroup(k.Group)
			}
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("group metadata value of group %s: %w", k.Group, err)
		}
		replayGroupMetadata(s.replayGroup(k.Group), &v)
	case sgMemberType, sgMetadataType, sgTargetMetadataType, sgTargetMemberType, sgCurrentType, sgStatePartsType:
		return s.replayShare(key, value)
	default:
		if isStreamsType(version) {
			return s.replayStreams(key, value)
		}
		return s.replayConsumer(key, value)
	}
	return nil
}

func (s *groupShard) replayGroup(id string) *group {
	g := s.groups[id]
	if g == nil {
		g = newGroup(id, s.partition, s.now)
		s.groups[id] = g
	}
	return g
}

// replayGroupMetadata replaces g's membership with v's, as Kafka's
// GroupMetadata.loadGroup: Stable with members, else Empty.
func replayGroupMetadata(g *group, v *kmsg.GroupMetadataValue) {
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	g.protocol, g.leader = deref(v.Protocol), deref(v.Leader)
	g.members = make(map[string]*member, len(v.Members))
	g.static = make(map[string]string)
	for _, vm := range v.Members {
		m := &member{
			id:               vm.MemberID,
			instanceID:       deref(vm.InstanceID),
			clientID:         vm.ClientID,
			clientHost:       vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType,
			protocols:        []protocolMeta{{name: g.protocol, metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = m.id
		}
	}
	g.state = stateEmpty
	if len(g.members) > 0 {
		g.state = stateStable
	}
	if v.CurrentStateTimestamp > 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
