package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kgo"
)

// batch is one record batch as DumpLogSegments prints it.
type batch struct {
	Base, Last int64
	Count      int
	CRC        string
	Valid      bool
	Codec      string
}

func (b batch) String() string {
	return fmt.Sprintf("[%d..%d n=%d crc=%s %s valid=%v]", b.Base, b.Last, b.Count, b.CRC, b.Codec, b.Valid)
}

const dumpParts = 3

// partitionedCount counts records the producer has put into a partition's batch. Flush
// waits for all of them: records produced before the client knows the topic are
// partitioned when its metadata arrives, and a Flush already under way then drains the
// batch while it is still filling (CI once saw 10 records split 9+1).
type partitionedCount chan struct{}

func (c partitionedCount) OnProduceRecordPartitioned(*kgo.Record, int32) { c <- struct{}{} }

// produceDump writes the same deterministic data to topic on a broker: per partition, one
// uncompressed batch of 10 and one gzip batch of 10, fixed timestamps, no idempotence (so
// the producer id/epoch/sequence, and therefore the CRCs, are the same on both brokers).
func produceDump(seeds []string, topic string, rf int16) error {
	if err := createTopic(seeds, topic, dumpParts, rf); err != nil {
		return err
	}
	for round, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression()} {
		partitioned := make(partitionedCount, dumpParts*10)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ManualFlushing(), kgo.DisableIdempotentWrite(), kgo.WithHooks(partitioned),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var errs []error
		n := 0
		done := make(chan struct{}, dumpParts*10)
		for p := int32(0); p < dumpParts; p++ {
			for i := 0; i < 10; i++ {
				r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("d%d-%d-%d", p, round, i)),
					Value:     []byte(fmt.Sprintf("dump-value-%d-%d-%d-%s", p, round, i, strings.Repeat("x", i*7))),
					Timestamp: time.UnixMilli(rt.BaseTS + int64(round*100+i)*1000)}
				n++
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						errs = append(errs, err)
					}
					done <- struct{}{}
				})
			}
		}
		for i := 0; i < n && ctx.Err() == nil; i++ {
			select {
			case <-partitioned:
			case <-ctx.Done():
			}
		}
		err = cl.Flush(ctx)
		for i := 0; i < n; i++ {
			<-done
		}
		cancel()
		cl.Close()
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			return errs[0]
		}
	}
	return nil
}

var batchRE = regexp.MustCompile(`baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*compresscodec: (\w+) crc: (\d+) isvalid: (\w+)`)

// dumpSegments runs Kafka's DumpLogSegments on every partition's .log files and returns
// batches per partition, plus any error text the tool printed. On a cluster it reads node
// 1's replicas: with RF=3 on three nodes every node holds every partition, and an acks=all
// produce returned only once every in-sync replica had the batches.
func (h *harness) dumpSegments(b *broker, topic string) (map[int][]batch, string, error) {
	dataDir := b.nodes[0].dataDir
	var files []string
	fileP := map[string]int{}
	for p := 0; p < dumpParts; p++ {
		m, _ := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p), "*.log"))
		sort.Strings(m)
		for _, f := range m {
			fileP[f] = p
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("no segment files under %s/%s-*", dataDir, topic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile="+filepath.Join(h.root, kafkaHome, "tools-log4j2.properties"),
		"-cp", filepath.Join(h.root, kafkaHome, "libs", "*"), "org.apache.kafka.tools.DumpLogSegments", "--print-data-log", "--files", strings.Join(files, ","))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	os.WriteFile(filepath.Join(h.logDir, "dump-log-"+b.name+".txt"), append(out.Bytes(), stderr.Bytes()...), 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("DumpLogSegments: %v: %s", err, tailStr(stderr.String(), 400))
	}
	res := map[int][]batch{}
	var problems []string
	cur := -1
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "Dumping ") {
			cur = fileP[strings.TrimSpace(strings.TrimPrefix(line, "Dumping "))]
			continue
		}
		if m := batchRE.FindStringSubmatch(line); m != nil {
			var bt batch
			fmt.Sscan(m[1], &bt.Base)
			fmt.Sscan(m[2], &bt.Last)
			fmt.Sscan(m[3], &bt.Count)
			bt.Codec, bt.CRC, bt.Valid = m[4], m[5], m[6] == "true"
			res[cur] = append(res[cur], bt)
			continue
		}
		l := strings.ToLower(line)
		if strings.Contains(l, "exception") || strings.Contains(l, "invalid bytes") || strings.Contains(l, "error") || strings.Contains(l, "corrupt") {
			problems = append(problems, strings.TrimSpace(line))
		}
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		problems = append(problems, "stderr: "+tailStr(s, 300))
	}
	return res, strings.Join(problems, "; "), nil
}

