package replica

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage"
)

// Log is what a replica needs of a partition's log; *storage.Log is one.
// Appends leave the high watermark where it is: the Partition moves it. A
// leader appends with Append, AppendCoordinator and AppendControl, which
// give batches their offsets and its epoch; a follower with
// AppendAsFollower, which keeps the leader's, TruncateTo, which cuts the
// log back to where it agrees with the leader, and
// TruncateFullyAndStartAt, which starts it again at the leader's log start.
type Log interface {
	Append(records []byte, leaderEpoch int32) (storage.AppendResult, error)
	AppendCoordinator(records []byte, leaderEpoch int32) (storage.AppendResult, error)
	AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch, leaderEpoch int32, tv int8) (int64, error)
	AppendAsFollower(records []byte) (storage.AppendResult, error)
	TruncateTo(offset int64) error
	TruncateFullyAndStartAt(offset int64) error
	LogEndOffset() int64
	HighWatermark() int64
	AdvanceHighWatermark(offset int64) error
}

var (
	_ Log         = (*storage.Log)(nil)
	_ EpochSource = (*storage.Partition)(nil)
)

// Acks are the values of a produce request's acks: none, the leader's
// log, or every in-sync replica.
const (
	AcksNone   int16 = 0
	AcksLeader int16 = 1
	AcksAll    int16 = -1
)

// EpochSource gives the partition's current leader epoch, stamped on the
// batches the leader appends; *storage.Partition is one.
type EpochSource interface {
	LeaderEpoch() int32
}

// Leadership is what the metadata image says of a partition this node
// leads (Kafka's PartitionRegistration): its assigned replicas, its
// in-sync replicas and the partition epoch of that ISR, which an ISR
// change names (AlterPartition).
type Leadership struct {
	Replicas       []int32
	ISR            []int32
	PartitionEpoch int32
}

// followerState is what the leader knows of one follower, as Kafka's
// Replica: the log start and end offsets of its last fetch (-1 before its
// first under this leader), when it last caught up to the leader's log end offset, and
// the leader's log end offset and the time at its previous fetch, which
// count as caught up when the follower reaches that offset (Kafka's
// lastFetchLeaderLogEndOffset).
type followerState struct {
	logStartOffset   int64
	logEndOffset     int64
	lastCaughtUpTime time.Time
	lastFetchLeader  int64
	lastFetchTime    time.Time
}

// Partition is this node's replica of one partition. Safe for concurrent use.
type Partition struct {
	log       Log
	epoch     EpochSource
	replicaID int32
	// minISR is min.insync.replicas of the partition's topic; nil on a
	// single node, where the ISR is this replica whatever it says.
	minISR func() int
	// maxLag and now are replica.lag.time.max.ms and the clock: a follower
	// outside the ISR that caught up within maxLag holds the high
	// watermark back until it joins; 0 (one node, tests) for none.
	maxLag time.Duration
	now    func() time.Time
	// eligible is whether a broker's replica may join the ISR; nil: all.
	eligible func(id int32) bool

	// leaderEnd is the end of the leader's last acknowledged-to-the-log
	// append, which the leader counts as its log end offset for the high
	// watermark; solo is true while the partition has no other replica,
	// when the high watermark follows each append without taking mu.
	// isrSize is len(isr), read by appends without mu.
	leaderEnd atomic.Int64
	solo      atomic.Bool
	isrSize   atomic.Int32
	rf        atomic.Int32 // len(replicas)

	// mu guards the fields below; hwCh is closed and replaced when the
	// high watermark moves, to wake acks=all appends, and endCh when the
	// leader's log end offset moves, to wake followers' fetches.
	mu             sync.Mutex
	isr            []int32
	replicas       []int32
	partitionEpoch int32
	epochStart     int64 // the log end offset when this leader epoch began
	// maximal is, while an ISR change is proposed and not yet in the image,
	// the ISR and the replicas it adds (Kafka's maximalIsr): the high
	// watermark waits for them too, so a replica that joins has every
	// record below it. nil when no change is in flight.
	maximal    []int32
	followers  map[int32]*followerState
	hwCh       chan struct{}
	endCh      chan struct{}
	resigned   chan struct{} // closed when this replica stops leading
	resignOnce sync.Once
}

