package replica

import (
	"slices"
	"time"
)

// ISR changes. The leader decides them, as Kafka's Partition.maybeShrinkIsr
// and maybeExpandIsr, and the controller commits them (AlterPartition); a
// change is in flight from its proposal until the image carrying it comes
// back (UpdateLeadership) or the proposal fails (ISRChangeFailed), and no
// other is proposed meanwhile, as Kafka's PendingShrinkIsr and
// PendingExpandIsr. Until then min.insync.replicas counts the image's ISR,
// and the high watermark also waits for the replicas the change adds
// (Kafka's maximal ISR), so that a replica joining the ISR holds every
// record below it.

// ISRChange is an ISR this leader proposes, with the leader epoch and
// partition epoch it was decided at, which the controller checks.
type ISRChange struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// LaggingFollowers returns the in-sync followers that have not caught up to
// the leader's log end offset within maxLag of now
// (replica.lag.time.max.ms), the ones Kafka's Partition.getOutOfSyncReplicas
// finds for shrinking the ISR.
func (p *Partition) LaggingFollowers(now time.Time, maxLag time.Duration) []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.laggingLocked(now, maxLag)
}

func (p *Partition) laggingLocked(now time.Time, maxLag time.Duration) []int32 {
	var out []int32
	for _, id := range p.isr {
		if f, ok := p.followers[id]; ok && now.Sub(f.lastCaughtUpTime) > maxLag {
			out = append(out, id)
		}
	}
	return out
}

// ShrinkISR proposes the ISR without the followers lagging more than
// maxLag, as Kafka's maybeShrinkIsr; ok is false when none lags or a
// change is in flight.
func (p *Partition) ShrinkISR(now time.Time, maxLag time.Duration) (ISRChange, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maximal != nil || p.epoch == nil {
		return ISRChange{}, false
	}
	lagging := p.laggingLocked(now, maxLag)
	if len(lagging) == 0 {
		return ISRChange{}, false
	}
	isr := slices.DeleteFunc(slices.Clone(p.isr), func(id int32) bool { return slices.Contains(lagging, id) })
	return p.proposeLocked(isr), true
}

// ExpandISR proposes the ISR with the followers that caught up, as Kafka's
// maybeExpandIsr and isFollowerInSync: a replica outside the ISR whose log
// end offset reached the high watermark and the start of this leader's
// epoch. ok is false when none did or a change is in flight.
func (p *Partition) ExpandISR() (ISRChange, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maximal != nil || p.epoch == nil {
		return ISRChange{}, false
	}
	hw := p.log.HighWatermark()
	var isr []int32 // allocated only when a follower caught up: this runs on every follower fetch
	for _, id := range p.replicas {
		f, ok := p.followers[id]
		if ok && !slices.Contains(p.isr, id) && f.logEndOffset >= hw && f.logEndOffset >= p.epochStart && p.isrEligible(id) {
			if isr == nil {
				isr = slices.Clone(p.isr)
			}
			isr = append(isr, id)
		}
	}
	if isr == nil {
		return ISRChange{}, false
	}
	return p.proposeLocked(isr), true
}

// isrEligible is Kafka's isReplicaIsrEligible: a fenced broker's replica,
// whose last fetch may still count as caught up after it stopped, neither
// joins the ISR nor holds the high watermark back as one about to join.
func (p *Partition) isrEligible(id int32) bool { return p.eligible == nil || p.eligible(id) }

// proposeLocked marks a change in flight: the maximal ISR is the ISR and
// the replicas isr adds. Caller holds mu.
func (p *Partition) proposeLocked(isr []int32) ISRChange {
	p.maximal = slices.Clone(p.isr)
	for _, id := range isr {
		if !slices.Contains(p.maximal, id) {
			p.maximal = append(p.maximal, id)
		}
	}
	return ISRChange{LeaderEpoch: p.epoch.LeaderEpoch(), PartitionEpoch: p.partitionEpoch, ISR: isr}
}

// ISRChangeFailed ends the change in flight the controller refused or did
// not answer, so the next check proposes again.
func (p *Partition) ISRChangeFailed() {
	p.mu.Lock()
	p.maximal = nil
	p.mu.Unlock()
}

// FollowerView is what the leader knows of one in-sync follower, as the
// ReplicaView Kafka's findPreferredReadReplica gives a ReplicaSelector.
type FollowerView struct {
	ID             int32
	LogEndOffset   int64
	LastCaughtUpAt time.Time
}

// ReadableFollowers are the in-sync followers whose last fetch holds
// offset (log start offset <= offset <= log end offset), the ones Kafka's
// findPreferredReadReplica lets a consumer read offset from: a follower
// out of the ISR may lag behind without bound.
func (p *Partition) ReadableFollowers(offset int64) []FollowerView {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []FollowerView
	for _, id := range p.isr {
		f, ok := p.followers[id]
		if ok && f.logEndOffset >= offset && f.logStartOffset <= offset {
			out = append(out, FollowerView{ID: id, LogEndOffset: f.logEndOffset, LastCaughtUpAt: f.lastCaughtUpTime})
		}
	}
	return out
}