func expectedBatches(p int) []batch {
	return []batch{{Base: 0, Last: 9, Count: 10, Codec: "none", Valid: true}, {Base: 10, Last: 19, Count: 10, Codec: "gzip", Valid: true}}
}

func checkShape(got map[int][]batch) string {
	var bad []string
	for p := 0; p < dumpParts; p++ {
		want := expectedBatches(p)
		g := got[p]
		if len(g) != len(want) {
			bad = append(bad, fmt.Sprintf("p%d: %d batches %v, want 2", p, len(g), g))
			continue
		}
		for i := range want {
			if g[i].Base != want[i].Base || g[i].Last != want[i].Last || g[i].Count != want[i].Count || g[i].Codec != want[i].Codec || !g[i].Valid {
				bad = append(bad, fmt.Sprintf("p%d batch %d: %v, want %v", p, i, g[i], want[i]))
			}
		}
	}
	return strings.Join(bad, "; ")
}

// dumpLog is the on-disk check of a pair of targets: the same produce on both, Kafka's
// DumpLogSegments on each one's segments, batches compared (baseOffset, lastOffset, count, CRC).
func (h *harness) dumpLog(p brokerPair) {
	t := time.Now()
	res := map[string]map[int][]batch{}
	for _, name := range []string{p.strata, p.kafka} {
		b := h.targets[name]
		if !b.covers(dumpLogClient, "dump_log") {
			continue
		}
		if !b.up() {
			h.add(cell{Client: dumpLogClient, Scenario: "dump_log", Broker: name, Result: "skip", Detail: "reference Kafka unavailable"})
			continue
		}
		c := cell{Client: dumpLogClient, Scenario: "dump_log", Broker: b.name}
		topic := fmt.Sprintf("c%s-dumplog-%s", h.runID, b.tag)
		if err := produceDump(b.seeds(), topic, b.rf); err != nil {
			c.Result, c.Detail = "fail", "franz-go produce failed: "+err.Error()
			h.add(c)
			continue
		}
		got, problems, err := h.dumpSegments(b, topic)
		switch {
		case err != nil:
			c.Result, c.Detail = "fail", err.Error()
		case problems != "":
			c.Result, c.Detail = "fail", "DumpLogSegments reported problems: "+tailStr(problems, 600)
		default:
			if d := checkShape(got); d != "" {
				c.Result, c.Detail = "fail", d
			} else {
				c.Result = "pass"
				res[b.name] = got
				var crcs []string
				for p := 0; p < dumpParts; p++ {
					for _, bt := range got[p] {
						crcs = append(crcs, bt.CRC)
					}
				}
				c.Detail = fmt.Sprintf("DumpLogSegments parsed %d partitions × 2 batches (0..9 none, 10..19 gzip), CRCs %s", dumpParts, strings.Join(crcs, ","))
			}
		}
		h.add(c)
	}
	// Strata's batches must equal Kafka's for the same produce.
	if s, k := res[p.strata], res[p.kafka]; s != nil && k != nil {
		var diff []string
		for p := 0; p < dumpParts; p++ {
			for i := range k[p] {
				if i >= len(s[p]) || s[p][i] != k[p][i] {
					var sv batch
					if i < len(s[p]) {
						sv = s[p][i]
					}
					diff = append(diff, fmt.Sprintf("p%d batch %d: strata %v, kafka %v", p, i, sv, k[p][i]))
				}
			}
		}
		if sc := h.find(dumpLogClient, "dump_log", p.strata); sc != nil {
			if len(diff) > 0 {
				sc.Result, sc.Detail = "fail", "batches differ from Kafka's: "+strings.Join(diff, "; ")
			} else {
				sc.Detail += "; identical to Kafka's (baseOffset, lastOffset, count, CRC)"
			}
		}
	}
	fmt.Printf("compat: dump_log on %s and %s done (%s)\n", p.strata, p.kafka, time.Since(t).Round(100*time.Millisecond))
}
