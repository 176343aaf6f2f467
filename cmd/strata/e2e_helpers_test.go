package main

// Helpers for the end-to-end tests: they run the real strata binary as a process and
// talk to it over TCP with real clients.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// strataBin is the binary built once by TestMain; empty in -short mode.
var strataBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "strata-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	strataBin = filepath.Join(dir, "strata")
	// -buildvcs=auto: record the commit as a build from a clone does, even where
	// GOFLAGS turns it off (TestVersion checks what the binary reports).
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", strataBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building strata:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// e2e marks an end-to-end test: skipped with -short, run in parallel otherwise.
func e2e(t *testing.T) {
	t.Helper()
	if strataBin == "" {
		t.Skip("end-to-end test; skipped with -short")
	}
	t.Parallel()
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is one strata process.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	addr string
	dir  string
	out  *syncBuffer
	done chan struct{} // closed once the process has exited
	err  error         // from Wait, valid after done
}

// freePort is a port no listener holds now and no other call returned.
// Another process may still bind it before strata does, as rarely as two
// random picks of some 12,000 ports meet.
func freePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		port := freePortsFrom + rand.IntN(freePortsTo-freePortsFrom)
		if portsGiven[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		ln.Close()
		portsGiven[port] = true
		return port
	}
	t.Fatalf("no free port in [%d, %d)", freePortsFrom, freePortsTo)
	return 0
}

// freePort hands out ports below Linux's ephemeral range (32768-60999),
// each once per test process: a port the kernel picked for a listener and
// freed again may be the next one it picks for a connection any process
// dials, which then holds it when the node it was meant for binds it
// (startCluster's nodes dial each other while later ones start).
const (
	freePortsFrom = 20000
	freePortsTo   = 32768
)

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// launch starts strata on 127.0.0.1:port with its data in dir, without waiting for it.
func launch(t testing.TB, dir string, port int, args ...string) *proc {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return launchArgs(t, dir, addr, append([]string{
		"--override", "listeners=PLAINTEXT://" + addr,
		"--override", "log.dirs=" + dir,
	}, args...)...)
}

// launchArgs starts strata with exactly args; addr is where it will listen and
// dir where its data goes, as args say.
func launchArgs(t testing.TB, dir, addr string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: exec.Command(strataBin, args...), addr: addr, dir: dir, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start strata: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("strata %s output:\n%s", addr, tail(p.out.String(), 16<<10))
		}
	})
	return p
}

// startBroker starts strata with its data in dir (a new temporary directory if
// empty) and waits until it accepts connections.
func startBroker(t testing.TB, dir string, args ...string) *proc {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	p := launch(t, dir, freePort(t), args...)
	p.waitReady(30 * time.Second)
	return p
}

// restart starts a new process on the same directory and address.
func (p *proc) restart(args ...string) *proc {
	p.t.Helper()
	_, port, _ := net.SplitHostPort(p.addr)
	n, _ := strconv.Atoi(port)
	q := launch(p.t, p.dir, n, args...)
	q.waitReady(60 * time.Second)
	return q
}

// waitReady polls until the broker accepts a TCP connection.
func (p *proc) waitReady(timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-p.done:
			p.t.Fatalf("strata exited before accepting connections: %v\n%s", p.err, p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("strata not accepting on %s after %v: %v", p.addr, timeout, err)
		}
	}
}

// kill sends SIGKILL and waits for the process to go.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// signal sends sig and waits for the exit; it returns the exit code.
func (p *proc) signal(sig syscall.Signal, timeout time.Duration) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
	return p.exitCode(timeout)
}

// exitCode waits for the process to exit by itself.
func (p *proc) exitCode(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("strata still running after %v", timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatalf("wait: %v", p.err)
	}
	return 0
}

// waitLog polls the output until re matches a line.
func (p *proc) waitLog(re *regexp.Regexp, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, line := range strings.Split(p.out.String(), "\n") {
			if re.MatchString(line) {
				return line
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no log line matching %s after %v", re, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rssKiB is the process's resident set size from /proc.
func (p *proc) rssKiB() int64 { return p.statusKiB("VmRSS:") }

// peakRSSKiB is the process's peak resident set size from /proc.
func (p *proc) peakRSSKiB() int64 { return p.statusKiB("VmHWM:") }

func (p *proc) statusKiB(field string) int64 {
	p.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		p.t.Fatalf("read /proc status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				p.t.Fatalf("parse %q: %v", line, err)
			}
			return n
		}
	}
	p.t.Fatalf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
	return 0
}

func tail(s string, n int) string {
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}

// newClient is a franz-go client with default options (acks=all, idempotent).
func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func timeoutCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// createTopic sends a CreateTopics request and requires success.
func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	resp, err := req.RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	if len(resp.Topics) != 1 {
		t.Fatalf("CreateTopics %s: %d topics in response", topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("CreateTopics %s: %v (%v)", topic, err, resp.Topics[0].ErrorMessage)
	}
}

// endOffsets lists the latest offset of each partition.
func endOffsets(t testing.TB, cl *kgo.Client, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil {
		t.Fatalf("ListOffsets %s: %v", topic, err)
	}
	out := make(map[int32]int64)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("ListOffsets %s[%d]: %v", topic, rp.Partition, err)
			}
			out[rp.Partition] = rp.Offset
		}
	}
	if len(out) != int(partitions) {
		t.Fatalf("ListOffsets %s: got %d partitions, want %d", topic, len(out), partitions)
	}
	return out
}

