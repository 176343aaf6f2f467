// Command kafkacli-runner drives Apache Kafka's own command-line tools, run from their
// classes in the cached jars (compat-tests/.cache/kafka/libs, scripts/install-kafka.sh):
// kafka-topics (TopicCommand), kafka-console-producer/consumer, kafka-get-offsets
// (GetOffsetShell), kafka-broker-api-versions, kafka-consumer-groups and kafka-configs.
// Each tool run is a JVM start (~1-2 s), so scenarios use as few runs as they can.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() { rt.Main("kafka-cli", run) }

const (
	topicCmd    = "org.apache.kafka.tools.TopicCommand"
	producerCmd = "org.apache.kafka.tools.ConsoleProducer"
	consumerCmd = "org.apache.kafka.tools.consumer.ConsoleConsumer"
	offsetsCmd  = "org.apache.kafka.tools.GetOffsetShell"
	apiVersions = "org.apache.kafka.tools.BrokerApiVersionsCommand"
	groupsCmd   = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	configsCmd  = "kafka.admin.ConfigCommand"
)

type env struct {
	a    rt.Args
	libs string
	l4j  string
}

func run(a rt.Args) rt.Result {
	root, _ := os.Getwd()
	e := env{a: a, libs: filepath.Join(root, ".cache/kafka/libs/*"), l4j: filepath.Join(root, ".cache/kafka/tools-log4j2.properties")}
	if _, err := os.Stat(filepath.Join(root, ".cache/kafka/libs")); err != nil {
		return rt.Skip("Kafka tools not installed (scripts/install-kafka.sh)")
	}
	s := a.Scenario
	switch {
	case s == "metadata":
		return e.metadata()
	case s == "create_topic":
		return e.createTopic()
	case strings.HasPrefix(s, "produce_consume_"):
		return e.produceConsume(strings.TrimPrefix(s, "produce_consume_"))
	case s == "headers":
		return rt.Skip("kafka-console-producer reads headers from UTF-8 text lines: the 0x00 0xff value cannot be expressed")
	case s == "list_offsets":
		return e.listOffsets()
	case s == "idempotent_produce":
		return e.idempotent()
	case s == "group_commit_resume":
		return e.groupCommitResume()
	case s == "transactions":
		return rt.Skip("the console tools cannot produce transactionally")
	case s == "describe_list_groups":
		return e.describeListGroups()
	case s == "describe_configs":
		return e.describeConfigs()
	case s == "create_partitions":
		return e.createPartitions()
	case s == "delete_topic":
		return e.deleteTopic()
	case s == "max_message_size":
		return e.maxMessageSize()
	case s == "cross_produce":
		return e.crossProduce()
	case s == "cross_consume":
		return e.crossConsume()
	}
	return rt.Skip("unknown scenario " + s)
}

