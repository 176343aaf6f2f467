package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

// kv is a test record; a nil value is a tombstone, a nil key a keyless record.
type kv struct {
	key, value []byte
}

func rec(k, v string) kv { return kv{key: []byte(k), value: []byte(v)} }

func tombstone(k string) kv { return kv{key: []byte(k)} }

// keyedBatch builds a v2 batch of the records with timestamps ts, ts+1, ...
// compressed with codec by franz-go's compressor (independent of ours).
func keyedBatch(t testing.TB, ts int64, codec int, recs ...kv) []byte {
	t.Helper()
	var raw []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: r.key, Value: r.value}
		body := kr.AppendTo(nil)[1:]
		kr.Length = int32(len(body))
		raw = kr.AppendTo(raw)
	}
	if codec != batch.CodecNone {
		kc := map[int]kgo.CompressionCodec{batch.CodecGzip: kgo.GzipCompression(), batch.CodecSnappy: kgo.SnappyCompression(),
			batch.CodecLZ4: kgo.Lz4Compression(), batch.CodecZstd: kgo.ZstdCompression()}[codec]
		c, err := kgo.DefaultCompressor(kc)
		if err != nil {
			t.Fatal(err)
		}
		out, got := c.Compress(new(bytes.Buffer), raw)
		if int(got) != codec {
			t.Fatalf("compressor used codec %d, want %d", got, codec)
		}
		raw = append([]byte(nil), out...)
	}
	b := kmsg.RecordBatch{Length: int32(batch.HeaderSize - batch.LogOverhead + len(raw)), PartitionLeaderEpoch: -1, Magic: 2,
		Attributes: int16(codec), LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts, MaxTimestamp: ts + int64(len(recs)-1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: raw}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batch.OffCRC:], batch.CRC(out))
	return out
}

func compactConfig() Config {
	c := testConfig()
	c.Compact = true
	c.SegmentBytes = 16 << 10
	c.MaxIndexSize = 4096
	c.MinCleanableDirtyRatio = 0.5
	return c
}

// logRecord is a record as read back: offset, key, value, tombstone, timestamp.
type logRecord struct {
	off       int64
	key, val  string
	tombstone bool
	ts        int64
}

// readRecords walks the log with ForEachBatch, checking each batch's CRC
// and decompressing with franz-go's decompressor.
func readRecords(t testing.TB, l *Log) []logRecord {
	t.Helper()
	var out []logRecord
	dec := kgo.DefaultDecompressor()
	prevNext := int64(-1)
	err := l.ForEachBatch(0, func(b []byte) error {
		h := batch.DecodeHeader(b)
		if batch.CRC(b) != h.CRC {
			return fmt.Errorf("batch %d: bad crc", h.BaseOffset)
		}
		if h.BaseOffset < prevNext {
			return fmt.Errorf("batch %d overlaps the previous one ending at %d", h.BaseOffset, prevNext)
		}
		prevNext = h.NextOffset()
		recs := b[batch.HeaderSize:]
		if c := h.Compression(); c != 0 {
			var err error
			if recs, err = dec.Decompress(recs, kgo.CompressionCodecType(c)); err != nil {
				return fmt.Errorf("batch %d: %w", h.BaseOffset, err)
			}
		}
		krs, err := kmsgRecords(recs, h.RecordCount)
		for _, kr := range krs {
			out = append(out, logRecord{off: h.BaseOffset + int64(kr.OffsetDelta), key: string(kr.Key), val: string(kr.Value),
				tombstone: kr.Value == nil, ts: h.BaseTimestamp + kr.TimestampDelta64})
		}
		return err
	})
	if err != nil {
		t.Fatalf("ForEachBatch: %v", err)
	}
	return out
}

// kmsgRecords decodes count records of an uncompressed records section
// with franz-go's kmsg, a decoder independent of internal/batch.
func kmsgRecords(recs []byte, count int32) ([]kmsg.Record, error) {
	var out []kmsg.Record
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || length > int64(len(recs)-n) {
			return out, fmt.Errorf("record %d: bad length", i)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(recs[:n+int(length)]); err != nil {
			return out, fmt.Errorf("record %d: %w", i, err)
		}
		out = append(out, kr)
		recs = recs[n+int(length):]
	}
	if len(recs) != 0 {
		return out, fmt.Errorf("%d bytes after the last of %d records", len(recs), count)
	}
	return out, nil
}

// latest returns the last value per key of a record list.
func latest(recs []logRecord) map[string]logRecord {
	m := map[string]logRecord{}
	for _, r := range recs {
		m[r.key] = r
	}
	return m
}

