package share

import (
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestPartitionRandom drives a share-partition with random fetches,
// acknowledgements of every kind, writes that fail, members leaving and
// locks expiring, over a log of batches of 1 to 5 records, and checks
// after each step what Kafka's SharePartition keeps true: the in-flight
// batches are ordered and cover every offset from the start offset to the
// end offset, the delivery-complete count is the terminal records at or
// after the start offset, an acquired record has a member and no other
// does, a record is not delivered past the delivery count limit, and once
// every member accepted or rejected all it got and the locks expired, the
// start offset reaches the end of the log: no record is lost.
func TestPartitionRandom(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		randomRun(t, seed)
	}
}

func randomRun(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	cfg := Config{MaxInFlightRecords: 5 + rng.Intn(40), DeliveryCountLimit: 2 + rng.Intn(4), LockDuration: 10 * time.Second}
	p, err := Load(cfg, Persisted{StartOffset: -1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log []LogBatch
	for next := int64(0); next < 300; {
		n := int64(1 + rng.Intn(5))
		log = append(log, LogBatch{Base: next, Last: next + n - 1})
		next += n
	}
	logEnd := log[len(log)-1].Last + 1
	members := []string{"A", "B", "C"}
	held := map[string][]AcquiredRecords{}
	pending := map[uint64]bool{}
	now := scriptStart
	persist := func(w *Write, e *Error) {
		if e != nil {
			t.Fatalf("seed %d: %v", seed, e)
		}
		if w == nil {
			return
		}
		if rng.Intn(4) == 0 {
			pending[w.ID] = true
			return
		}
		p.WriteDone(w.ID, rng.Intn(8) != 0, now)
	}
	fetch := func(member string, maxRecords int) {
		from := p.NextFetchOffset()
		var read []LogBatch
		for _, b := range log {
			if b.Last >= from && len(read) < 4 {
				read = append(read, b)
			}
		}
		if len(read) == 0 {
			return
		}
		req := Acquire{Member: member, MaxRecords: maxRecords, BatchSize: 1 + rng.Intn(6), FetchOffset: from, Batches: read}
		if rng.Intn(3) == 0 {
			req.Mode = RecordLimit
		}
		got, _ := p.Acquire(req, now)
		held[member] = append(held[member], got...)
	}
	for step := 0; step < 400; step++ {
		m := members[rng.Intn(len(members))]
		switch r := rng.Intn(10); {
		case r < 4:
			fetch(m, 1+rng.Intn(10))
		case r < 7 && len(held[m]) > 0:
			i := rng.Intn(len(held[m]))
			a := held[m][i]
			held[m] = append(held[m][:i], held[m][i+1:]...)
			ab := AckBatch{First: a.First, Last: a.Last}
			for o := a.First; o <= a.Last; o++ {
				ab.Types = append(ab.Types, AckType(1+rng.Intn(4)))
			}
			if rng.Intn(2) == 0 {
				ab.Types = ab.Types[:1]
			}
			// A lock may have expired meanwhile: Kafka refuses then.
			w, e := p.Acknowledge(m, []AckBatch{ab}, now)
			if e == nil {
				persist(w, nil)
			}
		case r == 7:
			delete(held, m)
			persist(p.ReleaseMember(m, now))
		case r == 8:
			for id := range pending {
				delete(pending, id)
				p.WriteDone(id, rng.Intn(3) != 0, now)
			}
		default:
			now = now.Add(time.Duration(1+rng.Intn(6)) * time.Second)
			for _, w := range p.Tick(now) {
				persist(w, nil)
			}
		}
		checkInvariants(t, seed, p)
	}
	// Drain: complete the writes, then accept everything delivered until
	// the start offset reaches the end of the log.
	for id := range pending {
		p.WriteDone(id, true, now)
	}
	for round := 0; round < 10000 && p.StartOffset() < logEnd; round++ {
		now = now.Add(11 * time.Second)
		for _, w := range p.Tick(now) {
			p.WriteDone(w.ID, true, now)
		}
		before := p.NextFetchOffset()
		var read []LogBatch
		for _, b := range log {
			if b.Last >= before && len(read) < 4 {
				read = append(read, b)
			}
		}
		got, _ := p.Acquire(Acquire{Member: "D", MaxRecords: 10, BatchSize: 10, FetchOffset: before, Batches: read}, now)
		for _, a := range got {
			w, e := p.Acknowledge("D", []AckBatch{{First: a.First, Last: a.Last, Types: []AckType{AckAccept}}}, now)
			if e != nil {
				t.Fatalf("seed %d: drain ack %d-%d: %v", seed, a.First, a.Last, e)
			}
			if w != nil {
				p.WriteDone(w.ID, true, now)
			}
		}
		checkInvariants(t, seed, p)
	}
	if p.StartOffset() != logEnd {
		t.Fatalf("seed %d: start offset %d after draining a log of %d records\n%s", seed, p.StartOffset(), logEnd, dumpP(p))
	}
}

func checkInvariants(t *testing.T, seed int64, p *Partition) {
	t.Helper()
	complete := 0
	prev := int64(-1)
	for i, b := range p.batches {
		if b.first > b.last || i > 0 && b.first != prev+1 {
			t.Fatalf("seed %d: batch %d-%d after %d", seed, b.first, b.last, prev)
		}
		prev = b.last
		for o := b.first; o <= b.last; o++ {
			s := b.at(o)
			if s.deliveryCount > p.cfg.DeliveryCountLimit {
				t.Fatalf("seed %d: offset %d delivered %d times, limit %d", seed, o, s.deliveryCount, p.cfg.DeliveryCountLimit)
			}
			if (s.state == Acquired) != (s.member != "") {
				t.Fatalf("seed %d: offset %d %s with member %q", seed, o, s.state, s.member)
			}
			if o >= p.start && s.state.terminal() {
				complete++
			}
		}
	}
	if len(p.batches) > 0 {
		if first := p.batches[0].first; first > p.start || prev != p.end {
			t.Fatalf("seed %d: batches %d-%d, start %d end %d", seed, first, prev, p.start, p.end)
		}
	}
	if complete != p.complete {
		t.Fatalf("seed %d: delivery-complete count %d, %d terminal records from %d", seed, p.complete, complete, p.start)
	}
}

func dumpP(p *Partition) string {
	h := &partitionHarness{p: p, out: &strings.Builder{}}
	h.dump()
	return h.out.String()
}
