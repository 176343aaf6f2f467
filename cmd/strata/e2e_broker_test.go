package main

// End-to-end tests of the process itself: crashes, restarts, hostile input,
// configuration and signals.

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	const topic, partitions = "crash", 3
	cl := newClient(t, b.addr)
	createTopic(t, cl, topic, partitions)
	acked := produceAll(t, cl, topic, 0, 3000)

	// Keep producing and kill the broker once a few hundred of these are
	// acknowledged: those must survive as well; records in flight may or may not.
	var (
		mu            sync.Mutex
		inflightAcked atomic.Int64
	)
	inflight := newClient(t, b.addr, kgo.RecordRetries(0), kgo.RequestRetries(0))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 3000; ctx.Err() == nil && i < 1_000_000; i++ {
			inflight.Produce(ctx, keyed(topic, i), func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked = append(acked, r)
					mu.Unlock()
					inflightAcked.Add(1)
				}
			})
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for inflightAcked.Load() < 500 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.kill()
	cancel()
	<-stopped
	inflight.Close() // fails what is still pending, so acked is final
	cl.Close()
	if inflightAcked.Load() < 500 {
		t.Fatalf("only %d records acknowledged while producing continuously for a minute", inflightAcked.Load())
	}

	b = b.restart()
	if line := b.waitLog(regexp.MustCompile(`opening log dir`), 10*time.Second); !strings.Contains(line, `"clean_shutdown": false`) {
		t.Errorf("startup after SIGKILL claims a clean shutdown: %s", line)
	}
	cl = newClient(t, b.addr)
	ends := endOffsets(t, cl, topic, partitions)
	var total int64
	for _, e := range ends {
		total += e
	}
	mu.Lock()
	final := slices.Clone(acked)
	mu.Unlock()
	if total < int64(len(final)) {
		t.Fatalf("%d records after restart, but %d were acknowledged", total, len(final))
	}
	recs := consumeAll(t, b.addr, topic, int(total))
	checkLog(t, recs)
	checkAcked(t, final, recs)
	t.Logf("%d acknowledged, %d in the log after SIGKILL", len(final), total)

	// Producing again continues each partition exactly at its end offset.
	more := produceAll(t, cl, topic, 2_000_000, 2_001_000)
	first := map[int32]int64{}
	for _, r := range more {
		if f, ok := first[r.Partition]; !ok || r.Offset < f {
			first[r.Partition] = r.Offset
		}
	}
	for p, f := range first {
		if f != ends[p] {
			t.Errorf("partition %d: first new offset %d, want %d (the end offset after restart)", p, f, ends[p])
		}
	}
	all := consumeAll(t, b.addr, topic, int(total)+len(more))
	checkLog(t, all)
	checkAcked(t, append(final, more...), all)
}

// corruptBatch is a valid magic-2 batch of one record whose CRC is then broken.
func corruptBatch(t *testing.T, valid bool) []byte {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	body := rec.AppendTo(nil)[1:] // drop the placeholder length, a 1-byte varint 0
	records := binary.AppendVarint(nil, int64(len(body)))
	records = append(records, body...)
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{
		Magic: 2, FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: 1, Records: records,
	}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	if !valid {
		crc ^= 0xdeadbeef
	}
	binary.BigEndian.PutUint32(raw[17:], crc)
	return raw
}

func produceRaw(t *testing.T, c net.Conn, topic string, batch []byte, corr int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := rawRequest(t, c, req, 7, corr).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

func TestProduceWithBadCRC(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	cl := newClient(t, b.addr)
	createTopic(t, cl, "crc", 1)
	c, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	got := produceRaw(t, c, "crc", corruptBatch(t, false), 1)
	if got.ErrorCode != kerr.CorruptMessage.Code {
		t.Errorf("bad CRC: error code %d (%v), want %d CORRUPT_MESSAGE", got.ErrorCode, kerr.ErrorForCode(got.ErrorCode), kerr.CorruptMessage.Code)
	}
	if end := endOffsets(t, cl, "crc", 1)[0]; end != 0 {
		t.Errorf("end offset %d after the rejected batch, want 0", end)
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "crc"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr := rawRequest(t, c, fetch, 11, 2).(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response: %+v", fr)
	}
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Errorf("fetch after the rejected batch: error %d, %d bytes, high watermark %d; want nothing", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
	}

	// The same batch with its CRC right is accepted on the same connection, so the
	// rejection above was about the CRC and not the framing.
	if got := produceRaw(t, c, "crc", corruptBatch(t, true), 3); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Errorf("valid batch: error code %d, base offset %d; want 0, 0", got.ErrorCode, got.BaseOffset)
	}
}

func TestHugeFrameClosesOnlyThatConnection(t *testing.T) {
	e2e(t)
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read the broker's RSS")
	}
	b := startBroker(t, "")
	cl := newClient(t, b.addr)
	createTopic(t, cl, "huge", 1)
	produceAll(t, cl, "huge", 0, 100)
	before := b.rssKiB()

	c, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 3, 0, 0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 64))
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("connection still open 10s after a 2^31-1 byte frame size")
	case err == nil:
		t.Errorf("broker answered %d bytes to a 2^31-1 byte frame size", n)
	case !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET):
		t.Errorf("read: %v, want EOF or connection reset", err)
	}

	produceAll(t, cl, "huge", 100, 200)
	checkLog(t, consumeAll(t, b.addr, "huge", 200))
	after := b.rssKiB()
	t.Logf("RSS %d KiB before, %d KiB after", before, after)
	if after-before > 64<<10 {
		t.Errorf("RSS grew from %d KiB to %d KiB: the frame size was allocated", before, after)
	}
}

