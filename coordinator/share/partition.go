package share

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config is what a share-partition is built with: Kafka's broker configs,
// or the group's overrides (share.delivery.count.limit,
// share.record.lock.duration.ms, share.partition.max.record.locks).
type Config struct {
	// MaxInFlightRecords is group.share.partition.max.record.locks: the
	// most records between the start and end offsets.
	MaxInFlightRecords int
	// DeliveryCountLimit is group.share.delivery.count.limit: a record
	// released, or whose lock expired, after this many deliveries is
	// archived.
	DeliveryCountLimit int
	// LockDuration is group.share.record.lock.duration.ms: how long an
	// acquired record is its member's.
	LockDuration time.Duration
	// DeadLetterQueue is SharePartition.isDLQEnabledForGroup: the group
	// has a dead-letter topic (errors.deadletterqueue.topic.name) and the
	// cluster supports it. A rejected record, or one released at the
	// delivery count limit, is then ARCHIVING until its dead letter is
	// written (deadletter.go), not ARCHIVED at once.
	DeadLetterQueue bool
}

// DefaultConfig is Kafka 4.4's defaults (ShareGroupConfig).
func DefaultConfig() Config {
	return Config{MaxInFlightRecords: 2000, DeliveryCountLimit: 5, LockDuration: 30 * time.Second}
}

// Error is a request the share-partition refused: Kafka's error code and
// message.
type Error struct {
	Err     *kerr.Error
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Err.Message, e.Message) }

func invalidState(msg string) *Error { return &Error{Err: kerr.InvalidRecordState, Message: msg} }

func invalidRequest(msg string) *Error { return &Error{Err: kerr.InvalidRequest, Message: msg} }

// StateBatch is a range of offsets with one state and delivery count, as
// __share_group_state and the share-state requests carry it.
type StateBatch struct {
	First, Last   int64
	State         RecordState
	DeliveryCount int16
}

// Persisted is a share-partition's state as ReadShareGroupState returns it.
type Persisted struct {
	StateEpoch int32
	// LeaderEpoch is the partition leader epoch the state was read with,
	// the share-partition leader's, which its writes carry.
	LeaderEpoch int32
	// StartOffset is -1 when the share-partition was initialized but has
	// never been written; Load then starts at the offset of
	// share.auto.offset.reset.
	StartOffset int64
	Batches     []StateBatch
}

// LogBatch is a record batch of the partition's log as a fetch read it.
// LogBatch is a record batch of the partition's log as a fetch read it;
// the producer fields matter to read_committed acquisition only.
type LogBatch struct {
	Base, Last    int64
	ProducerID    int64 // -1 without one
	Transactional bool
	// Abort is set for a control batch holding an ABORT marker.
	Abort bool
}

// AcquireMode is share.acquire.mode (KIP-1206).
type AcquireMode int8

const (
	// BatchOptimized acquires whole log batches, possibly more records
	// than asked for.
	BatchOptimized AcquireMode = 0
	// RecordLimit acquires at most the records asked for, splitting a
	// batch.
	RecordLimit AcquireMode = 1
)

// Acquire is one fetch's acquisition (SharePartition.acquire).
type Acquire struct {
	Member     string
	Mode       AcquireMode
	BatchSize  int // records per AcquiredRecords entry when splitting
	MaxRecords int
	// FetchOffset is where the log was read, NextFetchOffset when the
	// fetch was made; Batches are the log's batches read from it.
	FetchOffset int64
	Batches     []LogBatch
	// ReadCommitted is share.isolation.level=read_committed: the log was
	// read up to the last stable offset, and Aborted are the aborted
	// transactions the read returned, whose batches are archived instead
	// of delivered.
	ReadCommitted bool
	Aborted       []AbortedTxn
}

// AbortedTxn is an aborted transaction of a fetch response.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// AcquiredRecords is one AcquiredRecords entry of a ShareFetch response.
type AcquiredRecords struct {
	First, Last   int64
	DeliveryCount int16
}

// coalesce appends acquired to out, adjacent entries of the same delivery
// count joined (ShareFetchUtils.accumulateAcquiredRecords), as Kafka does
// with the offsets of an offset-tracked batch.
func coalesce(out, acquired []AcquiredRecords) []AcquiredRecords {
	for _, a := range acquired {
		if n := len(out); n > 0 && out[n-1].Last+1 == a.First && out[n-1].DeliveryCount == a.DeliveryCount {
			out[n-1].Last = a.Last
			continue
		}
		out = append(out, a)
	}
	return out
}