// NewLeader makes this replica (replicaID) the partition's leader with the
// given in-sync followers, as Kafka's Partition.makeLeader, and moves the
// high watermark as far as the ISR allows: with no followers, to the log
// end offset.
func NewLeader(log Log, epoch EpochSource, replicaID int32, followers ...int32) (*Partition, error) {
	all := append([]int32{replicaID}, followers...)
	return NewLeaderOf(log, epoch, replicaID, Leadership{Replicas: all, ISR: all}, nil)
}

// NewLeaderOf makes this replica the partition's leader as the image has
// it, as Kafka's Partition.makeLeader: every follower's state is reset (its
// log end offset unknown until it fetches, caught up now if it is in the
// ISR), and the high watermark moves as far as the ISR allows. minISR is
// the topic's min.insync.replicas, nil for none.
func NewLeaderOf(log Log, epoch EpochSource, replicaID int32, l Leadership, minISR func() int) (*Partition, error) {
	p := &Partition{log: log, epoch: epoch, replicaID: replicaID, minISR: minISR, followers: map[int32]*followerState{},
		hwCh: make(chan struct{}), endCh: make(chan struct{}), resigned: make(chan struct{})}
	p.leaderEnd.Store(log.LogEndOffset())
	p.epochStart = log.LogEndOffset()
	p.setLeadership(l, time.Now())
	if err := p.maybeIncrementHW(); err != nil {
		return nil, fmt.Errorf("become leader: %w", err)
	}
	return p, nil
}

// LeadAgain makes this leader the leader of a new leader epoch, as
// Kafka's makeLeader on a partition it already leads: the epoch starts at
// the log end offset and every follower's state starts over, while the
// appends waiting for the ISR keep waiting.
func (p *Partition) LeadAgain(l Leadership) error {
	p.mu.Lock()
	p.epochStart = p.log.LogEndOffset()
	p.followers = map[int32]*followerState{}
	p.maximal = nil
	p.setLeadership(l, time.Now())
	p.mu.Unlock()
	return p.maybeIncrementHW()
}

// Resign ends this replica's leadership: appends waiting for the ISR are
// answered NOT_LEADER_OR_FOLLOWER, as Kafka completes its delayed
// produces when the partition stops being led here.
func (p *Partition) Resign() {
	if p.resigned != nil {
		p.resignOnce.Do(func() { close(p.resigned) })
	}
}

// setLeadership takes the image's replicas and ISR; followers new to the
// replicas start unknown, caught up now if in the ISR. Caller holds mu or
// owns p.
func (p *Partition) setLeadership(l Leadership, now time.Time) {
	p.replicas = slices.Clone(l.Replicas)
	p.isr = slices.Clone(l.ISR)
	if !slices.Contains(p.isr, p.replicaID) {
		p.isr = append([]int32{p.replicaID}, p.isr...)
	}
	p.partitionEpoch = l.PartitionEpoch
	for _, id := range l.Replicas {
		if id == p.replicaID {
			continue
		}
		if _, ok := p.followers[id]; !ok {
			f := &followerState{logStartOffset: -1, logEndOffset: -1, lastFetchLeader: -1}
			if slices.Contains(p.isr, id) {
				f.lastCaughtUpTime = now
			}
			p.followers[id] = f
		}
	}
	for id := range p.followers {
		if !slices.Contains(p.replicas, id) {
			delete(p.followers, id)
		}
	}
	p.isrSize.Store(int32(len(p.isr)))
	p.rf.Store(int32(len(p.followers) + 1))
	p.solo.Store(len(p.followers) == 0)
}

// UpdateLeadership applies a new image of the partition this replica
// already leads at the same leader epoch: an ISR change committed (this
// leader's AlterPartition, or the controller's) or new replicas. An image
// older than the one applied is ignored.
func (p *Partition) UpdateLeadership(l Leadership) error {
	p.mu.Lock()
	if l.PartitionEpoch < p.partitionEpoch {
		p.mu.Unlock()
		return nil
	}
	p.maximal = nil
	p.setLeadership(l, time.Now())
	p.mu.Unlock()
	return p.maybeIncrementHW()
}

