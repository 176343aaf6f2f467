package broker

// clusterMarkers is a cluster node's coordinator.MarkerWriter, Kafka's
// TransactionMarkerChannelManager: the markers are grouped by their
// partition's leader in the metadata image; this node's are written
// here, the others' are sent as one WriteTxnMarkers request per leader
// over its endpoint on the inter-broker listener. What is refused with a
// retriable error (the leader moved, too few in-sync replicas, a timeout)
// is sent again to the partition's leader in the newest image, with
// backoff, until written, until its partition no longer exists, or until
// markerRetryTime has passed: then the error goes back to the
// coordinator, which leaves the transaction prepared (EndTxn answers
// CONCURRENT_TRANSACTIONS and the producer retries; the coordinator's
// tick retries too). Kafka retries without bound in the background
// because it answers EndTxn before the markers; Strata answers after
// them, so the retries are bounded by what a client waits for.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
)

// markerRetryTime bounds one WriteMarkers call's retries.
const markerRetryTime = 5 * time.Second

// markerBackoff is the first wait before a retry; it doubles up to
// markerBackoffMax.
const (
	markerBackoff    = 20 * time.Millisecond
	markerBackoffMax = 500 * time.Millisecond
)

type clusterMarkers struct {
	node     int32
	listener string       // inter.broker.listener.name
	sec      peerSecurity // its client side
	meta     metadata.Store
	local    coordinator.MarkerWriter
	stop     <-chan struct{} // closed at shutdown: retries end
	logger   *zap.Logger

	mu     sync.Mutex
	idle   map[string][]*ctrlClient // connections to leaders by address, not in use
	closed bool
}

// markerDest is where a marker goes in one round: this node, a leader's
// address, or nowhere yet (no leader, or it has no endpoint).
type markerDest struct {
	leader int32
	addr   string
}

func (w *clusterMarkers) WriteMarkers(ctx context.Context, markers []coordinator.TxnMarker) []error {
	errs := make([]error, len(markers))
	pending := make([]int, len(markers))
	for i := range markers {
		pending[i] = i
	}
	deadline := time.Now().Add(markerRetryTime)
	backoff := markerBackoff
	for {
		pending = w.round(ctx, markers, pending, errs, deadline)
		if len(pending) == 0 || time.Now().After(deadline) {
			return errs
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-w.stop:
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			return errs
		}
		select {
		case <-w.stop:
			return errs
		default:
		}
		backoff = min(2*backoff, markerBackoffMax)
	}
}

// round sends the pending markers to their leaders in the newest image,
// at once, and returns those to send again; errs holds every marker's
// latest outcome.
func (w *clusterMarkers) round(ctx context.Context, markers []coordinator.TxnMarker, pending []int, errs []error, deadline time.Time) []int {
	img := w.meta.Image()
	byDest := map[markerDest][]int{}
	for _, i := range pending {
		mk := markers[i]
		t := img.Topics.ByName(mk.Topic)
		ok := t != nil
		var reg metadata.PartitionRegistration
		if ok {
			reg, ok = t.Partition(mk.Partition)
		}
		switch {
		case !ok:
			errs[i] = nil // deleted: nothing left to mark
			continue
		case reg.Leader < 0:
			errs[i] = fmt.Errorf("marker on %s-%d: the partition has no leader: %w", mk.Topic, mk.Partition, kerr.NotLeaderForPartition)
			byDest[markerDest{leader: -1}] = append(byDest[markerDest{leader: -1}], i)
			continue
		case reg.Leader == w.node:
			byDest[markerDest{leader: w.node}] = append(byDest[markerDest{leader: w.node}], i)
			continue
		}
		b, ok := img.Cluster.Broker(reg.Leader)
		ep, hasEP := b.Endpoint(w.listener)
		if !ok || !hasEP {
			errs[i] = fmt.Errorf("marker on %s-%d: leader %d has no endpoint on listener %s: %w",
				mk.Topic, mk.Partition, reg.Leader, w.listener, kerr.NotLeaderForPartition)
			byDest[markerDest{leader: -1}] = append(byDest[markerDest{leader: -1}], i)
			continue
		}
		d := markerDest{leader: reg.Leader, addr: net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))}
		byDest[d] = append(byDest[d], i)
	}

	var mu sync.Mutex
	var retry []int
	var wg sync.WaitGroup
	for d, idx := range byDest {
		if d.leader < 0 {
			retry = append(retry, idx...)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([]coordinator.TxnMarker, len(idx))
			for j, i := range idx {
				batch[j] = markers[i]
			}
			var out []error
			if d.leader == w.node {
				out = w.local.WriteMarkers(ctx, batch)
			} else {
				out = w.send(d, batch, deadline)
			}
			mu.Lock()
			defer mu.Unlock()
			for j, i := range idx {
				errs[i] = out[j]
				if retriableMarkerError(out[j]) {
					retry = append(retry, i)
				}
			}
		}()
	}
	wg.Wait()
	return retry
}

