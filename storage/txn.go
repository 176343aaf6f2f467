package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/vfs"
)

// Transactions (KIP-98) in the partition log: see doc.go, "Transactions".

const (
	txnIndexExt = ".txnindex"
	// txnEntryLen is one AbortedTxn entry of Kafka's TransactionIndex:
	// version int16, producerId int64, firstOffset int64, lastOffset int64,
	// lastStableOffset int64.
	txnEntryLen = 2 + 8 + 8 + 8 + 8
	// controlRecordKeyLen is Kafka's ControlRecordType key: version int16 0,
	// type int16 (0 abort, 1 commit).
	controlRecordKeyLen = 4
	// endTxnMarkerValueLen is Kafka's EndTransactionMarker value: version
	// int16 0, coordinator epoch int32.
	endTxnMarkerValueLen = 6
)

// Aborted is one aborted transaction a read_committed fetch returns: the
// producer and the first offset of its transaction on this partition.
type Aborted struct {
	ProducerID  int64
	FirstOffset int64
}

// abortedTxn is one entry of the aborted-transaction index.
type abortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64 // offset of the abort marker
	LastStableOffset int64 // the LSO once the transaction was aborted
}

func (a abortedTxn) encode() []byte {
	b := make([]byte, 0, txnEntryLen)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
}