// AppendAsLeader appends a produce payload, stamped with the leader epoch,
// and returns once acks is met: at once for acks 0 and 1, once every
// in-sync replica holds it (the high watermark passed it) for acks=all,
// or kerr.RequestTimedOut after timeout, as Kafka's DelayedProduce.
// acks=all with fewer in-sync replicas than min.insync.replicas is
// NOT_ENOUGH_REPLICAS, and nothing is written, as Kafka's
// appendRecordsToLeader.
func (p *Partition) AppendAsLeader(records []byte, acks int16, timeout time.Duration) (storage.AppendResult, error) {
	if acks == AcksAll {
		if err := p.checkMinISR(); err != nil {
			return storage.AppendResult{}, err
		}
	}
	res, err := p.log.Append(records, p.epoch.LeaderEpoch())
	if err != nil {
		return res, err
	}
	if res.Duplicate {
		if acks != AcksAll {
			return res, nil
		}
		// A retried batch the log already holds: its acks=all answer waits
		// for the original to be replicated, as Kafka's DelayedProduce
		// waits for the duplicate's original offsets.
		h := batch.DecodeHeader(records)
		return res, p.waitHW(res.BaseOffset+int64(h.LastOffsetDelta)+1, timeout)
	}
	return res, p.acknowledge(res.EndOffset, acks, timeout)
}

// AppendCoordinator appends a coordinator's payload (storage.Log.AppendCoordinator)
// as leader and returns once every in-sync replica holds it, as an
// acks=all produce.
func (p *Partition) AppendCoordinator(records []byte, timeout time.Duration) (storage.AppendResult, error) {
	if err := p.checkMinISR(); err != nil {
		return storage.AppendResult{}, err
	}
	res, err := p.log.AppendCoordinator(records, p.epoch.LeaderEpoch())
	if err != nil || res.Duplicate {
		return res, err
	}
	return res, p.acknowledge(res.EndOffset, AcksAll, timeout)
}

// AppendControl writes a transaction marker as leader and returns its
// offset once every in-sync replica holds it: AppendMarker at transaction
// version 0.
func (p *Partition) AppendControl(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, timeout time.Duration) (int64, error) {
	return p.AppendMarker(producerID, epoch, commit, coordinatorEpoch, 0, timeout)
}

// AppendMarker writes a transaction marker of a transaction that ran at
// transaction version tv (storage.Log.AppendMarker) as leader and returns
// its offset once every in-sync replica holds it.
func (p *Partition) AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, tv int8, timeout time.Duration) (int64, error) {
	if err := p.checkMinISR(); err != nil {
		return 0, err
	}
	off, err := p.log.AppendMarker(producerID, epoch, commit, coordinatorEpoch, p.epoch.LeaderEpoch(), tv)
	if err != nil {
		return 0, err
	}
	return off, p.acknowledge(off+1, AcksAll, timeout)
}

// effectiveMinISR is min.insync.replicas capped at the replication
// factor, as Kafka's effectiveMinIsr; 0 when none applies.
func (p *Partition) effectiveMinISR() int {
	if p.minISR == nil {
		return 0
	}
	return min(p.minISR(), int(p.rf.Load()))
}

// checkMinISR refuses an acks=all write while the ISR is smaller than
// min.insync.replicas.
func (p *Partition) checkMinISR() error {
	if n, want := int(p.isrSize.Load()), p.effectiveMinISR(); n < want {
		return fmt.Errorf("the in-sync replicas %d are fewer than min.insync.replicas %d: %w", n, want, kerr.NotEnoughReplicas)
	}
	return nil
}

// acknowledge records that the leader's log holds everything below end,
// moves the high watermark and, for acks=all, waits until it reaches end.
func (p *Partition) acknowledge(end int64, acks int16, timeout time.Duration) error {
	for {
		cur := p.leaderEnd.Load()
		if end <= cur || p.leaderEnd.CompareAndSwap(cur, end) {
			break
		}
	}
	if p.solo.Load() {
		// The ISR is this replica: the high watermark is the end of this
		// append, as Kafka's maybeIncrementLeaderHW with one replica.
		return p.advanceHW(end)
	}
	p.mu.Lock()
	close(p.endCh)
	p.endCh = make(chan struct{})
	p.mu.Unlock()
	if err := p.maybeIncrementHW(); err != nil {
		return err
	}
	if acks != AcksAll {
		return nil
	}
	return p.waitHW(end, timeout)
}

