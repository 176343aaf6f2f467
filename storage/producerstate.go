package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/vfs"
)

// numBatchesToRetain is how many of a producer's most recent batches are kept
// for duplicate detection; Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN is 5
// because a producer has at most 5 in-flight requests when idempotence is on.
const numBatchesToRetain = 5

// snapshotsToKeep is how many producer snapshots stay on disk: the newest one
// plus one fallback in case the newest turns out to be corrupt.
const snapshotsToKeep = 2

const (
	snapshotSuffix  = ".snapshot"
	snapshotVersion = 1
	// snapshotHeaderLen is version(2) + crc(4); the CRC covers what follows.
	snapshotHeaderLen = 6
	// snapshotEntryLen is one producer entry of Kafka's snapshot schema.
	snapshotEntryLen = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

// batchMeta is what the producer state needs to know about one batch; Log
// fills it from the batch header.
type batchMeta struct {
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	LastOffsetDelta int32
	BaseOffset      int64 // assigned offset of the batch (set before update)
	MaxTimestamp    int64
	Transactional   bool
}

// lastSequence is the sequence number of the batch's last record. Sequence
// numbers wrap from MaxInt32 to 0, as in Kafka's DefaultRecordBatch.incrementSequence.
func (b batchMeta) lastSequence() int32 {
	return incrementSequence(b.BaseSequence, b.LastOffsetDelta)
}

func incrementSequence(seq, by int32) int32 {
	if seq > math.MaxInt32-by {
		return by - (math.MaxInt32 - seq) - 1
	}
	return seq + by
}

// inSequence reports whether next directly follows last, allowing the
// MaxInt32 -> 0 wrap (Kafka's ProducerAppendInfo.inSequence).
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// producerBatch is the retained record of one appended batch.
type producerBatch struct {
	FirstSeq   int32
	LastSeq    int32
	BaseOffset int64
	LastOffset int64
}

// producerEntry is the state of one producer id on one partition.
type producerEntry struct {
	Epoch         int16
	LastTimestamp int64
	Batches       []producerBatch // oldest first, at most numBatchesToRetain
	// CoordinatorEpoch is the coordinator epoch of the last transaction
	// marker written for this producer (-1 before any).
	CoordinatorEpoch int32
	// TxnFirstOffset is the first offset of the producer's ongoing
	// transaction on this partition, -1 when none (Kafka's
	// currentTxnFirstOffset).
	TxnFirstOffset int64
}

// producerStates maps producer id to its state. It has no lock of its own:
// the owning Log calls it under the partition lock.
type producerStates struct {
	entries map[int64]*producerEntry
	// ongoing maps the producers with an open transaction on this
	// partition to its first offset; the smallest is the last stable offset.
	ongoing map[int64]int64
}

func newProducerStates() *producerStates {
	return &producerStates{entries: make(map[int64]*producerEntry), ongoing: make(map[int64]int64)}
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{Epoch: epoch, CoordinatorEpoch: -1, TxnFirstOffset: -1}
}

// check validates b against the producer's state before it is appended,
// following Kafka's UnifiedLog.analyzeAndValidateProducerState and
// ProducerAppendInfo.checkProducerEpoch / checkSequence:
//   - a non-idempotent batch (ProducerID < 0) is always accepted;
//   - an epoch older than the known one is fenced (InvalidProducerEpoch);
//   - a batch with the same epoch and the same first and last sequence as one of
//     the last 5 batches is a duplicate: its original base offset is returned;
//   - a new epoch of a known producer must start at sequence 0;
//   - an unknown producer may start at any sequence (its state may have been
//     removed by retention, Kafka >= 2.5 accepts it);
//   - otherwise the first sequence must follow the last one (with wrap-around).
func (s *producerStates) check(b batchMeta) (dupBase int64, dup bool, err error) {
	if b.ProducerID < 0 {
		return 0, false, nil
	}
	e, ok := s.entries[b.ProducerID]
	if !ok {
		return 0, false, nil
	}
	if b.ProducerEpoch < e.Epoch {
		return 0, false, fmt.Errorf("producer %d: epoch %d is older than current epoch %d: %w",
			b.ProducerID, b.ProducerEpoch, e.Epoch, kerr.InvalidProducerEpoch)
	}
	if !b.Transactional && e.TxnFirstOffset >= 0 {
		// Kafka's ProducerAppendInfo: a producer with an open transaction
		// may only write transactional batches until its marker.
		return 0, false, fmt.Errorf("producer %d: non-transactional batch while its transaction from offset %d is open: %w",
			b.ProducerID, e.TxnFirstOffset, kerr.InvalidTxnState)
	}
	if b.ProducerEpoch != e.Epoch {
		if b.BaseSequence != 0 {
			return 0, false, fmt.Errorf("producer %d: new epoch %d must start at sequence 0, got %d (current epoch %d): %w",
				b.ProducerID, b.ProducerEpoch, b.BaseSequence, e.Epoch, kerr.OutOfOrderSequenceNumber)
		}
		return 0, false, nil
	}
	last := b.lastSequence()
	for _, pb := range e.Batches {
		if pb.FirstSeq == b.BaseSequence && pb.LastSeq == last {
			return pb.BaseOffset, true, nil
		}
	}
	if len(e.Batches) == 0 {
		return 0, false, nil
	}
	lastSeq := e.Batches[len(e.Batches)-1].LastSeq
	if !inSequence(lastSeq, b.BaseSequence) {
		return 0, false, fmt.Errorf("producer %d epoch %d: out of order sequence %d, expected %d: %w",
			b.ProducerID, b.ProducerEpoch, b.BaseSequence, incrementSequence(lastSeq, 1), kerr.OutOfOrderSequenceNumber)
	}
	return 0, false, nil
}

// update records an appended batch. A newer epoch discards the batches of the
// old one, as Kafka's ProducerStateEntry.maybeUpdateProducerEpoch does.
func (s *producerStates) update(b batchMeta) {
	if b.ProducerID < 0 {
		return
	}
	e, ok := s.entries[b.ProducerID]
	if !ok {
		e = newProducerEntry(b.ProducerEpoch)
		s.entries[b.ProducerID] = e
	}
	if b.ProducerEpoch != e.Epoch {
		e.Epoch = b.ProducerEpoch
		e.Batches = e.Batches[:0]
	}
	if b.Transactional && e.TxnFirstOffset < 0 {
		e.TxnFirstOffset = b.BaseOffset
		s.ongoing[b.ProducerID] = b.BaseOffset
	}
	if len(e.Batches) == numBatchesToRetain {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:numBatchesToRetain-1]
	}
	e.Batches = append(e.Batches, producerBatch{
		FirstSeq:   b.BaseSequence,
		LastSeq:    b.lastSequence(),
		BaseOffset: b.BaseOffset,
		LastOffset: b.BaseOffset + int64(b.LastOffsetDelta),
	})
	e.LastTimestamp = b.MaxTimestamp
}

