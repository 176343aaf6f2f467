package replica

import (
	"fmt"
	"sync"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage"
)

// memLog is an in-memory Log: batch headers only, in order.
type memLog struct {
	mu      sync.Mutex
	batches []batch.Header
	hw      int64
	start   int64 // the log end offset while there is no batch
}

var _ Log = (*memLog)(nil)

// memBatch is a header-only batch of n records at base, written in epoch.
func memBatch(base int64, n int32, epoch int32) []byte {
	b := make([]byte, batch.HeaderSize)
	h := batch.Header{BaseOffset: base, BatchLength: batch.HeaderSize - batch.LogOverhead, PartitionLeaderEpoch: epoch,
		Magic: 2, LastOffsetDelta: n - 1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: n}
	h.Put(b)
	return b
}

func (l *memLog) leo() int64 {
	if len(l.batches) == 0 {
		return l.start
	}
	return l.batches[len(l.batches)-1].NextOffset()
}

// appendAt appends records' batches; stamp gives them offsets from the log
// end offset and leaderEpoch, else they keep theirs.
func (l *memLog) appendAt(records []byte, stamp bool, leaderEpoch int32) (storage.AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := storage.AppendResult{BaseOffset: -1, LogAppendTime: -1}
	next := l.leo()
	for rest := records; len(rest) > 0; {
		b, r, ok := batch.Next(rest)
		if !ok {
			return storage.AppendResult{}, kerr.CorruptMessage
		}
		h := batch.DecodeHeader(b)
		if stamp {
			h.BaseOffset, h.PartitionLeaderEpoch = next, leaderEpoch
		}
		if res.BaseOffset < 0 {
			res.BaseOffset = h.BaseOffset
		}
		l.batches = append(l.batches, h)
		next, rest = h.NextOffset(), r
	}
	res.EndOffset = next
	return res, nil
}

func (l *memLog) Append(records []byte, leaderEpoch int32) (storage.AppendResult, error) {
	return l.appendAt(records, true, leaderEpoch)
}

func (l *memLog) AppendCoordinator(records []byte, leaderEpoch int32) (storage.AppendResult, error) {
	return l.appendAt(records, true, leaderEpoch)
}

func (l *memLog) AppendMarker(_ int64, _ int16, _ bool, _, leaderEpoch int32, _ int8) (int64, error) {
	res, err := l.appendAt(memBatch(0, 1, 0), true, leaderEpoch)
	return res.BaseOffset, err
}

func (l *memLog) AppendAsFollower(records []byte) (storage.AppendResult, error) {
	return l.appendAt(records, false, 0)
}

func (l *memLog) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leo()
}

func (l *memLog) HighWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hw
}

func (l *memLog) AdvanceHighWatermark(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset > l.leo() {
		return fmt.Errorf("high watermark %d above the log end %d: %w", offset, l.leo(), kerr.OffsetOutOfRange)
	}
	l.hw = max(l.hw, offset)
	return nil
}

func (l *memLog) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.batches)
	for i > 0 && l.batches[i-1].BaseOffset >= offset {
		i--
	}
	if i > 0 && l.batches[i-1].NextOffset() != offset {
		return fmt.Errorf("truncate to %d: inside a batch: %w", offset, kerr.OffsetOutOfRange)
	}
	l.batches = l.batches[:i]
	l.hw = min(l.hw, offset)
	return nil
}

func (l *memLog) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches, l.start, l.hw = nil, offset, offset
	return nil
}

// epochs returns each batch's (base offset, leader epoch).
func (l *memLog) epochs() [][2]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][2]int64
	for _, h := range l.batches {
		out = append(out, [2]int64{h.BaseOffset, int64(h.PartitionLeaderEpoch)})
	}
	return out
}