// tool runs one Kafka tool class; it returns stdout, stderr and the error.
func (e env) tool(stdin []byte, timeout time.Duration, class string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := []string{"-Xmx256m", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dlog4j2.configurationFile=" + e.l4j, "-cp", e.libs, class}
	cmd := exec.CommandContext(ctx, "java", append(argv, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out after %s", short(class), timeout)
	}
	return out.String(), errb.String(), err
}

func short(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " | "))
	if i := strings.LastIndex(s, "."); strings.HasPrefix(s, "org.apache") && i > 0 && !strings.Contains(s, " ") {
		return s[i+1:]
	}
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

var excRE = regexp.MustCompile(`(org\.apache\.kafka\.common\.errors\.\w+|java\.util\.concurrent\.\w+Exception|\w+Exception)(: [^\n]*)?`)

// why extracts the most telling error line of a tool's stderr.
func why(serr string) string {
	if m := excRE.FindString(serr); m != "" {
		return short(m)
	}
	return short(serr)
}

func (e env) bs() []string { return []string{"--bootstrap-server", e.a.Bootstrap} }

func (e env) topics(args ...string) (string, error) {
	out, serr, err := e.tool(nil, 30*time.Second, topicCmd, append(e.bs(), args...)...)
	if err != nil {
		return out, fmt.Errorf("kafka-topics %s: %v: %s", args[0], err, why(serr))
	}
	return out, nil
}

func (e env) create(parts int) error {
	_, err := e.topics("--create", "--topic", e.a.Topic, "--partitions", strconv.Itoa(parts), "--replication-factor", "1")
	return err
}

var partLineRE = regexp.MustCompile(`(?m)^\s*Topic: \S+\s+Partition: (\d+)\s+Leader: (-?\d+)`)

func (e env) describePartitions() (int, error) {
	out, err := e.topics("--describe", "--topic", e.a.Topic)
	if err != nil {
		return 0, err
	}
	return len(partLineRE.FindAllStringSubmatch(out, -1)), nil
}

func (e env) metadata() rt.Result {
	out, serr, err := e.tool(nil, 30*time.Second, apiVersions, e.bs()...)
	if err != nil {
		return rt.Failf("kafka-broker-api-versions: %v: %s", err, why(serr))
	}
	m := regexp.MustCompile(`(?m)^(\S+:\d+) \(id: (\d+)`).FindStringSubmatch(out)
	if m == nil {
		return rt.Failf("kafka-broker-api-versions printed no broker: %s", short(out))
	}
	list, err := e.topics("--list")
	if err != nil {
		return rt.Failf("%v", err)
	}
	for _, t := range strings.Fields(list) {
		if t == e.a.Topic {
			return rt.Pass(fmt.Sprintf("broker %s (id %s); kafka-topics --list has the topic", m[1], m[2]), nil)
		}
	}
	return rt.Failf("kafka-topics --list does not list %s", e.a.Topic)
}

func (e env) createTopic() rt.Result {
	if err := e.create(3); err != nil {
		return rt.Failf("%v", err)
	}
	n, err := e.describePartitions()
	if err != nil {
		return rt.Failf("%v", err)
	}
	if n != 3 {
		return rt.Failf("kafka-topics --describe shows %d partitions, want 3", n)
	}
	return rt.Pass("kafka-topics --create --partitions 3; --describe shows 3", nil)
}

func lines(rs []rt.Rec, headers string) []byte {
	var b bytes.Buffer
	for _, r := range rs {
		if headers != "" {
			b.WriteString(headers + "\t")
		}
		if r.Key != nil {
			b.Write(r.Key)
			b.WriteByte('\t')
		}
		b.Write(r.Value)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// produce pipes "key<TAB>value" lines into kafka-console-producer; lines without a tab get a
// null key (ignore.error=true). It returns stderr for error inspection.
func (e env) produce(rs []rt.Rec, headers string, extra ...string) (string, error) {
	args := append(e.bs(), "--topic", e.a.Topic, "--property", "parse.key=true", "--property", "ignore.error=true",
		"--producer-property", "acks=all")
	if headers != "" {
		args = append(args, "--property", "parse.headers=true")
	}
	args = append(args, extra...)
	_, serr, err := e.tool(lines(rs, headers), 40*time.Second, producerCmd, args...)
	if err != nil {
		return serr, fmt.Errorf("kafka-console-producer: %v: %s", err, why(serr))
	}
	if strings.Contains(serr, "ERROR") || strings.Contains(serr, "Exception") {
		return serr, fmt.Errorf("kafka-console-producer: %s", why(serr))
	}
	return serr, nil
}

var outRE = regexp.MustCompile(`^Partition:(\d+)\tOffset:(\d+)\t([^\t]*)\t([^\t]*)\t(.*)$`)

func parseConsumer(out string) ([]rt.Rec, error) {
	var recs []rt.Rec
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		m := outRE.FindStringSubmatch(line)
		if m == nil {
			return recs, fmt.Errorf("unexpected console-consumer line %q", short(line))
		}
		p, _ := strconv.Atoi(m[1])
		o, _ := strconv.ParseInt(m[2], 10, 64)
		r := rt.Rec{Partition: int32(p), Offset: o, Value: []byte(m[5])}
		if m[4] != "null" {
			r.Key = []byte(m[4])
		}
		if m[3] != "NO_HEADERS" {
			for _, h := range strings.Split(m[3], ",") {
				k, v, _ := strings.Cut(h, ":")
				r.Headers = append(r.Headers, [2][]byte{[]byte(k), []byte(v)})
			}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

var consumerProps = []string{"--property", "print.key=true", "--property", "print.offset=true", "--property", "print.partition=true", "--property", "print.headers=true"}

// consumePartition reads n records of one partition from the earliest offset (no group).
func (e env) consumePartition(p int, n int64) ([]rt.Rec, error) {
	if n == 0 {
		return nil, nil
	}
	args := append(e.bs(), "--topic", e.a.Topic, "--partition", strconv.Itoa(p), "--offset", "earliest",
		"--max-messages", strconv.FormatInt(n, 10), "--timeout-ms", "15000")
	out, serr, err := e.tool(nil, 40*time.Second, consumerCmd, append(args, consumerProps...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka-console-consumer p%d: %v: %s", p, err, why(serr))
	}
	recs, err := parseConsumer(out)
	if err != nil {
		return recs, err
	}
	if int64(len(recs)) != n {
		return recs, fmt.Errorf("kafka-console-consumer p%d: %d of %d records: %s", p, len(recs), n, why(serr))
	}
	return recs, nil
}

// endOffsets asks kafka-get-offsets for every partition's latest offset.
func (e env) endOffsets(ts string) (map[int]int64, error) {
	out, serr, err := e.tool(nil, 30*time.Second, offsetsCmd, append(e.bs(), "--topic", e.a.Topic, "--time", ts)...)
	if err != nil {
		return nil, fmt.Errorf("kafka-get-offsets --time %s: %v: %s", ts, err, why(serr))
	}
	res := map[int]int64{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 2 {
			continue
		}
		p, _ := strconv.Atoi(f[len(f)-2])
		if len(f) >= 3 {
			if f[len(f)-1] == "" {
				res[p] = -1
				continue
			}
			o, err := strconv.ParseInt(f[len(f)-1], 10, 64)
			if err == nil {
				res[p] = o
			}
		}
	}
	return res, nil
}

// consumeAll reads every partition up to its end offset.
func (e env) consumeAll() ([]rt.Rec, error) {
	ends, err := e.endOffsets("latest")
	if err != nil {
		return nil, err
	}
	var all []rt.Rec
	for p := 0; p < len(ends); p++ {
		recs, err := e.consumePartition(p, ends[p])
		if err != nil {
			return all, err
		}
		all = append(all, recs...)
	}
	return all, nil
}

func (e env) produceConsume(c string) rt.Result {
	if _, err := e.produce(rt.ProduceSet(), "", "--compression-codec", c); err != nil {
		return rt.Failf("produce (%s): %v", c, err)
	}
	got, err := e.consumeAll()
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	if err := rt.CheckProduceConsume(got); err != nil {
		return rt.Failf("%v", err)
	}
	return rt.Pass("kafka-console-producer --compression-codec "+c+" → kafka-console-consumer per partition: 40 records exact", nil)
}

// listOffsets: the console producer cannot set timestamps, so franz-go writes the 10
// timestamped records; kafka-get-offsets (GetOffsetShell) does the ListOffsets queries.
func (e env) listOffsets() rt.Result {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.a.Bootstrap))
	if err != nil {
		return rt.Failf("franz-go: %v", err)
	}
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: e.a.Topic, Value: []byte(fmt.Sprintf("t%d", i)), Timestamp: time.UnixMilli(rt.BaseTS + int64(i)*1000)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err = cl.ProduceSync(ctx, recs...).FirstErr()
	cancel()
	cl.Close()
	if err != nil {
		return rt.Failf("franz-go produce: %v", err)
	}
	var got, bad []string
	for _, q := range []struct {
		name, ts string
		want     int64
	}{{"earliest", "earliest", 0}, {"latest", "latest", 10}, {"ts+5000", strconv.FormatInt(rt.BaseTS+5000, 10), 5}, {"after-last", strconv.FormatInt(rt.BaseTS+60_000, 10), -1}} {
		res, err := e.endOffsets(q.ts)
		if err != nil {
			return rt.Failf("%s: %v", q.name, err)
		}
		off, ok := res[0]
		if !ok {
			off = -1 // GetOffsetShell prints nothing for a partition without an offset
		}
		got = append(got, fmt.Sprintf("%s=%d", q.name, off))
		if off != q.want {
			bad = append(bad, fmt.Sprintf("%s=%d want %d", q.name, off, q.want))
		}
	}
	if len(bad) > 0 {
		return rt.Failf("%s", strings.Join(bad, ", "))
	}
	return rt.Pass(strings.Join(got, " ")+" (records written by franz-go: the console producer cannot set timestamps)", nil)
}

func (e env) idempotent() rt.Result {
	var rs []rt.Rec
	for i := 0; i < 100; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("i%d", i)), Value: []byte(fmt.Sprintf("idem-%d", i))})
	}
	if _, err := e.produce(rs, "", "--producer-property", "enable.idempotence=true"); err != nil {
		return rt.Failf("idempotent produce: %v", err)
	}
	got, err := e.consumeAll()
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
	return rt.Pass("100 records, no duplicates (enable.idempotence=true)", nil)
}

