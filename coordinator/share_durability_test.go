package coordinator

import (
	"math/rand"
	"testing"
	"time"

	"github.com/strata-io/strata/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestSharePartitionSurvivesRestart drives a share-partition with random
// fetches, acknowledgements, members leaving and expiring locks, every
// write going through the share coordinator's machine (three updates per
// snapshot), and at random points restarts it, at a new leader epoch,
// from what the coordinator returns to ReadShareGroupState, as a broker
// restart or a leader change does. After each restart no record whose delivery was complete is
// delivered again and every record in flight that was not is delivered
// again (in flight or not fetched yet); at the end, after the members accepted everything, the start
// offset is at the end of the log.
func TestSharePartitionSurvivesRestart(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		durabilityRun(t, seed)
	}
}

func durabilityRun(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	cfg := share.Config{MaxInFlightRecords: 5 + rng.Intn(30), DeliveryCountLimit: 2 + rng.Intn(4), LockDuration: 10 * time.Second}
	coord := newShareStateShard(3, func([16]byte) int32 { return 1 })
	k := sharePartKey{group: "g", topicID: shareTestTopicID("t")}
	now := scriptStart
	var offset int64
	apply := func(recs []kv) {
		for _, r := range recs {
			offset++
			if err := coord.replay(offset, r.key, r.value); err != nil {
				t.Fatalf("seed %d: replay: %v", seed, err)
			}
		}
	}
	recs, serr := coord.initializeState(k, 0, -1, now)
	if serr != nil {
		t.Fatal(serr.msg)
	}
	apply(recs)
	leaderEpoch := int32(0)
	load := func() *share.Partition {
		// Every restart is a new leader epoch of the partition, as a
		// leader change is.
		recs, st, serr := coord.readState(k, leaderEpoch, now)
		leaderEpoch++
		if serr != nil {
			t.Fatalf("seed %d: read: %s", seed, serr.msg)
		}
		apply(recs)
		p, err := share.Load(cfg, *st, 0)
		if err != nil {
			t.Fatalf("seed %d: load: %v", seed, err)
		}
		return p
	}
	p := load()
	persist := func(w *share.Write) {
		if w == nil {
			return
		}
		recs, serr := coord.writeState(k, shareWrite{stateEpoch: w.StateEpoch, leaderEpoch: w.LeaderEpoch, startOffset: w.StartOffset,
			deliveryCompleteCount: w.DeliveryCompleteCount, batches: w.Batches}, now)
		if serr != nil {
			t.Fatalf("seed %d: write: %s", seed, serr.msg)
		}
		apply(recs)
		p.WriteDone(w.ID, true, now)
	}
	var log []share.LogBatch
	for next := int64(0); next < 200; {
		n := int64(1 + rng.Intn(5))
		log = append(log, share.LogBatch{Base: next, Last: next + n - 1})
		next += n
	}
	logEnd := log[len(log)-1].Last + 1
	read := func(from int64) []share.LogBatch {
		var out []share.LogBatch
		for _, b := range log {
			if b.Last >= from && len(out) < 4 {
				out = append(out, b)
			}
		}
		return out
	}
	held := map[string][]share.AcquiredRecords{}
	members := []string{"A", "B", "C"}
	for step := 0; step < 300; step++ {
		m := members[rng.Intn(len(members))]
		switch r := rng.Intn(10); {
		case r < 4:
			from := p.NextFetchOffset()
			got, _ := p.Acquire(share.Acquire{Member: m, MaxRecords: 1 + rng.Intn(8), BatchSize: 1 + rng.Intn(5), FetchOffset: from, Batches: read(from)}, now)
			held[m] = append(held[m], got...)
		case r < 7 && len(held[m]) > 0:
			a := held[m][0]
			held[m] = held[m][1:]
			ab := share.AckBatch{First: a.First, Last: a.Last}
			for o := a.First; o <= a.Last; o++ {
				ab.Types = append(ab.Types, share.AckType(1+rng.Intn(3)))
			}
			if w, err := p.Acknowledge(m, []share.AckBatch{ab}, now); err == nil {
				persist(w)
			} else if err.Err != kerr.InvalidRecordState && err.Err != kerr.InvalidRequest {
				t.Fatalf("seed %d: %v", seed, err)
			}
		case r == 7:
			delete(held, m)
			w, _ := p.ReleaseMember(m, now)
			persist(w)
		case r == 8:
			now = now.Add(time.Duration(1+rng.Intn(8)) * time.Second)
			for _, w := range p.Tick(now) {
				persist(w)
			}
		default:
			before := snapshotStates(p, logEnd)
			p = load()
			held = map[string][]share.AcquiredRecords{}
			after := snapshotStates(p, logEnd)
			for o := int64(0); o < logEnd; o++ {
				if before[o] == complete && after[o] != complete {
					t.Fatalf("seed %d step %d: offset %d complete before the restart, %v after", seed, step, o, after[o])
				}
				if before[o] != complete && after[o] == complete {
					t.Fatalf("seed %d step %d: offset %d %v before the restart, complete after", seed, step, o, before[o])
				}
			}
		}
	}
	for round := 0; round < 5000 && p.StartOffset() < logEnd; round++ {
		now = now.Add(11 * time.Second)
		for _, w := range p.Tick(now) {
			persist(w)
		}
		from := p.NextFetchOffset()
		got, _ := p.Acquire(share.Acquire{Member: "D", MaxRecords: 10, BatchSize: 10, FetchOffset: from, Batches: read(from)}, now)
		for _, a := range got {
			w, err := p.Acknowledge("D", []share.AckBatch{{First: a.First, Last: a.Last, Types: []share.AckType{share.AckAccept}}}, now)
			if err != nil {
				t.Fatalf("seed %d: drain: %v", seed, err)
			}
			persist(w)
		}
		if rng.Intn(20) == 0 {
			p = load()
		}
	}
	if p.StartOffset() != logEnd {
		t.Fatalf("seed %d: start offset %d after draining %d records", seed, p.StartOffset(), logEnd)
	}
}

type offsetFate int

const (
	notFetched offsetFate = iota
	inFlight              // acquired or available: to be delivered (again)
	complete              // acknowledged or archived, or before the start offset
)

func (f offsetFate) String() string {
	return [...]string{"not fetched", "in flight", "complete"}[f]
}

// snapshotStates is each offset's fate in the partition.
func snapshotStates(p *share.Partition, logEnd int64) []offsetFate {
	out := make([]offsetFate, logEnd)
	for o := int64(0); o < logEnd; o++ {
		switch {
		case o < p.StartOffset():
			out[o] = complete
		case o > p.EndOffset() || p.EndOffset() == p.StartOffset() && p.InFlight() == 0:
			out[o] = notFetched
		case p.Terminal(o):
			out[o] = complete
		default:
			out[o] = inFlight
		}
	}
	return out
}
