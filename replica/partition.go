package replica

import (
	"fmt"
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
// AppendAsFollower, which keeps the leader's, and TruncateTo, which cuts
// the log back to where it agrees with the leader.
type Log interface {
	Append(records []byte, leaderEpoch int32) (storage.AppendResult, error)
	AppendCoordinator(records []byte, leaderEpoch int32) (storage.AppendResult, error)
	AppendControl(producerID int64, epoch int16, commit bool, coordinatorEpoch, leaderEpoch int32) (int64, error)
	AppendAsFollower(records []byte) (storage.AppendResult, error)
	TruncateTo(offset int64) error
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

// followerState is what the leader knows of one follower, as Kafka's
// Replica: the log end offset of its last fetch and when it last caught up
// to the leader's log end offset.
type followerState struct {
	logEndOffset     int64
	lastCaughtUpTime time.Time
}

// Partition is this node's replica of one partition. Safe for concurrent use.
type Partition struct {
	log       Log
	epoch     EpochSource
	replicaID int32

	// leaderEnd is the end of the leader's last acknowledged-to-the-log
	// append, which the leader counts as its log end offset for the high
	// watermark; solo is true while the ISR is this replica alone, when the
	// high watermark follows each append without taking mu.
	leaderEnd atomic.Int64
	solo      atomic.Bool

	// mu guards isr and followers; hwCh is closed and replaced when the
	// high watermark moves, to wake acks=all appends.
	mu        sync.Mutex
	isr       []int32
	followers map[int32]*followerState
	hwCh      chan struct{}
}

// NewLeader makes this replica (replicaID) the partition's leader with the
// given in-sync followers, as Kafka's Partition.makeLeader, and moves the
// high watermark as far as the ISR allows: with no followers, to the log
// end offset.
func NewLeader(log Log, epoch EpochSource, replicaID int32, followers ...int32) (*Partition, error) {
	p := &Partition{log: log, epoch: epoch, replicaID: replicaID, followers: map[int32]*followerState{}, hwCh: make(chan struct{})}
	p.isr = append([]int32{replicaID}, followers...)
	now := time.Now()
	for _, f := range followers {
		p.followers[f] = &followerState{logEndOffset: log.HighWatermark(), lastCaughtUpTime: now}
	}
	p.solo.Store(len(followers) == 0)
	p.leaderEnd.Store(log.LogEndOffset())
	if err := p.maybeIncrementHW(); err != nil {
		return nil, fmt.Errorf("become leader: %w", err)
	}
	return p, nil
}

// AppendAsLeader appends a produce payload, stamped with the leader epoch,
// and returns once acks is met: at once for acks 0 and 1, once every
// in-sync replica holds it (the high watermark passed it) for acks=all,
// or kerr.RequestTimedOut after timeout, as Kafka's DelayedProduce.
func (p *Partition) AppendAsLeader(records []byte, acks int16, timeout time.Duration) (storage.AppendResult, error) {
	res, err := p.log.Append(records, p.epoch.LeaderEpoch())
	if err != nil || res.Duplicate {
		return res, err
	}
	return res, p.acknowledge(res.EndOffset, acks, timeout)
}

// AppendCoordinator appends a coordinator's payload (storage.Log.AppendCoordinator)
// as leader and returns once every in-sync replica holds it.
func (p *Partition) AppendCoordinator(records []byte, timeout time.Duration) (storage.AppendResult, error) {
	res, err := p.log.AppendCoordinator(records, p.epoch.LeaderEpoch())
	if err != nil || res.Duplicate {
		return res, err
	}
	return res, p.acknowledge(res.EndOffset, AcksAll, timeout)
}

// AppendControl writes a transaction marker as leader and returns its
// offset once every in-sync replica holds it.
func (p *Partition) AppendControl(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, timeout time.Duration) (int64, error) {
	off, err := p.log.AppendControl(producerID, epoch, commit, coordinatorEpoch, p.epoch.LeaderEpoch())
	if err != nil {
		return 0, err
	}
	return off, p.acknowledge(off+1, AcksAll, timeout)
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
	if err := p.maybeIncrementHW(); err != nil {
		return err
	}
	if acks != AcksAll {
		return nil
	}
	return p.waitHW(end, timeout)
}

// waitHW waits until the high watermark reaches end.
func (p *Partition) waitHW(end int64, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		p.mu.Lock()
		ch := p.hwCh
		p.mu.Unlock()
		if p.log.HighWatermark() >= end {
			return nil
		}
		select {
		case <-ch:
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
// of the in-sync replicas, as Kafka's Partition.maybeIncrementLeaderHW
// (which also waits for a caught-up replica about to join the ISR; here the
// ISR does not change).
func (p *Partition) maybeIncrementHW() error {
	p.mu.Lock()
	hw := p.leaderEnd.Load()
	for _, id := range p.isr {
		if f, ok := p.followers[id]; ok {
			hw = min(hw, f.logEndOffset)
		}
	}
	p.mu.Unlock()
	return p.advanceHW(hw)
}

// UpdateFollower records a follower's fetch at fetchOffset (its log end
// offset) and moves the high watermark, as Kafka's
// Partition.updateFollowerFetchState. A replica not among the followers
// is refused.
func (p *Partition) UpdateFollower(replicaID int32, fetchOffset int64, now time.Time) error {
	p.mu.Lock()
	f, ok := p.followers[replicaID]
	if !ok {
		p.mu.Unlock()
		return fmt.Errorf("replica %d is not a follower of this partition: %w", replicaID, kerr.UnknownServerError)
	}
	f.logEndOffset = fetchOffset
	if fetchOffset >= p.leaderEnd.Load() {
		f.lastCaughtUpTime = now
	}
	p.mu.Unlock()
	return p.maybeIncrementHW()
}

// LaggingFollowers returns the in-sync followers that have not caught up to
// the leader's log end offset within maxLag of now
// (replica.lag.time.max.ms), the ones Kafka's Partition.getOutOfSyncReplicas
// finds for shrinking the ISR.
func (p *Partition) LaggingFollowers(now time.Time, maxLag time.Duration) []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int32
	for _, id := range p.isr {
		if f, ok := p.followers[id]; ok && now.Sub(f.lastCaughtUpTime) > maxLag {
			out = append(out, id)
		}
	}
	return out
}

// ISR returns the in-sync replicas, the leader first.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int32(nil), p.isr...)
}

// HighWatermark is the offset below which every in-sync replica holds the log.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// NewFollower makes this replica (replicaID) a follower of the partition,
// as Kafka's Partition.makeFollower: it takes the leader's batches
// (AppendAsFollower) and high watermark.
func NewFollower(log Log, replicaID int32) *Partition {
	return &Partition{log: log, replicaID: replicaID, followers: map[int32]*followerState{}, hwCh: make(chan struct{})}
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
	res, err := p.log.AppendAsFollower(records)
	if err != nil {
		return res, err
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