// keyed is the record number i: keys repeat every 100 records so each key has a
// produce order to check.
func keyed(topic string, i int) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%02d", i%100), Value: fmt.Appendf(nil, "%d", i)}
}

// produceAll produces records from..to-1 (see keyed) and waits for every ack.
// It returns the acknowledged records, with partition and offset set.
func produceAll(t testing.TB, cl *kgo.Client, topic string, from, to int) []*kgo.Record {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []*kgo.Record
		errs  []error
	)
	ctx := timeoutCtx(t, 2*time.Minute)
	for i := from; i < to; i++ {
		wg.Add(1)
		cl.Produce(ctx, keyed(topic, i), func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("record %s: %w", r.Value, err))
				return
			}
			acked = append(acked, r)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d records failed, first: %v", len(errs), to-from, errs[0])
	}
	return acked
}

// consumeAll reads topic from the start with a new client (opts added to
// its own) until it has n records, then fails on any fetch error or on
// more than n records arriving.
func consumeAll(t testing.TB, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	ctx := timeoutCtx(t, 2*time.Minute)
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(recs), n, topic, err)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		recs = append(recs, fs.Records()...)
	}
	if len(recs) != n {
		t.Fatalf("consumed %d records of %s, want %d", len(recs), topic, n)
	}
	return recs
}

// checkLog verifies what consumeAll returned: per partition, offsets run from 0
// without a gap or repeat, and each key's values increase (produce order).
func checkLog(t testing.TB, recs []*kgo.Record) {
	t.Helper()
	next := map[int32]int64{}
	lastByKey := map[string]int{}
	for _, r := range recs {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		v, err := strconv.Atoi(string(r.Value))
		if err != nil {
			t.Fatalf("partition %d offset %d: value %q", r.Partition, r.Offset, r.Value)
		}
		if last, ok := lastByKey[string(r.Key)]; ok && v <= last {
			t.Fatalf("key %s: value %d after %d (partition %d offset %d): out of produce order", r.Key, v, last, r.Partition, r.Offset)
		}
		lastByKey[string(r.Key)] = v
	}
}

// position is a record's place in the log.
type position struct {
	partition int32
	offset    int64
}

// checkAcked verifies that every acknowledged record is in the log exactly where
// its ack said, with its key and value.
func checkAcked(t testing.TB, acked, consumed []*kgo.Record) {
	t.Helper()
	at := make(map[position]*kgo.Record, len(consumed))
	seen := make(map[string]position, len(consumed))
	for _, r := range consumed {
		pos := position{r.Partition, r.Offset}
		if prev, dup := seen[string(r.Value)]; dup {
			t.Fatalf("value %s at %v and at %v: duplicate", r.Value, prev, pos)
		}
		seen[string(r.Value)] = pos
		at[pos] = r
	}
	for _, a := range acked {
		c := at[position{a.Partition, a.Offset}]
		if c == nil || !bytes.Equal(c.Key, a.Key) || !bytes.Equal(c.Value, a.Value) {
			t.Fatalf("acked record %s/%s at partition %d offset %d: found %v", a.Key, a.Value, a.Partition, a.Offset, c)
		}
	}
}

// rawRequest sends req at the given version on c, framed by hand, and decodes the
// response; it does what a client library does, so tests can send what none would.
func rawRequest(t testing.TB, c net.Conn, req kmsg.Request, version int16, corr int32) kmsg.Response {
	t.Helper()
	req.SetVersion(version)
	buf := make([]byte, 4, 64)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(version))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	clientID := "strata-e2e"
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(clientID)))
	buf = append(buf, clientID...)
	if req.IsFlexible() {
		buf = append(buf, 0) // no tagged fields in the request header
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := c.Write(buf); err != nil {
		t.Fatalf("write %T: %v", req, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("read %T response size: %v", req, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatalf("read %T response: %v", req, err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	if req.IsFlexible() && req.Key() != 18 { // ApiVersions responses keep the v0 header
		body = body[1:] // no tagged fields expected in the response header
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %T: %v", resp, err)
	}
	return resp
}

// httpGet returns the status and body of a GET of url.
func httpGet(t testing.TB, url string) (int, string) {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
