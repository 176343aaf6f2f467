package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The allocation benchmarks drive the broker with pre-encoded requests on
// one raw connection, so allocs/op is (almost all) the broker's own work
// for one request. Run with -benchmem: allocs/op must not grow with the
// records per batch.

// benchBatch is a v2 batch of n records of 100-byte values, CRC included.
func benchBatch(n int) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{'v'}, 100)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	bt := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1), ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(n), Records: recs}
	bt.Length = int32(len(bt.AppendTo(nil)) - 12)
	raw := bt.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// benchConn sends one frame and reads one response at a time.
type benchConn struct {
	c    net.Conn
	resp []byte
}

func dialBench(b *testing.B, br *Broker) *benchConn {
	c, err := net.Dial("tcp", br.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &benchConn{c: c}
}

// roundTrip writes frame and returns the response body after the
// correlation ID and (flexible) empty tag section, valid until the next call.
func (c *benchConn) roundTrip(b *testing.B, frame []byte) []byte {
	if _, err := c.c.Write(frame); err != nil {
		b.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.c, size[:]); err != nil {
		b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if cap(c.resp) < n {
		c.resp = make([]byte, n)
	}
	if _, err := io.ReadFull(c.c, c.resp[:n]); err != nil {
		b.Fatal(err)
	}
	return c.resp[5:n]
}

// benchTopic creates the one-partition topic the benchmarks use.
func benchTopic(b *testing.B, br *Broker) {
	adm := kadm.NewClient(newClient(b, br))
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "allocs"); err != nil {
		b.Fatal(err)
	}
}

// produceFrame is a Produce v11 request frame of one batch of n records to
// partition 0 of "allocs", and the batch's size.
func produceFrame(n int, acks int16) ([]byte, int) {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 11, acks, 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "allocs"
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = benchBatch(n)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return kmsg.NewRequestFormatter().AppendRequest(nil, req, 1), len(p.Records)
}

// BenchmarkProduceAllocs appends one batch per op through a Produce v11
// request (acks=all).
func BenchmarkProduceAllocs(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			br := startBroker(b, nil)
			frame, batchLen := produceFrame(n, -1)
			c := dialBench(b, br)
			benchTopic(b, br)
			b.SetBytes(int64(batchLen))
			b.ReportAllocs()
			for b.Loop() {
				body := c.roundTrip(b, frame)
				resp := kmsg.NewPtrProduceResponse()
				resp.Version = 11
				if b.N == 1 {
					if err := resp.ReadFrom(body); err != nil || kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode) != nil {
						b.Fatalf("produce: %v %+v", err, resp)
					}
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkFetchAllocs reads up to 64 KiB per op through a Fetch v12 request from
// a log of batches of n records.
func BenchmarkFetchAllocs(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			br := startBroker(b, nil)
			benchTopic(b, br)
			frame, _ := produceFrame(n, 1)
			c := dialBench(b, br)
			var end int64
			for end < 200_000 {
				c.roundTrip(b, frame)
				end += int64(n)
			}
			fetch := func(offset int64) []byte {
				req := kmsg.NewPtrFetchRequest()
				req.Version, req.MaxBytes, req.SessionEpoch = 12, 64<<10, -1
				ft := kmsg.NewFetchRequestTopic()
				ft.Topic = "allocs"
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.FetchOffset, fp.PartitionMaxBytes = offset, 64<<10
				ft.Partitions = append(ft.Partitions, fp)
				req.Topics = append(req.Topics, ft)
				return kmsg.NewRequestFormatter().AppendRequest(nil, req, 2)
			}
			// One request frame per starting offset, built before the timer.
			frames := make([][]byte, 64)
			for i := range frames {
				frames[i] = fetch(int64(i) * end / int64(len(frames)))
			}
			// Whole batches only: a response holds 48-64 KiB of them.
			b.SetBytes(int64(len(c.roundTrip(b, frames[0]))))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if body := c.roundTrip(b, frames[i%len(frames)]); len(body) < 48<<10 {
					b.Fatalf("fetch returned %d bytes", len(body))
				}
				i++
			}
		})
	}
}
