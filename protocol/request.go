package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrUnsupported is returned by ParseRequest for a key or version the caller
// does not serve. The returned Request still carries the header fields so the
// caller can answer ApiVersions with UNSUPPORTED_VERSION (KIP-511).
var ErrUnsupported = errors.New("unsupported api key or version")

// ErrMalformed is returned for a request whose header or body does not parse.
var ErrMalformed = errors.New("malformed request")

// Request is one decoded request.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	Body          kmsg.Request
	BodySize      int // the body's bytes in the frame (Kafka's RequestChannel.Request.sizeInBytes)
}

// ParseRequest decodes a request header and, when served reports its key and
// version as served, its body. What is served is the broker's to say.
func ParseRequest(frame []byte, served func(key, version int16) bool) (*Request, error) {
	if len(frame) < 8 {
		return nil, fmt.Errorf("%w: header needs 8 bytes, frame has %d", ErrMalformed, len(frame))
	}
	req := &Request{
		Key:           int16(binary.BigEndian.Uint16(frame[0:])),
		Version:       int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	if !served(req.Key, req.Version) {
		return req, fmt.Errorf("%w: %s (key %d) v%d", ErrUnsupported, kmsg.NameForKey(req.Key), req.Key, req.Version)
	}
	rest := frame[8:]
	clientID, rest, err := readNullableString(rest)
	if err != nil {
		return req, fmt.Errorf("%w: client id: %v", ErrMalformed, err)
	}
	req.ClientID = clientID
	body := kmsg.RequestForKey(req.Key)
	body.SetVersion(req.Version)
	if body.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return req, fmt.Errorf("%w: header tags: %v", ErrMalformed, err)
		}
	}
	req.BodySize = len(rest)
	if err := body.ReadFrom(rest); err != nil {
		return req, fmt.Errorf("%w: %s v%d body: %v", ErrMalformed, kmsg.NameForKey(req.Key), req.Version, err)
	}
	req.Body = body
	return req, nil
}

func readNullableString(b []byte) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, nil, errors.New("short length")
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n < 0 {
		return nil, b, nil
	}
	if int(n) > len(b) {
		return nil, nil, fmt.Errorf("length %d past the end of the frame", n)
	}
	s := string(b[:n])
	return &s, b[n:], nil
}

// skipTags skips a tagged-field section: a count, then per field a tag, a
// size and that many bytes. Every length is checked against what is left.
func skipTags(b []byte) ([]byte, error) {
	count, b, err := readUvarint(b)
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < count; i++ {
		if _, b, err = readUvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = readUvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, fmt.Errorf("tag of %d bytes past the end of the frame", size)
		}
		b = b[size:]
	}
	return b, nil
}

func readUvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > 1<<31 {
		return 0, nil, errors.New("bad uvarint")
	}
	return v, b[n:], nil
}