func dirBytes(t testing.TB, dir string) (total int64, segments int) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
		if strings.HasSuffix(e.Name(), logExt) {
			segments++
		}
	}
	return total, segments
}

// fillKeys appends n single-record batches cycling over keys, value "v<i>".
func fillKeys(t testing.TB, l *Log, n int, keys ...string) map[string]string {
	t.Helper()
	want := map[string]string{}
	for i := 0; i < n; i++ {
		k := keys[i%len(keys)]
		v := fmt.Sprintf("v%d", i)
		appendOK(t, l, keyedBatch(t, int64(1000+i), batch.CodecNone, rec(k, v)))
		want[k] = v
	}
	return want
}

func checkLatest(t *testing.T, l *Log, want map[string]string) []logRecord {
	t.Helper()
	recs := readRecords(t, l)
	got := latest(recs)
	if len(got) != len(want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k].val != v {
			t.Fatalf("key %s = %q, want %q", k, got[k].val, v)
		}
	}
	return recs
}

func TestCleanManySmallBatchesThreeKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	fsys := noSyncFS{vfs.Default}
	l := openTestLog(t, fsys, dir, cfg, OpenOptions{})
	want := fillKeys(t, l, 100_000, "a", "b", "c")
	before, segsBefore := dirBytes(t, dir)
	start := time.Now()
	st, err := l.Clean(false)
	if err != nil || !st.Cleaned {
		t.Fatalf("Clean: %+v %v", st, err)
	}
	t.Logf("cleaned %d segments (%d bytes) into %d (%d bytes), %d of %d records kept, in %v",
		st.SegmentsBefore, st.BytesBefore, st.SegmentsAfter, st.BytesAfter, st.RecordsKept, st.RecordsRead, time.Since(start))
	after, segsAfter := dirBytes(t, dir)
	activeSize := l.active().size + int64(cfg.MaxIndexSize)*2 // active segment and its pre-allocated indexes
	if after-activeSize > 64<<10 || segsAfter >= segsBefore/10 {
		t.Fatalf("after cleaning %d bytes in %d segments (before %d in %d)", after, segsAfter, before, segsBefore)
	}
	recs := checkLatest(t, l, want)
	if len(recs) > 3+int(l.active().size/60) {
		t.Fatalf("%d records left", len(recs))
	}
	// Nothing dirty: a second cleaning does nothing.
	if st, err := l.Clean(false); err != nil || st.Cleaned {
		t.Fatalf("second Clean: %+v %v", st, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, fsys, dir, cfg, OpenOptions{CleanShutdown: true})
	checkLatest(t, l, want)
	crash(l)
	l = openTestLog(t, fsys, dir, cfg, OpenOptions{RecoveryPoint: -1})
	defer l.Close()
	checkLatest(t, l, want)
	// Appends continue after the compacted segments.
	appendOK(t, l, keyedBatch(t, 5, batch.CodecNone, rec("a", "new")))
	want["a"] = "new"
	checkLatest(t, l, want)
}

func TestCleanKeepsOffsetsAndLastOffsetDelta(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), compactConfig(), OpenOptions{})
	defer l.Close()
	appendOK(t, l, keyedBatch(t, 100, batch.CodecNone, rec("a", "1"), rec("b", "1"), rec("c", "1"))) // 0..2
	appendOK(t, l, keyedBatch(t, 200, batch.CodecNone, rec("a", "2")))                               // 3
	if err := l.roll(l.now()); err != nil {
		t.Fatal(err)
	}
	appendOK(t, l, keyedBatch(t, 300, batch.CodecNone, rec("b", "3")))
	if _, err := l.Clean(true); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, l)
	want := []logRecord{{off: 1, key: "b", val: "1", ts: 101}, {off: 2, key: "c", val: "1", ts: 102}, {off: 3, key: "a", val: "2", ts: 200}, {off: 4, key: "b", val: "3", ts: 300}}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", recs, want)
	}
	var hdrs []batch.Header
	_ = l.ForEachBatch(0, func(b []byte) error { hdrs = append(hdrs, batch.DecodeHeader(b)); return nil })
	if h := hdrs[0]; h.BaseOffset != 0 || h.LastOffsetDelta != 2 || h.RecordCount != 2 || h.MaxTimestamp != 102 {
		t.Fatalf("rebuilt batch header %+v", h)
	}
	// Reads from an offset removed by cleaning start at the next batch.
	res, err := l.Read(0, 1<<20, true)
	if err != nil || res.Chunk.Len() == 0 {
		t.Fatalf("Read(0): %v", err)
	}
	res.Chunk.Release()
}

