package main

// End-to-end tests with the clients people use: franz-go, Sarama and kcat.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func TestFranzGoProduceConsume(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	cl := newClient(t, b.addr)
	const topic, n = "franz", 10000
	createTopic(t, cl, topic, 3)

	acked := produceAll(t, cl, topic, 0, n)
	recs := consumeAll(t, b.addr, topic, n)
	checkLog(t, recs)
	checkAcked(t, acked, recs)

	var total int64
	for p, end := range endOffsets(t, cl, topic, 3) {
		if end == 0 {
			t.Errorf("partition %d is empty: keys should spread over all 3", p)
		}
		total += end
	}
	if total != n {
		t.Errorf("end offsets add up to %d, want %d", total, n)
	}
}

func TestSaramaProduceConsume(t *testing.T) {
	e2e(t)
	b := startBroker(t, "")
	const topic, n, partitions = "sarama", 10000, 3

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "strata-e2e-sarama"
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Consumer.Return.Errors = true

	admin, err := sarama.NewClusterAdmin([]string{b.addr}, cfg)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	producer, err := sarama.NewSyncProducer([]string{b.addr}, cfg)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer producer.Close()
	type key struct {
		partition int32
		offset    int64
	}
	sent := make(map[key]*sarama.ProducerMessage, n)
	for start := 0; start < n; start += 500 {
		var batch []*sarama.ProducerMessage
		for i := start; i < start+500; i++ {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic,
				Key: sarama.StringEncoder(fmt.Sprintf("key-%02d", i%100)), Value: sarama.StringEncoder(fmt.Sprint(i))})
		}
		if err := producer.SendMessages(batch); err != nil {
			t.Fatalf("send records %d..%d: %v", start, start+499, err)
		}
		for _, m := range batch {
			if _, dup := sent[key{m.Partition, m.Offset}]; dup {
				t.Fatalf("two records acked at partition %d offset %d", m.Partition, m.Offset)
			}
			sent[key{m.Partition, m.Offset}] = m
		}
	}

	client, err := sarama.NewClient([]string{b.addr}, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	ids, err := consumer.Partitions(topic)
	if err != nil || len(ids) != partitions {
		t.Fatalf("partitions of %s: %v, %v; want %d", topic, ids, err, partitions)
	}
	lastByKey := map[string]int{}
	total := 0
	for _, p := range ids {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("end offset of partition %d: %v", p, err)
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("consume partition %d: %v", p, err)
		}
		deadline := time.After(time.Minute)
		for want := int64(0); want < end; want++ {
			select {
			case m := <-pc.Messages():
				if m.Offset != want {
					t.Fatalf("partition %d: offset %d, want %d", p, m.Offset, want)
				}
				s := sent[key{p, m.Offset}]
				if s == nil {
					t.Fatalf("partition %d offset %d: no record was acked there", p, m.Offset)
				}
				if v, _ := s.Value.Encode(); !bytes.Equal(v, m.Value) {
					t.Fatalf("partition %d offset %d: value %s, acked %s", p, m.Offset, m.Value, v)
				}
				var v int
				fmt.Sscan(string(m.Value), &v)
				if last, ok := lastByKey[string(m.Key)]; ok && v <= last {
					t.Fatalf("key %s: value %d after %d: out of produce order", m.Key, v, last)
				}
				lastByKey[string(m.Key)] = v
				total++
			case err := <-pc.Errors():
				t.Fatalf("partition %d: %v", p, err)
			case <-deadline:
				t.Fatalf("partition %d: consumed up to %d of %d", p, want, end)
			}
		}
		pc.AsyncClose()
	}
	if total != n {
		t.Errorf("consumed %d records, want %d", total, n)
	}
}

// ensureKcat installs kcat with the repository's helper when it is missing.
func ensureKcat(t *testing.T) string {
	t.Helper()
	if path, err := exec.LookPath("kcat"); err == nil {
		return path
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "install-kcat.sh")
	if out, err := exec.Command(script).CombinedOutput(); err != nil {
		t.Skipf("kcat is missing and %s failed: %v\n%s", script, err, out)
	}
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Skipf("kcat still missing after %s: %v", script, err)
	}
	return path
}

func kcat(t *testing.T, bin string, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestKcat(t *testing.T) {
	e2e(t)
	bin := ensureKcat(t)
	b := startBroker(t, "")

	meta := kcat(t, bin, "", "-b", b.addr, "-L", "-m", "10")
	if !strings.Contains(meta, "1 brokers:") || !strings.Contains(meta, "broker 1 at "+b.addr) {
		t.Fatalf("kcat -L does not list broker 1 at %s:\n%s", b.addr, meta)
	}

	lines := []string{"first", "second line", "third"}
	kcat(t, bin, strings.Join(lines, "\n")+"\n", "-b", b.addr, "-P", "-t", "newtopic", "-m", "10")

	meta = kcat(t, bin, "", "-b", b.addr, "-L", "-m", "10")
	if !strings.Contains(meta, `topic "newtopic" with 1 partitions`) {
		t.Errorf("kcat -L does not list the auto-created topic:\n%s", meta)
	}

	got := kcat(t, bin, "", "-b", b.addr, "-C", "-t", "newtopic", "-e", "-o", "beginning", "-m", "10")
	if want := strings.Join(lines, "\n") + "\n"; got != want {
		t.Errorf("kcat -C returned %q, want %q", got, want)
	}
}