// groupConsume runs a console consumer in the group for n records; max.poll.records=1 makes
// the auto-commit on close commit exactly the consumed position.
func (e env) groupConsume(n int) ([]rt.Rec, error) {
	args := append(e.bs(), "--topic", e.a.Topic, "--group", e.a.Group(), "--from-beginning", "--max-messages", strconv.Itoa(n),
		"--timeout-ms", "20000", "--consumer-property", "max.poll.records=1")
	out, serr, err := e.tool(nil, 45*time.Second, consumerCmd, append(args, consumerProps...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka-console-consumer --group: %v: %s", err, why(serr))
	}
	recs, err := parseConsumer(out)
	if err == nil && len(recs) != n {
		err = fmt.Errorf("kafka-console-consumer --group: %d of %d records: %s", len(recs), n, why(serr))
	}
	return recs, err
}

func (e env) produceN(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Value: []byte(fmt.Sprintf("g%d", i))})
	}
	_, err := e.produce(rs, "")
	return err
}

func (e env) groupCommitResume() rt.Result {
	if err := e.produceN(20); err != nil {
		return rt.Failf("produce: %v", err)
	}
	if _, err := e.groupConsume(10); err != nil {
		return rt.Failf("first consumer: %v", err)
	}
	got, err := e.groupConsume(1)
	if err != nil {
		return rt.Failf("second consumer: %v", err)
	}
	if got[0].Offset != 10 {
		return rt.Failf("second consumer resumed at offset %d, want 10", got[0].Offset)
	}
	return rt.Pass("console consumer --group committed 10 on close; the next resumed at offset 10", nil)
}