func TestCleanTombstonesAfterDeleteRetention(t *testing.T) {
	dir := t.TempDir()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 60_000
	l := openTestLog(t, vfs.Default, dir, cfg, OpenOptions{})
	defer l.Close()
	now := time.UnixMilli(1_000_000)
	l.now = func() time.Time { return now }
	appendOK(t, l, keyedBatch(t, 100, batch.CodecNone, rec("a", "1"), rec("b", "1")))
	appendOK(t, l, keyedBatch(t, 200, batch.CodecNone, tombstone("a")))
	if err := l.roll(now); err != nil {
		t.Fatal(err)
	}
	appendOK(t, l, keyedBatch(t, 300, batch.CodecNone, rec("c", "1")))
	if _, err := l.Clean(true); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, l)
	if len(recs) != 3 || !recs[1].tombstone || recs[1].key != "a" || recs[1].ts != 200 {
		t.Fatalf("after first clean: %+v", recs)
	}
	// Not yet: the horizon is now + delete.retention.ms.
	now = now.Add(59 * time.Second)
	if st, err := l.Clean(false); err != nil || st.Cleaned {
		t.Fatalf("clean before the horizon: %+v %v", st, err)
	}
	now = now.Add(time.Second)
	if st, err := l.Clean(false); err != nil || !st.Cleaned {
		t.Fatalf("clean at the horizon: %+v %v", st, err)
	}
	recs = readRecords(t, l)
	if len(recs) != 2 || recs[0].key != "b" || recs[1].key != "c" {
		t.Fatalf("after the horizon: %+v", recs)
	}
}

func TestCompactedRejectsKeyless(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), compactConfig(), OpenOptions{})
	defer l.Close()
	for _, codec := range []int{batch.CodecNone, batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		b := keyedBatch(t, 1, codec, rec("k", "v"), kv{value: []byte("no key")})
		if _, err := leaderAppend(l, b, 0); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("codec %d: keyless append: %v, want InvalidRecord", codec, err)
		}
		appendOK(t, l, keyedBatch(t, 1, codec, rec("k", "v")))
	}
	if l.LogEndOffset() != 5 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
}

func TestCleanCompressedBatches(t *testing.T) {
	for _, codec := range []int{batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			l := openTestLog(t, vfs.Default, t.TempDir(), compactConfig(), OpenOptions{})
			defer l.Close()
			want := map[string]string{}
			for i := 0; i < 50; i++ {
				var recs []kv
				for j := 0; j < 10; j++ {
					k, v := fmt.Sprintf("k%d", (i*10+j)%7), fmt.Sprintf("value-%d-%s", i*10+j, strings.Repeat("x", 40))
					recs = append(recs, rec(k, v))
					want[k] = v
				}
				appendOK(t, l, keyedBatch(t, int64(i*10), codec, recs...))
				if i%10 == 9 {
					if err := l.roll(l.now()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := l.Clean(true); err != nil {
				t.Fatal(err)
			}
			recs := checkLatest(t, l, want)
			if len(recs) != 7 {
				t.Fatalf("%d records left, want 7", len(recs))
			}
			_ = l.ForEachBatch(0, func(b []byte) error {
				if h := batch.DecodeHeader(b); h.Compression() != codec {
					t.Fatalf("batch %d codec %d, want %d", h.BaseOffset, h.Compression(), codec)
				}
				return nil
			})
		})
	}
}

func TestCleanRetainsLastBatchOfProducer(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), compactConfig(), OpenOptions{})
	defer l.Close()
	idem := func(seq int32, recs ...kv) []byte {
		b := keyedBatch(t, 10, batch.CodecNone, recs...)
		binary.BigEndian.PutUint64(b[batch.OffProducerID:], 7)
		binary.BigEndian.PutUint16(b[batch.OffProducerEpoch:], 1)
		binary.BigEndian.PutUint32(b[batch.OffBaseSequence:], uint32(seq))
		binary.BigEndian.PutUint32(b[batch.OffCRC:], batch.CRC(b))
		return b
	}
	appendOK(t, l, idem(0, rec("a", "1")))
	appendOK(t, l, idem(1, rec("a", "2"), rec("b", "2")))
	if err := l.roll(l.now()); err != nil {
		t.Fatal(err)
	}
	appendOK(t, l, keyedBatch(t, 20, batch.CodecNone, rec("a", "3"), rec("b", "3")))
	if err := l.roll(l.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(true); err != nil {
		t.Fatal(err)
	}
	var hdrs []batch.Header
	_ = l.ForEachBatch(0, func(b []byte) error { hdrs = append(hdrs, batch.DecodeHeader(b)); return nil })
	// The producer's first batch goes, its last stays as an empty header.
	if len(hdrs) != 2 || hdrs[0].BaseOffset != 1 || hdrs[0].RecordCount != 0 || hdrs[0].LastOffsetDelta != 1 ||
		hdrs[0].ProducerID != 7 || hdrs[0].BaseSequence != 1 {
		t.Fatalf("batches %+v", hdrs)
	}
	// The retained header keeps dedup working: a resend of seq 1 is a duplicate.
	if res, err := leaderAppend(l, idem(1, rec("a", "2"), rec("b", "2")), 0); err != nil || !res.Duplicate || res.BaseOffset != 1 {
		t.Fatalf("resend: %+v %v", res, err)
	}
}

