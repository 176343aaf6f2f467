package broker

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigFrameValue is record i of partition p in round r: 1000 bytes.
func bigFrameValue(r, p, i int) []byte {
	v := bytes.Repeat([]byte{byte(r*31 + p*7 + i)}, 1000)
	copy(v, fmt.Sprintf("%d/%d/%d", r, p, i))
	return v
}

// bigFrameBatch is a magic-2 batch of n bigFrameValue records.
func bigFrameBatch(r, p, n int) []byte {
	now := time.Now().UnixMilli()
	var records []byte
	for i := 0; i < n; i++ {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Value = bigFrameValue(r, p, i)
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		records = rec.AppendTo(records)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = int32(n - 1)
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.NumRecords = int32(n)
	b.Records = records
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// TestBigProduceFramesReuseBuffers sends Produce requests of 1.8 to 3.6 MB
// (four partitions, one batch each) on one connection, so later requests are
// read into pooled buffers (the broker's framePool) that held earlier ones, and checks
// every record reads back with its own value.
func TestBigProduceFramesReuseBuffers(t *testing.T) {
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(newClient(t, b)).CreateTopic(ctx, 4, 1, nil, "big"); err != nil {
		t.Fatal(err)
	}
	sizes := []int{600, 450, 900, 600, 750} // records per batch, per round
	c := dialRaw(t, b)
	for r, n := range sizes {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "big"
		for p := 0; p < 4; p++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(p)
			rp.Records = bigFrameBatch(r, p, n)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		c.sendRequest(req, 7, int32(r))
		_, body, err := c.recv(false)
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(7)
		if err := resp.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		for _, rp := range resp.Topics[0].Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("round %d partition %d: error %d", r, rp.Partition, rp.ErrorCode)
			}
		}
	}
	total := 0
	for _, n := range sizes {
		total += 4 * n
	}
	consumer := newClient(t, b, kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := 0
	for seen < total {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", seen, total, err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			r, i := 0, int(rec.Offset)
			for i >= sizes[r] {
				i -= sizes[r]
				r++
			}
			if want := bigFrameValue(r, int(rec.Partition), i); !bytes.Equal(rec.Value, want) {
				t.Fatalf("partition %d offset %d: value %.20q, want %.20q", rec.Partition, rec.Offset, rec.Value, want)
			}
			seen++
		})
	}
}
