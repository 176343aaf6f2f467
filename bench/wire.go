package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The wire load generator speaks Kafka's protocol through franz-go's kmsg
// on one TCP connection, with pipelined requests, and does as little work
// per record as a correct client can: it sends record batches built once
// from a template (each still gets its own producer sequence, timestamps
// and CRC-32C), and reads fetched batches by their headers (CRC checked,
// records counted) without decoding every record. A kgo.Client spends
// about a microsecond of CPU per record on buffering, batching and
// decoding, which on a 2-core machine caps records/s below what either
// broker can take; this generator leaves the cores to the broker.

// Versions both brokers serve: Produce v11 (Strata's highest; Kafka 4.4
// serves 3-13), Fetch v12 (the last that names topics instead of topic
// IDs), InitProducerID v4.
const (
	wireProduceVersion = 11
	wireFetchVersion   = 12
	wireInitPIDVersion = 4
	// maxWireFrame bounds a response frame read by the generator.
	maxWireFrame = 256 << 20
)

// wireConn is one client connection; requests may be pipelined, and
// responses come back in order.
type wireConn struct {
	c    net.Conn
	r    *bufio.Reader
	f    *kmsg.RequestFormatter
	corr int32
	out  []byte
	in   []byte
}

// newWireConn is a client on c, connected (clientSecurity.dial).
func newWireConn(c net.Conn) *wireConn {
	return &wireConn{c: c, r: bufio.NewReaderSize(c, 1<<20), f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("strata-bench"))}
}

func (w *wireConn) Close() error { return w.c.Close() }

// send writes req and returns its correlation ID.
func (w *wireConn) send(req kmsg.Request) (int32, error) {
	w.corr++
	w.out = w.f.AppendRequest(w.out[:0], req, w.corr)
	if _, err := w.c.Write(w.out); err != nil {
		return 0, fmt.Errorf("write %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	return w.corr, nil
}

// recv reads the next response frame, checks its correlation ID and
// decodes it into resp. resp may keep slices of the connection's buffer
// until the next recv.
func (w *wireConn) recv(corr int32, resp kmsg.Response) error {
	var size [4]byte
	if _, err := io.ReadFull(w.r, size[:]); err != nil {
		return fmt.Errorf("read %s response: %w", kmsg.NameForKey(resp.Key()), err)
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxWireFrame {
		return fmt.Errorf("%s response: frame of %d bytes", kmsg.NameForKey(resp.Key()), n)
	}
	if cap(w.in) < n {
		w.in = make([]byte, n)
	}
	body := w.in[:n]
	if _, err := io.ReadFull(w.r, body); err != nil {
		return fmt.Errorf("read %s response: %w", kmsg.NameForKey(resp.Key()), err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return fmt.Errorf("%s response: correlation ID %d, want %d", kmsg.NameForKey(resp.Key()), got, corr)
	}
	body = body[4:]
	if resp.IsFlexible() {
		var err error
		if body, err = skipTags(body); err != nil {
			return fmt.Errorf("%s response header: %w", kmsg.NameForKey(resp.Key()), err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return fmt.Errorf("decode %s response: %w", kmsg.NameForKey(resp.Key()), err)
	}
	return nil
}

// roundTrip sends req and waits for its response.
func (w *wireConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	corr, err := w.send(req)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	return resp, w.recv(corr, resp)
}

// skipTags skips a flexible header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag key")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// batchTemplate is the records of one full batch, encoded once; a batch
// of m records is the first ends[m-1] bytes.
type batchTemplate struct {
	records []byte
	ends    []int
}

// newBatchTemplate encodes as many records of valueSize random bytes as
// fit a batchBytes batch (at least one). key, when not nil, gives each
// record's key.
func newBatchTemplate(rng interface{ IntN(int) int }, valueSize, batchBytes int, key func() []byte) batchTemplate {
	var t batchTemplate
	var rec []byte
	for i := 0; ; i++ {
		rec = rec[:0]
		rec = append(rec, 0)                     // attributes
		rec = binary.AppendVarint(rec, 0)        // timestamp delta
		rec = binary.AppendVarint(rec, int64(i)) // offset delta
		if key == nil {
			rec = binary.AppendVarint(rec, -1) // null key
		} else {
			k := key()
			rec = binary.AppendVarint(rec, int64(len(k)))
			rec = append(rec, k...)
		}
		rec = binary.AppendVarint(rec, int64(valueSize))
		off := rng.IntN(len(randomPool) - valueSize)
		rec = append(rec, randomPool[off:off+valueSize]...)
		rec = binary.AppendVarint(rec, 0) // no headers
		size := len(binary.AppendVarint(nil, int64(len(rec)))) + len(rec)
		if i > 0 && batch.HeaderSize+len(t.records)+size > batchBytes {
			return t
		}
		t.records = binary.AppendVarint(t.records, int64(len(rec)))
		t.records = append(t.records, rec...)
		t.ends = append(t.ends, len(t.records))
	}
}

// appendBatch appends a v2 batch of the template's first m records for an
// idempotent producer, with its CRC-32C.
func (t *batchTemplate) appendBatch(dst []byte, m int, pid int64, epoch int16, seq int32, now int64) []byte {
	h := batch.Header{
		PartitionLeaderEpoch: -1,
		Magic:                batch.Magic,
		LastOffsetDelta:      int32(m - 1),
		BaseTimestamp:        now,
		MaxTimestamp:         now,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		BaseSequence:         seq,
		RecordCount:          int32(m),
	}
	start := len(dst)
	dst = append(dst, make([]byte, batch.HeaderSize)...)
	h.Put(dst[start:])
	dst = append(dst, t.records[:t.ends[m-1]]...)
	batch.Seal(dst[start:])
	return dst
}

// countBatches walks the record batches of one fetched partition from
// offset on and counts their records (control batches excluded). It
// returns the next offset to fetch and the complete batches, whose CRCs
// checkCRCs verifies.
func countBatches(b []byte, offset int64) (next, records int64, complete []byte, err error) {
	next = offset
	all := b
	for {
		raw, rest, ok := batch.Next(b)
		if !ok {
			break // a partial batch at the end of the response
		}
		b = rest
		h := batch.DecodeHeader(raw)
		if h.Magic != batch.Magic {
			return 0, 0, nil, fmt.Errorf("batch at %d: magic %d", h.BaseOffset, h.Magic)
		}
		if h.LastOffset() < next {
			continue // a batch the fetch offset falls after
		}
		if h.BaseOffset < next {
			return 0, 0, nil, fmt.Errorf("batch %d-%d straddles fetch offset %d", h.BaseOffset, h.LastOffset(), next)
		}
		if !h.Control() {
			records += int64(h.RecordCount)
		}
		next = h.NextOffset()
	}
	return next, records, all[:len(all)-len(b)], nil
}

// checkCRCs verifies the CRC-32C of each batch in b, which holds only
// complete batches.
func checkCRCs(b []byte) error {
	for raw, rest, ok := batch.Next(b); ok; raw, rest, ok = batch.Next(rest) {
		if h := batch.DecodeHeader(raw); batch.CRC(raw) != h.CRC {
			return fmt.Errorf("batch at %d: CRC mismatch", h.BaseOffset)
		}
	}
	return nil
}
