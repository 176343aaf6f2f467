package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FlexibleResponseHeader reports whether the response to key at version
// carries the v1 header (a tag section after the correlation id).
// ApiVersions responses always use header v0 so that a client that sent a
// version we do not know can still read our answer (KIP-511).
func FlexibleResponseHeader(key, version int16) bool {
	if key == int16(kmsg.ApiVersions) {
		return false
	}
	r := kmsg.ResponseForKey(key)
	if r == nil {
		return false
	}
	r.SetVersion(version)
	return r.IsFlexible()
}

// AppendResponseHeader appends a size placeholder and the response header;
// the caller appends the body and then calls FinishFrame.
func AppendResponseHeader(dst []byte, key, version int16, correlationID int32) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if FlexibleResponseHeader(key, version) {
		dst = append(dst, 0)
	}
	return dst
}

// FinishFrame writes the size of the frame that starts at start in dst,
// given that extra more bytes will follow dst on the wire (fetch data sent
// straight from files).
func FinishFrame(dst []byte, start int, extra int) {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4+extra))
}

// AppendResponse appends a whole response frame for req.
func AppendResponse(dst []byte, req *Request, resp kmsg.Response) []byte {
	start := len(dst)
	dst = AppendResponseHeader(dst, req.Key, req.Version, req.CorrelationID)
	resp.SetVersion(req.Version)
	dst = resp.AppendTo(dst)
	FinishFrame(dst, start, 0)
	return dst
}