// waitHW waits until the high watermark reaches end, then answers as
// Kafka's checkEnoughReplicasReachOffset: NOT_ENOUGH_REPLICAS_AFTER_APPEND
// when the maximal ISR is below min.insync.replicas by then (the high
// watermark does not move while the ISR is, so only an ISR that shrank
// between the two gets there).
func (p *Partition) waitHW(end int64, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		p.mu.Lock()
		ch := p.hwCh
		p.mu.Unlock()
		if p.log.HighWatermark() >= end {
			if n, want := p.maximalSize(), p.effectiveMinISR(); n < want {
				return fmt.Errorf("offset %d replicated while the in-sync replicas %d are fewer than min.insync.replicas %d: %w",
					end, n, want, kerr.NotEnoughReplicasAfterAppend)
			}
			return nil
		}
		select {
		case <-ch:
		case <-p.resigned:
			return fmt.Errorf("offset %d not replicated before this replica stopped leading: %w", end, kerr.NotLeaderForPartition)
		case <-t.C:
			return fmt.Errorf("offset %d not replicated to the in-sync replicas in %v: %w", end, timeout, kerr.RequestTimedOut)
		}
	}
}

// advanceHW moves the log's high watermark to hw and wakes acks=all waiters.
func (p *Partition) advanceHW(hw int64) error {
	if p.solo.Load() {
		// No follower, so no acks=all waiter: Produce's path takes the log's
		// lock once.
		return p.log.AdvanceHighWatermark(hw)
	}
	before := p.log.HighWatermark()
	if err := p.log.AdvanceHighWatermark(hw); err != nil {
		return err
	}
	if hw > before {
		p.mu.Lock()
		close(p.hwCh)
		p.hwCh = make(chan struct{})
		p.mu.Unlock()
	}
	return nil
}

// maybeIncrementHW moves the high watermark to the smallest log end offset
// of the in-sync replicas, of those a proposed ISR change adds and of
// those caught up within replica.lag.time.max.ms, as Kafka's
// Partition.maybeIncrementLeaderHW over its maximal ISR; while the
// ISR is smaller than min.insync.replicas it does not move (KIP-966, as
// Kafka 4).
func (p *Partition) maybeIncrementHW() error {
	p.mu.Lock()
	if len(p.isr) < p.effectiveMinISR() {
		p.mu.Unlock()
		return nil
	}
	leaderEnd := p.leaderEnd.Load()
	hw := leaderEnd
	isr := p.isr
	if p.maximal != nil {
		isr = p.maximal
	}
	var now time.Time
	if p.maxLag > 0 {
		now = p.now()
	}
	for id, f := range p.followers {
		// A follower about to join the ISR counts too, as Kafka's
		// shouldWaitForReplicaToJoinIsr: else, under steady appends, its
		// log end offset might never reach the high watermark.
		joining := p.maxLag > 0 && f.logEndOffset >= 0 &&
			(f.logEndOffset == leaderEnd || now.Sub(f.lastCaughtUpTime) <= p.maxLag) && p.isrEligible(id)
		if joining || slices.Contains(isr, id) {
			hw = min(hw, f.logEndOffset)
		}
	}
	p.mu.Unlock()
	if hw < 0 {
		return nil
	}
	return p.advanceHW(hw)
}

