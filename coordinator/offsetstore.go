package coordinator

// offsetStore is a shard's committed offsets, by group and partition, and
// the transactional ones still pending (TxnOffsetCommit appended, the
// transaction not ended yet), by group and producer id, as Kafka's
// OffsetMetadataManager keeps them apart from group membership.
type offsetStore struct {
	committed map[string]map[topicPartition]committedOffset
	pending   map[string]map[int64]map[topicPartition]committedOffset
}

func newOffsetStore() offsetStore {
	return offsetStore{
		committed: make(map[string]map[topicPartition]committedOffset),
		pending:   make(map[string]map[int64]map[topicPartition]committedOffset),
	}
}

func (o *offsetStore) get(group string, tp topicPartition) (committedOffset, bool) {
	c, ok := o.committed[group][tp]
	return c, ok
}

func (o *offsetStore) put(group string, tp topicPartition, c committedOffset) {
	offs := o.committed[group]
	if offs == nil {
		offs = make(map[topicPartition]committedOffset)
		o.committed[group] = offs
	}
	offs[tp] = c
}

func (o *offsetStore) remove(group string, tp topicPartition) {
	offs := o.committed[group]
	delete(offs, tp)
	if len(offs) == 0 {
		delete(o.committed, group)
	}
}

// of is the group's committed offsets; the caller must not change the map.
func (o *offsetStore) of(group string) map[topicPartition]committedOffset { return o.committed[group] }

func (o *offsetStore) count(group string) int { return len(o.committed[group]) }

// dropGroup forgets the group's committed offsets (deleted or expired).
func (o *offsetStore) dropGroup(group string) { delete(o.committed, group) }

func (o *offsetStore) addPending(group string, pid int64, tp topicPartition, c committedOffset) {
	byPid := o.pending[group]
	if byPid == nil {
		byPid = make(map[int64]map[topicPartition]committedOffset)
		o.pending[group] = byPid
	}
	offs := byPid[pid]
	if offs == nil {
		offs = make(map[topicPartition]committedOffset)
		byPid[pid] = offs
	}
	offs[tp] = c
}

// takePending removes and returns the producer's pending offsets, by group.
func (o *offsetStore) takePending(pid int64) map[string]map[topicPartition]committedOffset {
	out := make(map[string]map[topicPartition]committedOffset)
	for group, byPid := range o.pending {
		if offs, ok := byPid[pid]; ok {
			out[group] = offs
			delete(byPid, pid)
			if len(byPid) == 0 {
				delete(o.pending, group)
			}
		}
	}
	return out
}

func (o *offsetStore) hasPending(group string, tp topicPartition) bool {
	for _, offs := range o.pending[group] {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}
