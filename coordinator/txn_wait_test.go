package coordinator

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// blockingMarkers holds every marker write until released.
type blockingMarkers struct {
	next     MarkerWriter
	entered  chan struct{}
	released chan struct{}
}

func (w *blockingMarkers) WriteMarkers(ctx context.Context, markers []TxnMarker) []error {
	w.entered <- struct{}{}
	<-w.released
	return w.next.WriteMarkers(ctx, markers)
}

// TestTxnRequestsWaitForTransitionInFlight checks that requests for a
// transactional id whose EndTxn is writing its markers wait for it and
// then see its outcome, as they did when each id had a lock held through
// the end: the transaction's partitions are not verified while it
// commits, and a second producer fences only after the commit.
func TestTxnRequestsWaitForTransitionInFlight(t *testing.T) {
	h := newTxnHarness(t)
	if _, err := h.logs.CreateTopic("orders", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	r := h.txns.InitProducerID("t1", 60000, -1, -1)
	parts := []TxnPartition{{Topic: "orders", Partition: 0}}
	h.txns.AddPartitions("t1", r.ProducerID, r.Epoch, parts, 0)
	if r.Err != nil || parts[0].Err != nil {
		t.Fatalf("init %v, add partitions %v", r.Err, parts[0].Err)
	}
	w := &blockingMarkers{next: h.txns.markers, entered: make(chan struct{}), released: make(chan struct{})}
	h.txns.markers = w

	ended := make(chan *kerr.Error, 1)
	go func() { ended <- h.txns.EndTxn("t1", r.ProducerID, r.Epoch, true, 0).Err }()
	select {
	case <-w.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("EndTxn did not write markers")
	}
	verified := make(chan *kerr.Error, 1)
	go func() { verified <- h.txns.VerifyPartition("t1", r.ProducerID, r.Epoch, "orders", 0) }()
	described := make(chan string, 1)
	go func() { described <- h.txns.DescribeTransaction("t1").State }()
	inited := make(chan InitProducerIDResult, 1)
	go func() { inited <- h.txns.InitProducerID("t1", 60000, -1, -1) }()
	select {
	case err := <-verified:
		t.Fatalf("verification answered %v during the commit", err)
	case s := <-described:
		t.Fatalf("describe answered %s during the commit", s)
	case r := <-inited:
		t.Fatalf("InitProducerId answered %+v during the commit", r)
	case <-time.After(200 * time.Millisecond):
	}
	close(w.released)
	deadline := time.After(10 * time.Second)
	for _, want := range []string{"end", "verify", "describe", "init"} {
		select {
		case err := <-ended:
			if err != nil {
				t.Fatalf("EndTxn: %v", err)
			}
		case err := <-verified:
			if err != kerr.InvalidTxnState && err != kerr.InvalidProducerEpoch {
				t.Fatalf("verification after the commit: %v", err)
			}
		case s := <-described:
			if s != "CompleteCommit" && s != "Empty" {
				t.Fatalf("describe after the commit: %s", s)
			}
		case res := <-inited:
			if res.Err != nil || res.Epoch != r.Epoch+1 {
				t.Fatalf("InitProducerId after the commit: %+v", res)
			}
		case <-deadline:
			t.Fatalf("no answer (waiting for %s)", want)
		}
	}
}

// TestTxnLoadWaitsForGroups checks that a partition elected while the
// group coordinator is still loading answers COORDINATOR_LOAD_IN_PROGRESS
// until the group coordinator has loaded, then finishes the commit it
// left prepared (its marker on __consumer_offsets completes offsets) and
// serves.
func TestTxnLoadWaitsForGroups(t *testing.T) {
	h := newTxnHarness(t)
	if _, err := h.logs.CreateTopic("orders", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	r := h.txns.InitProducerID("t1", 60000, -1, -1)
	parts := []TxnPartition{{Topic: "orders", Partition: 0}}
	h.txns.AddPartitions("t1", r.ProducerID, r.Epoch, parts, 0)
	h.markers.fail = 1
	if err := h.txns.EndTxn("t1", r.ProducerID, r.Epoch, true, 0).Err; err != kerr.ConcurrentTransactions {
		t.Fatalf("EndTxn with failing markers: %v", err)
	}
	var groupsLoaded atomic.Bool
	h.txns.groupsLoaded = groupsLoaded.Load
	part := h.txns.state.partitionOf("t1")
	h.txns.OnResigned(part)
	if err := h.txns.OnElected(part, 1); err != nil {
		t.Fatal(err)
	}
	if d := h.txns.DescribeTransaction("t1"); d.ErrorCode != kerr.CoordinatorLoadInProgress.Code || h.txns.Loaded() {
		t.Fatalf("before the groups loaded: describe %+v, loaded %t", d, h.txns.Loaded())
	}
	groupsLoaded.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for !h.txns.Loaded() {
		if time.Now().After(deadline) {
			t.Fatal("partition not loaded 10s after the groups")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := h.txns.DescribeTransaction("t1"); d.ErrorCode != 0 || d.State != "CompleteCommit" {
		t.Fatalf("after loading: %+v", d)
	}
}
