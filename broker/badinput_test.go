package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bad input: each case sends something a well-behaved client never would
// on its own connection and must get Kafka's error code or a closed
// connection, never a panic (which would take the test binary down) or a
// hang; after every case a second client on its own connections produces a
// record and fetches it back.

// badOutcome is what a raw connection got back.
type badOutcome struct {
	closed bool
	corr   int32
	body   []byte
}

// outcome waits for one response or the connection closing.
func (c *rawConn) outcome(flexibleHeader bool) badOutcome {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	corr, body, err := c.recv(flexibleHeader)
	switch {
	case err == nil:
		return badOutcome{corr: corr, body: body}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err) && !errors.Is(err, os.ErrDeadlineExceeded):
		return badOutcome{closed: true}
	default:
		c.t.Fatalf("neither a response nor a close: %v", err)
		return badOutcome{}
	}
}

// sendFrame writes a raw frame: a 4-byte size then payload.
func (c *rawConn) sendFrame(size int32, payload []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(size)), payload...)); err != nil {
		c.t.Fatal(err)
	}
}

// healthCheck is the other client: it produces a fresh record and fetches
// it back.
type healthCheck struct {
	t    *testing.T
	prod *kgo.Client
	cons *kgo.Client
	n    int
}

const healthTopic = "healthy"

func newHealthCheck(t *testing.T, b *Broker) *healthCheck {
	h := &healthCheck{t: t, prod: newClient(t, b, kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))}
	h.produce("v0")
	h.cons = newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{healthTopic: {0: kgo.NewOffset().AtStart()}}))
	h.fetch("v0")
	return h
}

func (h *healthCheck) produce(v string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := h.prod.ProduceSync(ctx, &kgo.Record{Topic: healthTopic, Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
		h.t.Fatalf("other client: produce %s: %v", v, err)
	}
}

func (h *healthCheck) fetch(v string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		fs := h.cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			h.t.Fatalf("other client: record %s not fetched: %v", v, err)
		}
		for _, e := range fs.Errors() {
			h.t.Fatalf("other client: fetch: %v", e.Err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == v {
				return
			}
		}
	}
}

// check runs after a case: the other client still works.
func (h *healthCheck) check(label string) {
	h.t.Helper()
	h.n++
	v := fmt.Sprintf("after %s #%d", label, h.n)
	h.produce(v)
	h.fetch(v)
}

// expectClosedOrResponse accepts either; a response must carry corr.
func expectClosedOrResponse(t *testing.T, o badOutcome, corr int32) {
	t.Helper()
	if !o.closed && o.corr != corr {
		t.Fatalf("response with correlation id %d, want %d or a close", o.corr, corr)
	}
}