// TestCleanCrashMidSwap fails the cleaner's renames at each step and checks
// that reopening after the crash keeps exactly the latest values.
func TestCleanCrashMidSwap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		suffix string
		nth    int
	}{
		{"before commit", ".timeindex.swap", 1},
		{"at commit", ".log.swap", 1},
		{"after commit", ".index", 1},
		{"last rename", ".log", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := compactConfig()
			efs := errorfs.Wrap(vfs.Default)
			l := openTestLog(t, efs, dir, cfg, OpenOptions{})
			want := fillKeys(t, l, 3000, "a", "b", "c")
			efs.Inject(errorfs.Fault{Op: errorfs.OpRename, PathSuffix: tc.suffix, Nth: tc.nth})
			if _, err := l.Clean(true); err == nil {
				t.Fatal("Clean succeeded despite the injected rename failure")
			}
			crash(l)
			l = openTestLog(t, vfs.Default, dir, cfg, OpenOptions{RecoveryPoint: -1})
			checkLatest(t, l, want)
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), cleanedExt) || strings.HasSuffix(e.Name(), swapExt) {
					t.Fatalf("leftover %s", e.Name())
				}
			}
			if _, err := l.Clean(true); err != nil {
				t.Fatal(err)
			}
			checkLatest(t, l, want)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCleanReaderKeepsOldSegment(t *testing.T) {
	l := openTestLog(t, vfs.Default, t.TempDir(), compactConfig(), OpenOptions{})
	defer l.Close()
	fillKeys(t, l, 2000, "a", "b")
	res, err := l.Read(0, 4096, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(true); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := res.Chunk.WriteTo(&buf); err != nil {
		t.Fatalf("chunk of a cleaned-away segment: %v", err)
	}
	res.Chunk.Release()
	if h := batch.DecodeHeader(buf.Bytes()); h.BaseOffset != 0 || batch.CRC(buf.Bytes()[:h.Size()]) != h.CRC {
		t.Fatalf("old chunk content changed: %+v", h)
	}
}

func TestLogStartOffsetOption(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{})
	for i := 0; i < 10; i++ {
		appendOK(t, l, makeBatch(batchOpts{records: 2}))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{CleanShutdown: true, LogStartOffset: 7})
	if got := l.LogStartOffset(); got != 7 {
		t.Fatalf("LogStartOffset %d, want 7", got)
	}
	if _, err := l.Read(6, 1<<20, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below the start: %v", err)
	}
	res, err := l.Read(7, 1<<20, true)
	if err != nil || res.Chunk.Len() == 0 {
		t.Fatalf("read at the start: %v", err)
	}
	res.Chunk.Release()
	_ = l.Close()
	l = openTestLog(t, vfs.Default, dir, testConfig(), OpenOptions{CleanShutdown: true, LogStartOffset: 1000})
	defer l.Close()
	if got := l.LogStartOffset(); got != 20 {
		t.Fatalf("LogStartOffset past the end %d, want clamped to 20", got)
	}
	_ = filepath.Join
}

// BenchmarkClean measures one cleaning of 20,000 single-record batches over
// 100 keys in 16 KiB segments (appends are not timed).
func BenchmarkClean(b *testing.B) {
	b.Run("fsync", func(b *testing.B) { benchmarkClean(b, vfs.Default) })
	b.Run("nofsync", func(b *testing.B) { benchmarkClean(b, noSyncFS{vfs.Default}) })
}

func benchmarkClean(b *testing.B, fsys vfs.FS) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l := openTestLog(b, fsys, b.TempDir(), compactConfig(), OpenOptions{})
		keys := make([]string, 100)
		for k := range keys {
			keys[k] = fmt.Sprintf("key-%d", k)
		}
		fillKeys(b, l, 20_000, keys...)
		b.StartTimer()
		st, err := l.Clean(true)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(st.BytesBefore)
		b.StopTimer()
		_ = l.Close()
	}
}

// noSyncFS skips fsyncs: for tests about what compaction keeps, not about
// durability, so their run time does not depend on the disk's fsync latency.
type noSyncFS struct{ vfs.FS }

type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error { return nil }

func (f noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{file}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }
