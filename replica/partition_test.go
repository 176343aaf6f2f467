package replica

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fixedEpoch int32

func (e fixedEpoch) LeaderEpoch() int32 { return int32(e) }

// TestLeaderAlone checks a partition whose only replica is the leader: each
// append is acknowledged at once, whatever acks asks, and the high
// watermark is its end, stamped with the leader epoch.
func TestLeaderAlone(t *testing.T) {
	l := &memLog{}
	if _, err := l.Append(memBatch(0, 4, 0), 0); err != nil { // written before this node led
		t.Fatal(err)
	}
	p, err := NewLeader(l, fixedEpoch(3), 1)
	if err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark after becoming leader %d, want the log end 4", hw)
	}
	for i, acks := range []int16{AcksNone, AcksLeader, AcksAll} {
		res, err := p.AppendAsLeader(memBatch(0, 2, 0), acks, time.Millisecond)
		if err != nil {
			t.Fatalf("acks=%d: %v", acks, err)
		}
		if want := int64(4 + 2*i); res.BaseOffset != want || p.HighWatermark() != want+2 {
			t.Fatalf("acks=%d: base %d hw %d, want %d and %d", acks, res.BaseOffset, p.HighWatermark(), want, want+2)
		}
	}
	off, err := p.AppendControl(7, 0, true, 0, time.Millisecond)
	if err != nil || off != 10 || p.HighWatermark() != 11 {
		t.Fatalf("marker at %d (%v), hw %d; want 10 and 11", off, err, p.HighWatermark())
	}
	if got := l.epochs(); got[1][1] != 3 || got[len(got)-1][1] != 3 {
		t.Fatalf("epochs %v, want the leader's 3 on its appends", got)
	}
}

// TestHighWatermarkFollowsSlowestInSyncReplica checks an ISR of three: the
// high watermark is the smallest log end offset among them, acks=1 answers
// at once, acks=all waits until every in-sync replica has the records and
// times out with REQUEST_TIMED_OUT when they do not come.
func TestHighWatermarkFollowsSlowestInSyncReplica(t *testing.T) {
	l := &memLog{}
	p, err := NewLeader(l, fixedEpoch(0), 1, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("ISR %v", p.ISR())
	}
	if _, err := p.AppendAsLeader(memBatch(0, 3, 0), AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("acks=1 with followers behind: hw %d, want 0", hw)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.AppendAsLeader(memBatch(0, 2, 0), AcksAll, 30*time.Second) // offsets 3, 4
		done <- err
	}()
	waitFor(t, func() bool { return l.LogEndOffset() == 5 })
	now := time.Now()
	steps := []struct {
		replica int32
		offset  int64
		hw      int64
	}{
		{2, 5, 0}, // 3 has nothing yet
		{3, 2, 2},
		{3, 3, 3},
		{2, 4, 3}, // the faster follower's new fetch offset is behind: HW stays
		{3, 5, 4},
	}
	for _, s := range steps {
		if err := p.UpdateFollower(s.replica, s.offset, 0, now); err != nil {
			t.Fatal(err)
		}
		if hw := p.HighWatermark(); hw != s.hw {
			t.Fatalf("after replica %d at %d: hw %d, want %d", s.replica, s.offset, hw, s.hw)
		}
		select {
		case err := <-done:
			t.Fatalf("acks=all answered (%v) with hw %d, below its end 5", err, s.hw)
		default:
		}
	}
	if err := p.UpdateFollower(2, 5, 0, now.Add(50*time.Second)); err != nil {
		t.Fatal(err)
	}
	if lagging := p.LaggingFollowers(now.Add(time.Minute), 30*time.Second); !slices.Equal(lagging, []int32{3}) {
		t.Fatalf("lagging followers %v a minute on, want [3]: 2 caught up 10s ago, 3 a minute ago", lagging)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("acks=all: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acks=all still waiting with every in-sync replica at 5")
	}
	if _, err := p.AppendAsLeader(memBatch(0, 1, 0), AcksAll, 20*time.Millisecond); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("acks=all with followers not fetching: %v, want REQUEST_TIMED_OUT", err)
	}
	if err := p.UpdateFollower(9, 6, 0, now); err == nil {
		t.Fatal("a fetch from a replica outside the partition was taken")
	}
}