// Partition is Kafka's SharePartition as a pure state machine: the
// in-flight records of one share group on one topic partition between
// the share-partition start offset (SPSO) and end offset (SPEO). Every
// call takes the time; nothing runs by itself. A change that must be
// persisted is returned as a Write, which the caller sends to the share
// coordinator (WriteShareGroupState) and reports with WriteDone; until
// then the records it changed are neither acquired nor acknowledged again.
type Partition struct {
	cfg           Config
	throttleLimit int
	stateEpoch    int32
	leaderEpoch   int32
	start, end    int64
	batches       []*inFlightBatch // sorted by first offset, not overlapping
	findNext      bool
	// complete is deliveryCompleteCount: terminal records at or after the
	// start offset.
	complete int
	writes   map[uint64]*pendingWrite
	nextID   uint64
	// dead is the dead letters to write (DeadLetters).
	dead []DeadLetter
}

// Load builds a share-partition from its persisted state
// (maybeInitialize); resetOffset is where share.auto.offset.reset puts a
// share-partition never written. Offsets between persisted batches were
// delivered but not acknowledged when the state was written: they are
// loaded AVAILABLE, so they are delivered again.
func Load(cfg Config, st Persisted, resetOffset int64) (*Partition, error) {
	p := &Partition{
		cfg: cfg, stateEpoch: st.StateEpoch, leaderEpoch: st.LeaderEpoch, start: st.StartOffset,
		throttleLimit: max(2, (cfg.DeliveryCountLimit+1)/2), writes: map[uint64]*pendingWrite{},
	}
	if p.start == -1 {
		p.start = resetOffset
	}
	prev := p.start - 1
	for _, sb := range st.Batches {
		if sb.First < p.start {
			return nil, fmt.Errorf("state batch %d-%d is before the start offset %d", sb.First, sb.Last, p.start)
		}
		if sb.Last < sb.First || sb.First <= prev {
			return nil, fmt.Errorf("state batch %d-%d is not after %d", sb.First, sb.Last, prev)
		}
		if sb.State != Available && sb.State != Acknowledged && sb.State != Archiving && sb.State != Archived {
			return nil, fmt.Errorf("state batch %d-%d has state %d", sb.First, sb.Last, sb.State)
		}
		if sb.First > prev+1 {
			p.batches = append(p.batches, &inFlightBatch{first: prev + 1, last: sb.First - 1, batch: inFlightState{state: Available}})
		}
		p.batches = append(p.batches, &inFlightBatch{first: sb.First, last: sb.Last,
			batch: inFlightState{state: sb.State, deliveryCount: int(sb.DeliveryCount)}})
		if sb.State.terminal() {
			p.complete += int(sb.Last - sb.First + 1)
		}
		if sb.State == Archiving {
			p.resumeDeadLetter(sb)
		}
		prev = sb.Last
	}
	p.end = p.start
	if len(p.batches) > 0 {
		p.findNext = true
		p.end = p.batches[len(p.batches)-1].last
		p.advance()
	}
	return p, nil
}

// SetConfig applies changed group configs; the limits apply to what is
// acquired from now on.
func (p *Partition) SetConfig(cfg Config) {
	p.cfg = cfg
	p.throttleLimit = max(2, (cfg.DeliveryCountLimit+1)/2)
}

// StartOffset is the SPSO, EndOffset the SPEO.
func (p *Partition) StartOffset() int64 { return p.start }
func (p *Partition) EndOffset() int64   { return p.end }

// DeliveryCompleteCount is the terminal records at or after the SPSO.
func (p *Partition) DeliveryCompleteCount() int { return p.complete }

// StateEpoch and LeaderEpoch are the persisted state's.
func (p *Partition) StateEpoch() int32  { return p.stateEpoch }
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch }

// InFlight is the records from the SPSO to the SPEO, 0 when none is.
func (p *Partition) InFlight() int64 { return p.inFlight() }

