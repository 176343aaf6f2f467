package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs (attributes bits 0-2).
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

// MaxDecompressed bounds the records section of one decompressed batch, so
// a small compressed batch can not make the broker allocate without limit.
const MaxDecompressed = 256 << 20

var errTooLarge = fmt.Errorf("decompressed batch exceeds %d bytes", MaxDecompressed)

// xerialMagic starts snappy data framed by snappy-java's SnappyOutputStream,
// which is what Kafka's producer and broker write; raw snappy blocks (as
// some clients send) are accepted too.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialBlockSize is snappy-java's default block size.
const xerialBlockSize = 32 << 10

var (
	zstdOnce sync.Once
	zstdDec  *zstd.Decoder
	zstdEnc  *zstd.Encoder
	zstdErr  error
)

func zstdCodecs() (*zstd.Decoder, *zstd.Encoder, error) {
	zstdOnce.Do(func() {
		zstdDec, zstdErr = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxDecompressed), zstd.WithDecoderConcurrency(0))
		if zstdErr != nil {
			return
		}
		zstdEnc, zstdErr = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	})
	return zstdDec, zstdEnc, zstdErr
}

// Decompress returns the uncompressed records section of a batch written
// with codec: src itself when uncompressed, else a new buffer of at most
// MaxDecompressed bytes.
func Decompress(codec int, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip, CodecLZ4:
		return DecompressLimit(codec, src, MaxDecompressed)
	case CodecSnappy:
		return decodeSnappy(src)
	case CodecZstd:
		dec, _, err := zstdCodecs()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		out, err := dec.DecodeAll(src, nil)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// ErrTooLarge is DecompressLimit's error for data that decompresses to
// more than its limit.
var ErrTooLarge = errors.New("decompressed data exceeds its limit")

// DecompressLimit is Decompress of data that may decompress to at most
// limit bytes (at most MaxDecompressed): more is ErrTooLarge, found
// without holding more than limit bytes.
func DecompressLimit(codec int, src []byte, limit int) ([]byte, error) {
	limit = min(limit, MaxDecompressed)
	switch codec {
	case CodecNone:
		if len(src) > limit {
			return nil, ErrTooLarge
		}
		return src, nil
	case CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return readBounded(r, "gzip", limit)
	case CodecSnappy:
		out, err := decodeSnappy(src)
		if err == nil && len(out) > limit {
			return nil, fmt.Errorf("snappy: %w", ErrTooLarge)
		}
		return out, err
	case CodecLZ4:
		return readBounded(lz4.NewReader(bytes.NewReader(src)), "lz4", limit)
	case CodecZstd:
		dec, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer dec.Close()
		return readBounded(dec, "zstd", limit)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func readBounded(r io.Reader, name string, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || err == nil && len(out) > limit {
		return nil, fmt.Errorf("%s: more than %d bytes: %w", name, limit, ErrTooLarge)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

var errBadXerial = errors.New("snappy: malformed xerial framing")

func decodeSnappy(src []byte) ([]byte, error) {
	if len(src) < 16 || !bytes.HasPrefix(src, xerialMagic) {
		n, err := s2.DecodedLen(src)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if n > MaxDecompressed {
			return nil, fmt.Errorf("snappy: %w", errTooLarge)
		}
		out, err := s2.Decode(nil, src)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		return out, nil
	}
	var out []byte
	for rest := src[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errBadXerial
		}
		n := int(binary.BigEndian.Uint32(rest))
		rest = rest[4:]
		if n < 0 || n > len(rest) {
			return nil, errBadXerial
		}
		dl, err := s2.DecodedLen(rest[:n])
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if len(out)+dl > MaxDecompressed {
			return nil, fmt.Errorf("snappy: %w", errTooLarge)
		}
		blk, err := s2.Decode(nil, rest[:n])
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		out = append(out, blk...)
		rest = rest[n:]
	}
	return out, nil
}

// Compress compresses a records section with codec as Kafka's broker
// writes it (snappy in xerial framing, lz4 frames): src itself when
// uncompressed, else a new buffer.
func Compress(codec int, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		out := append([]byte(nil), xerialMagic...)
		out = append(out, 0, 0, 0, 1, 0, 0, 0, 1) // version 1, minimum compatible version 1
		for len(src) > 0 {
			n := min(len(src), xerialBlockSize)
			blk := s2.EncodeSnappy(nil, src[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(blk)))
			out = append(out, blk...)
			src = src[n:]
		}
		return out, nil
	case CodecLZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return buf.Bytes(), nil
	case CodecZstd:
		_, enc, err := zstdCodecs()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return enc.EncodeAll(src, nil), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}
