package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameSize is returned for a frame whose declared size is negative or
// above the configured maximum; the caller closes the connection.
var ErrFrameSize = errors.New("invalid frame size")

// frameChunk bounds how much ReadFrame allocates before the peer has sent the
// bytes: a frame that claims a large size grows the buffer only as data
// arrives, so a lying size field cannot make the broker allocate it.
const frameChunk = 64 << 10

// ReadFrame reads one size-prefixed frame from r and returns its body,
// reusing buf when it is large enough. A size below zero or above limit
// returns ErrFrameSize before anything is allocated.
func ReadFrame(r io.Reader, limit int32, buf []byte) ([]byte, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 || size > limit {
		return nil, fmt.Errorf("%w: %d bytes (socket.request.max.bytes is %d)", ErrFrameSize, size, limit)
	}
	n := int(size)
	if cap(buf) >= n {
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, unexpectedEOF(err)
		}
		return buf, nil
	}
	buf = buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), max(frameChunk, len(buf)))
		start := len(buf)
		buf = append(buf, make([]byte, step)...)
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return buf, nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
