package share

import (
	"fmt"
	"time"
)

// AckBatch is one AcknowledgementBatch of ShareFetch or ShareAcknowledge:
// one type for every offset of First..Last, or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// Write is the state a change must persist before it holds: the
// WriteShareGroupState request of the share-partition, with the start
// offset and delivery-complete count as they were when it was made.
type Write struct {
	ID                    uint64
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []StateBatch
}

// change is a PersisterBatch: offsets first..last of b, as a whole batch
// or offset by offset, and the state written for them.
type change struct {
	b           *inFlightBatch
	first, last int64
	whole       bool
	sb          StateBatch
	// cause is why a change to ARCHIVING is dead-lettered.
	cause Cause
}

// states is what the change moved; a whole batch split into offsets
// since is every offset of the range.
func (c change) states() []*inFlightState {
	if c.whole && c.b.offsets == nil {
		return []*inFlightState{&c.b.batch}
	}
	out := make([]*inFlightState, 0, c.last-c.first+1)
	for o := c.first; o <= c.last; o++ {
		out = append(out, c.b.at(o))
	}
	return out
}

type pendingWrite struct {
	changes []change
	// timeout writes (acquisition locks expired) are not undone when the
	// write fails, as Kafka's.
	timeout bool
}

func (p *Partition) newWrite(changes []change, timeout bool) *Write {
	p.nextID++
	w := &Write{ID: p.nextID, StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch, StartOffset: p.start,
		DeliveryCompleteCount: int32(p.complete)}
	for _, c := range changes {
		w.Batches = append(w.Batches, c.sb)
	}
	p.writes[w.ID] = &pendingWrite{changes: changes, timeout: timeout}
	return w
}

// inFlightIn is numInFlightRecordsInBatch: the offsets of first..last at
// or after the start offset.
func (p *Partition) inFlightIn(first, last int64) int {
	if last < p.start {
		return 0
	}
	return int(last - max(p.start, first) + 1)
}

// Acknowledge applies a member's acknowledgements (SharePartition.acknowledge):
// ACCEPT acknowledges, RELEASE makes available again (archived at the
// delivery count limit), REJECT and a gap archive, RENEW extends the lock.
// Either all batches apply or none: the first refused one undoes the rest.
func (p *Partition) Acknowledge(member string, acks []AckBatch, now time.Time) (*Write, *Error) {
	var changes []change
	var err *Error
	for _, a := range acks {
		if err = validAck(a); err != nil {
			break
		}
		if a.Last < p.start {
			continue
		}
		var sub []*inFlightBatch
		if sub, err = p.ackBatches(a); err != nil {
			break
		}
		if err = p.ackRecords(member, a, sub, &changes, now); err != nil {
			break
		}
	}
	if err != nil {
		p.undo(changes, now)
		return nil, err
	}
	if len(changes) == 0 {
		return nil, nil
	}
	return p.newWrite(changes, false), nil
}

func validAck(a AckBatch) *Error {
	for _, t := range a.Types {
		if t < AckGap || t > AckRenew {
			return invalidRequest(fmt.Sprintf("Invalid acknowledge type: %v", a.Types))
		}
	}
	if a.Last < a.First || len(a.Types) == 0 || len(a.Types) > 1 && int64(len(a.Types)) != a.Last-a.First+1 {
		return invalidRequest(fmt.Sprintf("Invalid acknowledge type: %v", a.Types))
	}
	return nil
}

// undo rolls back transitions started by a request that failed.
func (p *Partition) undo(changes []change, now time.Time) {
	for _, c := range changes {
		p.finish(c, false, now)
	}
}

// finish completes or rolls back one change (rollbackOrProcessStateUpdates).
func (p *Partition) finish(c change, ok bool, now time.Time) {
	states := c.states()
	for _, s := range states {
		s.complete(ok, now, p.cfg.DeliveryCountLimit)
		if s.state == Available {
			p.findNext = true
		}
	}
	if ok || len(states) == 0 {
		return
	}
	switch was, is := c.sb.State.terminal(), states[0].state.terminal(); {
	case was && !is:
		p.complete -= p.inFlightIn(c.sb.First, c.sb.Last)
	case !was && is:
		p.complete += p.inFlightIn(c.sb.First, c.sb.Last)
	}
}