// Terminal reports whether the delivery of offset o is complete (and
// persisted): before the SPSO, or acknowledged or archived.
func (p *Partition) Terminal(o int64) bool {
	if o < p.start {
		return true
	}
	i := p.floor(o)
	if i < 0 || p.batches[i].last < o {
		return false
	}
	s := p.batches[i].at(o)
	if s.pending() {
		return s.rollback.state.terminal()
	}
	return s.state.terminal()
}

func (p *Partition) inFlight() int64 {
	if len(p.batches) == 0 {
		return 0
	}
	return p.end - p.start + 1
}

// CanAcquire is canAcquireRecords: a fetch may acquire when records are
// available again inside the window, or the window is not full.
func (p *Partition) CanAcquire() bool {
	if p.NextFetchOffset() != p.end+1 {
		return true
	}
	return p.inFlight() < int64(p.cfg.MaxInFlightRecords)
}

// NextFetchOffset is where the next fetch reads the log: the first
// available in-flight record, else after the end offset.
func (p *Partition) NextFetchOffset() int64 {
	if len(p.batches) == 0 || p.start > p.batches[len(p.batches)-1].last {
		p.findNext = false
		return p.end
	}
	if !p.findNext {
		return p.end + 1
	}
	for _, b := range p.batches {
		if b.offsets == nil {
			if b.batch.state == Available && !b.batch.pending() {
				return b.first
			}
			continue
		}
		for i := range b.offsets {
			if s := &b.offsets[i]; s.state == Available && !s.pending() {
				return b.first + int64(i)
			}
		}
	}
	p.findNext = false
	return p.end + 1
}

// floor is the index of the last batch starting at or before o, or -1.
func (p *Partition) floor(o int64) int {
	return sort.Search(len(p.batches), func(i int) bool { return p.batches[i].first > o }) - 1
}

// between is the batches whose first offset is in [from, to].
func (p *Partition) between(from, to int64) []*inFlightBatch {
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].first >= from })
	j := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].first > to })
	if i >= j {
		return nil
	}
	return p.batches[i:j]
}

func (p *Partition) insert(b *inFlightBatch) {
	i := sort.Search(len(p.batches), func(i int) bool { return p.batches[i].first > b.first })
	p.batches = append(p.batches, nil)
	copy(p.batches[i+1:], p.batches[i:])
	p.batches[i] = b
}

// lock is the acquisition lock deadline of a record acquired now.
func (p *Partition) lock(now time.Time) time.Time { return now.Add(p.cfg.LockDuration) }

// Acquire acquires the records a fetch read for its member: new records
// after the end offset, and in-flight ones available again (released or
// whose lock expired), each delivery counted, within the in-flight window.
func (p *Partition) Acquire(req Acquire, now time.Time) ([]AcquiredRecords, int) {
	if req.MaxRecords <= 0 || len(req.Batches) == 0 {
		return nil, 0
	}
	lastBatch := req.Batches[len(req.Batches)-1]
	if lastBatch.Last < p.start {
		return nil, 0
	}
	lastToAcquire, maxToAcquire := p.acquireLimits(req.FetchOffset, req.MaxRecords, lastBatch.Last)
	if maxToAcquire <= 0 {
		return nil, 0
	}
	recordLimit := req.Mode == RecordLimit
	firstBase := req.Batches[0].Base
	base := firstBase
	p.archiveStale(req.FetchOffset, base)
	if i := p.floor(base); i < 0 {
		if base < p.start {
			base = p.start
		}
	} else if p.batches[i].last >= base {
		base = p.batches[i].first
	}
	sub := p.between(min(firstBase, base), lastToAcquire)
	if len(sub) == 0 {
		got, n := p.acquireNew(req, recordLimit, base, lastToAcquire, maxToAcquire, now)
		return p.dropAborted(req, got, n)
	}
	var result []AcquiredRecords
	count := 0
	for _, b := range sub {
		if count >= maxToAcquire {
			break
		}
		fullMatch := b.first >= firstBase && b.last <= lastToAcquire
		subsetLimit := recordLimit && b.size() > int64(maxToAcquire-count)
		throttle := p.shouldThrottle(b, firstBase, lastToAcquire)
		if throttle && count > 0 {
			maxToAcquire = 0
			break
		}
		if !fullMatch || b.offsets != nil || subsetLimit || throttle {
			if b.offsets == nil {
				if b.batch.state != Available || b.batch.pending() {
					continue
				}
				b.explode()
			}
			n := p.acquireOffsets(req.Member, recordLimit, maxToAcquire-count, firstBase, lastToAcquire, b, &result, now)
			count += n
			if throttle && n > 0 {
				maxToAcquire = 0
				break
			}
			continue
		}
		if b.batch.state != Available || b.batch.pending() {
			continue
		}
		if !b.batch.tryUpdate(Acquired, countUp, p.cfg.DeliveryCountLimit, req.Member, p.cfg.DeadLetterQueue) || b.batch.state != Acquired {
			continue
		}
		b.batch.lockUntil = p.lock(now)
		result = append(result, AcquiredRecords{First: b.first, Last: b.last, DeliveryCount: int16(b.batch.deliveryCount)})
		count += int(b.size())
	}
	if last := sub[len(sub)-1].last; count < maxToAcquire && last < lastToAcquire {
		more, n := p.acquireNew(req, recordLimit, last+1, lastToAcquire, maxToAcquire-count, now)
		result = append(result, more...)
		count += n
	}
	if len(result) > 0 {
		return p.dropAborted(req, result, count)
	}
	return result, count
}

