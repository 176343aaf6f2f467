package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record is one record of an uncompressed records section, whose fields
// are zigzag varints: length, attributes int8, timestampDelta,
// offsetDelta, keyLength, key, valueLength, value, header count, headers.
// Key, Value and Headers alias the section.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil when null; empty but not nil when of length 0
	Value          []byte // nil when null (a tombstone)
	// Headers is the header count and headers as stored; CheckHeaders
	// parses them. Only a reader that needs them pays for it.
	Headers []byte

	raw  []byte // length varint + body, as stored
	tail []byte // from keyLength on
}

// Records iterates over the records of an uncompressed records section:
//
//	it := batch.NewRecords(section, h.RecordCount)
//	var r batch.Record
//	for it.Next(&r) { ... }
//	if err := it.Err(); err != nil { ... }
//
// It never allocates: r is the caller's, and every length is checked
// against the section before it is used.
type Records struct {
	rest  []byte
	count int32
	index int32
	err   error
}

// NewRecords iterates over count records of section, which must hold
// exactly those records (Kafka's "records still remaining" otherwise).
func NewRecords(section []byte, count int32) Records {
	return Records{rest: section, count: count}
}

// Next parses the next record into r; it returns false after the last
// record or at the first that does not parse, which Err then reports.
func (it *Records) Next(r *Record) bool {
	if it.err != nil {
		return false
	}
	if it.index >= it.count {
		if len(it.rest) != 0 {
			it.err = fmt.Errorf("%d bytes after the last of %d records", len(it.rest), it.count)
		}
		return false
	}
	if err := parseRecord(it.rest, r); err != nil {
		it.err = fmt.Errorf("record %d: %w", it.index, err)
		return false
	}
	it.rest = it.rest[len(r.raw):]
	it.index++
	return true
}

// Err is why iteration stopped early, or nil after the last record.
func (it *Records) Err() error { return it.err }

var (
	errLength      = errors.New("bad length")
	errTimestamp   = errors.New("bad timestamp delta")
	errOffsetDelta = errors.New("bad offset delta")
	errKeyLength   = errors.New("bad key length")
	errValueLength = errors.New("bad value length")
	errHeaders     = errors.New("bad headers")
)

// parseRecord parses the record at the start of b into r.
func parseRecord(b []byte, r *Record) error {
	length, n := binary.Varint(b)
	if n <= 0 || length < 1 || int64(len(b)-n) < length {
		return errLength
	}
	r.raw = b[:n+int(length)]
	body := b[n : n+int(length)]
	r.Attributes = int8(body[0])
	p := 1
	ts, m := binary.Varint(body[p:])
	if m <= 0 {
		return errTimestamp
	}
	p += m
	od, m := binary.Varint(body[p:])
	if m <= 0 || od != int64(int32(od)) {
		return errOffsetDelta
	}
	p += m
	r.TimestampDelta, r.OffsetDelta, r.tail = ts, int32(od), body[p:]
	var ok bool
	if r.Key, p, ok = nullableBytes(body, p); !ok {
		return errKeyLength
	}
	if r.Value, p, ok = nullableBytes(body, p); !ok {
		return errValueLength
	}
	r.Headers = body[p:]
	return nil
}

// nullableBytes reads a varint length and that many bytes of b at p
// (nil for length -1), returning the position after them.
func nullableBytes(b []byte, p int) ([]byte, int, bool) {
	l, m := binary.Varint(b[p:])
	if m <= 0 || l < -1 || l > int64(len(b)-p-m) {
		return nil, p, false
	}
	p += m
	if l < 0 {
		return nil, p, true
	}
	return b[p : p+int(l) : p+int(l)], p + int(l), true
}

// CheckHeaders parses r's headers (count, then each key, never null, and
// value), as Kafka's DefaultRecord.readFrom does.
func (r *Record) CheckHeaders() error {
	count, p := binary.Varint(r.Headers)
	if p <= 0 || count < 0 {
		return errHeaders
	}
	for range count {
		key, next, ok := nullableBytes(r.Headers, p)
		if !ok || key == nil {
			return errHeaders
		}
		if _, p, ok = nullableBytes(r.Headers, next); !ok {
			return errHeaders
		}
	}
	return nil
}

// AppendTo appends r to dst re-encoded with timestampDelta (relative to a
// new base timestamp), or as stored when the delta is unchanged.
func (r *Record) AppendTo(dst []byte, timestampDelta int64) []byte {
	if timestampDelta == r.TimestampDelta {
		return append(dst, r.raw...)
	}
	var body [1 + 2*binary.MaxVarintLen64]byte
	body[0] = byte(r.Attributes)
	n := 1 + binary.PutVarint(body[1:], timestampDelta)
	n += binary.PutVarint(body[n:], int64(r.OffsetDelta))
	dst = binary.AppendVarint(dst, int64(n+len(r.tail)))
	dst = append(dst, body[:n]...)
	return append(dst, r.tail...)
}
