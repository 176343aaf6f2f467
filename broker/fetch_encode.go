package broker

import (
	"encoding/binary"

	"github.com/strata-io/strata/metrics"
	"github.com/strata-io/strata/storage"
)

// fetchPartition is one partition of a fetch response; its records stay in
// the segment file (chunk) until the response is written.
type fetchPartition struct {
	partition        int32
	errorCode        int16
	highWatermark    int64
	lastStableOffset int64
	logStartOffset   int64
	readCommitted    bool // aborted transactions: a list (maybe empty) rather than null
	aborted          []storage.Aborted
	chunk            storage.Chunk
	// diverging is a follower's last fetched epoch the leader's log does
	// not end the same (v12+ DivergingEpoch): the leader's epoch and its
	// end offset; diverged false leaves the tagged field out.
	diverged       bool
	divergingEpoch int32
	divergingEnd   int64
	// preferredReadReplica is the replica the consumer should read from
	// next (v11+, KIP-392); leaderID and leaderEpoch are the partition's
	// current leader (tagged CurrentLeader, KIP-951). -1 for none: the
	// zero value is a broker id, so every fetchPartition sets them.
	preferredReadReplica  int32
	leaderID, leaderEpoch int32
}

// fetchNode is the endpoint of a leader a response names (v16+
// NodeEndpoints, KIP-951); rack "" is null.
type fetchNode struct {
	id         int32
	host, rack string
	port       int32
}

type fetchTopic struct {
	name       string
	id         [16]byte
	partitions []fetchPartition
	stats      *metrics.TopicStats // bytes out; nil for unknown topics or metrics off
}

// fetchBody is an encoded fetch response body with holes where file chunks
// go: chunks[i] is sent after body[:holes[i]] and before the bytes up to the
// next hole. It mirrors kmsg.FetchResponse.AppendTo for versions 4-18, minus
// the tagged field Strata never sets (SnapshotId); fetch_encode_test.go
// checks the two agree byte for byte.
type fetchBody struct {
	body   []byte
	holes  []int
	chunks []storage.Chunk
	extra  int // total chunk bytes
}

func encodeFetch(dst []byte, version int16, throttleMs, sessionID int32, errorCode int16, topics []fetchTopic, nodes []fetchNode) fetchBody {
	flex := version >= 12
	e := fetchBody{body: dst}
	e.body = binary.BigEndian.AppendUint32(e.body, uint32(throttleMs))
	if version >= 7 {
		e.body = binary.BigEndian.AppendUint16(e.body, uint16(errorCode))
		e.body = binary.BigEndian.AppendUint32(e.body, uint32(sessionID))
	}
	e.body = appendArrayLen(e.body, len(topics), flex)
	for _, t := range topics {
		if version >= 13 {
			e.body = append(e.body, t.id[:]...)
		} else {
			e.body = appendString(e.body, t.name, flex)
		}
		e.body = appendArrayLen(e.body, len(t.partitions), flex)
		for _, p := range t.partitions {
			e.body = binary.BigEndian.AppendUint32(e.body, uint32(p.partition))
			e.body = binary.BigEndian.AppendUint16(e.body, uint16(p.errorCode))
			e.body = binary.BigEndian.AppendUint64(e.body, uint64(p.highWatermark))
			e.body = binary.BigEndian.AppendUint64(e.body, uint64(p.lastStableOffset))
			if version >= 5 {
				e.body = binary.BigEndian.AppendUint64(e.body, uint64(p.logStartOffset))
			}
			e.body = appendAborted(e.body, p.readCommitted, p.aborted, flex)
			if version >= 11 {
				e.body = binary.BigEndian.AppendUint32(e.body, uint32(p.preferredReadReplica))
			}
			n := p.chunk.Len()
			if flex {
				e.body = binary.AppendUvarint(e.body, uint64(n)+1)
			} else {
				e.body = binary.BigEndian.AppendUint32(e.body, uint32(n))
			}
			if n > 0 {
				e.holes = append(e.holes, len(e.body))
				e.chunks = append(e.chunks, p.chunk)
				e.extra += n
			}
			if flex {
				e.body = appendPartitionTags(e.body, &p)
			}
		}
		if flex {
			e.body = append(e.body, 0) // topic tags
		}
	}
	switch {
	case version >= 16 && len(nodes) > 0:
		e.body = appendNodeEndpoints(e.body, nodes)
	case flex:
		e.body = append(e.body, 0) // response tags
	}
	return e
}

// appendPartitionTags writes a partition's tagged fields, each only when
// set, in tag order: 0 DivergingEpoch {epoch int32, end_offset int64, no
// tags}, 13 bytes; 1 CurrentLeader {leader_id int32, leader_epoch int32,
// no tags}, 9 bytes.
func appendPartitionTags(dst []byte, p *fetchPartition) []byte {
	hinted := p.leaderID != -1 || p.leaderEpoch != -1
	n := 0
	if p.diverged {
		n++
	}
	if hinted {
		n++
	}
	dst = append(dst, byte(n))
	if p.diverged {
		dst = append(dst, 0, 13)
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.divergingEpoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(p.divergingEnd))
		dst = append(dst, 0)
	}
	if hinted {
		dst = append(dst, 1, 9)
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.leaderID))
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.leaderEpoch))
		dst = append(dst, 0)
	}
	return dst
}

// appendNodeEndpoints writes the response's tagged fields with tag 0,
// NodeEndpoints: [{node_id int32, host string, port int32, rack nullable
// string, no tags}].
func appendNodeEndpoints(dst []byte, nodes []fetchNode) []byte {
	var field []byte
	field = appendArrayLen(field, len(nodes), true)
	for _, n := range nodes {
		field = binary.BigEndian.AppendUint32(field, uint32(n.id))
		field = appendString(field, n.host, true)
		field = binary.BigEndian.AppendUint32(field, uint32(n.port))
		if n.rack == "" {
			field = append(field, 0) // null
		} else {
			field = appendString(field, n.rack, true)
		}
		field = append(field, 0) // node tags
	}
	dst = append(dst, 1, 0) // one tagged field, tag 0
	dst = binary.AppendUvarint(dst, uint64(len(field)))
	return append(dst, field...)
}

func appendArrayLen(dst []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(dst, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// appendAborted writes the aborted transactions array: null unless the
// fetch is read_committed, then (producer_id, first_offset) pairs.
func appendAborted(dst []byte, readCommitted bool, aborted []storage.Aborted, flex bool) []byte {
	switch {
	case !readCommitted && flex:
		return append(dst, 0)
	case !readCommitted:
		return binary.BigEndian.AppendUint32(dst, ^uint32(0))
	}
	dst = appendArrayLen(dst, len(aborted), flex)
	for _, a := range aborted {
		dst = binary.BigEndian.AppendUint64(dst, uint64(a.ProducerID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(a.FirstOffset))
		if flex {
			dst = append(dst, 0) // tags
		}
	}
	return dst
}

func appendString(dst []byte, s string, flex bool) []byte {
	if flex {
		dst = binary.AppendUvarint(dst, uint64(len(s))+1)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	}
	return append(dst, s...)
}
