package otlp

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func bytesField(num protowire.Number, parts ...[]byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), slices.Concat(parts...))
}

func strField(num protowire.Number, s string) []byte { return bytesField(num, []byte(s)) }

func varintField(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func fixedField(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), v)
}

// TestDecode decodes a MetricsData as opentelemetry-proto lays it out: a
// gauge of doubles, a delta non-monotonic sum of ints with attributes of
// every scalar type, a histogram (skipped), a point without a value
// (skipped), and unknown fields (skipped); a truncated message is an error.
func TestDecode(t *testing.T) {
	attr := func(key string, value []byte) []byte { return bytesField(7, strField(1, key), bytesField(2, value)) }
	gauge := bytesField(2, strField(1, "g"), strField(2, "a gauge"), bytesField(5,
		bytesField(1, fixedField(3, 42), fixedField(4, math.Float64bits(1.5)), attr("node_id", strField(1, "1"))),
		bytesField(1, fixedField(3, 43)))) // no value
	sum := bytesField(2, strField(1, "s"), bytesField(7,
		bytesField(1, fixedField(6, uint64(1<<40)), attr("b", varintField(2, 1)), attr("a", varintField(3, 7)), attr("d", fixedField(4, math.Float64bits(0.25)))),
		varintField(2, 1), varintField(3, 0)))
	histogram := bytesField(2, strField(1, "h"), bytesField(9, bytesField(1, fixedField(3, 1))))
	data := bytesField(1, bytesField(1, attr("service.name", strField(1, "x"))), varintField(99, 5),
		bytesField(2, bytesField(1, strField(1, "scope")), gauge, sum, histogram))
	var got []Point
	if err := Decode(data, func(p Point) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	want := []Point{
		{Metric: "g", Attrs: []Attr{{"node_id", "1"}}, Value: 1.5, TimeUnixNano: 42},
		{Metric: "s", Sum: true, Delta: true, Attrs: []Attr{{"a", "7"}, {"b", "true"}, {"d", "0.25"}}, Value: 1 << 40},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded %+v\nwant %+v", got, want)
	}
	if err := Decode(data[:len(data)-3], func(Point) {}); !errors.Is(err, errMalformed) {
		t.Errorf("truncated: %v, want errMalformed", err)
	}
}