// readTxnIndex reads a segment's .txnindex; a missing file is empty. A
// torn last entry or an unknown version ends the valid part.
func readTxnIndex(fsys vfs.FS, path string) ([]abortedTxn, error) {
	buf, err := slurpFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transaction index %s: %w", path, err)
	}
	var out []abortedTxn
	for len(buf) >= txnEntryLen {
		if binary.BigEndian.Uint16(buf) != 0 {
			break
		}
		out = append(out, abortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(buf[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(buf[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(buf[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(buf[26:])),
		})
		buf = buf[txnEntryLen:]
	}
	return out, nil
}

// appendTxnIndex adds entry to the .txnindex of the segment at base. The
// file is synced with its segment (deactivate) and rebuilt by recovery for
// segments above the recovery point, like Kafka's.
func appendTxnIndex(fsys vfs.FS, dir string, base int64, a abortedTxn) error {
	path := segmentPath(dir, base, txnIndexExt)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("transaction index %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		_, err = f.WriteAt(a.encode(), fi.Size()-fi.Size()%txnEntryLen)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("transaction index %s: %w", path, err)
	}
	return nil
}

// syncTxnIndex fsyncs the segment's .txnindex if it exists.
func syncTxnIndex(fsys vfs.FS, dir string, base int64) error {
	f, err := fsys.OpenFile(segmentPath(dir, base, txnIndexExt), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// buildControlBatch is Kafka's end transaction marker batch: attributes
// transactional|control, the producer's id and epoch, no sequence, one
// record whose key is the ControlRecordType (version 0, type) and whose
// value is the EndTransactionMarker (version 0, coordinator epoch).
func buildControlBatch(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, ts int64) []byte {
	var rec []byte
	rec = append(rec, 0)              // attributes
	rec = binary.AppendVarint(rec, 0) // timestamp delta
	rec = binary.AppendVarint(rec, 0) // offset delta
	rec = binary.AppendVarint(rec, controlRecordKeyLen)
	typ := uint16(0)
	if commit {
		typ = 1
	}
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint16(rec, typ)
	rec = binary.AppendVarint(rec, endTxnMarkerValueLen)
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint32(rec, uint32(coordinatorEpoch))
	rec = binary.AppendVarint(rec, 0) // headers

	h := batch.Header{
		PartitionLeaderEpoch: -1,
		Magic:                batch.Magic,
		Attributes:           batch.AttrTransactional | batch.AttrControl,
		BaseTimestamp:        ts,
		MaxTimestamp:         ts,
		ProducerID:           producerID,
		ProducerEpoch:        epoch,
		BaseSequence:         -1,
		RecordCount:          1,
	}
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(rec)+binary.MaxVarintLen32)
	h.Put(b)
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	batch.Seal(b)
	return b
}

// parseControlBatch returns whether the control batch b (whole, as read
// from the log) is a commit marker, and its coordinator epoch. ok is false
// for a control record of another type or one that does not parse.
func parseControlBatch(b []byte) (commit bool, coordinatorEpoch int32, ok bool) {
	if len(b) <= batch.HeaderSize {
		return false, 0, false
	}
	it := batch.NewRecords(b[batch.HeaderSize:], 1)
	var r batch.Record
	if !it.Next(&r) || len(r.Key) < controlRecordKeyLen {
		return false, 0, false
	}
	typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
	if typ != 0 && typ != 1 {
		return false, 0, false
	}
	epoch := int32(-1)
	if len(r.Value) >= endTxnMarkerValueLen {
		epoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	}
	return typ == 1, epoch, true
}

// completeTxn applies a marker of producerID at offset to the producer
// state and returns the aborted transaction to index, if any: an abort of
// a transaction that wrote to this partition. Caller holds l.mu (or owns
// ps during recovery).
func completeTxn(ps *producerStates, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, offset, timestamp int64) (abortedTxn, bool) {
	e, ok := ps.entries[producerID]
	if !ok {
		e = newProducerEntry(epoch)
		ps.entries[producerID] = e
	}
	if epoch != e.Epoch {
		e.Epoch = epoch
		e.Batches = e.Batches[:0]
	}
	e.CoordinatorEpoch = coordinatorEpoch
	e.LastTimestamp = timestamp // the marker's, as Kafka's appendEndTxnMarker
	first := e.TxnFirstOffset
	e.TxnFirstOffset = -1
	delete(ps.ongoing, producerID)
	if first < 0 || commit {
		return abortedTxn{}, false
	}
	lso := offset + 1
	for _, o := range ps.ongoing {
		lso = min(lso, o)
	}
	return abortedTxn{ProducerID: producerID, FirstOffset: first, LastOffset: offset, LastStableOffset: lso}, true
}

// AppendControl writes a transaction marker (commit or abort) for the
// producer, as the transaction coordinator does for every partition of a
// transaction it ends, and returns the marker's offset: AppendMarker at
// transaction version 0.
func (l *Log) AppendControl(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, leaderEpoch int32) (int64, error) {
	return l.AppendMarker(producerID, epoch, commit, coordinatorEpoch, leaderEpoch, 0)
}

// AppendMarker writes a transaction marker of a transaction that ran at
// transaction version tv. The producer's open transaction on this
// partition, if any, ends: an abort is added to the aborted-transaction
// index. As Kafka's ProducerAppendInfo.checkProducerEpoch, a marker epoch
// older than the producer's is INVALID_PRODUCER_EPOCH, and from tv 2
// (KIP-1228: every end bumps the epoch) so is one equal to it while the
// producer has a transaction open here (a late marker of the previous
// transaction must not end the next), while an equal one with none open
// is a retry and is written again (KAFKA-19999). An older coordinator
// epoch is TRANSACTION_COORDINATOR_FENCED.
func (l *Log) AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, leaderEpoch int32, tv int8) (int64, error) {
	l.mu.Lock()
	if e, ok := l.producers.entries[producerID]; ok {
		switch {
		case epoch < e.Epoch:
			l.mu.Unlock()
			return 0, fmt.Errorf("marker for producer %d: epoch %d is older than %d: %w", producerID, epoch, e.Epoch, kerr.InvalidProducerEpoch)
		case tv >= 2 && epoch == e.Epoch && e.TxnFirstOffset >= 0:
			l.mu.Unlock()
			return 0, fmt.Errorf("marker for producer %d (transaction version %d): epoch %d is not newer than the open transaction's %d: %w",
				producerID, tv, epoch, e.Epoch, kerr.InvalidProducerEpoch)
		case coordinatorEpoch < e.CoordinatorEpoch:
			l.mu.Unlock()
			return 0, fmt.Errorf("marker for producer %d: coordinator epoch %d is older than %d: %w",
				producerID, coordinatorEpoch, e.CoordinatorEpoch, kerr.TransactionCoordinatorFenced)
		}
	}
	l.mu.Unlock()
	marker := buildControlBatch(producerID, epoch, commit, coordinatorEpoch, l.now().UnixMilli())
	hdr := batch.DecodeHeader(marker)
	res, err := l.appendBatches(marker, []batch.Header{hdr}, leaderEpoch, originCoordinator)
	if err != nil {
		return 0, err
	}
	return res.BaseOffset, nil
}

// onControlAppended updates the transaction state for a marker just
// written to the active segment. Caller holds l.mu.
func (l *Log) onControlAppended(h *batch.Header, b []byte) error {
	commit, coordEpoch, ok := parseControlBatch(b)
	if !ok {
		return nil
	}
	a, aborted := completeTxn(l.producers, h.ProducerID, h.ProducerEpoch, commit, coordEpoch, h.BaseOffset, h.MaxTimestamp)
	if !aborted {
		return nil
	}
	l.aborted = append(l.aborted, a)
	if err := appendTxnIndex(l.fsys, l.dir, l.active().base, a); err != nil {
		return err
	}
	return nil
}

// lastStableLocked is min(first offset of the open transactions, high
// watermark). Caller holds l.mu.
func (l *Log) lastStableLocked() int64 {
	lso := l.hw.offset
	for _, o := range l.producers.ongoing {
		lso = min(lso, o)
	}
	return lso
}

// LastStableOffset is the offset below which every transaction is decided
// (Kafka's LSO): read_committed fetches stop there.
func (l *Log) LastStableOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastStableLocked()
}

// AbortedTransactions lists the aborted transactions that may have records
// in [from, to): those whose marker is at or after from and whose first
// offset is below to, in marker order. As Kafka's
// collectAbortedTransactions, the scan stops at the first entry whose
// last stable offset reached to: no later abort can start before to.
func (l *Log) AbortedTransactions(from, to int64) []Aborted {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= from })
	var out []Aborted
	for _, a := range l.aborted[i:] {
		if a.FirstOffset < to {
			out = append(out, Aborted{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
		}
		if a.LastStableOffset >= to {
			break
		}
	}
	return out
}

// loadTxnIndexes reads the .txnindex of every segment below firstRecovered
// (the others are rebuilt by replay) into l.aborted, dropping entries past
// the log end offset.
func (l *Log) loadTxnIndexes(firstRecovered, leo int64) error {
	l.aborted = nil
	for _, s := range l.segs {
		if s.base >= firstRecovered {
			break
		}
		ents, err := readTxnIndex(l.fsys, segmentPath(l.dir, s.base, txnIndexExt))
		if err != nil {
			return err
		}
		for _, a := range ents {
			if a.LastOffset < leo {
				l.aborted = append(l.aborted, a)
			}
		}
	}
	if n := len(l.aborted); n > 0 {
		l.logger.Debug("loaded aborted transactions", zap.Int("entries", n))
	}
	return nil
}