// retriableMarkerError is whether a marker refused with err is sent
// again, as Kafka's TransactionMarkerRequestCompletionHandler decides; a
// connection failure is retried too. UNSUPPORTED_FOR_MESSAGE_FORMAT and
// UNSUPPORTED_VERSION count as written, as Kafka drops those partitions.
func retriableMarkerError(err error) bool {
	if err == nil {
		return false
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		var ne net.Error
		return errors.As(err, &ne) || errors.Is(err, errMarkerConn)
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition, kerr.NotEnoughReplicas,
		kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut, kerr.KafkaStorageError:
		return true
	}
	return false
}

// errMarkerConn marks a failed exchange with a leader: retried on a new
// connection.
var errMarkerConn = errors.New("connection to the leader failed")

// send writes batch with one WriteTxnMarkers request to the leader at d
// and returns one error per marker.
func (w *clusterMarkers) send(d markerDest, batch []coordinator.TxnMarker, deadline time.Time) []error {
	out := make([]error, len(batch))
	req := markersRequest(batch)
	kresp, err := w.roundTrip(d.addr, req, max(time.Until(deadline), time.Second))
	var resp *kmsg.WriteTxnMarkersResponse
	if err == nil {
		resp = kresp.(*kmsg.WriteTxnMarkersResponse)
	}
	if err != nil {
		for j := range out {
			out[j] = fmt.Errorf("marker on %s-%d to broker %d: %w: %w", batch[j].Topic, batch[j].Partition, d.leader, errMarkerConn, err)
		}
		return out
	}
	type key struct {
		pid       int64
		topic     string
		partition int32
	}
	codes := map[key]int16{}
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				codes[key{m.ProducerID, t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	for j, mk := range batch {
		code, ok := codes[key{mk.ProducerID, mk.Topic, mk.Partition}]
		switch {
		case !ok:
			out[j] = fmt.Errorf("marker on %s-%d: broker %d did not answer for it: %w", mk.Topic, mk.Partition, d.leader, kerr.UnknownServerError)
		case code == kerr.UnsupportedForMessageFormat.Code || code == kerr.UnsupportedVersion.Code:
		case code != 0:
			out[j] = fmt.Errorf("marker on %s-%d: broker %d: %w", mk.Topic, mk.Partition, d.leader, kerr.ErrorForCode(code))
		}
	}
	return out
}

// markersRequest is batch as a WriteTxnMarkers request: one entry per
// producer, epoch, result, coordinator epoch and transaction version, its
// partitions by topic.
func markersRequest(batch []coordinator.TxnMarker) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 2
	type head struct {
		pid     int64
		epoch   int16
		commit  bool
		coEpoch int32
		tv      int8
	}
	entry := map[head]int{}
	for _, mk := range batch {
		h := head{mk.ProducerID, mk.ProducerEpoch, mk.Commit, mk.CoordinatorEpoch, mk.TransactionVersion}
		i, ok := entry[h]
		if !ok {
			i = len(req.Markers)
			entry[h] = i
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = h.pid, h.epoch, h.commit, h.coEpoch
			m.TransactionVersion = h.tv
			req.Markers = append(req.Markers, m)
		}
		m := &req.Markers[i]
		if n := len(m.Topics); n == 0 || m.Topics[n-1].Topic != mk.Topic {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = mk.Topic
			m.Topics = append(m.Topics, t)
		}
		t := &m.Topics[len(m.Topics)-1]
		t.Partitions = append(t.Partitions, mk.Partition)
	}
	return req
}

// roundTrip sends req to the broker at addr on an idle connection or a
// new one; a connection that failed is closed, one that answered kept.
// The pool also carries the AddPartitionsToTxn a leader sends a
// transaction coordinator (txnverify.go).
func (w *clusterMarkers) roundTrip(addr string, req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, errors.New("shut down")
	}
	var c *ctrlClient
	if n := len(w.idle[addr]); n > 0 {
		c = w.idle[addr][n-1]
		w.idle[addr] = w.idle[addr][:n-1]
	}
	w.mu.Unlock()
	if c == nil {
		var err error
		if c, err = dialController(addr, w.node, min(timeout, 10*time.Second), w.sec); err != nil {
			return nil, err
		}
	}
	resp, err := c.request(req, timeout)
	if err != nil {
		c.Close()
		return nil, err
	}
	w.mu.Lock()
	if w.closed {
		c.Close()
	} else {
		w.idle[addr] = append(w.idle[addr], c)
	}
	w.mu.Unlock()
	return resp, nil
}

// close closes the idle connections; one in use is closed when its
// request ends.
func (w *clusterMarkers) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, cs := range w.idle {
		for _, c := range cs {
			c.Close()
		}
	}
	w.idle = nil
}