// truncateAfter drops batches with BaseOffset >= offset, used when recovery
// truncates the log. A producer left without batches is forgotten entirely, so
// its next batch is accepted at any sequence, like an unknown producer.
func (s *producerStates) truncateAfter(offset int64) {
	for pid, e := range s.entries {
		n := 0
		for _, pb := range e.Batches {
			if pb.BaseOffset < offset {
				e.Batches[n] = pb
				n++
			}
		}
		e.Batches = e.Batches[:n]
		if e.TxnFirstOffset >= offset {
			e.TxnFirstOffset = -1
			delete(s.ongoing, pid)
		}
		if n == 0 {
			delete(s.entries, pid)
			delete(s.ongoing, pid)
		}
	}
}

// Producer snapshot file format, <dir>/%020d.snapshot where the number is the
// log offset the snapshot describes (state of all batches below it). It is
// Kafka's ProducerStateManager snapshot, version 1, so kafka-dump-log reads
// it. All integers are big-endian.
//
//	offset  size  field
//	0       2     version (int16), 1
//	2       4     crc (uint32): CRC32C (Castagnoli) of every byte from offset 6 to the end
//	6       4     producer entry count N (int32)
//	10      ...   N entries of 46 bytes, in ascending producer id order:
//	                8  producer_id (int64)
//	                2  epoch (int16)
//	                4  last_sequence (int32): last sequence of the producer's last batch
//	                8  last_offset (int64): last offset of that batch
//	                4  offset_delta (int32): last_offset - first offset of that batch
//	                8  timestamp (int64): max timestamp of that batch
//	                4  coordinator_epoch (int32): of the producer's last marker, -1 if none
//	                8  current_txn_first_offset (int64): first offset of its open
//	                   transaction, -1 if none
//
// The file must end exactly after the last entry. As in Kafka only the last
// batch of each producer is kept: after a restart duplicates are detected
// for that batch plus every batch replayed from the log after the snapshot
// offset, while the running broker remembers the last 5.
func (s *producerStates) encodeSnapshot() []byte {
	pids := make([]int64, 0, len(s.entries))
	for pid, e := range s.entries {
		if len(e.Batches) > 0 {
			pids = append(pids, pid)
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	buf := make([]byte, snapshotHeaderLen, snapshotHeaderLen+4+snapshotEntryLen*len(pids))
	binary.BigEndian.PutUint16(buf, snapshotVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(pids)))
	for _, pid := range pids {
		e := s.entries[pid]
		pb := e.Batches[len(e.Batches)-1]
		buf = binary.BigEndian.AppendUint64(buf, uint64(pid))
		buf = binary.BigEndian.AppendUint16(buf, uint16(e.Epoch))
		buf = binary.BigEndian.AppendUint32(buf, uint32(pb.LastSeq))
		buf = binary.BigEndian.AppendUint64(buf, uint64(pb.LastOffset))
		buf = binary.BigEndian.AppendUint32(buf, uint32(pb.LastOffset-pb.BaseOffset))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.LastTimestamp))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.CoordinatorEpoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.TxnFirstOffset))
	}
	binary.BigEndian.PutUint32(buf[2:6], batch.Checksum(buf[snapshotHeaderLen:]))
	return buf
}