// ackBatches is fetchSubMapForAcknowledgementBatch: the in-flight batches
// an acknowledgement covers, all of whose offsets must be in flight.
func (p *Partition) ackBatches(a AckBatch) ([]*inFlightBatch, *Error) {
	i := p.floor(a.First)
	if i < 0 && a.First < p.start && a.Last >= p.start {
		i = p.floor(p.start)
	}
	if i < 0 {
		return nil, invalidState("Batch record not found. The request batch offsets are not found in the cache.")
	}
	sub := p.between(p.batches[i].first, a.Last)
	last := sub[len(sub)-1].last
	if last < a.First {
		return nil, invalidRequest("Batch record not found. The first offset in request is past acquired records.")
	}
	if a.Last > last {
		return nil, invalidRequest("Batch record not found. The last offset in request is past acquired records.")
	}
	return sub, nil
}

// ackRecords is acknowledgeBatchRecords.
func (p *Partition) ackRecords(member string, a AckBatch, sub []*inFlightBatch, changes *[]change, now time.Time) *Error {
	for _, b := range sub {
		if b.last < p.start {
			continue
		}
		if b.offsets == nil {
			switch {
			case b.batch.member == "":
				return invalidState("The batch cannot be acknowledged. The batch is not in the acquired state.")
			case b.batch.member != member:
				return invalidState("Member is not the owner of batch record")
			case b.batch.pending():
				return invalidState("The record state is invalid. The acknowledgement of delivery could not be completed.")
			}
		}
		fullMatch := b.first >= a.First && b.last <= a.Last
		startMoved := b.first < p.start && b.last >= p.start
		if !fullMatch || b.offsets != nil || len(a.Types) > 1 || startMoved {
			if b.offsets == nil {
				if b.batch.state != Acquired {
					return invalidState("The batch cannot be acknowledged. The subset batch is not in the acquired state.")
				}
				b.explode()
			}
			if err := p.ackOffsets(member, a, b, changes, now); err != nil {
				return err
			}
			continue
		}
		if err := p.ackWhole(a.Types[0], b, member, changes, now); err != nil {
			return err
		}
	}
	return nil
}

// ackOffsets is acknowledgePerOffsetBatchRecords.
func (p *Partition) ackOffsets(member string, a AckBatch, b *inFlightBatch, changes *[]change, now time.Time) *Error {
	for i := range b.offsets {
		o, s := b.first+int64(i), &b.offsets[i]
		if o < a.First || o < p.start {
			continue
		}
		if o > a.Last {
			break
		}
		switch {
		case s.state != Acquired:
			return invalidState("The offset cannot be acknowledged. The offset is not acquired.")
		case s.pending():
			return invalidState("The record state is invalid. The acknowledgement of delivery could not be completed.")
		case s.member != member:
			return invalidState("Member is not the owner of offset")
		}
		t := a.Types[0]
		if len(a.Types) > 1 {
			t = a.Types[o-a.First]
		}
		if t == AckRenew {
			s.lockUntil = p.lock(now)
			continue
		}
		if !s.start(t.target(p.cfg.DeadLetterQueue), countKeep, p.cfg.DeliveryCountLimit, "", p.cfg.DeadLetterQueue) {
			return invalidState("Unable to acknowledge records for the batch")
		}
		*changes = append(*changes, change{b: b, first: o, last: o, cause: causeOf(t, s.state),
			sb: StateBatch{First: o, Last: o, State: s.state, DeliveryCount: int16(s.deliveryCount)}})
		if s.state.terminal() {
			p.complete++
		}
	}
	return nil
}

// ackWhole is acknowledgeCompleteBatch.
func (p *Partition) ackWhole(t AckType, b *inFlightBatch, member string, changes *[]change, now time.Time) *Error {
	if b.batch.state != Acquired {
		return invalidState("The batch cannot be acknowledged. The batch is not in the acquired state.")
	}
	if t == AckRenew {
		b.batch.lockUntil = p.lock(now)
		return nil
	}
	if !b.batch.start(t.target(p.cfg.DeadLetterQueue), countKeep, p.cfg.DeliveryCountLimit, "", p.cfg.DeadLetterQueue) {
		return invalidState("Unable to acknowledge records for the batch")
	}
	*changes = append(*changes, change{b: b, first: b.first, last: b.last, whole: true, cause: causeOf(t, b.batch.state),
		sb: StateBatch{First: b.first, Last: b.last, State: b.batch.state, DeliveryCount: int16(b.batch.deliveryCount)}})
	if b.batch.state.terminal() {
		p.complete += int(b.size())
	}
	return nil
}