// acquireLimits is lastOffsetAndMaxRecordsToAcquire: the window caps what
// is acquired, except records available again inside it.
func (p *Partition) acquireLimits(fetchOffset int64, maxRecords int, last int64) (int64, int) {
	n := min(int64(maxRecords), int64(p.cfg.MaxInFlightRecords)-p.inFlight())
	if n <= 0 && fetchOffset <= p.end {
		return min(last, p.end), int(min(int64(maxRecords), p.end-fetchOffset+1))
	}
	return last, int(n)
}

// shouldThrottle: an available batch, or an available offset of the
// range, delivered throttleLimit times or more is delivered apart.
func (p *Partition) shouldThrottle(b *inFlightBatch, first, last int64) bool {
	if b.offsets == nil {
		return b.batch.state == Available && !b.batch.pending() && b.batch.deliveryCount >= p.throttleLimit
	}
	most := 0
	for i := range b.offsets {
		o, s := b.first+int64(i), &b.offsets[i]
		if o >= first && o <= last && s.state == Available && !s.pending() {
			most = max(most, s.deliveryCount)
		}
	}
	return most >= p.throttleLimit
}

// acquireOffsets is acquireSubsetBatchRecords: the available offsets of
// an offset-tracked batch within [first, last], a record on its last
// delivery alone, fewer at once the more often they were delivered;
// adjacent ones of the same delivery count make one entry.
func (p *Partition) acquireOffsets(member string, recordLimit bool, maxRecords int, first, last int64, b *inFlightBatch, result *[]AcquiredRecords, now time.Time) int {
	var got []AcquiredRecords
	defer func() { *result = coalesce(*result, got) }()
	count := 0
	throttledMax := -1
	limit := p.cfg.DeliveryCountLimit
	for i := range b.offsets {
		o, s := b.first+int64(i), &b.offsets[i]
		if o < first {
			continue
		}
		if o > last {
			break
		}
		if s.state != Available || s.pending() {
			continue
		}
		if limit > 2 && s.deliveryCount == limit-1 && count > 0 {
			break
		}
		if s.deliveryCount >= p.throttleLimit && throttledMax < 0 {
			throttledMax = max(1, len(b.offsets)>>(s.deliveryCount-p.throttleLimit+1))
		}
		if !s.tryUpdate(Acquired, countUp, limit, member, p.cfg.DeadLetterQueue) || s.state != Acquired {
			continue
		}
		s.lockUntil = p.lock(now)
		got = append(got, AcquiredRecords{First: o, Last: o, DeliveryCount: int16(s.deliveryCount)})
		count++
		if s.deliveryCount == limit && limit > 2 {
			break
		}
		if recordLimit && count == maxRecords {
			break
		}
		if throttledMax > 0 && count == throttledMax {
			break
		}
	}
	return count
}