func TestUnknownKeyWarnsAndStarts(t *testing.T) {
	e2e(t)
	b := startBroker(t, "", "--override", "no.such.setting=1", "--override", "num.io.threads=8")
	line := b.waitLog(regexp.MustCompile(`WARN.*no\.such\.setting`), 10*time.Second)
	if !strings.Contains(line, "unknown") {
		t.Errorf("warning %q does not say the key is unknown", line)
	}
	if strings.Contains(b.out.String(), "num.io.threads") {
		t.Errorf("a common Kafka key we ignore was mentioned at info level or above:\n%s", b.out.String())
	}
}

func TestInvalidValueExitsBeforeListening(t *testing.T) {
	e2e(t)
	p := launch(t, t.TempDir(), freePort(t), "--override", "num.partitions=abc")
	if code := p.exitCode(30 * time.Second); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	out := p.out.String()
	if !strings.Contains(out, "num.partitions") || !strings.Contains(out, "abc") {
		t.Errorf("output does not name the key and value:\n%s", out)
	}
	if strings.Contains(out, "listening") {
		t.Errorf("started despite the invalid value:\n%s", out)
	}
}

func TestConfigFile(t *testing.T) {
	e2e(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "server.properties")
	writeFile(t, file, "# a Kafka-style file\nnum.io.threads=8\n"+
		"num.partitions = \\\n    2\nauto.create.topics.enable:true\n")
	b := startBroker(t, filepath.Join(dir, "data"), "--config", file)
	cl := newClient(t, b.addr, kgo.AllowAutoTopicCreation()) // the topic does not exist yet
	produceAll(t, cl, "auto", 0, 100)
	if ends := endOffsets(t, cl, "auto", 2); ends[0]+ends[1] != 100 {
		t.Errorf("end offsets %v, want 100 records over 2 partitions", ends)
	}
}

func TestSigtermShutsDownCleanly(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	cl := newClient(t, b.addr)
	createTopic(t, cl, "term", 2)
	acked := produceAll(t, cl, "term", 0, 1000)
	cl.Close()
	if code := b.signal(syscall.SIGTERM, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}

	b = b.restart()
	if line := b.waitLog(regexp.MustCompile(`opening log dir`), 10*time.Second); !strings.Contains(line, `"clean_shutdown": true`) {
		t.Errorf("startup after SIGTERM did not use the clean-shutdown marker: %s", line)
	}
	recs := consumeAll(t, b.addr, "term", 1000)
	checkLog(t, recs)
	checkAcked(t, acked, recs)
}

func TestStartupIsLogged(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	line := b.waitLog(regexp.MustCompile(`\tlistening\t`), 10*time.Second)
	m := regexp.MustCompile(`"startup": "([^"]+)"`).FindStringSubmatch(line)
	if m == nil || !strings.Contains(line, b.addr) {
		t.Fatalf("start line %q lacks the startup duration or the address %s", line, b.addr)
	}
	if _, err := time.ParseDuration(m[1]); err != nil {
		t.Errorf("startup %q: %v", m[1], err)
	}
	t.Logf("startup took %s", m[1])
}

func TestLogRequests(t *testing.T) {
	e2e(t)
	b := startBroker(t, "", "--log-requests")
	cl := newClient(t, b.addr)
	createTopic(t, cl, "logged", 1)
	b.waitLog(regexp.MustCompile(`\trequest\t.*"api": "CreateTopics".*"logged"`), 10*time.Second)
	b.waitLog(regexp.MustCompile(`\tresponse\t.*"api": "CreateTopics"`), 10*time.Second)
}