// ReleaseMember releases every record the member holds, as Kafka 4.4
// does when its share session ends (releaseAcquiredRecords): they become
// available, or archived at the delivery count limit or before the start
// offset.
func (p *Partition) ReleaseMember(member string, now time.Time) (*Write, *Error) {
	var changes []change
	for _, b := range p.batches {
		if b.offsets == nil && b.batch.state == Acquired && b.batch.member == member && b.first < p.start && b.last >= p.start {
			b.explode()
		}
		if b.offsets == nil {
			if b.batch.member != member && b.batch.member != "" || b.batch.state != Acquired {
				continue
			}
			to := Available
			if b.last < p.start {
				to = Archived
			}
			if !b.batch.start(to, countKeep, p.cfg.DeliveryCountLimit, "", p.cfg.DeadLetterQueue) {
				p.undo(changes, now)
				return nil, invalidState("Unable to release acquired records for the batch")
			}
			changes = append(changes, change{b: b, first: b.first, last: b.last, whole: true, cause: causeOf(AckRelease, b.batch.state),
				sb: StateBatch{First: b.first, Last: b.last, State: b.batch.state, DeliveryCount: int16(b.batch.deliveryCount)}})
			if b.batch.state.terminal() {
				p.complete += p.inFlightIn(b.first, b.last)
			}
			continue
		}
		for i := range b.offsets {
			o, s := b.first+int64(i), &b.offsets[i]
			if s.member != member && s.member != "" || s.state != Acquired {
				continue
			}
			to := Available
			if o < p.start {
				to = Archived
			}
			if !s.start(to, countKeep, p.cfg.DeliveryCountLimit, "", p.cfg.DeadLetterQueue) {
				p.undo(changes, now)
				return nil, invalidState("Unable to release acquired records for the offset")
			}
			changes = append(changes, change{b: b, first: o, last: o, cause: causeOf(AckRelease, s.state),
				sb: StateBatch{First: o, Last: o, State: s.state, DeliveryCount: int16(s.deliveryCount)}})
			if o >= p.start && s.state.terminal() {
				p.complete++
			}
		}
	}
	if len(changes) == 0 {
		return nil, nil
	}
	return p.newWrite(changes, false), nil
}

// Tick releases the records whose acquisition lock expired
// (releaseAcquisitionLockOnTimeout): available again, or archived at the
// delivery count limit or before the start offset. They change at once;
// each lock that expired (a whole batch's, or one offset's once its batch
// is tracked by offset, as Kafka's timer tasks) has its Write.
func (p *Partition) Tick(now time.Time) []*Write {
	var writes []*Write
	expired := func(s *inFlightState) bool {
		return s.state == Acquired && !s.pending() && !s.lockUntil.IsZero() && !now.Before(s.lockUntil)
	}
	for _, b := range p.batches {
		if b.offsets == nil && expired(&b.batch) && b.first < p.start && b.last >= p.start {
			b.explode()
		}
		if b.offsets == nil {
			if expired(&b.batch) {
				if c, ok := p.expire(b, &b.batch, b.first, b.last, true); ok {
					writes = append(writes, p.newWrite([]change{c}, true))
				}
			}
			continue
		}
		for i := range b.offsets {
			o := b.first + int64(i)
			if expired(&b.offsets[i]) {
				if c, ok := p.expire(b, &b.offsets[i], o, o, false); ok {
					writes = append(writes, p.newWrite([]change{c}, true))
				}
			}
		}
	}
	return writes
}

// expire moves one expired lock's records of first..last back.
func (p *Partition) expire(b *inFlightBatch, s *inFlightState, first, last int64, whole bool) (change, bool) {
	to := Available
	if last < p.start {
		to = Archived
	}
	if !s.tryUpdate(to, countKeep, p.cfg.DeliveryCountLimit, "", p.cfg.DeadLetterQueue) {
		return change{}, false
	}
	s.lockUntil = time.Time{}
	if s.state == Available {
		p.findNext = true
	}
	if s.state.terminal() {
		p.complete += p.inFlightIn(first, last)
	}
	return change{b: b, first: first, last: last, whole: whole, cause: causeOf(AckRelease, s.state),
		sb: StateBatch{First: first, Last: last, State: s.state, DeliveryCount: int16(s.deliveryCount)}}, true
}

