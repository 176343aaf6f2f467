package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

var codecs = []struct {
	name  string
	codec int
	kgo   kgo.CompressionCodec
}{
	{"gzip", CodecGzip, kgo.GzipCompression()},
	{"snappy", CodecSnappy, kgo.SnappyCompression()},
	{"lz4", CodecLZ4, kgo.Lz4Compression()},
	{"zstd", CodecZstd, kgo.ZstdCompression()},
}

// sampleSection is more than one 32 KiB xerial block, so snappy's framing
// is exercised across blocks.
var sampleSection = bytes.Repeat(kmsgRecords(sampleRecords...), 2000)

// What Compress writes, Decompress and franz-go's decompressor (a client's
// reader) both read back; what franz-go's compressor (a client's producer)
// writes, Decompress reads.
func TestCodecsInteroperate(t *testing.T) {
	dec := kgo.DefaultDecompressor()
	for _, c := range codecs {
		ours, err := Compress(c.codec, sampleSection)
		if err != nil {
			t.Fatalf("%s: compress: %v", c.name, err)
		}
		if got, err := Decompress(c.codec, ours); err != nil || !bytes.Equal(got, sampleSection) {
			t.Errorf("%s: our round trip: %v, %d bytes of %d", c.name, err, len(got), len(sampleSection))
		}
		if got, err := dec.Decompress(ours, kgo.CompressionCodecType(c.codec)); err != nil || !bytes.Equal(got, sampleSection) {
			t.Errorf("%s: franz-go reads ours: %v, %d bytes of %d", c.name, err, len(got), len(sampleSection))
		}
		comp, err := kgo.DefaultCompressor(c.kgo)
		if err != nil {
			t.Fatal(err)
		}
		theirs, codec := comp.Compress(new(bytes.Buffer), sampleSection)
		if int(codec) != c.codec {
			t.Fatalf("%s: franz-go compressed with codec %d", c.name, codec)
		}
		if got, err := Decompress(c.codec, theirs); err != nil || !bytes.Equal(got, sampleSection) {
			t.Errorf("%s: we read franz-go's: %v, %d bytes of %d", c.name, err, len(got), len(sampleSection))
		}
	}
}

// Snappy arrives both as raw blocks and in snappy-java's xerial framing,
// which Kafka's Java producer writes.
func TestSnappyFramings(t *testing.T) {
	xerial, err := Compress(CodecSnappy, sampleSection)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(xerial, xerialMagic) {
		t.Fatalf("Compress wrote no xerial header: %x", xerial[:16])
	}
	if n := binary.BigEndian.Uint32(xerial[16:]); n == 0 || int(n) > len(xerial)-20 {
		t.Fatalf("first xerial block of %d bytes", n)
	}
	comp, _ := kgo.DefaultCompressor(kgo.SnappyCompression())
	raw, _ := comp.Compress(new(bytes.Buffer), sampleSection)
	if bytes.HasPrefix(raw, xerialMagic) {
		t.Fatal("franz-go wrote xerial framing; the raw case is not tested")
	}
	for name, src := range map[string][]byte{"xerial": xerial, "raw": raw} {
		if got, err := Decompress(CodecSnappy, src); err != nil || !bytes.Equal(got, sampleSection) {
			t.Errorf("%s: %v, %d bytes of %d", name, err, len(got), len(sampleSection))
		}
	}
}

// Uncompressed sections are returned as they are, without a copy.
func TestNoneIsNotCopied(t *testing.T) {
	for _, f := range []func(int, []byte) ([]byte, error){Compress, Decompress} {
		out, err := f(CodecNone, sampleSection)
		if err != nil || &out[0] != &sampleSection[0] || len(out) != len(sampleSection) {
			t.Fatalf("codec none: %v, a copy or another length", err)
		}
	}
}

// A length field claiming more than MaxDecompressed is refused before
// anything that size is allocated.
func TestDecompressBounded(t *testing.T) {
	claim := binary.AppendUvarint(nil, MaxDecompressed+1) // snappy's decoded length
	raw := append(bytes.Clone(claim), 0, 0, 0, 0)
	xerial := append(bytes.Clone(xerialMagic), 0, 0, 0, 1, 0, 0, 0, 1)
	xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(raw)))
	xerial = append(xerial, raw...)
	for name, src := range map[string][]byte{"raw": raw, "xerial": xerial} {
		var err error
		allocs := testing.AllocsPerRun(1, func() { _, err = Decompress(CodecSnappy, src) })
		if !errors.Is(err, errTooLarge) || allocs > 10 {
			t.Errorf("snappy %s: %v after %v allocations, want %v", name, err, allocs, errTooLarge)
		}
	}
}

func TestDecompressRefusesGarbage(t *testing.T) {
	garbage := []byte("not compressed at all, not even a little")
	for _, c := range codecs {
		if _, err := Decompress(c.codec, garbage); err == nil {
			t.Errorf("%s: accepted garbage", c.name)
		}
	}
	for _, codec := range []int{5, 7} {
		if _, err := Decompress(codec, garbage); err == nil {
			t.Errorf("codec %d: accepted", codec)
		}
		if _, err := Compress(codec, garbage); err == nil {
			t.Errorf("codec %d: compressed", codec)
		}
	}
}

// FuzzDecompress: no input makes a codec panic or return more than
// MaxDecompressed bytes.
func FuzzDecompress(f *testing.F) {
	for _, c := range codecs {
		b, err := Compress(c.codec, sampleSection[:500])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c.codec, b)
	}
	f.Fuzz(func(t *testing.T, codec int, src []byte) {
		out, err := Decompress(codec&AttrCompressionMask, src)
		if err == nil && len(out) > MaxDecompressed {
			t.Fatalf("%d bytes from codec %d", len(out), codec)
		}
	})
}
