package storage

import "sort"

// ActiveProducer is one producer the partition's producer state knows, as
// Kafka's UnifiedLog.activeProducers reports it to DescribeProducers.
type ActiveProducer struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is the last sequence of the producer's last retained
	// batch, -1 when only its transaction markers are known.
	LastSequence int32
	// LastTimestamp is the max timestamp of the producer's last batch or
	// transaction marker.
	LastTimestamp int64
	// CoordinatorEpoch is the coordinator epoch of the producer's last
	// transaction marker on this partition, -1 before any.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of the producer's open
	// transaction on this partition, -1 when none is open.
	CurrentTxnStartOffset int64
}

// ActiveProducers lists the producers of the partition's producer state,
// by producer id.
func (l *Log) ActiveProducers() []ActiveProducer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ActiveProducer, 0, len(l.producers.entries))
	for id, e := range l.producers.entries {
		p := ActiveProducer{ProducerID: id, ProducerEpoch: e.Epoch, LastSequence: -1, LastTimestamp: e.LastTimestamp,
			CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.TxnFirstOffset}
		if n := len(e.Batches); n > 0 {
			p.LastSequence = e.Batches[n-1].LastSeq
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