// NextDeadline is the earliest acquisition lock to expire, zero if none.
func (p *Partition) NextDeadline() time.Time {
	var next time.Time
	see := func(s *inFlightState) {
		if s.state == Acquired && !s.pending() && !s.lockUntil.IsZero() && (next.IsZero() || s.lockUntil.Before(next)) {
			next = s.lockUntil
		}
	}
	for _, b := range p.batches {
		if b.offsets == nil {
			see(&b.batch)
			continue
		}
		for i := range b.offsets {
			see(&b.offsets[i])
		}
	}
	return next
}

// WriteDone reports a Write persisted (ok) or failed: its transitions
// complete or roll back, and the start offset moves past the records
// whose delivery is complete (after a failed write too, as a rollback may
// archive a record). Records it made ARCHIVING become dead letters
// (DeadLetters): once persisted, or at once for expired locks, which
// are not undone.
func (p *Partition) WriteDone(id uint64, ok bool, now time.Time) {
	w := p.writes[id]
	if w == nil {
		return
	}
	delete(p.writes, id)
	if !w.timeout {
		for _, c := range w.changes {
			p.finish(c, ok, now)
		}
	}
	if ok || w.timeout {
		p.queueDeadLetters(w.changes)
	}
	p.advance()
}

// advance is maybeUpdateCachedStateAndOffsets: the start offset moves
// past the terminal records at its head; batches wholly behind it leave.
func (p *Partition) advance() {
	if !p.canAdvance() {
		return
	}
	last, n := p.lastTerminal()
	if last == -1 {
		return
	}
	if lastCached := p.batches[len(p.batches)-1].last; last == lastCached {
		p.start, p.end = lastCached+1, lastCached+1
		p.batches, p.complete = nil, 0
		return
	}
	i := p.floor(last)
	removeTo := i - 1
	if last == p.batches[i].last {
		if next := p.batches[i+1].first; next > p.start {
			p.start = next
		}
		removeTo = i
	} else if last+1 > p.start {
		p.start = last + 1
	}
	p.complete -= n
	if removeTo >= 0 {
		p.batches = p.batches[removeTo+1:]
	}
}

// canAdvance is canMoveStartOffset: the record at the start offset is
// terminal, with no transition in progress.
func (p *Partition) canAdvance() bool {
	i := p.floor(p.start)
	if i < 0 || p.batches[i].last < p.start {
		return false
	}
	s := p.batches[i].at(p.start)
	return !s.pending() && s.state.terminal()
}

// lastTerminal is findLastOffsetAcknowledgedAndMetadata: the last offset
// of the run of terminal records the cache starts with (-1 if none) and
// how many of them are at or after the start offset.
func (p *Partition) lastTerminal() (int64, int) {
	last, n := int64(-1), 0
	for _, b := range p.batches {
		if b.offsets == nil {
			if b.batch.pending() || !b.batch.state.terminal() {
				return last, n
			}
			last = b.last
			n += p.inFlightIn(b.first, b.last)
			continue
		}
		for i := range b.offsets {
			s := &b.offsets[i]
			if s.pending() || !s.state.terminal() {
				return last, n
			}
			last = b.first + int64(i)
			if last >= p.start {
				n++
			}
		}
	}
	return last, n
}

// UpdateLogStart follows the log start offset moving forward
// (updateCacheAndOffsets): available records before it are archived and
// the start offset moves to it; acquired ones are archived when their
// lock expires or they are acknowledged.
func (p *Partition) UpdateLogStart(logStart int64) {
	if logStart <= p.start {
		return
	}
	if len(p.batches) == 0 {
		p.start, p.end, p.complete = logStart, logStart, 0
		return
	}
	removed := p.terminalBefore(logStart)
	if p.archiveRange(p.start, logStart, p.batches, Available, false) {
		p.findNext = true
	}
	p.start = logStart
	p.complete -= removed
	if p.end < p.start {
		p.end = p.start
	}
}

// terminalBefore is countTerminalRecordsUpToNewLSO.
func (p *Partition) terminalBefore(lso int64) int {
	n := 0
	for _, b := range p.batches {
		if b.first >= lso {
			break
		}
		if b.last < p.start {
			continue
		}
		if b.offsets == nil {
			if b.batch.state.terminal() {
				if from, to := max(p.start, b.first), min(lso-1, b.last); from <= to {
					n += int(to - from + 1)
				}
			}
			continue
		}
		for i := range b.offsets {
			if o := b.first + int64(i); o >= p.start && o < lso && b.offsets[i].state.terminal() {
				n++
			}
		}
	}
	return n
}