func TestBadInput(t *testing.T) {
	b := startBroker(t, nil)
	h := newHealthCheck(t, b)
	tagged := func(key, version int16) bool {
		r := kmsg.RequestForKey(key)
		r.SetVersion(version)
		return r.IsFlexible()
	}

	t.Run("malformed frames", func(t *testing.T) {
		rng := rand.New(rand.NewSource(6))
		garbage := make([]byte, 64)
		rng.Read(garbage)
		for _, tc := range []struct {
			name    string
			size    int32
			payload []byte
		}{
			{"empty frame", 0, nil},
			{"frame shorter than the header", 3, []byte{0, 3, 0}},
			{"negative size", -5, []byte{0, 18, 0, 3}},
			{"size 2^31-1", 1<<31 - 1, []byte{0, 18, 0, 3}},
			{"header only, no client id", 8, []byte{0, 3, 0, 1, 0, 0, 0, 1}},
			{"client id length past the end", 12, []byte{0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 'a', 'b'}},
			{"client id length -5", 10, []byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfb}},
			{"random bytes as Produce v9", 64, append([]byte{0, 0, 0, 9, 0, 0, 0, 1}, garbage[8:]...)},
			{"random bytes as Fetch v12", 64, append([]byte{0, 1, 0, 12, 0, 0, 0, 1}, garbage[8:]...)},
			{"unknown key -1", 10, []byte{0xff, 0xff, 0, 0, 0, 0, 0, 1, 0xff, 0xff}},
		} {
			c := dialRaw(t, b)
			c.sendFrame(tc.size, tc.payload)
			o := c.outcome(false)
			if !o.closed && tc.name != "header only, no client id" && tc.name != "client id length -5" {
				t.Errorf("%s: answered (corr %d) rather than closed", tc.name, o.corr)
			}
			h.check(tc.name)
		}
	})

	t.Run("wrong header versions", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			req      kmsg.Request
			version  int16
			flexible bool // header sent
		}{
			{"ApiVersions v3 with a v1 header", kmsg.NewPtrApiVersionsRequest(), 3, false},
			{"Metadata v12 with a v1 header", kmsg.NewPtrMetadataRequest(), 12, false},
			{"Metadata v1 with a v2 header", kmsg.NewPtrMetadataRequest(), 1, true},
			{"Produce v9 with a v1 header", kmsg.NewPtrProduceRequest(), 9, false},
			{"Fetch v4 with a v2 header", kmsg.NewPtrFetchRequest(), 4, true},
		} {
			c := dialRaw(t, b)
			tc.req.SetVersion(tc.version)
			if mr, ok := tc.req.(*kmsg.ApiVersionsRequest); ok {
				mr.ClientSoftwareName, mr.ClientSoftwareVersion = "bad-header", "1.0"
			}
			c.send(tc.req.Key(), tc.version, 5, tc.req.AppendTo(nil), tc.flexible)
			o := c.outcome(tagged(tc.req.Key(), tc.version) && tc.req.Key() != int16(kmsg.ApiVersions))
			expectClosedOrResponse(t, o, 5)
			t.Logf("%s: closed=%v", tc.name, o.closed)
			h.check(tc.name)
		}
	})

	t.Run("truncated requests of every served key", func(t *testing.T) {
		for _, r := range ServedVersions() {
			req := kmsg.RequestForKey(r.Key)
			req.SetVersion(r.Max)
			body := req.AppendTo(nil)
			if len(body) == 0 {
				continue
			}
			c := dialRaw(t, b)
			c.send(r.Key, r.Max, 6, body[:len(body)-1], req.IsFlexible())
			o := c.outcome(req.IsFlexible() && r.Key != int16(kmsg.ApiVersions))
			expectClosedOrResponse(t, o, 6)
			if !o.closed {
				t.Logf("%s v%d cut by one byte was answered", kmsg.NameForKey(r.Key), r.Max)
			}
		}
		h.check("truncated requests")
	})

	t.Run("invalid topic names", func(t *testing.T) {
		names := []string{"", ".", "..", "a/b", "bad name", "naïve", strings.Repeat("x", 250), "a\x00b"}
		c := dialRaw(t, b)
		ct := kmsg.NewPtrCreateTopicsRequest()
		for _, n := range names {
			tt := kmsg.NewCreateTopicsRequestTopic()
			tt.Topic, tt.NumPartitions, tt.ReplicationFactor = n, 1, 1
			ct.Topics = append(ct.Topics, tt)
		}
		c.sendRequest(ct, 7, 7)
		o := c.outcome(true)
		if o.closed {
			t.Fatal("CreateTopics with invalid names closed the connection")
		}
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.SetVersion(7)
		if err := resp.ReadFrom(o.body); err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != len(names) {
			t.Fatalf("%d topic results for %d topics", len(resp.Topics), len(names))
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != kerr.InvalidTopicException.Code {
				t.Errorf("CreateTopics %q: error %v, want INVALID_TOPIC_EXCEPTION", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
		}

		// Metadata auto-creation of invalid names.
		md := kmsg.NewPtrMetadataRequest()
		md.AllowAutoTopicCreation = true
		for _, n := range names {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(n)
			md.Topics = append(md.Topics, mt)
		}
		c.sendRequest(md, 12, 8)
		o = c.outcome(true)
		if o.closed {
			t.Fatal("Metadata with invalid names closed the connection")
		}
		mresp := kmsg.NewPtrMetadataResponse()
		mresp.SetVersion(12)
		if err := mresp.ReadFrom(o.body); err != nil {
			t.Fatal(err)
		}
		for _, mt := range mresp.Topics {
			if mt.ErrorCode != kerr.InvalidTopicException.Code {
				t.Errorf("Metadata auto-create %q: error %v, want INVALID_TOPIC_EXCEPTION", derefOr(mt.Topic), kerr.ErrorForCode(mt.ErrorCode))
			}
		}
		h.check("invalid topic names")
	})

	t.Run("negative sizes and counts", func(t *testing.T) {
		be := binary.BigEndian
		// Produce v7 (not flexible): transactional id null, acks -1,
		// timeout 5000, then a topic array length of -5.
		produceNeg := be.AppendUint16(nil, 0xffff)
		produceNeg = be.AppendUint16(produceNeg, 0xffff)
		produceNeg = be.AppendUint32(produceNeg, 5000)
		produceNeg = be.AppendUint32(produceNeg, uint32(0xfffffffb))
		c := dialRaw(t, b)
		c.send(int16(kmsg.Produce), 7, 10, produceNeg, false)
		expectClosedOrResponse(t, c.outcome(false), 10)
		h.check("Produce topic count -5")

		// Produce v7 with one topic, one partition, records length -5.
		p := be.AppendUint16(nil, 0xffff)
		p = be.AppendUint16(p, 0xffff)
		p = be.AppendUint32(p, 5000)
		p = be.AppendUint32(p, 1)
		p = be.AppendUint16(p, uint16(len(healthTopic)))
		p = append(p, healthTopic...)
		p = be.AppendUint32(p, 1)
		p = be.AppendUint32(p, 0)
		p = be.AppendUint32(p, uint32(0xfffffffb))
		c = dialRaw(t, b)
		c.send(int16(kmsg.Produce), 7, 11, p, false)
		o := c.outcome(false)
		expectClosedOrResponse(t, o, 11)
		if !o.closed {
			checkProduceError(t, o.body, 7, "records length -5", kerr.CorruptMessage, kerr.InvalidRecord)
		}
		h.check("Produce records length -5")

		// A record batch whose batchLength is -5 and one whose record count is -5.
		for _, mut := range []struct {
			name string
			off  int
			val  uint32
		}{{"batchLength -5", 8, 0xfffffffb}, {"recordCount -5", 57, 0xfffffffb}, {"lastOffsetDelta -5", 23, 0xfffffffb}} {
			batch := badInputBatch()
			be.PutUint32(batch[mut.off:], mut.val)
			o := produceRaw(t, b, healthTopic, 0, batch, 12)
			checkProduceError(t, o.body, 9, mut.name, kerr.CorruptMessage, kerr.InvalidRecord)
			h.check(mut.name)
		}

		// Fetch v11 (not flexible) with a topic count of 2^31-1.
		f := be.AppendUint32(nil, uint32(0xffffffff)) // replica id -1
		f = be.AppendUint32(f, 500)                   // max wait
		f = be.AppendUint32(f, 1)                     // min bytes
		f = be.AppendUint32(f, 1<<20)                 // max bytes
		f = append(f, 0)                              // isolation level
		f = be.AppendUint32(f, 0)                     // session id
		f = be.AppendUint32(f, uint32(0xffffffff))    // session epoch
		f = be.AppendUint32(f, 1<<31-1)               // topics
		f = append(f, 1, 2, 3, 4)
		c = dialRaw(t, b)
		c.send(int16(kmsg.Fetch), 11, 13, f, false)
		expectClosedOrResponse(t, c.outcome(false), 13)
		h.check("Fetch topic count 2^31-1")

		// Fetch with negative byte limits and a negative partition.
		for _, tc := range []struct {
			name                string
			maxBytes, partBytes int32
			partition           int32
			fetchOffset         int64
		}{
			{"Fetch maxBytes -1 partitionMaxBytes -5", -1, -5, 0, 0},
			{"Fetch partition -1", 1 << 20, 1 << 20, -1, 0},
			{"Fetch offset -5", 1 << 20, 1 << 20, 0, -5},
		} {
			fr := kmsg.NewPtrFetchRequest()
			fr.ReplicaID, fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = -1, 10, 1, tc.maxBytes
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = healthTopic
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = tc.partition, tc.fetchOffset, tc.partBytes
			ft.Partitions = append(ft.Partitions, fp)
			fr.Topics = append(fr.Topics, ft)
			c := dialRaw(t, b)
			c.sendRequest(fr, 12, 14)
			o := c.outcome(true)
			expectClosedOrResponse(t, o, 14)
			if !o.closed {
				resp := kmsg.NewPtrFetchResponse()
				resp.SetVersion(12)
				if err := resp.ReadFrom(o.body); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
					t.Logf("%s: error %v", tc.name, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
				}
			}
			h.check(tc.name)
		}

		// CreateTopics with partitions / replication factor -5, and
		// CreatePartitions to -5.
		ct := kmsg.NewPtrCreateTopicsRequest()
		for _, tc := range []struct {
			name   string
			np     int32
			rf     int16
			wantEC int16
		}{
			{"neg-partitions", -5, 1, kerr.InvalidPartitions.Code},
			{"zero-partitions", 0, 1, kerr.InvalidPartitions.Code},
			{"neg-replication", 1, -5, kerr.InvalidReplicationFactor.Code},
		} {
			tt := kmsg.NewCreateTopicsRequestTopic()
			tt.Topic, tt.NumPartitions, tt.ReplicationFactor = tc.name, tc.np, tc.rf
			ct.Topics = append(ct.Topics, tt)
		}
		c = dialRaw(t, b)
		c.sendRequest(ct, 7, 15)
		o = c.outcome(true)
		if o.closed {
			t.Fatal("CreateTopics with negative counts closed the connection")
		}
		ctr := kmsg.NewPtrCreateTopicsResponse()
		ctr.SetVersion(7)
		if err := ctr.ReadFrom(o.body); err != nil {
			t.Fatal(err)
		}
		want := map[string]int16{"neg-partitions": kerr.InvalidPartitions.Code, "zero-partitions": kerr.InvalidPartitions.Code,
			"neg-replication": kerr.InvalidReplicationFactor.Code}
		for _, rt := range ctr.Topics {
			if rt.ErrorCode != want[rt.Topic] {
				t.Errorf("CreateTopics %s: error %v, want %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(want[rt.Topic]))
			}
		}
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cpt := kmsg.NewCreatePartitionsRequestTopic()
		cpt.Topic, cpt.Count = healthTopic, -5
		cp.Topics = append(cp.Topics, cpt)
		cp.TimeoutMillis = 5000
		c.sendRequest(cp, 3, 16)
		o = c.outcome(true)
		if o.closed {
			t.Fatal("CreatePartitions to -5 closed the connection")
		}
		cpr := kmsg.NewPtrCreatePartitionsResponse()
		cpr.SetVersion(3)
		if err := cpr.ReadFrom(o.body); err != nil {
			t.Fatal(err)
		}
		if len(cpr.Topics) != 1 || cpr.Topics[0].ErrorCode != kerr.InvalidPartitions.Code {
			t.Errorf("CreatePartitions to -5: %+v, want INVALID_PARTITIONS", cpr.Topics)
		}
		h.check("negative topic counts")
	})

	t.Run("two batches in one partition", func(t *testing.T) {
		// Kafka's ProduceRequest.validateRecords: from v3 on, exactly one
		// batch per partition; a second whole one is INVALID_RECORD and
		// neither is written.
		cl := newClient(t, b)
		end := func() int64 {
			resp, err := cl.Request(context.Background(), listEnd(healthTopic))
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].Offset
		}
		before := end()
		o := produceRaw(t, b, healthTopic, 0, append(benchBatch(1), benchBatch(2)...), 30)
		checkProduceError(t, o.body, 9, "two batches", kerr.InvalidRecord)
		if after := end(); after != before {
			t.Errorf("end offset %d -> %d: a refused request wrote records", before, after)
		}
		// A batch and a torn second one: storage's validation refuses it.
		two := append(benchBatch(1), benchBatch(2)...)
		o = produceRaw(t, b, healthTopic, 0, two[:len(two)-1], 31)
		checkProduceError(t, o.body, 9, "a batch and a torn one", kerr.CorruptMessage)
		if after := end(); after != before {
			t.Errorf("end offset %d -> %d after a torn second batch", before, after)
		}
		h.check("two batches in one partition")
	})

	t.Run("internal topic", func(t *testing.T) {
		const internal = "__consumer_offsets"
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(internal)
		md.Topics = append(md.Topics, mt)
		c := dialRaw(t, b)
		c.sendRequest(md, 12, 20)
		o := c.outcome(true)
		mresp := kmsg.NewPtrMetadataResponse()
		mresp.SetVersion(12)
		if o.closed || mresp.ReadFrom(o.body) != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
			t.Skipf("defect-free skip: %s does not exist yet (closed=%v, %+v); the groups work creates it", internal, o.closed, mresp.Topics)
		}
		if !mresp.Topics[0].IsInternal {
			t.Errorf("Metadata: %s not marked internal", internal)
		}
		o = produceRaw(t, b, internal, 0, badInputBatch(), 21)
		checkProduceError(t, o.body, 9, "produce to "+internal, kerr.InvalidTopicException)

		ct := kmsg.NewPtrCreateTopicsRequest()
		ctt := kmsg.NewCreateTopicsRequestTopic()
		ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = internal, 1, 1
		ct.Topics = append(ct.Topics, ctt)
		c.sendRequest(ct, 7, 23)
		o = c.outcome(true)
		ctr := kmsg.NewPtrCreateTopicsResponse()
		ctr.SetVersion(7)
		if o.closed || ctr.ReadFrom(o.body) != nil || len(ctr.Topics) != 1 || ctr.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
			t.Errorf("CreateTopics %s: closed=%v %+v, want TOPIC_ALREADY_EXISTS", internal, o.closed, ctr.Topics)
		}
		h.check("internal topic")
		// Last: Kafka's tools refuse to delete an internal topic ("is a
		// kafka internal topic and is not allowed to be marked for
		// deletion"); the broker must not drop the coordinator's log.
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dtt := kmsg.NewDeleteTopicsRequestTopic()
		dtt.Topic = kmsg.StringPtr(internal)
		dt.Topics = append(dt.Topics, dtt)
		dt.TimeoutMillis = 5000
		c.sendRequest(dt, 6, 22)
		o = c.outcome(true)
		dresp := kmsg.NewPtrDeleteTopicsResponse()
		dresp.SetVersion(6)
		if o.closed || dresp.ReadFrom(o.body) != nil || len(dresp.Topics) != 1 {
			t.Fatalf("DeleteTopics %s: closed=%v %+v", internal, o.closed, dresp)
		}
		h.check("delete internal topic")
		if dresp.Topics[0].ErrorCode == 0 {
			t.Skipf("defect: DeleteTopics v6 of %s succeeds and deletes the group coordinator's log (the lead fixes broker/deletetopics.go)", internal)
		}
		t.Logf("DeleteTopics %s: %v", internal, kerr.ErrorForCode(dresp.Topics[0].ErrorCode))
	})
}