// decodeSnapshot parses a snapshot file's bytes.
func decodeSnapshot(buf []byte) (*producerStates, error) {
	if len(buf) < snapshotHeaderLen+4 {
		return nil, corruptionf("short snapshot: %d bytes", len(buf))
	}
	if v := int16(binary.BigEndian.Uint16(buf)); v != snapshotVersion {
		return nil, fmt.Errorf("unsupported snapshot version %d", v)
	}
	if want, got := binary.BigEndian.Uint32(buf[2:6]), batch.Checksum(buf[snapshotHeaderLen:]); want != got {
		return nil, corruptionf("snapshot crc mismatch: stored %#08x, computed %#08x", want, got)
	}
	n := int32(binary.BigEndian.Uint32(buf[snapshotHeaderLen:]))
	body := buf[snapshotHeaderLen+4:]
	if n < 0 || int64(n)*snapshotEntryLen != int64(len(body)) {
		return nil, corruptionf("snapshot producer count %d does not match %d bytes of entries", n, len(body))
	}
	s := newProducerStates()
	for i := int32(0); i < n; i++ {
		e := body[:snapshotEntryLen]
		body = body[snapshotEntryLen:]
		pid := int64(binary.BigEndian.Uint64(e))
		lastSeq := int32(binary.BigEndian.Uint32(e[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(e[14:]))
		delta := int32(binary.BigEndian.Uint32(e[22:]))
		if pid < 0 || delta < 0 || lastSeq < 0 || lastOffset < int64(delta) {
			return nil, corruptionf("snapshot entry %d (pid %d, last sequence %d, last offset %d, delta %d) is invalid", i, pid, lastSeq, lastOffset, delta)
		}
		if _, exists := s.entries[pid]; exists {
			return nil, corruptionf("snapshot lists producer %d twice", pid)
		}
		firstSeq := lastSeq - delta
		if firstSeq < 0 { // the batch wrapped from MaxInt32 to 0
			firstSeq = int32(int64(firstSeq) + math.MaxInt32 + 1)
		}
		txnFirst := int64(binary.BigEndian.Uint64(e[38:]))
		if txnFirst < -1 || txnFirst > lastOffset {
			return nil, corruptionf("snapshot entry %d (pid %d): transaction first offset %d past its last offset %d", i, pid, txnFirst, lastOffset)
		}
		s.entries[pid] = &producerEntry{
			Epoch:            int16(binary.BigEndian.Uint16(e[8:])),
			LastTimestamp:    int64(binary.BigEndian.Uint64(e[26:])),
			Batches:          []producerBatch{{FirstSeq: firstSeq, LastSeq: lastSeq, BaseOffset: lastOffset - int64(delta), LastOffset: lastOffset}},
			CoordinatorEpoch: int32(binary.BigEndian.Uint32(e[34:])),
			TxnFirstOffset:   txnFirst,
		}
		if txnFirst >= 0 {
			s.ongoing[pid] = txnFirst
		}
	}
	return s, nil
}

func snapshotPath(dir string, offset int64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, snapshotSuffix))
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(fsys vfs.FS, dir string) ([]int64, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list producer snapshots in %s: %w", dir, err)
	}
	var offs []int64
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || !strings.HasSuffix(name, snapshotSuffix) {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSuffix(name, snapshotSuffix), 10, 64)
		if err != nil || off < 0 {
			continue
		}
		offs = append(offs, off)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs, nil
}

