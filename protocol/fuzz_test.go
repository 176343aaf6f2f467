package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// requestFrame is a request frame without its size prefix: the fixed part of
// the header (key, version, correlation id) followed by rest, which holds the
// client id, the header tags when flexible, and the body.
func requestFrame(key, version int16, correlationID int32, rest []byte) []byte {
	frame := binary.BigEndian.AppendUint16(nil, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, uint32(correlationID))
	return append(frame, rest...)
}

// headerRest encodes what follows the fixed header for req at its version:
// a client id, an empty tag section when flexible, and the body.
func headerRest(req kmsg.Request, clientID *string) []byte {
	var rest []byte
	if clientID == nil {
		rest = binary.BigEndian.AppendUint16(rest, 0xffff)
	} else {
		rest = binary.BigEndian.AppendUint16(rest, uint16(len(*clientID)))
		rest = append(rest, *clientID...)
	}
	if req.IsFlexible() {
		rest = append(rest, 0)
	}
	return req.AppendTo(rest)
}

func seedBatch() []byte {
	rec := kmsg.NewRecord()
	rec.Key, rec.Value = []byte("k"), []byte("value")
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.NumRecords = 1
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.Records = rec.AppendTo(nil)
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	return b.AppendTo(nil)
}

// fuzzSeeds are well-formed requests of the main served keys, plus ones cut
// short or unknown.
func fuzzSeeds() []kmsg.Request {
	produce := kmsg.NewPtrProduceRequest()
	produce.SetVersion(9)
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = seedBatch()
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 500, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.PartitionMaxBytes = 42, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)

	metadata := kmsg.NewPtrMetadataRequest()
	metadata.SetVersion(12)
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("orders")
	metadata.Topics = append(metadata.Topics, mt)

	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.SetVersion(3)
	apiVersions.ClientSoftwareName, apiVersions.ClientSoftwareVersion = "strata-fuzz", "1.0"

	listOffsets := kmsg.NewPtrListOffsetsRequest()
	listOffsets.SetVersion(10)
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "orders"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -3
	lt.Partitions = append(lt.Partitions, lp)
	listOffsets.Topics = append(listOffsets.Topics, lt)

	createTopics := kmsg.NewPtrCreateTopicsRequest()
	createTopics.SetVersion(7)
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "orders", 3, 1
	ct.Configs = append(ct.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms", Value: kmsg.StringPtr("1000")})
	createTopics.Topics = append(createTopics.Topics, ct)

	return []kmsg.Request{produce, fetch, metadata, apiVersions, listOffsets, createTopics}
}

