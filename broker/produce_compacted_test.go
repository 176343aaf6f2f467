package broker

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// keysBatch is a magic-2 batch with one record per key (nil: no key),
// gzip-compressed when compress is set.
func keysBatch(t *testing.T, compress bool, keys ...[]byte) []byte {
	t.Helper()
	var records []byte
	for i, k := range keys {
		r := kmsg.NewRecord()
		r.OffsetDelta, r.Key, r.Value = int32(i), k, []byte(fmt.Sprintf("value-%d", i))
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	b := kmsg.NewRecordBatch()
	if compress {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(records); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		records, b.Attributes = buf.Bytes(), 1
	}
	now := time.Now().UnixMilli()
	b.Magic, b.LastOffsetDelta, b.NumRecords = 2, int32(len(keys)-1), int32(len(keys))
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.Records = records
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], castagnoli))
	return b.AppendTo(nil)
}

// TestCompactedTopicRefusesKeylessRecords checks Kafka's LogValidator rule
// over the wire: a batch with keyless records, compressed or not, is
// refused whole on a compacted topic with INVALID_RECORD, Kafka's message
// and (v8+) each keyless record in record_errors; nothing is written.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(testCtx(t), 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "keyed"); err != nil {
		t.Fatal(err)
	}
	produce := func(version int16, batch []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "keyed"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return adminRoundTrip[*kmsg.ProduceResponse](t, b, req, version).Topics[0].Partitions[0]
	}
	key := []byte("k")
	if p := produce(9, keysBatch(t, false, key, key)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("keyed batch: error %v, base offset %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	const why = "Compacted topic cannot accept message without key in topic partition keyed-0"
	for _, compress := range []bool{false, true} {
		p := produce(9, keysBatch(t, compress, key, nil, key, nil))
		wantMsg := "One or more records have been rejected due to 2 record errors in total, and only showing the first three errors at most: " +
			"[RecordError(batchIndex=1, message='" + why + "'), RecordError(batchIndex=3, message='" + why + "')]"
		if p.ErrorCode != kerr.InvalidRecord.Code || p.BaseOffset != -1 || derefOr(p.ErrorMessage) != wantMsg {
			t.Fatalf("gzip %v: error %v, base offset %d, message %q", compress, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, derefOr(p.ErrorMessage))
		}
		if len(p.ErrorRecords) != 2 {
			t.Fatalf("gzip %v: record errors %+v, want records 1 and 3", compress, p.ErrorRecords)
		}
		for i, want := range []int32{1, 3} {
			if er := p.ErrorRecords[i]; er.RelativeOffset != want || derefOr(er.ErrorMessage) != why {
				t.Fatalf("gzip %v: record error %d is %d %q, want %d %q", compress, i, er.RelativeOffset, derefOr(er.ErrorMessage), want, why)
			}
		}
	}
	if p := produce(7, keysBatch(t, false, nil)); p.ErrorCode != kerr.InvalidRecord.Code || len(p.ErrorRecords) != 0 {
		t.Fatalf("v7: error %v, record errors %+v", kerr.ErrorForCode(p.ErrorCode), p.ErrorRecords)
	}
	end := adminRoundTrip[*kmsg.ListOffsetsResponse](t, b, listEnd("keyed"), 7).Topics[0].Partitions[0]
	if end.Offset != 2 {
		t.Fatalf("log end offset %d: want 2, only the keyed batch written", end.Offset)
	}
}