func (e env) describeListGroups() rt.Result {
	if err := e.produceN(3); err != nil {
		return rt.Failf("produce: %v", err)
	}
	if _, err := e.groupConsume(1); err != nil {
		return rt.Failf("group consume: %v", err)
	}
	out, serr, err := e.tool(nil, 30*time.Second, groupsCmd, append(e.bs(), "--list")...)
	if err != nil {
		return rt.Failf("kafka-consumer-groups --list: %v: %s", err, why(serr))
	}
	found := false
	for _, g := range strings.Fields(out) {
		found = found || g == e.a.Group()
	}
	if !found {
		return rt.Failf("kafka-consumer-groups --list does not list %s: %s", e.a.Group(), short(out))
	}
	out, serr, err = e.tool(nil, 30*time.Second, groupsCmd, append(e.bs(), "--describe", "--group", e.a.Group(), "--state")...)
	if err != nil {
		return rt.Failf("kafka-consumer-groups --describe --state: %v: %s", err, why(serr))
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(e.a.Group()) + `\s+\S+.*\s(Empty|Stable|PreparingRebalance|CompletingRebalance|Dead)\s+(\d+)\s*$`).FindStringSubmatch(out)
	if m == nil {
		return rt.Failf("kafka-consumer-groups --describe --state: no state row: %s", short(out))
	}
	return rt.Pass(fmt.Sprintf("listed; --describe --state: %s, %s member(s) (the console consumer has left)", m[1], m[2]), nil)
}