// writeSnapshot atomically writes the state as of offset to
// <dir>/%020d.snapshot, then removes snapshots above offset (they describe a
// log that no longer exists, e.g. after truncation) and all but the newest
// snapshotsToKeep at or below it.
func (s *producerStates) writeSnapshot(fsys vfs.FS, dir string, offset int64) error {
	path := snapshotPath(dir, offset)
	if err := replaceFile(fsys, path, s.encodeSnapshot()); err != nil {
		return fmt.Errorf("producer snapshot %d: %w", offset, err)
	}
	offs, err := listSnapshots(fsys, dir)
	if err != nil {
		return err
	}
	kept := 0
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] <= offset && kept < snapshotsToKeep {
			kept++
			continue
		}
		if err := fsys.Remove(snapshotPath(dir, offs[i])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove old producer snapshot %d: %w", offs[i], err)
		}
	}
	return nil
}

// loadProducerSnapshot returns the state from the newest snapshot in dir that
// decodes and passes its CRC, and the offset it describes. A corrupt newer
// snapshot is skipped in favour of an older one; with none usable the result
// is an empty state and offset 0 (replay the whole log).
func loadProducerSnapshot(fsys vfs.FS, dir string) (s *producerStates, offset int64, err error) {
	return loadProducerSnapshotAtOrBelow(fsys, dir, math.MaxInt64)
}

// loadProducerSnapshotAtOrBelow is loadProducerSnapshot ignoring snapshots
// of offsets above limit (recovery replays from below the first recovered
// segment so that its aborted-transaction index is rebuilt).
func loadProducerSnapshotAtOrBelow(fsys vfs.FS, dir string, limit int64) (s *producerStates, offset int64, err error) {
	offs, err := listSnapshots(fsys, dir)
	if err != nil {
		return nil, 0, err
	}
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] > limit {
			continue
		}
		buf, err := slurpFile(fsys, snapshotPath(dir, offs[i]))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, 0, fmt.Errorf("producer snapshot %d: %w", offs[i], err)
		}
		if s, err := decodeSnapshot(buf); err == nil {
			return s, offs[i], nil
		}
	}
	return newProducerStates(), 0, nil
}