// TestFollowerAppendAndTruncate checks a follower: batches keep the leader's
// offsets and epochs, must start at its log end offset and follow one
// another, the high watermark is the leader's as far as the log holds it,
// and truncation cuts the log and the high watermark back.
func TestFollowerAppendAndTruncate(t *testing.T) {
	l := &memLog{}
	p := NewFollower(l, 2)
	two := append(memBatch(0, 3, 5), memBatch(3, 2, 6)...)
	if _, err := p.AppendAsFollower(two, 9); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(l.epochs()); got != "[[0 5] [3 6]]" {
		t.Fatalf("follower batches %s, want the leader's offsets and epochs", got)
	}
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("follower hw %d, want 5 (the leader's 9 capped at the log end)", hw)
	}
	for name, recs := range map[string][]byte{
		"gap":          memBatch(6, 1, 6),
		"overlap":      memBatch(4, 1, 6),
		"second gap":   append(memBatch(5, 1, 6), memBatch(7, 1, 6)...),
		"partial tail": append(memBatch(5, 1, 6), memBatch(6, 1, 6)[:20]...),
	} {
		if _, err := p.AppendAsFollower(recs, 9); err == nil || l.LogEndOffset() != 5 {
			t.Fatalf("%s: follower append took it (%v), log end %d", name, err, l.LogEndOffset())
		}
	}
	if err := p.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if leo, hw := l.LogEndOffset(), p.HighWatermark(); leo != 3 || hw != 3 {
		t.Fatalf("after truncating to 3: leo %d hw %d", leo, hw)
	}
	if _, err := p.AppendAsFollower(memBatch(3, 1, 7), 4); err != nil || l.LogEndOffset() != 4 {
		t.Fatalf("append after truncation: %v, leo %d", err, l.LogEndOffset())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// recordBatch is a real one-record v2 batch, as a client sends it.
func recordBatch(value string) []byte {
	r := kmsg.Record{Value: []byte(value)}
	body := r.AppendTo(nil)[1:] // Length 0 encodes as one byte
	r.Length = int32(len(body))
	recs := r.AppendTo(nil)
	b := kmsg.RecordBatch{Length: int32(batch.HeaderSize - batch.LogOverhead + len(recs)), PartitionLeaderEpoch: -1, Magic: 2,
		FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: recs}
	raw := b.AppendTo(nil)
	batch.Seal(raw)
	return raw
}

// TestISRChanges checks the leader's ISR decisions: a follower that
// reached the high watermark is proposed for the ISR, and while that
// change is in flight the high watermark waits for it too (Kafka's
// maximal ISR) and no other change is proposed; a refused change is
// forgotten; a follower that has not caught up within the lag is proposed
// out; an image with the new ISR ends the change.
func TestISRChanges(t *testing.T) {
	l := &memLog{}
	p, err := NewLeaderOf(l, fixedEpoch(4), 1, Leadership{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}, PartitionEpoch: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := p.AppendAsLeader(memBatch(0, 2, 0), AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.UpdateFollower(3, 2, 0, now); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("hw %d, want 2", hw)
	}
	if _, ok := p.ExpandISR(); ok {
		t.Fatal("expansion proposed for a follower that has not fetched")
	}
	if err := p.UpdateFollower(2, 2, 0, now); err != nil {
		t.Fatal(err)
	}
	c, ok := p.ExpandISR()
	if !ok || !slices.Equal(c.ISR, []int32{1, 3, 2}) || c.LeaderEpoch != 4 || c.PartitionEpoch != 7 {
		t.Fatalf("expansion %+v (%v), want ISR [1 3 2] at leader epoch 4, partition epoch 7", c, ok)
	}
	if _, ok := p.ShrinkISR(now.Add(time.Hour), time.Second); ok {
		t.Fatal("a second change proposed while one is in flight")
	}
	if _, err := p.AppendAsLeader(memBatch(0, 2, 0), AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.UpdateFollower(3, 4, 0, now); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("hw %d while 2 is being added at 2, want 2", hw)
	}
	p.ISRChangeFailed()
	if err := p.UpdateFollower(3, 4, 0, now); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 4 {
		t.Fatalf("hw %d once the expansion was refused, want 4", hw)
	}
	c, ok = p.ShrinkISR(now.Add(time.Minute), 30*time.Second)
	if !ok || !slices.Equal(c.ISR, []int32{1}) {
		t.Fatalf("shrink a minute on %+v (%v), want ISR [1]", c, ok)
	}
	if err := p.UpdateLeadership(Leadership{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, PartitionEpoch: 8}); err != nil {
		t.Fatal(err)
	}
	if got := p.ISR(); !slices.Equal(got, []int32{1}) {
		t.Fatalf("ISR %v after the image, want [1]", got)
	}
	if _, ok := p.ShrinkISR(now.Add(time.Hour), time.Second); ok {
		t.Fatal("a shrink proposed with no follower in the ISR")
	}
}

// TestMinISRIsCappedAtTheReplicas checks min.insync.replicas above the
// replication factor: it counts as the replication factor, as Kafka's
// effectiveMinIsr, so acks=all with every replica in sync is taken; and
// with the ISR below it the high watermark stays.
func TestMinISRIsCappedAtTheReplicas(t *testing.T) {
	l := &memLog{}
	p, err := NewLeaderOf(l, fixedEpoch(0), 1, Leadership{Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, func() int { return 3 })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.AppendAsLeader(memBatch(0, 2, 0), AcksAll, 10*time.Second)
		done <- err
	}()
	waitFor(t, func() bool { return l.LogEndOffset() == 2 })
	if err := p.UpdateFollower(2, 2, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("acks=all with both replicas in sync and min.insync.replicas 3: %v", err)
	}
	if err := p.UpdateLeadership(Leadership{Replicas: []int32{1, 2}, ISR: []int32{1}, PartitionEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(memBatch(0, 1, 0), AcksAll, time.Second); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with the ISR [1]: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if _, err := p.AppendAsLeader(memBatch(0, 1, 0), AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("hw %d with the ISR under min.insync.replicas, want it kept at 2", hw)
	}
}

// TestHighWatermarkWaitsForAJoiningFollower checks a follower outside the
// ISR that caught up within replica.lag.time.max.ms: the high watermark
// waits for it, as Kafka's shouldWaitForReplicaToJoinIsr, so under steady
// appends it reaches the high watermark and is proposed for the ISR; one
// that has not caught up within the lag holds nothing back.
func TestHighWatermarkWaitsForAJoiningFollower(t *testing.T) {
	l := &memLog{}
	now := time.Now()
	p, err := NewLeaderOf(l, fixedEpoch(0), 1, Leadership{Replicas: []int32{1, 2}, ISR: []int32{1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.maxLag, p.now = 30*time.Second, func() time.Time { return now }
	if _, err := p.AppendAsLeader(memBatch(0, 2, 0), AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("hw %d with a follower that never caught up, want the log end 2", hw)
	}
	if err := p.UpdateFollower(2, 2, 0, now); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(memBatch(0, 2, 0), AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("hw %d with a follower caught up at 2 just now, want 2", hw)
	}
	if c, ok := p.ExpandISR(); !ok || !slices.Equal(c.ISR, []int32{1, 2}) {
		t.Fatalf("expansion %+v (%v), want [1 2]", c, ok)
	}
	p.ISRChangeFailed()
	now = now.Add(time.Minute)
	if _, err := p.AppendAsLeader(memBatch(0, 1, 0), AcksLeader, time.Second); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("hw %d a minute after the follower caught up, want the log end 5", hw)
	}
}
