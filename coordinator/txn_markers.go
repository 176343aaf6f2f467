package coordinator

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

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
	// TransactionVersion is the transaction.version the transaction ran
	// at (KIP-1228): from 2 a marker must bump the producer's epoch.
	TransactionVersion int8
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
		if t == nil || mk.Partition < 0 || mk.Partition >= t.PartitionCount() {
			continue // deleted: nothing left to mark
		}
		sp := t.Partition(mk.Partition)
		if sp == nil {
			errs[i] = fmt.Errorf("marker on %s-%d, which this node is no replica of: %w", mk.Topic, mk.Partition, kerr.NotLeaderForPartition)
			continue
		}
		p, err := w.replicas.Partition(sp)
		if err == nil {
			_, err = p.AppendMarker(mk.ProducerID, mk.ProducerEpoch, mk.Commit, mk.CoordinatorEpoch, mk.TransactionVersion, appendTimeout)
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