// acquireNew is acquireNewBatchRecords: records not in flight yet, from
// first to at most last, split into entries of BatchSize at log batch
// boundaries.
func (p *Partition) acquireNew(req Acquire, recordLimit bool, first, last int64, maxRecords int, now time.Time) ([]AcquiredRecords, int) {
	if len(p.batches) == 0 && p.end > first {
		first = p.end
	}
	if int64(maxRecords) < last-first+1 {
		last = lastOfBatchWith(req.Batches, first+int64(maxRecords)-1)
	}
	acquired := p.newBatches(req, recordLimit, maxRecords, first, last, now)
	if len(p.batches) > 0 && p.batches[0].first == first {
		p.start = first
	}
	if last > p.end {
		p.end = last
	}
	if recordLimit {
		last = acquired[0].Last
	}
	return acquired, int(last - first + 1)
}

// lastOfBatchWith is lastOffsetFromBatchWithRequestOffset: the last
// offset of the log batch holding o, or o.
func lastOfBatchWith(batches []LogBatch, o int64) int64 {
	var prev *LogBatch
	for i := range batches {
		if o < batches[i].Base {
			break
		}
		prev = &batches[i]
	}
	if prev != nil && o <= prev.Last {
		return prev.Last
	}
	return o
}

// newBatches is createBatches and addBatches.
func (p *Partition) newBatches(req Acquire, recordLimit bool, maxRecords int, first, last int64, now time.Time) []AcquiredRecords {
	var result []AcquiredRecords
	cur := first
	if !recordLimit && last-first+1 > int64(req.BatchSize) && req.BatchSize > 0 {
		for _, lb := range req.Batches {
			if lb.Base > last {
				break
			}
			if lb.Base-cur >= int64(req.BatchSize) {
				result = append(result, AcquiredRecords{First: cur, Last: lb.Base - 1, DeliveryCount: 1})
				cur = lb.Base
			}
		}
	}
	result = append(result, AcquiredRecords{First: cur, Last: last, DeliveryCount: 1})
	if recordLimit && last-cur+1 > int64(maxRecords) {
		b := &inFlightBatch{first: cur, last: last, batch: inFlightState{state: Acquired, deliveryCount: 1, member: req.Member}}
		b.offsets = make([]inFlightState, b.size())
		lockedTo := cur + int64(maxRecords) - 1
		for i := range b.offsets {
			if cur+int64(i) <= lockedTo {
				b.offsets[i] = inFlightState{state: Acquired, deliveryCount: 1, member: req.Member, lockUntil: p.lock(now)}
			}
		}
		p.findNext = true
		p.insert(b)
		return []AcquiredRecords{{First: cur, Last: lockedTo, DeliveryCount: 1}}
	}
	for _, a := range result {
		p.insert(&inFlightBatch{first: a.First, last: a.Last,
			batch: inFlightState{state: Acquired, deliveryCount: 1, member: req.Member, lockUntil: p.lock(now)}})
	}
	return result
}

// archiveStale is maybeArchiveStaleBatches: available batches between the
// fetch offset and the first batch the log returned were compacted away;
// they are archived so the start offset can move past them.
func (p *Partition) archiveStale(fetchOffset, base int64) {
	if len(p.batches) == 0 || fetchOffset >= base {
		return
	}
	from := fetchOffset
	if i := p.floor(fetchOffset); i >= 0 && p.batches[i].last >= fetchOffset {
		from = p.batches[i].first
	}
	if p.archiveRange(fetchOffset, base, p.between(from, base-1), Available, true) {
		p.findNext = true
	}
}

// archiveRange is archiveRecords: the records in state from of [first,
// end) are archived for good.
func (p *Partition) archiveRange(first, end int64, batches []*inFlightBatch, from RecordState, count bool) bool {
	any := false
	for _, b := range batches {
		if b.first >= end {
			break
		}
		if b.first >= first && b.last <= end-1 && b.offsets == nil {
			if b.batch.state == from {
				b.batch.archive()
				if count {
					p.complete += int(b.size())
				}
				any = true
			}
			continue
		}
		if b.offsets == nil {
			if b.batch.state != from {
				continue
			}
			b.explode()
		}
		for i := range b.offsets {
			o, s := b.first+int64(i), &b.offsets[i]
			if o < first || s.state != from {
				continue
			}
			if o > end-1 {
				break
			}
			s.archive()
			if count {
				p.complete++
			}
			any = true
		}
	}
	return any
}
