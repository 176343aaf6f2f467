package coordinator

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionForMatchesKafka(t *testing.T) {
	for _, tt := range []struct {
		group string
		hash  int32
		part  int32
	}{
		{"hello", 99162322, 22},
		{"", 0, 0},
		// Java's hashCode is Integer.MIN_VALUE here; Utils.abs maps it to 0.
		{"polygenelubricants", -2147483648, 0},
		{"héllo", 103094734, 34}, // non-ASCII: UTF-16 code units
		{"g😀", 1871882, 32},      // a surrogate pair counts as two units
	} {
		if h := javaStringHashCode(tt.group); h != tt.hash {
			t.Errorf("hashCode(%q) = %d, want %d", tt.group, h, tt.hash)
		}
		if p := partitionFor(tt.group, 50); p != tt.part {
			t.Errorf("partitionFor(%q, 50) = %d, want %d", tt.group, p, tt.part)
		}
	}
}

func TestBatchRoundTrip(t *testing.T) {
	o := committedOffset{offset: 42, leaderEpoch: 3, metadata: "m", commitTime: 1000, expireTime: -1}
	recs := []kv{
		{key: offsetCommitKey("g", "t", 1), value: offsetCommitValue(o)},
		{key: groupMetadataKey("g")}, // tombstone
	}
	batch := buildBatch(recs, time.UnixMilli(5000))
	var got []kv
	next, err := batchRecords(batch, func(k, v []byte) error {
		got = append(got, kv{key: k, value: v})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != 2 || len(got) != 2 || got[1].value != nil {
		t.Fatalf("next %d, records %v", next, got)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(got[0].value); err != nil {
		t.Fatal(err)
	}
	if v.Version != 3 || v.Offset != 42 || v.LeaderEpoch != 3 || v.Metadata != "m" || v.CommitTimestamp != 1000 {
		t.Fatalf("value %+v", v)
	}
	if ver, _ := keyVersion(got[1].key); ver != groupMetadataKeyVersion {
		t.Fatalf("group key version %d", ver)
	}
}

// Kafka's coordinator compresses __consumer_offsets batches when
// offsets.topic.compression.codec is set, so an adopted log may hold any
// codec: replay reads each, written by franz-go's compressor.
func TestForEachRecordReadsCompressedBatches(t *testing.T) {
	o := committedOffset{offset: 42, leaderEpoch: 3, metadata: "m", commitTime: 1000, expireTime: -1}
	recs := []kv{
		{key: offsetCommitKey("g", "t", 1), value: offsetCommitValue(o)},
		{key: groupMetadataKey("g")}, // tombstone
	}
	plain := buildBatch(recs, time.UnixMilli(5000))
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(plain); err != nil {
			t.Fatal(err)
		}
		var typ kgo.CompressionCodecType
		rb.Records, typ = comp.Compress(new(bytes.Buffer), rb.Records)
		rb.Attributes |= int16(typ)
		rb.FirstOffset = 100
		b := rb.AppendTo(nil)
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		var got []kv
		var offsets []int64
		next, err := forEachRecord(b, func(bi *batchInfo, k, v []byte) error {
			got = append(got, kv{key: k, value: v})
			offsets = append(offsets, bi.offset)
			return nil
		})
		if err != nil {
			t.Fatalf("codec %d: %v", typ, err)
		}
		if next != 102 || len(got) != 2 || !bytes.Equal(got[0].key, recs[0].key) || !bytes.Equal(got[0].value, recs[0].value) ||
			got[1].value != nil || offsets[0] != 100 || offsets[1] != 101 {
			t.Fatalf("codec %d: next %d, offsets %v, records %v", typ, next, offsets, got)
		}
	}
}
