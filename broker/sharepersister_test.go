package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator/share"
)

// fakeCoordinators is the share coordinators a shareStateClient reaches
// in a test: where each share-partition's coordinator is, and what each
// WriteShareGroupState sent gets back, in turn.
type fakeCoordinators struct {
	clock *clockwork.FakeClock

	mu      sync.Mutex
	lookups []error    // what each lookup fails with in turn; nil: found
	addrs   []string   // the address each successful lookup gives in turn; the last one after
	answers []int16    // the error code each share-partition's write gets in turn; 0 after
	netErrs []error    // what each send fails with in turn; nil: answered
	sent    []fakeSend // what was sent
	stop    chan struct{}
	entered chan fakeSend // when set, each send is told here, then waits for gate
	gate    chan struct{}
}

type fakeSend struct {
	at     time.Duration // since the start
	addr   string
	parts  []int32
	firsts []int64 // each share-partition's first state batch's first offset
}

func newFakeCoordinators(t *testing.T) (*fakeCoordinators, *shareStateClient) {
	f := &fakeCoordinators{clock: clockwork.NewFakeClock(), stop: make(chan struct{})}
	start := f.clock.Now()
	c := &shareStateClient{clock: f.clock, logger: zap.NewNop(), stop: f.stop, jitter: func() float64 { return 0.5 }}
	c.coordinatorOf = func(string, shareTopicPartition) (string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.lookups) > 0 {
			err := f.lookups[0]
			f.lookups = f.lookups[1:]
			if err != nil {
				return "", err
			}
		}
		if len(f.addrs) == 0 {
			return "", nil
		}
		addr := f.addrs[0]
		if len(f.addrs) > 1 {
			f.addrs = f.addrs[1:]
		}
		return addr, nil
	}
	c.send = func(addr string, req kmsg.Request) (kmsg.Response, error) {
		w := req.(*kmsg.WriteShareGroupStateRequest)
		if f.entered != nil {
			var s fakeSend
			for _, t := range w.Topics {
				for _, p := range t.Partitions {
					s.firsts = append(s.firsts, p.StateBatches[0].FirstOffset)
				}
			}
			f.entered <- s
			<-f.gate
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		s := fakeSend{at: f.clock.Since(start), addr: addr}
		resp := kmsg.NewPtrWriteShareGroupStateResponse()
		for _, t := range w.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				s.parts = append(s.parts, p.Partition)
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition = p.Partition
				if len(f.answers) > 0 {
					rp.ErrorCode, f.answers = f.answers[0], f.answers[1:]
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		f.sent = append(f.sent, s)
		if len(f.netErrs) > 0 {
			err := f.netErrs[0]
			f.netErrs = f.netErrs[1:]
			if err != nil {
				return nil, err
			}
		}
		return resp, nil
	}
	return f, c
}

// write sends a WriteShareGroupState of parts of one topic, advancing the
// fake clock by 500 ms steps whenever the client waits.
func (f *fakeCoordinators) write(t *testing.T, c *shareStateClient, parts ...int32) *kmsg.WriteShareGroupStateResponse {
	t.Helper()
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = "g"
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = [16]byte{1}
	for _, p := range parts {
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	done := make(chan *kmsg.WriteShareGroupStateResponse)
	go func() { done <- c.write(req) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		select {
		case resp := <-done:
			return resp
		case <-ctx.Done():
			t.Fatal("the write did not end")
		default:
		}
		waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Millisecond)
		if f.clock.BlockUntilContext(waitCtx, 1) == nil {
			f.clock.Advance(500 * time.Millisecond)
		}
		waitCancel()
	}
}

func (f *fakeCoordinators) sends() []fakeSend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

func sendTimes(sent []fakeSend) []time.Duration {
	var out []time.Duration
	for _, s := range sent {
		out = append(out, s.at)
	}
	return out
}

func onlyPartition(t *testing.T, resp *kmsg.WriteShareGroupStateResponse) kmsg.WriteShareGroupStateResponseTopicPartition {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("want one share-partition's answer, got %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// TestShareStateBackoffIsKafkas checks the backoff after n attempts: 1 s
// times 2^n, within 20% jitter, at most 30 s.
func TestShareStateBackoffIsKafkas(t *testing.T) {
	c := &shareStateClient{}
	for _, tc := range []struct {
		attempts int
		jitter   float64
		want     time.Duration
	}{
		{1, 0.5, 2 * time.Second},
		{2, 0.5, 4 * time.Second},
		{3, 0.5, 8 * time.Second},
		{4, 0.5, 16 * time.Second},
		{5, 0.5, 30 * time.Second},
		{1, 0, 1600 * time.Millisecond},
		{1, 0.999999, 2400 * time.Millisecond},
		{4, 0.999999, 19200 * time.Millisecond},
		{20, 0.999999, 30 * time.Second},
	} {
		c.jitter = func() float64 { return tc.jitter }
		if got := c.backoff(tc.attempts); got.Round(time.Millisecond) != tc.want {
			t.Errorf("backoff(%d) with jitter %v = %v, want %v", tc.attempts, tc.jitter, got, tc.want)
		}
	}
}

// TestShareStateRetriesRetriableErrors checks that a write answered
// NOT_COORDINATOR, then COORDINATOR_LOAD_IN_PROGRESS, is sent again after
// 2 s and 4 s more, and that the third answer is the result.
func TestShareStateRetriesRetriableErrors(t *testing.T) {
	f, c := newFakeCoordinators(t)
	f.answers = []int16{kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code}
	got := onlyPartition(t, f.write(t, c, 0))
	if got.ErrorCode != 0 {
		t.Fatalf("error %d %v, want none", got.ErrorCode, got.ErrorMessage)
	}
	if times := sendTimes(f.sends()); !slices.Equal(times, []time.Duration{0, 2 * time.Second, 6 * time.Second}) {
		t.Fatalf("sent at %v, want at 0s, 2s and 6s", times)
	}
}

// TestShareStateGivesUpAfterFiveAttempts checks that a coordinator that
// stays COORDINATOR_LOAD_IN_PROGRESS is sent 5 writes (at 0, 2, 6, 14 and
// 30 s) and the share-partition is answered its code with Kafka's message.
func TestShareStateGivesUpAfterFiveAttempts(t *testing.T) {
	f, c := newFakeCoordinators(t)
	for range 10 {
		f.answers = append(f.answers, kerr.CoordinatorLoadInProgress.Code)
	}
	got := onlyPartition(t, f.write(t, c, 0))
	want := "Error in write state RPC. Exhausted max retries to complete write state RPC without success."
	if got.ErrorCode != kerr.CoordinatorLoadInProgress.Code || got.ErrorMessage == nil || *got.ErrorMessage != want {
		t.Fatalf("answered %d %v, want %d %q", got.ErrorCode, got.ErrorMessage, kerr.CoordinatorLoadInProgress.Code, want)
	}
	want5 := []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second, 30 * time.Second}
	if times := sendTimes(f.sends()); !slices.Equal(times, want5) {
		t.Fatalf("sent at %v, want at %v", times, want5)
	}
}

// TestShareStateDoesNotRetryOtherErrors checks that FENCED_STATE_EPOCH is
// answered after one write, behind Kafka's prefix.
func TestShareStateDoesNotRetryOtherErrors(t *testing.T) {
	f, c := newFakeCoordinators(t)
	f.answers = []int16{kerr.FencedStateEpoch.Code}
	got := onlyPartition(t, f.write(t, c, 0))
	if got.ErrorCode != kerr.FencedStateEpoch.Code || got.ErrorMessage == nil || *got.ErrorMessage != "Error in write state RPC. "+kerr.FencedStateEpoch.Description {
		t.Fatalf("answered %d %v", got.ErrorCode, got.ErrorMessage)
	}
	if n := len(f.sends()); n != 1 {
		t.Fatalf("%d writes sent, want 1", n)
	}
}

// TestShareStateLooksTheCoordinatorUpAgain checks that a share-partition
// whose coordinator is not found is looked up again with backoff, and
// that one whose request broke is looked up again and sent to the
// coordinator found then.
func TestShareStateLooksTheCoordinatorUpAgain(t *testing.T) {
	f, c := newFakeCoordinators(t)
	f.lookups = []error{errors.New("no leader"), nil}
	f.addrs = []string{"a:1", "b:2"}
	f.netErrs = []error{errors.New("connection reset")}
	got := onlyPartition(t, f.write(t, c, 0))
	if got.ErrorCode != 0 {
		t.Fatalf("error %d %v, want none", got.ErrorCode, got.ErrorMessage)
	}
	sent := f.sends()
	if len(sent) != 2 || sent[0].addr != "a:1" || sent[0].at != 2*time.Second || sent[1].addr != "b:2" || sent[1].at != 4*time.Second {
		t.Fatalf("sent %+v, want to a:1 at 2s (after a failed lookup) and to b:2 at 4s", sent)
	}

	f, c = newFakeCoordinators(t)
	for range 5 {
		f.lookups = append(f.lookups, errors.New("no leader"))
	}
	got = onlyPartition(t, f.write(t, c, 0))
	want := "Error in find coordinator. Exhausted max retries to find coordinator without success."
	if got.ErrorCode != kerr.CoordinatorNotAvailable.Code || got.ErrorMessage == nil || *got.ErrorMessage != want {
		t.Fatalf("answered %d %v, want COORDINATOR_NOT_AVAILABLE %q", got.ErrorCode, got.ErrorMessage, want)
	}
	if n := len(f.sends()); n != 0 {
		t.Fatalf("%d writes sent with no coordinator found", n)
	}
}

// TestShareStateBatchesByCoordinator checks that the share-partitions of
// one call with one coordinator go in one request, and that only the one
// refused is sent again.
func TestShareStateBatchesByCoordinator(t *testing.T) {
	f, c := newFakeCoordinators(t)
	f.answers = []int16{0, kerr.NotCoordinator.Code, 0}
	resp := f.write(t, c, 0, 1, 2)
	sent := f.sends()
	if len(sent) != 2 || !slices.Equal(sent[0].parts, []int32{0, 1, 2}) || !slices.Equal(sent[1].parts, []int32{1}) {
		t.Fatalf("sent %+v, want partitions 0-2 in one request, then 1 again", sent)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("answered %+v, want three share-partitions under one topic", resp.Topics)
	}
	for i, p := range resp.Topics[0].Partitions {
		if p.Partition != int32(i) || p.ErrorCode != 0 {
			t.Errorf("answer %d: partition %d error %d", i, p.Partition, p.ErrorCode)
		}
	}
}

// TestShareStateEndsAtShutdown checks that a retry waiting when the node
// shuts down ends at once with the last error.
func TestShareStateEndsAtShutdown(t *testing.T) {
	f, c := newFakeCoordinators(t)
	for range 10 {
		f.answers = append(f.answers, kerr.NotCoordinator.Code)
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = "g"
	req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: [16]byte{1}, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	done := make(chan *kmsg.WriteShareGroupStateResponse)
	go func() { done <- c.write(req) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("the write does not wait to retry")
	}
	close(f.stop)
	select {
	case resp := <-done:
		if got := onlyPartition(t, resp); got.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("answered %d, want NOT_COORDINATOR", got.ErrorCode)
		}
	case <-ctx.Done():
		t.Fatal("the write did not end at shutdown")
	}
}

// TestShareWriteLeavesTheSharePartitionFree checks that a share-partition
// whose write is under way (its coordinator not answering yet) serves
// other operations meanwhile, and that a second write made then is sent
// only once the first is answered, in the order they were made.
func TestShareWriteLeavesTheSharePartitionFree(t *testing.T) {
	f, c := newFakeCoordinators(t)
	f.entered, f.gate = make(chan fakeSend), make(chan struct{})
	m := newShareManager(clockwork.NewFakeClock(), zap.NewNop(), c)
	p, err := share.Load(share.Config{MaxInFlightRecords: 100, DeliveryCountLimit: 5, LockDuration: time.Minute}, share.Persisted{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, n := p.Acquire(share.Acquire{Member: "a", MaxRecords: 10, Batches: []share.LogBatch{{Base: 0, Last: 9}}}, m.clock.Now()); n != 10 {
		t.Fatalf("acquired %d records, want 10", n)
	}
	sp := &sharePart{m: m, key: sharePartKey{group: "g", tp: shareTP{topicID: [16]byte{1}}}, p: p, changed: make(chan struct{})}
	ack := func(first, last int64) chan *shareError {
		done := make(chan *shareError, 1)
		go func() {
			done <- sp.acknowledge("a", []share.AckBatch{{First: first, Last: last, Types: []share.AckType{share.AckAccept}}})
		}()
		return done
	}
	sent := func(what string, from int64) {
		t.Helper()
		select {
		case s := <-f.entered:
			if !slices.Equal(s.firsts, []int64{from}) {
				t.Fatalf("%s from %v, want %d", what, s.firsts, from)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was not sent", what)
		}
	}
	first := ack(0, 4)
	sent("the first write", 0)
	waited := make(chan struct{})
	go func() {
		sp.wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the share-partition is held while its write is under way")
	}
	second := ack(5, 9)
	select {
	case s := <-f.entered:
		t.Fatalf("a second write (from %v) was sent before the first was answered", s.firsts)
	case <-time.After(100 * time.Millisecond):
	}
	f.gate <- struct{}{}
	sent("the second write", 5)
	f.gate <- struct{}{}
	for i, done := range []chan *shareError{first, second} {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("acknowledgement %d: %s", i, err.msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("acknowledgement %d did not end", i)
		}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if got := sp.p.StartOffset(); got != 10 {
		t.Fatalf("start offset %d after both writes, want 10", got)
	}
}

// TestShareStateCoalescesByNodeAndGroup checks that writes of one group
// to one node made while another is in flight wait for it and go
// together in one request, and that a share-partition asked twice goes
// in the request after.
func TestShareStateCoalescesByNodeAndGroup(t *testing.T) {
	f, c := newFakeCoordinators(t)
	f.addrs = []string{"a:1"}
	f.entered, f.gate = make(chan fakeSend), make(chan struct{})
	write := func(partition int32, first int64) chan *kmsg.WriteShareGroupStateResponse {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = "g"
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.Partition = partition
		rp.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{{FirstOffset: first, LastOffset: first}}
		req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: [16]byte{1}, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{rp}}}
		done := make(chan *kmsg.WriteShareGroupStateResponse, 1)
		go func() { done <- c.write(req) }()
		return done
	}
	sent := func(what string, want ...int64) {
		t.Helper()
		select {
		case s := <-f.entered:
			slices.Sort(s.firsts)
			if !slices.Equal(s.firsts, want) {
				t.Fatalf("%s: state batches from %v, want %v", what, s.firsts, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was not sent", what)
		}
	}
	first := write(0, 10)
	sent("the first request", 10)
	var later []chan *kmsg.WriteShareGroupStateResponse
	for i, w := range []struct {
		partition int32
		first     int64
	}{{1, 20}, {2, 30}, {1, 40}} {
		later = append(later, write(w.partition, w.first))
		waitUntilQueued(t, c, i+1)
	}
	f.gate <- struct{}{}
	sent("the second request", 20, 30)
	f.gate <- struct{}{}
	sent("the third request", 40)
	f.gate <- struct{}{}
	for i, done := range append(later, first) {
		select {
		case resp := <-done:
			if p := onlyPartition(t, resp); p.ErrorCode != 0 {
				t.Errorf("write %d: error %d", i, p.ErrorCode)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("write %d did not end", i)
		}
	}
}

// waitUntilQueued waits until n calls wait behind the write in flight.
func waitUntilQueued(t *testing.T, c *shareStateClient, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		waiting := 0
		c.queues.Range(func(_, v any) bool {
			q := v.(*stateQueue[kmsg.WriteShareGroupStateRequestTopicPartition, kmsg.WriteShareGroupStateResponseTopicPartition])
			q.mu.Lock()
			waiting += len(q.waiting)
			q.mu.Unlock()
			return true
		})
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls waiting, want %d", waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}
