package coordinator

import (
	"encoding/binary"
	"errors"
)

// The records of __share_group_state, written from Kafka 4.4's share
// coordinator schemas (kafka-share-coordinator-4.4.0.jar,
// common/message/Share{Snapshot,Update}{Key,Value}.json): a snapshot is a
// share-partition's whole state, an update the state batches one write
// changed, to be merged into the snapshot before it. The key's version is
// the record type; the value is version 0 and flexible.
const (
	shareSnapshotType = 0 // ShareSnapshot
	shareUpdateType   = 1 // ShareUpdate
)

// shareKey is the key of both records: the share-partition.
type shareKey struct {
	typ       int16
	group     string
	topicID   [16]byte
	partition int32
}

func (k shareKey) encode() []byte {
	w := &recWriter{}
	w.int16(k.typ)
	w.b = appendString(w.b, k.group)
	w.b = append(w.b, k.topicID[:]...)
	w.int32(k.partition)
	return w.b
}

func decodeShareKey(b []byte) (shareKey, error) {
	r := &recReader{b: b}
	k := shareKey{typ: r.int16()}
	if r.err == nil && k.typ != shareSnapshotType && k.typ != shareUpdateType {
		r.fail(errors.New("not a share state record type"))
	}
	k.group = r.string()
	k.topicID = r.uuid()
	k.partition = r.int32()
	return k, r.done("share state record key")
}

// shareStateBatch is a StateBatch of either record.
type shareStateBatch struct {
	first, last   int64
	deliveryState int8
	deliveryCount int16
	unknown       []rawTag
}

// shareSnapshotValue is ShareSnapshotValue v0.
type shareSnapshotValue struct {
	snapshotEpoch, stateEpoch, leaderEpoch int32
	startOffset                            int64
	// deliveryCompleteCount is tag 0 (KIP-1226, 4.2); -1, its default, is
	// not written.
	deliveryCompleteCount       int32
	createTimestamp, writeStamp int64
	batches                     []shareStateBatch
	unknown                     []rawTag
}

// shareUpdateValue is ShareUpdateValue v0; startOffset -1 leaves the
// snapshot's.
type shareUpdateValue struct {
	snapshotEpoch, leaderEpoch int32
	startOffset                int64
	deliveryCompleteCount      int32 // tag 0, as in the snapshot
	batches                    []shareStateBatch
	unknown                    []rawTag
}

func (w *recWriter) shareBatches(bs []shareStateBatch) {
	w.arrayLen(len(bs))
	for _, b := range bs {
		w.int64(b.first)
		w.int64(b.last)
		w.int8(b.deliveryState)
		w.int16(b.deliveryCount)
		w.tags(nil, b.unknown)
	}
}

func (r *recReader) shareBatches() []shareStateBatch {
	n := r.arrayLen(20)
	if n < 0 {
		r.fail(errors.New("null state batches"))
		return nil
	}
	out := make([]shareStateBatch, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		b := shareStateBatch{first: r.int64(), last: r.int64(), deliveryState: r.int8(), deliveryCount: r.int16()}
		b.unknown = r.tags(noKnownTags)
		out = append(out, b)
	}
	return out
}

func int32Tag(tag uint32, v, def int32) []rawTag {
	if v == def {
		return nil
	}
	return []rawTag{{tag: tag, data: binary.BigEndian.AppendUint32(nil, uint32(v))}}
}

// readCompleteCount takes tag 0, the delivery-complete count.
func readCompleteCount(dst *int32) func(uint32, []byte) bool {
	return func(tag uint32, data []byte) bool {
		if tag != 0 || len(data) != 4 {
			return false
		}
		*dst = int32(binary.BigEndian.Uint32(data))
		return true
	}
}

func (v *shareSnapshotValue) encode() []byte {
	w := newValue()
	w.int32(v.snapshotEpoch)
	w.int32(v.stateEpoch)
	w.int32(v.leaderEpoch)
	w.int64(v.startOffset)
	w.int64(v.createTimestamp)
	w.int64(v.writeStamp)
	w.shareBatches(v.batches)
	w.tags(int32Tag(0, v.deliveryCompleteCount, -1), v.unknown)
	return w.b
}

func decodeShareSnapshot(b []byte) (v shareSnapshotValue, err error) {
	r := &recReader{b: b}
	v.deliveryCompleteCount = -1
	if valueHeader(r, "ShareSnapshotValue") {
		v.snapshotEpoch = r.int32()
		v.stateEpoch = r.int32()
		v.leaderEpoch = r.int32()
		v.startOffset = r.int64()
		v.createTimestamp = r.int64()
		v.writeStamp = r.int64()
		v.batches = r.shareBatches()
		v.unknown = r.tags(readCompleteCount(&v.deliveryCompleteCount))
	}
	return v, r.done("ShareSnapshotValue")
}

func (v *shareUpdateValue) encode() []byte {
	w := newValue()
	w.int32(v.snapshotEpoch)
	w.int32(v.leaderEpoch)
	w.int64(v.startOffset)
	w.shareBatches(v.batches)
	w.tags(int32Tag(0, v.deliveryCompleteCount, -1), v.unknown)
	return w.b
}

func decodeShareUpdate(b []byte) (v shareUpdateValue, err error) {
	r := &recReader{b: b}
	v.deliveryCompleteCount = -1
	if valueHeader(r, "ShareUpdateValue") {
		v.snapshotEpoch = r.int32()
		v.leaderEpoch = r.int32()
		v.startOffset = r.int64()
		v.batches = r.shareBatches()
		v.unknown = r.tags(readCompleteCount(&v.deliveryCompleteCount))
	}
	return v, r.done("ShareUpdateValue")
}
