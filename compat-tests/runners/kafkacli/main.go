// Command kafkacli-runner drives Apache Kafka's own command-line tools, run from their
// classes in the cached jars (compat-tests/.cache/kafka-4.4.0/libs, scripts/install-kafka.sh):
// kafka-topics (TopicCommand), kafka-console-producer/consumer, kafka-get-offsets
// (GetOffsetShell), kafka-broker-api-versions, kafka-consumer-groups and kafka-configs.
// Each tool run is a JVM start (~1-2 s), so scenarios use as few runs as they can.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
	configsCmd  = "org.apache.kafka.tools.ConfigCommand"
	logDirsCmd  = "org.apache.kafka.tools.LogDirsCommand"
	deleteRecs  = "org.apache.kafka.tools.DeleteRecordsCommand"
)

type env struct {
	a    rt.Args
	libs string
	l4j  string
}

func run(a rt.Args) rt.Result {
	root, _ := os.Getwd()
	home := filepath.Join(root, ".cache", "kafka-4.4.0")
	e := env{a: a, libs: filepath.Join(home, "libs", "*"), l4j: filepath.Join(home, "tools-log4j2.properties")}
	if _, err := os.Stat(filepath.Join(home, "libs")); err != nil {
		return rt.Skip("Kafka tools not installed (scripts/install-kafka.sh)")
	}
	return rt.Dispatch(a.Scenario, rt.Handlers{
		Auth:                  e.auth,
		AuthRefused:           e.authRefused,
		AclAllowed:            e.aclAllowed,
		AclDenied:             e.authRefused,
		AclGroupDenied:        e.aclGroupDenied,
		Metadata:              e.metadata,
		CreateTopic:           e.createTopic,
		ProduceConsume:        e.produceConsume,
		Headers:               rt.Skipping("kafka-console-producer reads headers from UTF-8 text lines: the 0x00 0xff value cannot be expressed"),
		ListOffsets:           e.listOffsets,
		IdempotentProduce:     e.idempotent,
		GroupCommitResume:     e.groupCommitResume,
		Transactions:          rt.Skipping("the console tools cannot produce transactionally"),
		DescribeListGroups:    e.describeListGroups,
		DescribeConfigs:       e.describeConfigs,
		CreatePartitions:      e.createPartitions,
		DeleteTopic:           e.deleteTopic,
		MaxMessageSize:        e.maxMessageSize,
		AlterConfigs:          e.alterConfigs,
		DescribeTopic:         e.describeTopic,
		LogDirs:               e.logDirs,
		DeleteRecords:         e.deleteRecords,
		ConsumerGroupsCLI:     e.consumerGroupsCLI,
		GroupConsumerProtocol: e.groupConsumerProtocol,
		CrossProduce:          e.crossProduce,
		CrossConsume:          e.crossConsume,
	})
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

// rf is the replication factor of the topics the runner creates, as kafka-topics takes it.
func (e env) rf() string { return strconv.Itoa(int(e.a.ReplicationFactor)) }

func (e env) create(parts int) error {
	_, err := e.topics("--create", "--topic", e.a.Topic, "--partitions", strconv.Itoa(parts), "--replication-factor", e.rf())
	return err
}

var partLineRE = regexp.MustCompile(`(?m)^\s*Topic: \S+\s+Partition: (\d+)\s+Leader: (-?\d+)`)

// waitReady waits until kafka-topics --describe shows n partitions, each with a leader (the
// tool does not list the brokers, so a leader's membership is not checked, and no scenario
// produces to a topic kafka-cli created, so the leaders are not asked for offsets).
func (e env) waitReady(n int) error {
	return rt.WaitReady(context.Background(), e.a.Topic, n, func(context.Context) (rt.TopicMeta, error) {
		out, err := e.topics("--describe", "--topic", e.a.Topic)
		if err != nil {
			return rt.TopicMeta{}, err
		}
		var tm rt.TopicMeta
		for _, m := range partLineRE.FindAllStringSubmatch(out, -1) {
			l, err := strconv.ParseInt(m[2], 10, 32)
			if err != nil {
				return rt.TopicMeta{}, fmt.Errorf("kafka-topics --describe: leader %q: %w", m[2], err)
			}
			tm.Leaders = append(tm.Leaders, int32(l))
		}
		return tm, nil
	}, nil)
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
	if err := e.waitReady(3); err != nil {
		return rt.Failf("kafka-topics --describe: %v", err)
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
	args := append(e.bs(), "--topic", e.a.Topic, "--reader-property", "parse.key=true", "--reader-property", "ignore.error=true",
		"--command-property", "acks=all")
	if headers != "" {
		args = append(args, "--reader-property", "parse.headers=true")
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

// consumerProps are the formatter's options; Kafka 4.4's console tools print a deprecation line
// on stdout for --property, --consumer-property and --consumer.config, so the runner uses the
// names that replaced them (--formatter-property, --command-property, --command-config).
var consumerProps = []string{"--formatter-property", "print.key=true", "--formatter-property", "print.offset=true", "--formatter-property", "print.partition=true", "--formatter-property", "print.headers=true"}

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
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.a.Brokers()...))
	if err != nil {
		return rt.Failf("franz-go: %v", err)
	}
	var recs []*kgo.Record
	for i := 0; i < rt.ListOffsetsRecords; i++ {
		recs = append(recs, &kgo.Record{Topic: e.a.Topic, Value: []byte(fmt.Sprintf("t%d", i)), Timestamp: time.UnixMilli(rt.BaseTS + int64(i)*rt.TSStep)})
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
	if _, err := e.produce(rs, "", "--command-property", "enable.idempotence=true"); err != nil {
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
func (e env) groupConsume(n int, extra ...string) ([]rt.Rec, error) {
	args := append(e.bs(), "--topic", e.a.Topic, "--group", e.a.Group(), "--from-beginning", "--max-messages", strconv.Itoa(n),
		"--timeout-ms", "20000", "--command-property", "max.poll.records=1")
	args = append(args, extra...)
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
	if err := e.waitReady(3); err != nil {
		return rt.Failf("kafka-topics --describe after --alter: %v", err)
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
	extra := []string{"--command-property", "max.request.size=4000000", "--command-property", "retries=0", "--compression-codec", "none"}
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
	if _, err := e.produce(rs, rt.CrossHeader+":"+e.a.Client, "--compression-codec", "none"); err != nil {
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

// alterConfigs: kafka-configs --alter --add-config (IncrementalAlterConfigs in 4.x), then
// kafka-configs --describe lists the dynamic topic configs with their synonyms, the first of
// which names the source.
func (e env) alterConfigs() rt.Result {
	ent := append(e.bs(), "--entity-type", "topics", "--entity-name", e.a.Topic)
	_, serr, err := e.tool(nil, 30*time.Second, configsCmd, append(ent, "--alter", "--add-config", "retention.ms="+rt.AlterRetentionMs)...)
	if err != nil {
		return rt.Failf("kafka-configs --alter --add-config retention.ms=%s: %v: %s", rt.AlterRetentionMs, err, why(serr))
	}
	// Kafka applies the alter through its metadata log: describe again for a few seconds
	// until the new value shows.
	re := regexp.MustCompile(`(?m)^\s*retention\.ms=(\S+) sensitive=\S+ synonyms=\{([A-Z_]+):retention\.ms=([^,}]*)`)
	var out string
	var m []string
	for i := 0; i < 5; i++ {
		out, serr, err = e.tool(nil, 30*time.Second, configsCmd, append(ent, "--describe")...)
		if err != nil {
			return rt.Failf("kafka-configs --describe: %v: %s", err, why(serr))
		}
		if m = re.FindStringSubmatch(out); m != nil && m[1] == rt.AlterRetentionMs {
			break
		}
		time.Sleep(time.Second)
	}
	if m == nil {
		return rt.Failf("kafka-configs --describe after the alter has no dynamic retention.ms: %s %s", short(out), why(serr))
	}
	data := map[string]any{"value": m[1], "source": m[2]}
	if m[1] != rt.AlterRetentionMs || m[2] != rt.DynamicTopicConfig {
		return rt.Fail(fmt.Sprintf("kafka-configs --describe: retention.ms=%s source %s, want %s %s: %s", m[1], m[2], rt.AlterRetentionMs, rt.DynamicTopicConfig, short(out)), data)
	}
	return rt.Pass(fmt.Sprintf("kafka-configs --alter --add-config; --describe: retention.ms=%s, first synonym %s", m[1], m[2]), data)
}

var (
	topicHeadRE = regexp.MustCompile(`(?m)^Topic: (\S+)\s+TopicId: (\S+)\s+PartitionCount: (\d+)\s+ReplicationFactor: (\d+)\s+Configs: ?(.*)$`)
	partFullRE  = regexp.MustCompile(`(?m)^\s*Topic: \S+\s+Partition: (\d+)\s+Leader: (-?\d+|none)\s+Replicas: ([\d,]*)\s+Isr: ([\d,]*)`)
)

// describeTopic creates the topic with kafka-topics --config retention.ms=86400000 and checks
// kafka-topics --describe: the header (topic ID, 3 partitions, RF 1, the config) and each
// partition's leader, replicas and ISR.
func (e env) describeTopic() rt.Result {
	if _, err := e.topics("--create", "--topic", e.a.Topic, "--partitions", "3", "--replication-factor", e.rf(), "--config", "retention.ms=86400000"); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.waitReady(3); err != nil {
		return rt.Failf("kafka-topics --describe: %v", err)
	}
	out, err := e.topics("--describe", "--topic", e.a.Topic)
	if err != nil {
		return rt.Failf("%v", err)
	}
	h := topicHeadRE.FindStringSubmatch(out)
	if h == nil {
		return rt.Failf("kafka-topics --describe: no header line: %s", short(out))
	}
	if h[3] != "3" || h[4] != e.rf() {
		return rt.Failf("kafka-topics --describe: PartitionCount %s ReplicationFactor %s, want 3 and %s: %s", h[3], h[4], e.rf(), short(out))
	}
	if !strings.Contains(","+h[5]+",", ",retention.ms=86400000,") {
		return rt.Failf("kafka-topics --describe: Configs %q lacks retention.ms=86400000 (set with --create --config): %s", h[5], short(out))
	}
	var parts []string
	for _, m := range partFullRE.FindAllStringSubmatch(out, -1) {
		if err := rt.CheckReplicas(brokerID(m[2]), brokerIDs(m[3]), brokerIDs(m[4]), int(e.a.ReplicationFactor)); err != nil {
			return rt.Failf("kafka-topics --describe: partition %s: %v", m[1], err)
		}
		parts = append(parts, fmt.Sprintf("p%s leader/replicas/isr %s", m[1], m[2]))
	}
	if len(parts) != 3 {
		return rt.Failf("kafka-topics --describe shows %d partition lines, want 3: %s", len(parts), short(out))
	}
	return rt.Pass(fmt.Sprintf("TopicId %s, PartitionCount 3, RF %s, Configs: %s; %s", h[2], h[4], h[5], strings.Join(parts, ", ")), nil)
}

// brokerID parses a broker ID kafka-topics --describe prints ("none" and junk are -1).
func brokerID(s string) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// brokerIDs parses kafka-topics --describe's comma-separated broker ID list.
func brokerIDs(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f != "" {
			out = append(out, brokerID(f))
		}
	}
	return out
}

func (e env) produceNumbered(n int) error {
	var rs []rt.Rec
	for i := 0; i < n; i++ {
		rs = append(rs, rt.Rec{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("r%d", i))})
	}
	_, err := e.produce(rs, "")
	return err
}

// logDirs: kafka-log-dirs --describe --topic-list TOPIC prints one JSON line.
func (e env) logDirs() rt.Result {
	if err := e.produceNumbered(rt.LogDirsProduce); err != nil {
		return rt.Failf("produce: %v", err)
	}
	out, serr, err := e.tool(nil, 30*time.Second, logDirsCmd, append(e.bs(), "--describe", "--topic-list", e.a.Topic)...)
	if err != nil {
		return rt.Failf("kafka-log-dirs --describe: %v: %s", err, why(serr))
	}
	var js string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "{") {
			js = strings.TrimSpace(l)
		}
	}
	var doc struct {
		Brokers []struct {
			Broker  int `json:"broker"`
			LogDirs []struct {
				LogDir     string  `json:"logDir"`
				Error      *string `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
					Size      int64  `json:"size"`
					OffsetLag int64  `json:"offsetLag"`
					IsFuture  bool   `json:"isFuture"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		return rt.Failf("kafka-log-dirs printed no JSON document (%v): %s %s", err, short(out), why(serr))
	}
	want := e.a.Topic + "-0"
	var found []string
	for _, b := range doc.Brokers {
		for _, d := range b.LogDirs {
			for _, p := range d.Partitions {
				if p.Partition != want {
					continue
				}
				if p.Size <= 0 {
					return rt.Failf("kafka-log-dirs: %s in %s has size %d after producing %d records", want, d.LogDir, p.Size, rt.LogDirsProduce)
				}
				found = append(found, fmt.Sprintf("broker %d %s: %s size %d offsetLag %d", b.Broker, d.LogDir, want, p.Size, p.OffsetLag))
			}
		}
	}
	if len(found) == 0 {
		return rt.Failf("kafka-log-dirs JSON lists no %s: %s", want, short(js))
	}
	return rt.Pass("kafka-log-dirs --describe: "+strings.Join(found, "; "), nil)
}

// deleteRecords: kafka-delete-records --offset-json-file, then kafka-get-offsets --time earliest.
func (e env) deleteRecords() rt.Result {
	if err := e.produceNumbered(rt.DeleteRecordsProduce); err != nil {
		return rt.Failf("produce: %v", err)
	}
	f, err := os.CreateTemp("", "delete-records-*.json")
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer os.Remove(f.Name())
	fmt.Fprintf(f, `{"partitions":[{"topic":%q,"partition":0,"offset":%d}],"version":1}`, e.a.Topic, rt.DeleteRecordsBefore)
	f.Close()
	out, serr, err := e.tool(nil, 30*time.Second, deleteRecs, append(e.bs(), "--offset-json-file", f.Name())...)
	if err != nil {
		return rt.Failf("kafka-delete-records: %v: %s", err, why(serr))
	}
	m := regexp.MustCompile(`partition: ` + regexp.QuoteMeta(e.a.Topic) + `-0\s+low_watermark: (-?\d+)`).FindStringSubmatch(out)
	if m == nil {
		return rt.Failf("kafka-delete-records: no low_watermark for partition 0: %s %s", short(out), why(serr))
	}
	ends, err := e.endOffsets("earliest")
	if err != nil {
		return rt.Failf("%v", err)
	}
	want := strconv.FormatInt(rt.DeleteRecordsBefore, 10)
	if m[1] != want || ends[0] != rt.DeleteRecordsBefore {
		return rt.Failf("kafka-delete-records offset %d: low_watermark %s, kafka-get-offsets earliest %d (want %s, %s): %s", rt.DeleteRecordsBefore, m[1], ends[0], want, want, short(out))
	}
	return rt.Pass(fmt.Sprintf("kafka-delete-records: low_watermark %s; kafka-get-offsets --time earliest: %d", m[1], ends[0]), nil)
}

// consumerGroupsCLI: a console consumer in group G reads 6 of 10 records and commits on close;
// kafka-consumer-groups --list lists G and --describe --group G shows CURRENT-OFFSET 6,
// LOG-END-OFFSET 10, LAG 4 for partition 0.
func (e env) consumerGroupsCLI() rt.Result {
	if err := e.produceNumbered(10); err != nil {
		return rt.Failf("produce: %v", err)
	}
	if _, err := e.groupConsume(6); err != nil {
		return rt.Failf("group consume: %v", err)
	}
	g := e.a.Group()
	out, serr, err := e.tool(nil, 30*time.Second, groupsCmd, append(e.bs(), "--list")...)
	if err != nil {
		return rt.Failf("kafka-consumer-groups --list: %v: %s", err, why(serr))
	}
	if !slices.Contains(strings.Fields(out), g) {
		return rt.Failf("kafka-consumer-groups --list does not list %s: %s", g, short(out))
	}
	out, serr, err = e.tool(nil, 30*time.Second, groupsCmd, append(e.bs(), "--describe", "--group", g)...)
	if err != nil {
		return rt.Failf("kafka-consumer-groups --describe: %v: %s", err, why(serr))
	}
	var cols []string
	row := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "GROUP" {
			cols = f
			continue
		}
		if cols != nil && len(f) == len(cols) && f[0] == g {
			for i, c := range cols {
				row[c] = f[i]
			}
			if row["PARTITION"] == "0" {
				break
			}
		}
	}
	if row["PARTITION"] != "0" {
		return rt.Failf("kafka-consumer-groups --describe: no row for %s partition 0: %s %s", e.a.Topic, short(out), why(serr))
	}
	data := map[string]any{"current": row["CURRENT-OFFSET"], "log_end": row["LOG-END-OFFSET"], "lag": row["LAG"]}
	if row["TOPIC"] != e.a.Topic || row["CURRENT-OFFSET"] != "6" || row["LOG-END-OFFSET"] != "10" || row["LAG"] != "4" {
		return rt.Fail(fmt.Sprintf("kafka-consumer-groups --describe: topic %s CURRENT-OFFSET %s LOG-END-OFFSET %s LAG %s, want %s 6 10 4", row["TOPIC"], row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"], e.a.Topic), data)
	}
	return rt.Pass("--list lists the group; --describe: partition 0 CURRENT-OFFSET 6, LOG-END-OFFSET 10, LAG 4", data)
}

// groupConsumerProtocol: group_commit_resume with the console consumer under
// group.protocol=consumer (KIP-848); kafka-consumer-groups --list --type must say Consumer.
func (e env) groupConsumerProtocol() rt.Result {
	if err := e.produceN(20); err != nil {
		return rt.Failf("produce: %v", err)
	}
	proto := []string{"--command-property", "group.protocol=consumer"}
	if _, err := e.groupConsume(10, proto...); err != nil {
		return rt.Failf("first consumer (group.protocol=consumer): %v", err)
	}
	out, serr, err := e.tool(nil, 30*time.Second, groupsCmd, append(e.bs(), "--list", "--type")...)
	if err != nil {
		return rt.Failf("kafka-consumer-groups --list --type: %v: %s", err, why(serr))
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(e.a.Group()) + `\s+(\S+)`).FindStringSubmatch(out)
	if m == nil || !strings.EqualFold(m[1], "consumer") {
		return rt.Failf("kafka-consumer-groups --list --type: group %s is not of type Consumer: %s", e.a.Group(), short(out))
	}
	got, err := e.groupConsume(1, proto...)
	if err != nil {
		return rt.Failf("second consumer (group.protocol=consumer): %v", err)
	}
	if got[0].Offset != 10 {
		return rt.Failf("second consumer resumed at offset %d, want 10", got[0].Offset)
	}
	return rt.Pass("console consumer with group.protocol=consumer (group type "+m[1]+") committed 10 on close; the next resumed at offset 10", nil)
}
