// Command kcat-runner drives the kcat binary (Debian's package; version from `kcat -V`)
// through the compat scenarios. kcat has no admin API: the orchestrator pre-creates topics.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
)

func main() { rt.Main("kcat", run) }

type env struct{ a rt.Args }

func run(a rt.Args) rt.Result {
	e := env{a}
	return rt.Dispatch(a.Scenario, rt.Handlers{
		Auth:                  e.auth,
		AuthRefused:           e.authRefused,
		AclAllowed:            e.aclAllowed,
		AclDenied:             e.aclDenied,
		AclGroupDenied:        e.aclGroupDenied,
		Metadata:              e.metadata,
		CreateTopic:           rt.Skipping("kcat has no admin API"),
		CreatePartitions:      rt.Skipping("kcat has no admin API"),
		DeleteTopic:           rt.Skipping("kcat has no admin API"),
		DescribeConfigs:       rt.Skipping("kcat has no admin API"),
		DescribeListGroups:    rt.Skipping("kcat cannot list or describe groups"),
		AlterConfigs:          rt.Skipping("kcat has no admin API"),
		LogDirs:               rt.Skipping("kcat has no admin API"),
		DeleteRecords:         rt.Skipping("kcat has no admin API"),
		ConsumerGroupsCLI:     rt.Skipping("kafka-cli only: checks the kafka-consumer-groups tool's output"),
		GroupConsumerProtocol: rt.Skipping("kcat is built on librdkafka 2.0.2 (Debian), which predates group.protocol=consumer (KIP-848)"),
		DescribeTopic:         e.describeTopic,
		Transactions:          rt.Skipping("kcat can only commit one transaction per run (-X transactional.id), never abort one"),
		Headers:               rt.Skipping("kcat takes header values from argv (-H k=v): a 0x00 byte cannot be expressed"),
		ProduceConsume:        e.produceConsume,
		ListOffsets:           e.listOffsets,
		IdempotentProduce:     e.idempotent,
		GroupCommitResume:     e.groupCommitResume,
		MaxMessageSize:        e.maxMessageSize,
		CrossProduce:          e.crossProduce,
		CrossConsume:          e.crossConsume,
	})
}

// kcat runs kcat with a timeout; it returns stdout, stderr and the error.
func (e env) kcat(stdin []byte, timeout time.Duration, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append(append([]string{"-b", e.a.Bootstrap}, e.securityArgs()...), args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("kcat %s: timed out after %s", strings.Join(args, " "), timeout)
	}
	return out.String(), errb.String(), err
}

func short(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " | "))
	if len(s) > 400 {
		s = s[len(s)-400:]
	}
	return s
}

func (e env) metadata() rt.Result {
	out, serr, err := e.kcat(nil, 15*time.Second, "-L", "-J")
	if err != nil {
		return rt.Failf("kcat -L -J: %v: %s", err, short(serr))
	}
	var md struct {
		Brokers []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		return rt.Failf("kcat -L -J output: %v", err)
	}
	if len(md.Brokers) == 0 || !strings.Contains(md.Brokers[0].Name, ":") {
		return rt.Failf("no broker with host:port: %s", short(out))
	}
	for _, t := range md.Topics {
		if t.Topic == e.a.Topic {
			return rt.Pass(fmt.Sprintf("%d broker(s), first %s, %d topics", len(md.Brokers), md.Brokers[0].Name, len(md.Topics)), nil)
		}
	}
	return rt.Failf("topic %s not listed", e.a.Topic)
}