func FuzzParseRequest(f *testing.F) {
	for i, req := range fuzzSeeds() {
		rest := headerRest(req, kmsg.StringPtr("client"))
		if _, err := protocol.ParseRequest(requestFrame(req.Key(), req.GetVersion(), int32(i), rest), decodable); err != nil {
			f.Fatalf("seed %s v%d does not parse: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		}
		f.Add(req.Key(), req.GetVersion(), int32(i), rest)
		f.Add(req.Key(), req.GetVersion(), int32(i), rest[:len(rest)/2]) // cut short
	}
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	f.Add(int16(kmsg.ApiVersions), int16(0), int32(1), headerRest(apiVersions, nil))
	f.Add(int16(kmsg.ApiVersions), int16(99), int32(2), []byte{0, 0, 0})             // a version from the future
	f.Add(int16(kmsg.Produce), int16(9), int32(3), []byte{0x7f, 0xff, 'x'})          // client id past the end
	f.Add(int16(kmsg.Metadata), int16(12), int32(4), []byte{0, 0, 5, 1, 0x80, 0x80}) // tag sizes past the end
	f.Add(int16(-1), int16(0), int32(5), []byte{})
	f.Add(int16(kmsg.Fetch), int16(12), int32(6), bytes.Repeat([]byte{0xff}, 64))

	f.Fuzz(func(t *testing.T, key, version int16, correlationID int32, rest []byte) {
		req, err := protocol.ParseRequest(requestFrame(key, version, correlationID, rest), decodable)
		if err != nil {
			if !errors.Is(err, protocol.ErrUnsupported) && !errors.Is(err, protocol.ErrMalformed) {
				t.Fatalf("error %v is neither ErrUnsupported nor ErrMalformed", err)
			}
			// The connection answers an unsupported ApiVersions from the
			// header fields, so they must come back with the error.
			if errors.Is(err, protocol.ErrUnsupported) &&
				(req == nil || req.Key != key || req.Version != version || req.CorrelationID != correlationID) {
				t.Fatalf("unsupported request came back without its header: %+v", req)
			}
			return
		}
		if req.Key != key || req.Version != version || req.CorrelationID != correlationID {
			t.Fatalf("header %d/%d/%d parsed as %d/%d/%d", key, version, correlationID, req.Key, req.Version, req.CorrelationID)
		}
		if req.Body == nil || req.Body.Key() != key || req.Body.GetVersion() != version {
			t.Fatalf("body %T does not match key %d version %d", req.Body, key, version)
		}
		body := req.Body.AppendTo(nil)
		again, err := protocol.ParseRequest(requestFrame(key, version, correlationID, headerRest(req.Body, req.ClientID)), decodable)
		if err != nil {
			t.Fatalf("re-encoded %s v%d does not parse: %v", kmsg.NameForKey(key), version, err)
		}
		if !equalPtr(again.ClientID, req.ClientID) {
			t.Fatalf("client id %v became %v", req.ClientID, again.ClientID)
		}
		if got := again.Body.AppendTo(nil); !bytes.Equal(got, body) {
			t.Fatalf("%s v%d encodes differently after a round trip:\n%x\n%x", kmsg.NameForKey(key), version, body, got)
		}
	})
}

func equalPtr(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func sized(size int32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}

func TestReadFrame(t *testing.T) {
	const limit = 1 << 20

	t.Run("negative size", func(t *testing.T) {
		r := &countingReader{r: bytes.NewReader(sized(-1, make([]byte, 100)))}
		if _, err := protocol.ReadFrame(r, limit, nil); !errors.Is(err, protocol.ErrFrameSize) {
			t.Fatalf("error %v, want ErrFrameSize", err)
		}
		if r.n != 4 {
			t.Fatalf("read %d bytes, want only the 4 of the size", r.n)
		}
	})

	t.Run("over the limit", func(t *testing.T) {
		r := &countingReader{r: bytes.NewReader(sized(limit+1, make([]byte, 100)))}
		got, err := protocol.ReadFrame(r, limit, nil)
		if !errors.Is(err, protocol.ErrFrameSize) || got != nil {
			t.Fatalf("got %d bytes, error %v, want ErrFrameSize", len(got), err)
		}
		if r.n != 4 {
			t.Fatalf("read %d bytes, want only the 4 of the size", r.n)
		}
	})

	t.Run("at the limit", func(t *testing.T) {
		body := bytes.Repeat([]byte{7}, limit)
		got, err := protocol.ReadFrame(iotest.HalfReader(bytes.NewReader(sized(limit, body))), limit, nil)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes, error %v", len(got), err)
		}
	})

	t.Run("empty frame", func(t *testing.T) {
		got, err := protocol.ReadFrame(bytes.NewReader(sized(0, nil)), limit, nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("%d bytes, error %v", len(got), err)
		}
	})

	t.Run("short body", func(t *testing.T) {
		for _, buf := range [][]byte{nil, make([]byte, 0, 64)} {
			_, err := protocol.ReadFrame(bytes.NewReader(sized(10, []byte{1, 2, 3, 4, 5})), limit, buf)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("buffer cap %d: error %v, want io.ErrUnexpectedEOF", cap(buf), err)
			}
		}
	})

	t.Run("short size", func(t *testing.T) {
		if _, err := protocol.ReadFrame(bytes.NewReader(nil), limit, nil); err != io.EOF {
			t.Fatalf("no bytes: error %v, want io.EOF (a clean close)", err)
		}
		if _, err := protocol.ReadFrame(bytes.NewReader([]byte{0, 0}), limit, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("half a size: error %v, want io.ErrUnexpectedEOF", err)
		}
	})

	t.Run("lying size allocates only what arrives", func(t *testing.T) {
		const claimed = 1 << 30
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := protocol.ReadFrame(bytes.NewReader(sized(claimed, make([]byte, 10))), claimed, nil)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("error %v, want io.ErrUnexpectedEOF", err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
			t.Fatalf("allocated %d bytes for a 10-byte body claiming %d", grew, claimed)
		}
	})

	t.Run("buffer reuse", func(t *testing.T) {
		buf := make([]byte, 0, 64)
		stream := append(sized(10, bytes.Repeat([]byte{1}, 10)), sized(200, bytes.Repeat([]byte{2}, 200))...)
		stream = append(stream, sized(20, bytes.Repeat([]byte{3}, 20))...)
		r := bytes.NewReader(stream)

		first, err := protocol.ReadFrame(r, limit, buf)
		if err != nil || !bytes.Equal(first, bytes.Repeat([]byte{1}, 10)) {
			t.Fatalf("first: %x %v", first, err)
		}
		if &first[0] != &buf[:1][0] {
			t.Fatal("a frame that fits was not read into the given buffer")
		}
		second, err := protocol.ReadFrame(r, limit, first[:0])
		if err != nil || !bytes.Equal(second, bytes.Repeat([]byte{2}, 200)) {
			t.Fatalf("second: %d bytes %v", len(second), err)
		}
		third, err := protocol.ReadFrame(r, limit, second[:0])
		if err != nil || !bytes.Equal(third, bytes.Repeat([]byte{3}, 20)) {
			t.Fatalf("third: %x %v", third, err)
		}
		if &third[0] != &second[:1][0] {
			t.Fatal("the grown buffer was not reused")
		}
	})
}
