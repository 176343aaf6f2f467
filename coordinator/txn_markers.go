package coordinator

import (
	"context"
	"fmt"

	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// TxnMarker is a transaction marker to write to a partition of a
// transaction (an entry of Kafka's WriteTxnMarkers request).
type TxnMarker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// MarkerWriter writes transaction markers to the leaders of their
// partitions and returns one error per marker (nil: written, or the
// partition no longer exists). Writing the marker on __consumer_offsets
// also completes the producer's pending offsets there, as Kafka's
// WriteTxnMarkers handler does.
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, markers []TxnMarker) []error
}

// LocalMarkers writes markers as control batches to the partitions this
// node leads: a single node's MarkerWriter, and what a cluster node's
// WriteTxnMarkers handler and MarkerWriter write with here. A partition
// another node leads is kerr.NotLeaderForPartition.
func LocalMarkers(logs *storage.Manager, replicas *replica.Manager, groups *Groups) MarkerWriter {
	return localMarkers{logs: logs, replicas: replicas, groups: groups}
}

// localMarkers writes markers as control batches to this node's logs.
type localMarkers struct {
	logs     *storage.Manager
	replicas *replica.Manager
	groups   *Groups
}

func (w localMarkers) WriteMarkers(_ context.Context, markers []TxnMarker) []error {
	errs := make([]error, len(markers))
	for i, mk := range markers {
		t := w.logs.Topic(mk.Topic)
		if t == nil || int(mk.Partition) >= len(t.Partitions()) {
			continue // deleted: nothing left to mark
		}
		p, err := w.replicas.Partition(t.Partitions()[mk.Partition])
		if err == nil {
			_, err = p.AppendControl(mk.ProducerID, mk.ProducerEpoch, mk.Commit, mk.CoordinatorEpoch, appendTimeout)
		}
		if err != nil {
			errs[i] = fmt.Errorf("marker on %s-%d: %w", mk.Topic, mk.Partition, err)
			continue
		}
		if mk.Topic == OffsetsTopic && w.groups != nil {
			w.groups.CompleteTxnOffsets(mk.ProducerID, mk.Commit)
		}
	}
	return errs
}