type jmsg struct {
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Ts        int64    `json:"ts"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
	Headers   []string `json:"headers"`
}

func (m jmsg) rec() rt.Rec {
	r := rt.Rec{Partition: m.Partition, Offset: m.Offset, Timestamp: m.Ts}
	if m.Key != nil {
		r.Key = []byte(*m.Key)
	}
	if m.Payload != nil {
		r.Value = []byte(*m.Payload)
	}
	for i := 0; i+1 < len(m.Headers); i += 2 {
		r.Headers = append(r.Headers, [2][]byte{[]byte(m.Headers[i]), []byte(m.Headers[i+1])})
	}
	return r
}

// consume reads the whole topic from the beginning (-e: exit at the end of every partition).
func (e env) consume(extra ...string) ([]rt.Rec, error) {
	args := append([]string{"-C", "-t", e.a.Topic, "-J", "-e", "-o", "beginning", "-q"}, extra...)
	out, serr, err := e.kcat(nil, 20*time.Second, args...)
	if err != nil {
		return nil, fmt.Errorf("kcat -C: %v: %s", err, short(serr))
	}
	var recs []rt.Rec
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m jmsg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("kcat -J line %q: %v", line, err)
		}
		recs = append(recs, m.rec())
	}
	return recs, nil
}

func lines(rs []rt.Rec) []byte {
	var b bytes.Buffer
	for _, r := range rs {
		if r.Key != nil {
			b.Write(r.Key)
			b.WriteByte('\t')
		}
		b.Write(r.Value)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// produce pipes records as lines "key<TAB>value" (no tab: null key).
func (e env) produce(rs []rt.Rec, extra ...string) error {
	args := append([]string{"-P", "-t", e.a.Topic, "-K", "\t", "-X", "acks=all"}, extra...)
	_, serr, err := e.kcat(lines(rs), 25*time.Second, args...)
	if err != nil {
		return fmt.Errorf("kcat -P: %v: %s", err, short(serr))
	}
	if strings.Contains(serr, "Delivery failed") || strings.Contains(serr, "ERROR") {
		return fmt.Errorf("kcat -P: %s", short(serr))
	}
	return nil
}

func (e env) produceConsume(c string) rt.Result {
	var extra []string
	switch c {
	case "none":
	case "zstd":
		extra = []string{"-X", "compression.codec=zstd"}
	default:
		extra = []string{"-z", c}
	}
	if err := e.produce(rt.ProduceSet(), extra...); err != nil {
		return rt.Failf("produce (%s): %v", c, err)
	}
	got, err := e.consume()
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	if err := rt.CheckProduceConsume(got); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("produced (kcat -P -K, codec "+c+") and consumed (-C -J) 40 records", nil)
}

var qRE = regexp.MustCompile(`\[0\] offset (-?\d+)`)

func (e env) query(ts int64) (int64, error) {
	out, serr, err := e.kcat(nil, 15*time.Second, "-Q", "-t", fmt.Sprintf("%s:0:%d", e.a.Topic, ts))
	if err != nil {
		return 0, fmt.Errorf("kcat -Q ts=%d: %v: %s", ts, err, short(serr+out))
	}
	m := qRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("kcat -Q ts=%d: unexpected output %q", ts, short(out))
	}
	return strconv.ParseInt(m[1], 10, 64)
}

// listOffsets: kcat cannot set a record timestamp, so each of the 10 records is produced by
// its own kcat run (distinct client timestamps); the timestamps are read back with -C -J and
// record 5's is queried with -Q.
func (e env) listOffsets() rt.Result {
	for i := 0; i < 10; i++ {
		if err := e.produce([]rt.Rec{{Value: []byte(fmt.Sprintf("t%d", i))}}); err != nil {
			return rt.Failf("produce %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	got, err := e.consume()
	if err != nil || len(got) != 10 {
		return rt.Failf("read back: %d records, %v", len(got), err)
	}
	first5 := 10
	for i, r := range got {
		if r.Timestamp == got[5].Timestamp {
			first5 = i
			break
		}
	}
	var res, bad []string
	for _, q := range []struct {
		name     string
		ts, want int64
	}{{"earliest", -2, 0}, {"latest", -1, 10}, {"ts(record5)", got[5].Timestamp, int64(first5)}, {"after-last", got[9].Timestamp + 60_000, -1}} {
		off, err := e.query(q.ts)
		if err != nil {
			return rt.Failf("%s: %v", q.name, err)
		}
		res = append(res, fmt.Sprintf("%s=%d", q.name, off))
		if off != q.want {
			bad = append(bad, fmt.Sprintf("%s=%d want %d", q.name, off, q.want))
		}
	}
	if len(bad) > 0 {
		return rt.Failf("%s", strings.Join(bad, ", "))
	}
	return rt.Pass(strings.Join(res, " ")+" (client timestamps: kcat cannot set one)", nil)
}

func (e env) idempotent() rt.Result {
	var rs []rt.Rec
	for i := 0; i < 100; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("i%d", i)), Value: []byte(fmt.Sprintf("idem-%d", i))})
	}
	if err := e.produce(rs, "-X", "enable.idempotence=true"); err != nil {
		return rt.Failf("idempotent produce: %v", err)
	}
	got, err := e.consume()
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r.Value)] {
			return rt.Failf("duplicate %s", r.Value)
		}
		seen[string(r.Value)] = true
	}
	if len(got) != 100 {
		return rt.Failf("consumed %d, want 100", len(got))
	}
	return rt.Pass("100 records, no duplicates (-X enable.idempotence=true)", nil)
}

func (e env) groupRun(count int) ([]rt.Rec, error) {
	out, serr, err := e.kcat(nil, 20*time.Second, "-G", e.a.Group(), "-J", "-c", strconv.Itoa(count), "-q",
		"-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true", e.a.Topic)
	if err != nil {
		return nil, fmt.Errorf("kcat -G: %v: %s", err, short(serr))
	}
	var recs []rt.Rec
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m jmsg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("kcat -J line %q: %v", line, err)
		}
		recs = append(recs, m.rec())
	}
	if len(recs) != count {
		return recs, fmt.Errorf("kcat -G consumed %d, want %d: %s", len(recs), count, short(serr))
	}
	return recs, nil
}

func (e env) groupCommitResume() rt.Result {
	var rs []rt.Rec
	for i := 0; i < 20; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("g%d", i))})
	}
	if err := e.produce(rs); err != nil {
		return rt.Failf("produce: %v", err)
	}
	if _, err := e.groupRun(10); err != nil {
		return rt.Failf("first consumer: %v", err)
	}
	got, err := e.groupRun(1)
	if err != nil {
		return rt.Failf("second consumer: %v", err)
	}
	if got[0].Offset != 10 {
		return rt.Failf("second consumer resumed at offset %d, want 10", got[0].Offset)
	}
	return rt.Pass("kcat -G -c 10 committed on close; a new kcat -G resumed at offset 10", nil)
}

var dfRE = regexp.MustCompile(`Delivery failed for message: ([^\n]*)`)

func (e env) maxMessageSize() rt.Result {
	big := func(n int) []rt.Rec { return []rt.Rec{{Value: bytes.Repeat([]byte("x"), n)}} }
	extra := []string{"-X", "message.max.bytes=4000000", "-X", "retries=0"}
	if err := e.produce(big(1_000_000), extra...); err != nil {
		return rt.Failf("1_000_000-byte value rejected: %v", err)
	}
	args := append([]string{"-P", "-t", e.a.Topic, "-X", "acks=all"}, extra...)
	_, serr, err := e.kcat(lines(big(1_100_000)), 25*time.Second, args...)
	m := dfRE.FindStringSubmatch(serr)
	if m == nil {
		if err != nil {
			return rt.Fail(fmt.Sprintf("kcat failed without a delivery error: %v: %s", err, short(serr)), map[string]any{"error": short(serr)})
		}
		return rt.Fail("1_100_000-byte value accepted", map[string]any{"error": "none"})
	}
	return rt.Pass("1_000_000 accepted; 1_100_000 rejected: "+m[1], map[string]any{"error": strings.TrimSpace(m[1])})
}

func (e env) crossProduce() rt.Result {
	var rs []rt.Rec
	for _, c := range rt.CrossSet(e.a.Client) {
		rs = append(rs, rt.Rec{Key: []byte(c.Key), Value: []byte(c.Value)})
	}
	if err := e.produce(rs, "-H", rt.CrossHeader+"="+e.a.Client); err != nil {
		return rt.Failf("produce: %v", err)
	}
	return rt.Pass("produced 20 cross records", nil)
}

func (e env) crossConsume() rt.Result {
	got, err := e.consume()
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	return rt.CrossResult(got, e.a.Arg("expect_from", ""))
}

// describeTopic: kcat -L -J -t TOPIC (metadata) of the orchestrator's 3-partition topic:
// leader, replicas and ISR (rt.CheckReplicas against the replication factor it was created with).
func (e env) describeTopic() rt.Result {
	out, serr, err := e.kcat(nil, 15*time.Second, "-L", "-J", "-t", e.a.Topic)
	if err != nil {
		return rt.Failf("kcat -L -J -t: %v: %s", err, short(serr))
	}
	var md struct {
		Topics []struct {
			Topic      string `json:"topic"`
			Partitions []struct {
				Partition int  `json:"partition"`
				Leader    int  `json:"leader"`
				Replicas  []id `json:"replicas"`
				ISRs      []id `json:"isrs"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		return rt.Failf("kcat -L -J output: %v", err)
	}
	for _, t := range md.Topics {
		if t.Topic != e.a.Topic {
			continue
		}
		var parts []string
		for _, p := range t.Partitions {
			if err := rt.CheckReplicas(int32(p.Leader), ids(p.Replicas), ids(p.ISRs), int(e.a.ReplicationFactor)); err != nil {
				return rt.Failf("partition %d: %v", p.Partition, err)
			}
			parts = append(parts, fmt.Sprintf("p%d leader/replicas/isr %d", p.Partition, p.Leader))
		}
		if len(parts) != 3 {
			return rt.Failf("kcat -L shows %d partitions, want 3: %s", len(parts), short(out))
		}
		return rt.Pass("kcat -L -J -t: "+strings.Join(parts, ", "), nil)
	}
	return rt.Failf("kcat -L -J -t does not list %s: %s", e.a.Topic, short(out))
}

type id struct {
	ID int `json:"id"`
}

func ids(l []id) []int32 {
	out := make([]int32, len(l))
	for i, x := range l {
		out[i] = int32(x.ID)
	}
	return out
}
