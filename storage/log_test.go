package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/storage/vfs"
)

// batchOpts describes a test record batch.
type batchOpts struct {
	records   int
	valueSize int
	ts        int64 // first timestamp; record i has ts+i
	pid       int64
	epoch     int16
	seq       int32
	attrs     int16
}

// makeBatch builds a real v2 record batch with kmsg, CRC32C included.
func makeBatch(o batchOpts) []byte {
	if o.records == 0 {
		o.records = 1
	}
	if o.pid == 0 {
		o.pid = -1
		o.epoch = -1
		o.seq = -1
	}
	var recs []byte
	for i := 0; i < o.records; i++ {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte('a' + i%26)}, o.valueSize)}
		body := r.AppendTo(nil)[1:] // Length 0 encodes as one byte
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, Length: int32(batch.HeaderSize - batch.LogOverhead + len(recs)), PartitionLeaderEpoch: -1, Magic: 2,
		Attributes: o.attrs, LastOffsetDelta: int32(o.records - 1), FirstTimestamp: o.ts, MaxTimestamp: o.ts + int64(o.records-1),
		ProducerID: o.pid, ProducerEpoch: o.epoch, FirstSequence: o.seq, NumRecords: int32(o.records), Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[batch.OffCRC:], crc32.Checksum(raw[batch.OffAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func testConfig() Config {
	c := DefaultConfig()
	c.IndexIntervalBytes = 256
	return c
}

func openTestLog(t testing.TB, fsys vfs.FS, dir string, cfg Config, opts OpenOptions) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	l, err := OpenLog(fsys, dir, cfg, opts)
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return l
}

func appendOK(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := leaderAppend(l, b, 0)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

// readAll reads every batch from offset 0 to the high watermark and returns
// their base offsets.
func readAll(t testing.TB, l *Log) []int64 {
	t.Helper()
	var bases []int64
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		res, err := l.Read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		var buf bytes.Buffer
		if _, err := res.Chunk.WriteTo(&buf); err != nil {
			t.Fatalf("WriteTo: %v", err)
		}
		res.Chunk.Release()
		b := buf.Bytes()
		if len(b) == 0 {
			t.Fatalf("Read(%d) returned nothing below HW %d", off, l.HighWatermark())
		}
		for len(b) > 0 {
			h := batch.DecodeHeader(b)
			if batch.CRC(b[:h.Size()]) != h.CRC {
				t.Fatalf("batch at %d: bad crc", h.BaseOffset)
			}
			bases = append(bases, h.BaseOffset)
			off = h.NextOffset()
			b = b[h.Size():]
		}
	}
	return bases
}

func TestAppendReadAndReopen(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	for i := 0; i < 50; i++ {
		res := appendOK(t, l, makeBatch(batchOpts{records: 10, valueSize: 100, ts: int64(1000 + i*10)}))
		if res.BaseOffset != int64(i*10) || res.LogAppendTime != -1 {
			t.Fatalf("append %d: %+v", i, res)
		}
	}
	if l.LogEndOffset() != 500 || l.HighWatermark() != 500 {
		t.Fatalf("LEO %d HW %d", l.LogEndOffset(), l.HighWatermark())
	}
	// Reads from an offset in the middle of a batch start at that batch.
	res, err := l.Read(255, 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := res.Chunk.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	res.Chunk.Release()
	if h := batch.DecodeHeader(buf.Bytes()); h.BaseOffset != 250 {
		t.Fatalf("first batch %d, want 250", h.BaseOffset)
	}
	if _, err := l.Read(501, 100, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read past HW: %v", err)
	}
	if res, err := l.Read(500, 100, true); err != nil || res.Chunk.Len() != 0 {
		t.Fatalf("read at HW: %v %d", err, res.Chunk.Len())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	if l.LogEndOffset() != 500 {
		t.Fatalf("LEO after reopen %d", l.LogEndOffset())
	}
	if got := readAll(t, l); len(got) != 50 || got[49] != 490 {
		t.Fatalf("batches after reopen: %v", got)
	}
	if res := appendOK(t, l, makeBatch(batchOpts{records: 1})); res.BaseOffset != 500 {
		t.Fatalf("append after reopen at %d", res.BaseOffset)
	}
}

func TestValidationErrorsWriteNothing(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = 2000
	l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	good := makeBatch(batchOpts{records: 3, valueSize: 10})
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 0xff
	badCount := bytes.Clone(good)
	binary.BigEndian.PutUint32(badCount[batch.OffRecordCount:], 5)
	binary.BigEndian.PutUint32(badCount[batch.OffCRC:], batch.CRC(badCount))
	tooLarge := makeBatch(batchOpts{records: 3, valueSize: 1000})
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"crc", badCRC, kerr.CorruptMessage},
		{"count", badCount, kerr.InvalidRecord},
		{"too large", tooLarge, kerr.MessageTooLarge},
		{"truncated", good[:len(good)-3], kerr.CorruptMessage},
		{"control", makeBatch(batchOpts{attrs: batch.AttrControl}), kerr.InvalidRecord},
		{"codec", makeBatch(batchOpts{attrs: 5}), kerr.UnsupportedCompressionType},
	}
	for _, c := range cases {
		_, err := leaderAppend(l, c.b, 0)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		var ke *kerr.Error
		if !errors.As(err, &ke) {
			t.Errorf("%s: %v does not unwrap to a kerr.Error", c.name, err)
		}
	}
	if l.LogEndOffset() != 0 || l.active().size != 0 {
		t.Fatalf("validation errors wrote data: LEO %d size %d", l.LogEndOffset(), l.active().size)
	}
}

func TestRollByBytesAndReadAcrossSegments(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	for i := 0; i < 40; i++ {
		appendOK(t, l, makeBatch(batchOpts{records: 10, valueSize: 100, ts: 1}))
	}
	if n := len(l.segs); n < 10 {
		t.Fatalf("%d segments, want >= 10", n)
	}
	for _, s := range l.segs {
		if s.size > cfg.SegmentBytes {
			t.Fatalf("segment %d has %d bytes", s.base, s.size)
		}
	}
	// Reads stop at the segment end and the next read continues.
	if got := readAll(t, l); len(got) != 40 {
		t.Fatalf("read %d batches", len(got))
	}
	if l.RecoveryPoint() < l.active().base {
		t.Fatalf("recovery point %d below the active segment %d after rolls", l.RecoveryPoint(), l.active().base)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed segments are trimmed to their used size.
	fi, err := os.Stat(segmentPath(dir, 0, indexExt))
	if err != nil || fi.Size()%offsetEntrySize != 0 || fi.Size() >= int64(cfg.MaxIndexSize) {
		t.Fatalf("index not trimmed: %v %v", fi.Size(), err)
	}
}

func TestRollByTime(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs = 1000
	l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	appendOK(t, l, makeBatch(batchOpts{ts: 10_000}))
	appendOK(t, l, makeBatch(batchOpts{ts: 10_900}))
	if len(l.segs) != 1 {
		t.Fatalf("rolled before segment.ms")
	}
	appendOK(t, l, makeBatch(batchOpts{ts: 11_001}))
	if len(l.segs) != 2 || l.active().base != 2 {
		t.Fatalf("segments %d, active base %d", len(l.segs), l.active().base)
	}
}

func TestReadMaxBytes(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	b := makeBatch(batchOpts{records: 5, valueSize: 100})
	for i := 0; i < 3; i++ {
		appendOK(t, l, b)
	}
	res, err := l.Read(0, 10, true)
	if err != nil || res.Chunk.Len() != len(b) {
		t.Fatalf("minOneBatch: len %d err %v, want %d", res.Chunk.Len(), err, len(b))
	}
	res.Chunk.Release()
	res, err = l.Read(0, 10, false)
	if err != nil || res.Chunk.Len() != 0 {
		t.Fatalf("no minOneBatch: len %d err %v", res.Chunk.Len(), err)
	}
	res, err = l.Read(5, 2*len(b)+10, false)
	if err != nil || res.Chunk.Len() != 2*len(b) {
		t.Fatalf("two batches: len %d err %v", res.Chunk.Len(), err)
	}
	res.Chunk.Release()
}

func TestTimestamps(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	if o, ts := l.MaxTimestamp(); o != -1 || ts != -1 {
		t.Fatalf("empty MaxTimestamp %d %d", o, ts)
	}
	// Batch i holds offsets 10i..10i+9 with timestamps 1000+100i+j.
	for i := 0; i < 30; i++ {
		appendOK(t, l, makeBatch(batchOpts{records: 10, valueSize: 20, ts: int64(1000 + 100*i)}))
	}
	for _, c := range []struct{ ts, off, got int64 }{
		{0, 0, 1000}, {1000, 0, 1000}, {1005, 5, 1005}, {1050, 10, 1100}, {2345, 140, 2400}, {3909, 299, 3909},
	} {
		off, ts, ok := l.OffsetForTimestamp(c.ts)
		if !ok || off != c.off || ts != c.got {
			t.Errorf("OffsetForTimestamp(%d) = %d %d %v, want %d %d", c.ts, off, ts, ok, c.off, c.got)
		}
	}
	if _, _, ok := l.OffsetForTimestamp(3910); ok {
		t.Errorf("timestamp after the last record found")
	}
	if o, ts := l.MaxTimestamp(); o != 299 || ts != 3909 {
		t.Fatalf("MaxTimestamp %d %d", o, ts)
	}
}

func TestIdempotentDuplicate(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	b0 := makeBatch(batchOpts{records: 3, pid: 7, epoch: 1, seq: 0})
	b1 := makeBatch(batchOpts{records: 3, pid: 7, epoch: 1, seq: 3})
	appendOK(t, l, b0)
	appendOK(t, l, b1)
	res := appendOK(t, l, makeBatch(batchOpts{records: 3, pid: 7, epoch: 1, seq: 0}))
	if !res.Duplicate || res.BaseOffset != 0 || l.LogEndOffset() != 6 {
		t.Fatalf("duplicate: %+v LEO %d", res, l.LogEndOffset())
	}
	if _, err := leaderAppend(l, makeBatch(batchOpts{records: 1, pid: 7, epoch: 1, seq: 9}), 0); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap: %v", err)
	}
}

func TestLeaderEpochs(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	if l.LatestEpoch() != -1 {
		t.Fatal("epoch on empty log")
	}
	for i, e := range []int32{0, 0, 2, 2, 5} {
		if _, err := leaderAppend(l, makeBatch(batchOpts{records: 2}), e); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	check := func() {
		t.Helper()
		for _, c := range []struct {
			req int32
			ep  int32
			end int64
		}{{0, 0, 4}, {1, 0, 4}, {2, 2, 8}, {5, 5, 10}, {6, -1, -1}, {-1, -1, -1}} {
			ep, end := l.EndOffsetForEpoch(c.req)
			if ep != c.ep || end != c.end {
				t.Errorf("EndOffsetForEpoch(%d) = %d %d, want %d %d", c.req, ep, end, c.ep, c.end)
			}
		}
	}
	check()
	res, err := l.Read(8, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = res.Chunk.WriteTo(&buf)
	res.Chunk.Release()
	if h := batch.DecodeHeader(buf.Bytes()); h.PartitionLeaderEpoch != 5 {
		t.Fatalf("stamped epoch %d", h.PartitionLeaderEpoch)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	if l.LatestEpoch() != 5 {
		t.Fatalf("epoch after reopen %d", l.LatestEpoch())
	}
	check()
}

func TestWaitClosedOnAppend(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	ch := l.Wait()
	select {
	case <-ch:
		t.Fatal("closed before append")
	default:
	}
	appendOK(t, l, makeBatch(batchOpts{}))
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait not closed by append")
	}
}

func TestConcurrentAppendGroupCommit(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := leaderAppend(l, makeBatch(batchOpts{records: 2, valueSize: 50}), 0); err != nil {
					errs <- err
				}
				if i%5 == 0 {
					res, err := l.Read(0, 4096, true)
					if err != nil {
						errs <- err
						continue
					}
					res.Chunk.Release()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if l.LogEndOffset() != writers*each*2 || l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("LEO %d recovery point %d", l.LogEndOffset(), l.RecoveryPoint())
	}
	if got := readAll(t, l); len(got) != writers*each {
		t.Fatalf("read %d batches", len(got))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestChunkSendfile(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), testConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	var want []byte
	for i := 0; i < 20; i++ {
		b := makeBatch(batchOpts{records: 10, valueSize: 100})
		appendOK(t, l, b)
	}
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := res.Chunk.WriteTo(&plain); err != nil {
		t.Fatal(err)
	}
	want = plain.Bytes()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := res.Chunk.WriteTo(c.(*net.TCPConn))
	res.Chunk.Release()
	c.Close()
	if err != nil || n != int64(len(want)) {
		t.Fatalf("sendfile wrote %d: %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("sendfile bytes differ: %d vs %d", len(b), len(want))
	}
}

// A chunk keeps its segment readable after the log is deleted.
func TestChunkOutlivesDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{RecoveryPoint: -1})
	b := makeBatch(batchOpts{records: 3})
	appendOK(t, l, b)
	res, err := l.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir still there: %v", err)
	}
	var buf bytes.Buffer
	if _, err := res.Chunk.WriteTo(&buf); err != nil || buf.Len() != len(b) {
		t.Fatalf("chunk after delete: %d %v", buf.Len(), err)
	}
	res.Chunk.Release()
	if _, err := leaderAppend(l, b, 0); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append after delete: %v", err)
	}
}

func observedLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.InfoLevel)
	return zap.New(core), logs
}

func BenchmarkAppend(b *testing.B) {
	l := openTestLog(b, vfs.Default, b.TempDir(), DefaultConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	batch := makeBatch(batchOpts{records: 10, valueSize: 100 - 10}) // ~1 KiB
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := leaderAppend(l, batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	l := openTestLog(b, vfs.Default, b.TempDir(), DefaultConfig(), OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	batch := makeBatch(batchOpts{records: 10, valueSize: 90})
	for i := 0; i < 10000; i++ {
		if _, err := leaderAppend(l, batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(64 << 10)
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		res, err := l.Read(i%(l.LogEndOffset()-1000), 64<<10, true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.Chunk.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		res.Chunk.Release()
		i += 7919
	}
}

var _ = fmt.Sprintf
