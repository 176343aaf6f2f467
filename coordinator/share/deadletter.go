package share

// Dead-letter queues for share groups (KIP-1191), as Kafka 4.4's
// SharePartition does them when the group has a dead-letter topic
// (Config.DeadLetterQueue): a record rejected, or released or whose lock
// expired at the delivery count limit, goes ARCHIVING instead of
// ARCHIVED, persisted so; once that state is written the records are a
// DeadLetter for the caller to write to the dead-letter topic (Kafka's
// ShareGroupDLQManager.enqueue), and whether or not that worked, Archive
// makes them ARCHIVED and returns the Write that persists it
// (initiateDLQAndArchive). A share-partition loaded with ARCHIVING
// records resumes them (maybeResumeDlqArchiving).

// Cause is why records are dead-lettered (ShareGroupDLQManager's
// CLIENT_REJECT and DELIVERY_COUNT_EXCEEDED).
type Cause int8

const (
	CauseNone Cause = iota
	// CauseRejected is a REJECT acknowledgement.
	CauseRejected
	// CauseDeliveryCount is the delivery count limit reached.
	CauseDeliveryCount
)

// Message is the cause as the __dlq.errors.message header carries it.
func (c Cause) Message() string {
	switch c {
	case CauseRejected:
		return "Offset rejected by client."
	case CauseDeliveryCount:
		return "Offset delivery count exceeded the threshold."
	}
	return ""
}

// causeOf is why a record an acknowledgement of type t (release for a
// session's release or an expired lock) made state is dead-lettered.
func causeOf(t AckType, state RecordState) Cause {
	switch {
	case state != Archiving:
		return CauseNone
	case t == AckReject:
		return CauseRejected
	}
	return CauseDeliveryCount
}

// DeadLetter is offsets First..Last gone ARCHIVING, whose dead letters
// the caller writes (ShareGroupDLQRecordParameter).
type DeadLetter struct {
	First, Last   int64
	DeliveryCount int16
	Cause         Cause
}

// DeadLetters returns the dead letters to write since the last call: the
// records whose ARCHIVING state was written (WriteDone) or loaded.
func (p *Partition) DeadLetters() []DeadLetter {
	out := p.dead
	p.dead = nil
	return out
}

func (p *Partition) queueDeadLetters(changes []change) {
	for _, c := range changes {
		if c.sb.State == Archiving {
			p.dead = append(p.dead, DeadLetter{First: c.first, Last: c.last, DeliveryCount: c.sb.DeliveryCount, Cause: c.cause})
		}
	}
}

// resumeDeadLetter queues a loaded ARCHIVING batch again; its cause is
// guessed from its delivery count, as Kafka does.
func (p *Partition) resumeDeadLetter(sb StateBatch) {
	cause := CauseRejected
	if int(sb.DeliveryCount) >= p.cfg.DeliveryCountLimit {
		cause = CauseDeliveryCount
	}
	p.dead = append(p.dead, DeadLetter{First: sb.First, Last: sb.Last, DeliveryCount: sb.DeliveryCount, Cause: cause})
}

// Archive makes a dead letter's ARCHIVING records ARCHIVED for good,
// whether its dead letters were written or not, and returns the Write
// that persists it, which is not undone if it fails; nil when none of its
// records is ARCHIVING any more (the share-partition was loaded again).
func (p *Partition) Archive(dl DeadLetter) *Write {
	from := dl.First
	if i := p.floor(dl.First); i >= 0 && p.batches[i].last >= dl.First {
		from = p.batches[i].first
	}
	if !p.archiveRange(dl.First, dl.Last+1, p.between(from, dl.Last), Archiving, false) {
		return nil
	}
	p.complete += p.inFlightIn(dl.First, dl.Last)
	return p.newWrite([]change{{first: dl.First, last: dl.Last,
		sb: StateBatch{First: dl.First, Last: dl.Last, State: Archived, DeliveryCount: dl.DeliveryCount}}}, true)
}