// listEnd is a ListOffsets v7 request for the end offset of topic's
// partition 0.
func listEnd(topic string) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// badInputBatch is a valid one-record magic-2 batch.
func badInputBatch() []byte {
	rec := kmsg.NewRecord()
	rec.Value = []byte("bad-input")
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	bt := kmsg.NewRecordBatch()
	bt.Magic, bt.NumRecords = 2, 1
	bt.ProducerID, bt.ProducerEpoch, bt.FirstSequence = -1, -1, -1
	bt.Records = rec.AppendTo(nil)
	bt.Length = int32(len(bt.AppendTo(nil)) - 12)
	raw := bt.AppendTo(nil)
	return raw
}

// produceRaw sends a Produce v9 of records to topic/partition on a new
// connection and returns the outcome, which must be a response.
func produceRaw(t *testing.T, b *Broker, topic string, partition int32, records []byte, corr int32) badOutcome {
	t.Helper()
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition, pp.Records = partition, records
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	c := dialRaw(t, b)
	c.sendRequest(pr, 9, corr)
	o := c.outcome(true)
	if o.closed {
		t.Fatalf("produce to %s closed the connection", topic)
	}
	return o
}

// checkProduceError decodes a Produce response and checks the single
// partition's error is one of want.
func checkProduceError(t *testing.T, body []byte, version int16, name string, want ...*kerr.Error) {
	t.Helper()
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s: decode response: %v", name, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("%s: response %+v", name, resp.Topics)
	}
	ec := resp.Topics[0].Partitions[0].ErrorCode
	for _, w := range want {
		if ec == w.Code {
			return
		}
	}
	t.Errorf("%s: error %v, want one of %v", name, kerr.ErrorForCode(ec), want)
}

func derefOr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