func (e env) describeConfigs() rt.Result {
	out, serr, err := e.tool(nil, 30*time.Second, configsCmd, append(e.bs(), "--entity-type", "topics", "--entity-name", e.a.Topic, "--describe", "--all")...)
	if err != nil {
		return rt.Failf("kafka-configs --describe: %v: %s", err, why(serr))
	}
	m := regexp.MustCompile(`(cleanup\.policy|retention\.ms)=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		return rt.Failf("kafka-configs --describe --all has no cleanup.policy or retention.ms: %s %s", short(out), why(serr))
	}
	return rt.Pass(fmt.Sprintf("kafka-configs --describe --all: %s=%s", m[1], m[2]), nil)
}

func (e env) createPartitions() rt.Result {
	if err := e.create(1); err != nil {
		return rt.Failf("%v", err)
	}
	if _, err := e.topics("--alter", "--topic", e.a.Topic, "--partitions", "3"); err != nil {
		return rt.Failf("%v", err)
	}
	n, err := e.describePartitions()
	if err != nil {
		return rt.Failf("%v", err)
	}
	if n != 3 {
		return rt.Failf("kafka-topics --describe shows %d partitions after --alter, want 3", n)
	}
	return rt.Pass("kafka-topics --alter --partitions 3: 1 -> 3", nil)
}

func (e env) deleteTopic() rt.Result {
	if err := e.create(1); err != nil {
		return rt.Failf("%v", err)
	}
	if _, err := e.topics("--delete", "--topic", e.a.Topic); err != nil {
		return rt.Failf("%v", err)
	}
	for i := 0; i < 3; i++ {
		list, err := e.topics("--list")
		if err != nil {
			return rt.Failf("%v", err)
		}
		found := false
		for _, t := range strings.Fields(list) {
			found = found || t == e.a.Topic
		}
		if !found {
			return rt.Pass("kafka-topics --delete; --list no longer has it", nil)
		}
		time.Sleep(time.Second)
	}
	return rt.Failf("kafka-topics --list still lists the topic after --delete")
}

var tooLargeRE = regexp.MustCompile(`org\.apache\.kafka\.common\.errors\.(\w+)`)

func (e env) maxMessageSize() rt.Result {
	extra := []string{"--producer-property", "max.request.size=4000000", "--producer-property", "retries=0", "--compression-codec", "none"}
	big := func(n int) []rt.Rec { return []rt.Rec{{Value: bytes.Repeat([]byte("x"), n)}} }
	if _, err := e.produce(big(1_000_000), "", extra...); err != nil {
		return rt.Failf("1_000_000-byte value rejected: %v", err)
	}
	serr, err := e.produce(big(1_100_000), "", extra...)
	if err == nil {
		return rt.Fail("1_100_000-byte value accepted", map[string]any{"error": "none"})
	}
	name := why(serr)
	if m := tooLargeRE.FindStringSubmatch(serr); m != nil {
		name = m[1]
	}
	return rt.Pass("1_000_000 accepted; 1_100_000 rejected: "+why(serr), map[string]any{"error": name})
}

func (e env) crossProduce() rt.Result {
	var rs []rt.Rec
	for _, c := range rt.CrossSet(e.a.Client) {
		rs = append(rs, rt.Rec{Key: []byte(c.Key), Value: []byte(c.Value)})
	}
	if _, err := e.produce(rs, "src:"+e.a.Client, "--compression-codec", "none"); err != nil {
		return rt.Failf("produce: %v", err)
	}
	return rt.Pass("produced 20 cross records (parse.headers=true)", nil)
}

func (e env) crossConsume() rt.Result {
	got, err := e.consumePartition(0, 20)
	if err != nil {
		return rt.Failf("consume: %v", err)
	}
	return rt.CrossResult(got, e.a.Arg("expect_from", ""))
}