// UpdateFollower records a follower's fetch at fetchOffset (its log end
// offset) with its log start offset, and moves the high watermark, as Kafka's
// Partition.updateFollowerFetchState: the follower caught up now if it
// reached the leader's log end offset, or at its previous fetch if it
// reached the leader's log end offset of then. A replica not among the
// followers is refused NOT_LEADER_OR_FOLLOWER, as Kafka's
// followerReplicaOrThrow.
func (p *Partition) UpdateFollower(replicaID int32, fetchOffset, logStartOffset int64, now time.Time) error {
	p.mu.Lock()
	f, ok := p.followers[replicaID]
	if !ok {
		p.mu.Unlock()
		return fmt.Errorf("fetch from replica %d, not a follower of this partition: %w", replicaID, kerr.NotLeaderForPartition)
	}
	leaderEnd := p.leaderEnd.Load()
	switch {
	case fetchOffset >= leaderEnd:
		f.lastCaughtUpTime = maxTime(f.lastCaughtUpTime, now)
	case f.lastFetchLeader >= 0 && fetchOffset >= f.lastFetchLeader:
		f.lastCaughtUpTime = maxTime(f.lastCaughtUpTime, f.lastFetchTime)
	}
	f.logStartOffset, f.logEndOffset = logStartOffset, fetchOffset
	f.lastFetchLeader, f.lastFetchTime = leaderEnd, now
	p.mu.Unlock()
	return p.maybeIncrementHW()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// maximalSize is the number of replicas in the maximal ISR.
func (p *Partition) maximalSize() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.maximal != nil {
		return len(p.maximal)
	}
	return len(p.isr)
}

// IsReplica reports whether replicaID is one of the followers this leader
// knows, the partition's replicas but itself.
func (p *Partition) IsReplica(replicaID int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.followers[replicaID]
	return ok
}

// AppendWait is a channel closed when the leader's log end offset next
// moves, for a follower's fetch waiting for records past the high
// watermark.
func (p *Partition) AppendWait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endCh
}

// ISR returns the in-sync replicas, the leader first.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.isr)
}

// HighWatermark is the offset below which every in-sync replica holds the log.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// NewFollower makes this replica (replicaID) a follower of the partition,
// as Kafka's Partition.makeFollower: it takes the leader's batches
// (AppendAsFollower) and high watermark.
func NewFollower(log Log, replicaID int32) *Partition {
	return &Partition{log: log, replicaID: replicaID, followers: map[int32]*followerState{},
		hwCh: make(chan struct{}), endCh: make(chan struct{})}
}

// AppendAsFollower appends batches fetched from the leader, keeping their
// offsets and leader epochs; each must start where the one before ended,
// the first at this replica's log end offset (else
// kerr.OffsetOutOfRange, and nothing is written). The leader's high
// watermark, which the fetch answer carries, becomes this replica's as far
// as its log holds it.
func (p *Partition) AppendAsFollower(records []byte, leaderHW int64) (storage.AppendResult, error) {
	if err := checkContiguous(records, p.log.LogEndOffset()); err != nil {
		return storage.AppendResult{}, err
	}
	var res storage.AppendResult
	if len(records) > 0 {
		var err error
		if res, err = p.log.AppendAsFollower(records); err != nil {
			return res, err
		}
	}
	return res, p.log.AdvanceHighWatermark(min(leaderHW, p.log.LogEndOffset()))
}

// TruncateTo cuts the follower's log back to offset (its end where it
// agrees with the leader), as Kafka's Partition.truncateTo.
func (p *Partition) TruncateTo(offset int64) error {
	if err := p.log.TruncateTo(offset); err != nil {
		return err
	}
	p.leaderEnd.Store(p.log.LogEndOffset())
	return nil
}

// TruncateFullyAndStartAt empties the follower's log and starts it again
// at offset, the leader's log start offset, when its log ends below it,
// as Kafka's Partition.truncateFullyAndStartAt.
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	p.leaderEnd.Store(p.log.LogEndOffset())
	return nil
}

// checkContiguous checks that records are whole batches, the first at
// offset from and each starting where the one before ended.
func checkContiguous(records []byte, from int64) error {
	next := from
	for rest := records; len(rest) > 0; {
		b, r, ok := batch.Next(rest)
		if !ok {
			return fmt.Errorf("follower append: a partial batch after offset %d: %w", next, kerr.CorruptMessage)
		}
		h := batch.DecodeHeader(b)
		if h.BaseOffset != next {
			return fmt.Errorf("follower append: a batch at offset %d where the log ends at %d: %w", h.BaseOffset, next, kerr.OffsetOutOfRange)
		}
		next, rest = h.NextOffset(), r
	}
	return nil
}
