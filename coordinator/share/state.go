package share

import (
	"fmt"
	"time"
)

// RecordState is the delivery state of an in-flight record, with Kafka's
// ids (RecordState.java): the ids persisted in __share_group_state's state
// batches, where AVAILABLE, ACKNOWLEDGED, ARCHIVING and ARCHIVED appear.
// ARCHIVING is a record on its way to the group's dead-letter topic
// (KIP-1191, deadletter.go): not terminal until it is ARCHIVED.
type RecordState int8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archiving    RecordState = 3
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archiving:
		return "ARCHIVING"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// terminal is ACKNOWLEDGED or ARCHIVED: delivery is complete.
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// canBecome is RecordState.validateTransition: AVAILABLE is acquired or
// archived, ACQUIRED goes to any other state, the terminal states stay
// (ARCHIVING ends ARCHIVED by archive, not by a transition).
func (s RecordState) canBecome(to RecordState) bool {
	switch s {
	case Available:
		return to == Acquired || to == Archived
	case Acquired:
		return to == Available || to == Acknowledged || to == Archiving || to == Archived
	}
	return false
}

// AckType is an acknowledgement type of ShareFetch/ShareAcknowledge
// (AcknowledgeType.java); 0 is a gap, an offset with no record.
type AckType int8

const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4 // KIP-1222: extend the acquisition lock
)

// target is the state an acknowledgement moves an acquired record to
// (SharePartition.recordStateWithDlq): a REJECT is ARCHIVING when the
// group has a dead-letter topic (dlq); RENEW has none.
func (a AckType) target(dlq bool) RecordState {
	switch a {
	case AckAccept:
		return Acknowledged
	case AckRelease:
		return Available
	case AckReject:
		if dlq {
			return Archiving
		}
	}
	return Archived
}

// countOp is DeliveryCountOps: what a transition does to the delivery count.
type countOp int8

const (
	countKeep countOp = iota
	countUp
)

// inFlightState is InFlightState: the state of one offset, or of a whole
// batch while all its offsets share it.
type inFlightState struct {
	state         RecordState
	deliveryCount int
	member        string
	// lockUntil is when the acquisition lock expires; zero when there is
	// no lock (Kafka's acquisition lock timer task).
	lockUntil time.Time
	// rollback is the state before a transition not yet persisted
	// (hasOngoingStateTransition when set).
	rollback *inFlightState
	// final is set by archive(): the record can never be delivered again,
	// not even when the transition around it rolls back.
	final bool
}

func (s *inFlightState) pending() bool { return s.rollback != nil }

// tryUpdate is InFlightState.tryUpdateState: a record made available at
// the delivery count limit is archived instead, ARCHIVING when the group
// has a dead-letter topic (dlq); false when the transition is not allowed
// or another one is in progress.
func (s *inFlightState) tryUpdate(to RecordState, op countOp, maxDeliveries int, member string, dlq bool) bool {
	if s.pending() {
		return false
	}
	if to == Available && s.deliveryCount >= maxDeliveries {
		to = Archived
		if dlq {
			to = Archiving
		}
	}
	if !s.state.canBecome(to) {
		return false
	}
	s.state = to
	if to != Archived && op == countUp {
		s.deliveryCount++
	}
	s.member = member
	return true
}

// start is startStateTransition: tryUpdate, remembering what to roll
// back to until the new state is persisted.
func (s *inFlightState) start(to RecordState, op countOp, maxDeliveries int, member string, dlq bool) bool {
	before := *s
	before.rollback = nil
	if !s.tryUpdate(to, op, maxDeliveries, member, dlq) {
		return false
	}
	s.rollback = &before
	return true
}

// complete is completeStateTransition: a persisted transition drops its
// lock; one that failed goes back, or, if the lock expired meanwhile, to
// what the expiry would have made it: AVAILABLE, or ARCHIVED at the
// delivery count limit, as Kafka 4.4.0's jar does (ARCHIVED even when the
// group has a dead-letter topic: that record gets no dead letter).
func (s *inFlightState) complete(commit bool, now time.Time, maxDeliveries int) {
	if s.rollback == nil {
		return
	}
	if commit || s.final {
		s.lockUntil = time.Time{}
		s.rollback = nil
		return
	}
	s.deliveryCount = s.rollback.deliveryCount
	if !s.lockUntil.IsZero() && !now.Before(s.lockUntil) {
		s.state, s.member, s.lockUntil = Available, "", time.Time{}
		if s.deliveryCount >= maxDeliveries {
			s.state = Archived
		}
	} else {
		s.state, s.member = s.rollback.state, s.rollback.member
	}
	s.rollback = nil
}

// archive is InFlightState.archive: terminal whatever happens next.
func (s *inFlightState) archive() {
	s.final = true
	s.state, s.member, s.lockUntil = Archived, "", time.Time{}
}

// inFlightBatch is InFlightBatch: offsets first..last, with one state for
// all of them until a request touches part of the batch, then one per
// offset (offsets[i] is offset first+i).
type inFlightBatch struct {
	first, last int64
	batch       inFlightState
	offsets     []inFlightState
}

func (b *inFlightBatch) size() int64 { return b.last - b.first + 1 }

// explode is maybeInitializeOffsetStateUpdate: every offset gets the
// batch's state, a transition in progress included.
func (b *inFlightBatch) explode() {
	if b.offsets != nil {
		return
	}
	b.offsets = make([]inFlightState, b.size())
	for i := range b.offsets {
		b.offsets[i] = b.batch
	}
}

// at is the state of offset o of the batch.
func (b *inFlightBatch) at(o int64) *inFlightState {
	if b.offsets == nil {
		return &b.batch
	}
	return &b.offsets[o-b.first]
}
