package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stdTable is the standard library's CRC-32C: the oracle the tests check
// this package's table against, and the alternative BenchmarkCRC32C
// measures it against.
var stdTable = crc32.MakeTable(crc32.Castagnoli)

// kmsgBatch encodes a batch with franz-go's kmsg, an encoder independent
// of this package, and checksums it with the standard library.
func kmsgBatch(rb kmsg.RecordBatch) []byte {
	rb.Magic = 2
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], stdTable))
	return raw
}

var sampleBatch = kmsg.RecordBatch{
	FirstOffset: 1234, PartitionLeaderEpoch: 7, Attributes: AttrTransactional | CodecLZ4,
	LastOffsetDelta: 4, FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000004,
	ProducerID: 99, ProducerEpoch: 3, FirstSequence: 42, NumRecords: 5, Records: []byte("records section"),
}

// Every field decodes from the offset Kafka's DefaultRecordBatch puts it
// at, and Put writes it back there.
func TestHeaderMatchesKafkaLayout(t *testing.T) {
	raw := kmsgBatch(sampleBatch)
	h := DecodeHeader(raw)
	want := Header{
		BaseOffset: 1234, BatchLength: int32(len(raw) - 12), PartitionLeaderEpoch: 7, Magic: 2,
		CRC: crc32.Checksum(raw[21:], stdTable), Attributes: AttrTransactional | CodecLZ4, LastOffsetDelta: 4,
		BaseTimestamp: 1700000000000, MaxTimestamp: 1700000000004, ProducerID: 99, ProducerEpoch: 3,
		BaseSequence: 42, RecordCount: 5,
	}
	if h != want {
		t.Fatalf("decoded %+v\nwant    %+v", h, want)
	}
	if h.Size() != int64(len(raw)) || h.LastOffset() != 1238 || h.NextOffset() != 1239 ||
		h.Compression() != CodecLZ4 || !h.Transactional() || h.Control() {
		t.Fatalf("accessors of %+v", h)
	}
	out := make([]byte, HeaderSize)
	h.Put(out)
	if !bytes.Equal(out, raw[:HeaderSize]) {
		t.Fatalf("Put wrote\n%x\nwant\n%x", out, raw[:HeaderSize])
	}
}

// Seal computes the length and CRC kmsg and the standard library's CRC-32C
// give the same batch.
func TestSeal(t *testing.T) {
	want := kmsgBatch(sampleBatch)
	b := bytes.Clone(want)
	binary.BigEndian.PutUint32(b[OffBatchLength:], 0)
	binary.BigEndian.PutUint32(b[OffCRC:], 0)
	Seal(b)
	if !bytes.Equal(b, want) {
		t.Fatalf("sealed\n%x\nwant\n%x", b, want)
	}
	if CRC(b) != DecodeHeader(b).CRC {
		t.Fatal("CRC disagrees with the sealed field")
	}
	if got, want := UpdateCRC(UpdateCRC(0, b[OffAttributes:30]), b[30:]), CRC(b); got != want {
		t.Fatalf("UpdateCRC in two pieces %08x, want %08x", got, want)
	}
	if got, want := Checksum([]byte("snapshot")), crc32.Checksum([]byte("snapshot"), stdTable); got != want {
		t.Fatalf("Checksum %08x, want %08x", got, want)
	}
}

func TestNext(t *testing.T) {
	one := kmsgBatch(sampleBatch)
	two := append(bytes.Clone(one), kmsgBatch(kmsg.RecordBatch{NumRecords: 1})...)
	first, rest, ok := Next(two)
	if !ok || !bytes.Equal(first, one) || len(rest) != len(two)-len(one) {
		t.Fatalf("first of two: %v, %d bytes, %d left", ok, len(first), len(rest))
	}
	if second, rest, ok := Next(rest); !ok || len(second) != len(two)-len(one) || len(rest) != 0 {
		t.Fatalf("second of two: %v, %d bytes, %d left", ok, len(second), len(rest))
	}
	withLength := func(n int32) []byte {
		b := bytes.Clone(one)
		binary.BigEndian.PutUint32(b[OffBatchLength:], uint32(n))
		return b
	}
	for name, b := range map[string][]byte{
		"empty":               nil,
		"short header":        one[:HeaderSize-1],
		"torn":                one[:len(one)-1],
		"length past buffer":  withLength(int32(len(one))),
		"length below header": withLength(HeaderSize - LogOverhead - 1),
		"negative length":     withLength(-1),
	} {
		if _, rest, ok := Next(b); ok || len(rest) != len(b) {
			t.Errorf("%s: ok %v, %d of %d bytes left", name, ok, len(rest), len(b))
		}
	}
}

// BenchmarkCRC32C compares the standard library's Castagnoli table with
// github.com/klauspost/crc32's; storage/doc.go records the figures.
func BenchmarkCRC32C(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(i * 31)
		}
		b.Run(fmt.Sprintf("std/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				crc32.Checksum(buf, stdTable)
			}
		})
		b.Run(fmt.Sprintf("klauspost/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				Checksum(buf)
			}
		})
	}
}
