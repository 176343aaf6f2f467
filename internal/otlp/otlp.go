// Package otlp decodes the few OpenTelemetry protobuf messages a KIP-714
// client pushes (opentelemetry-proto's metrics/v1 MetricsData): the
// number data points of its gauges and sums, with their attributes.
// Histograms, exponential histograms and summaries, which Kafka's clients
// do not send, and resource and scope attributes are skipped.
package otlp

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Point is one number data point of a gauge or a sum.
type Point struct {
	Metric string // the metric's name, e.g. org.apache.kafka.producer.record.send.total
	Sum    bool   // a sum (a Prometheus counter when Monotonic), else a gauge
	// Monotonic and Delta are a sum's is_monotonic and whether its
	// aggregation temporality is DELTA (else CUMULATIVE).
	Monotonic, Delta bool
	Attrs            []Attr // by key
	Value            float64
	TimeUnixNano     uint64
}

// Attr is one attribute of a point, its value in text.
type Attr struct{ Key, Value string }

var errMalformed = errors.New("malformed OTLP metrics")

// Field numbers of opentelemetry-proto's metrics/v1 and common/v1.
const (
	metricsDataResourceMetrics = 1
	resourceMetricsScope       = 2
	scopeMetricsMetrics        = 2
	metricName                 = 1
	metricGauge                = 5
	metricSum                  = 7
	gaugeDataPoints            = 1
	sumDataPoints              = 1
	sumTemporality             = 2
	sumMonotonic               = 3
	pointTime                  = 3
	pointDouble                = 4
	pointInt                   = 6
	pointAttributes            = 7
	keyValueKey                = 1
	keyValueValue              = 2
	anyString                  = 1
	anyBool                    = 2
	anyInt                     = 3
	anyDouble                  = 4

	temporalityDelta = 1
)

// Decode calls fn for each point of a serialized MetricsData.
func Decode(b []byte, fn func(Point)) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != metricsDataResourceMetrics || typ != protowire.BytesType {
			return nil
		}
		return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if num != resourceMetricsScope || typ != protowire.BytesType {
				return nil
			}
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != scopeMetricsMetrics || typ != protowire.BytesType {
					return nil
				}
				return decodeMetric(v, fn)
			})
		})
	})
}

func decodeMetric(b []byte, fn func(Point)) error {
	var name string
	var data [][]byte
	var sums []bool
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == metricName && typ == protowire.BytesType:
			name = string(v)
		case (num == metricGauge || num == metricSum) && typ == protowire.BytesType:
			data, sums = append(data, v), append(sums, num == metricSum)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, d := range data {
		p := Point{Metric: name, Sum: sums[i]}
		var points [][]byte
		err := fields(d, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
			switch {
			case num == gaugeDataPoints && typ == protowire.BytesType:
				points = append(points, v)
			case p.Sum && num == sumTemporality && typ == protowire.VarintType:
				p.Delta = n == temporalityDelta
			case p.Sum && num == sumMonotonic && typ == protowire.VarintType:
				p.Monotonic = n != 0
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, pb := range points {
			q := p
			if ok, err := decodePoint(pb, &q); err != nil {
				return err
			} else if ok {
				fn(q)
			}
		}
	}
	return nil
}

// decodePoint fills p from a NumberDataPoint; ok is false for a point
// without a value.
func decodePoint(b []byte, p *Point) (ok bool, err error) {
	err = fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == pointTime && typ == protowire.Fixed64Type:
			p.TimeUnixNano = n
		case num == pointDouble && typ == protowire.Fixed64Type:
			p.Value, ok = math.Float64frombits(n), true
		case num == pointInt && typ == protowire.Fixed64Type:
			p.Value, ok = float64(int64(n)), true
		case num == pointAttributes && typ == protowire.BytesType:
			a, err := decodeKeyValue(v)
			if err != nil {
				return err
			}
			p.Attrs = append(p.Attrs, a)
		}
		return nil
	})
	slices.SortFunc(p.Attrs, func(x, y Attr) int { return strings.Compare(x.Key, y.Key) })
	return ok, err
}

func decodeKeyValue(b []byte) (Attr, error) {
	var a Attr
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == keyValueKey && typ == protowire.BytesType:
			a.Key = string(v)
		case num == keyValueValue && typ == protowire.BytesType:
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == anyString && typ == protowire.BytesType:
					a.Value = string(v)
				case num == anyBool && typ == protowire.VarintType:
					a.Value = strconv.FormatBool(n != 0)
				case num == anyInt && typ == protowire.VarintType:
					a.Value = strconv.FormatInt(int64(n), 10)
				case num == anyDouble && typ == protowire.Fixed64Type:
					a.Value = strconv.FormatFloat(math.Float64frombits(n), 'g', -1, 64)
				}
				return nil
			})
		}
		return nil
	})
	return a, err
}

// fields calls fn for each field of a message: its number and wire type,
// and its bytes (BytesType) or its number (the others).
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var y uint32
			y, n = protowire.ConsumeFixed32(b)
			x = uint64(y)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: %w", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
