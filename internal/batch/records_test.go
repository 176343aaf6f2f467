package batch

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgRecords encodes records with franz-go's kmsg, an encoder independent
// of this package.
func kmsgRecords(recs ...kmsg.Record) []byte {
	var out []byte
	for _, r := range recs {
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 encodes as one byte
		out = r.AppendTo(out)
	}
	return out
}

var sampleRecords = []kmsg.Record{
	{Attributes: 0, TimestampDelta64: 0, OffsetDelta: 0, Key: []byte("k0"), Value: []byte("v0")},
	{TimestampDelta64: 5, OffsetDelta: 1, Key: nil, Value: []byte("keyless")},
	{TimestampDelta64: -3, OffsetDelta: 2, Key: []byte{}, Value: nil}, // empty key, tombstone
	{TimestampDelta64: 1 << 40, OffsetDelta: 300, Key: []byte("k3"), Value: []byte{},
		Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}},
}

func TestRecordsDecodesKmsgRecords(t *testing.T) {
	it := NewRecords(kmsgRecords(sampleRecords...), int32(len(sampleRecords)))
	var r Record
	i := 0
	for ; it.Next(&r); i++ {
		w := sampleRecords[i]
		if r.TimestampDelta != w.TimestampDelta64 || r.OffsetDelta != w.OffsetDelta ||
			!bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) {
			t.Errorf("record %d: %+v, want %+v", i, r, w)
		}
		if (r.Key == nil) != (w.Key == nil) || (r.Value == nil) != (w.Value == nil) {
			t.Errorf("record %d: null key %v value %v, want %v %v", i, r.Key == nil, r.Value == nil, w.Key == nil, w.Value == nil)
		}
		if err := r.CheckHeaders(); err != nil {
			t.Errorf("record %d headers: %v", i, err)
		}
	}
	if err := it.Err(); err != nil || i != len(sampleRecords) {
		t.Fatalf("%d records, err %v", i, err)
	}
}

func TestRecordsRefusesMalformed(t *testing.T) {
	good := kmsgRecords(sampleRecords[0])
	badKey := kmsgRecords(kmsg.Record{Key: []byte("kk"), Value: []byte("v")})
	badKey[4] = 0x7e // key length varint: 63, past the record
	badValue := kmsgRecords(kmsg.Record{Key: []byte("k"), Value: []byte("v")})
	badValue[6] = 0x03                               // value length varint: -2
	body := binary.AppendVarint([]byte{0, 0}, 1<<31) // attributes, timestamp delta, offset delta
	body = append(body, 1, 1, 0)                     // null key, null value, no headers
	wideDelta := append(binary.AppendVarint(nil, int64(len(body))), body...)
	for _, c := range []struct {
		name  string
		recs  []byte
		count int32
		want  string
	}{
		{"empty section", nil, 1, "record 0: bad length"},
		{"zero length", []byte{0}, 1, "record 0: bad length"},
		{"length past section", good[:len(good)-1], 1, "record 0: bad length"},
		{"offset delta past int32", wideDelta, 1, "record 0: bad offset delta"},
		{"key past record", badKey, 1, "record 0: bad key length"},
		{"value length -2", badValue, 1, "record 0: bad value length"},
		{"fewer records than counted", good, 2, "record 1: bad length"},
		{"bytes after the last record", append(bytes.Clone(good), 0), 1, "1 bytes after the last of 1 records"},
	} {
		it := NewRecords(c.recs, c.count)
		var r Record
		for it.Next(&r) {
		}
		if err := it.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCheckHeadersRefusesMalformed(t *testing.T) {
	for name, h := range map[string][]byte{
		"no count":         {},
		"negative count":   binary.AppendVarint(nil, -1),
		"missing header":   binary.AppendVarint(nil, 1),
		"null key":         binary.AppendVarint(binary.AppendVarint(binary.AppendVarint(nil, 1), -1), -1),
		"value past end":   append(binary.AppendVarint(binary.AppendVarint(nil, 1), 1), 'k', 4, 'v'),
		"truncated varint": {0x80},
	} {
		r := Record{Headers: h}
		if err := r.CheckHeaders(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// AppendTo copies a record whose delta is unchanged and otherwise
// re-encodes it with only the timestamp delta and length changed.
func TestAppendTo(t *testing.T) {
	recs := kmsgRecords(sampleRecords...)
	it := NewRecords(recs, int32(len(sampleRecords)))
	var r Record
	var same, shifted []byte
	for it.Next(&r) {
		same = r.AppendTo(same, r.TimestampDelta)
		shifted = r.AppendTo(shifted, r.TimestampDelta-1000)
	}
	if it.Err() != nil || !bytes.Equal(same, recs) {
		t.Fatalf("unchanged deltas: %v\n%x\nwant\n%x", it.Err(), same, recs)
	}
	want := make([]kmsg.Record, len(sampleRecords))
	for i, w := range sampleRecords {
		w.TimestampDelta64 -= 1000
		want[i] = w
	}
	if wantBytes := kmsgRecords(want...); !bytes.Equal(shifted, wantBytes) {
		t.Fatalf("shifted deltas:\n%x\nwant\n%x", shifted, wantBytes)
	}
}

func TestRecordsDoesNotAllocate(t *testing.T) {
	recs := kmsgRecords(sampleRecords...)
	allocs := testing.AllocsPerRun(100, func() {
		it := NewRecords(recs, int32(len(sampleRecords)))
		var r Record
		for it.Next(&r) {
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per iteration", allocs)
	}
}

// FuzzRecords: any section either parses into records that re-encode to
// exactly the section, or stops with an error; it never panics.
func FuzzRecords(f *testing.F) {
	f.Add(kmsgRecords(sampleRecords...), int32(len(sampleRecords)))
	f.Add([]byte{0x02, 0, 0}, int32(1))
	f.Add([]byte{0x7f}, int32(3))
	f.Fuzz(func(t *testing.T, recs []byte, count int32) {
		it := NewRecords(recs, count)
		var r Record
		var again []byte
		for it.Next(&r) {
			again = r.AppendTo(again, r.TimestampDelta)
			_ = r.CheckHeaders()
		}
		if it.Err() == nil && !bytes.Equal(again, recs) {
			t.Fatalf("parsed %x from %x", again, recs)
		}
	})
}
