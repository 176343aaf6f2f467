package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-io/strata/chaos"
	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWireGeneratorAgainstStrata runs the wire producer and consumer
// against the real strata binary, then reads the topic back with a
// kgo.Client: every record the generator counted must be there, in order
// per partition, with the template's value size.
func TestWireGeneratorAgainstStrata(t *testing.T) {
	bin := buildStrata(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := newBroker(Strata, Default, bin, "", t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Kill()
	if err := startBroker(ctx, b); err != nil {
		t.Fatal(err)
	}
	const records, partitions = 30_001, 6
	pr, err := runProduceWire(ctx, single{Broker: b}, ProduceSpec{Name: "W1", Topic: "wire", Partitions: partitions, Records: records, ValueSize: 100, BatchBytes: 4096}, "produce")
	if err != nil {
		t.Fatal(err)
	}
	if pr.Records != records || len(pr.Latencies) == 0 {
		t.Fatalf("produce result: %d records, %d latencies", pr.Records, len(pr.Latencies))
	}
	// The warm-up adds one record per partition.
	const want = records + partitions
	cr, err := runConsumeWire(ctx, single{Broker: b}, "W4", "wire", partitions, records, 100, "consume")
	if err != nil {
		t.Fatal(err)
	}
	if cr.Records != want {
		t.Fatalf("wire consumer counted %d records, want %d", cr.Records, want)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("wire"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	next := map[int32]int64{}
	for n := 0; n < want; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		for it := fs.RecordIter(); !it.Done(); n++ {
			r := it.Next()
			if r.Offset != next[r.Partition] || len(r.Value) != 100 || r.Key != nil {
				t.Fatalf("partition %d offset %d (want %d): %d-byte value, key %q", r.Partition, r.Offset, next[r.Partition], len(r.Value), r.Key)
			}
			next[r.Partition]++
		}
	}
	for p := range int32(partitions) {
		share := int64(records/partitions) + 1
		if p < records%partitions {
			share++
		}
		if next[p] != share {
			t.Errorf("partition %d holds %d records, want %d", p, next[p], share)
		}
	}
}

func buildStrata(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "strata")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/strata").CombinedOutput(); err != nil {
		t.Fatalf("build strata: %v\n%s", err, out)
	}
	return bin
}

// TestWireGeneratorAgainstStrataCluster runs the keyed wire producers of the
// cluster pass against three Strata nodes: the topic must have three
// replicas in sync on every partition, and reading it back from all three
// brokers must find each producer's share in the partition its keys hash
// to, every key where the Java and franz-go partitioners put it.
func TestWireGeneratorAgainstStrataCluster(t *testing.T) {
	bin := buildStrata(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := chaos.NewStrataCluster(bin, chaos.ClusterConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.KillAll()
	if err := cl.StartAll(ctx); err != nil {
		t.Fatal(err)
	}
	const records, partitions, producers = 6_001, 6, 2
	spec := ProduceSpec{Name: "W3", Topic: "wire", Partitions: partitions, Records: records, ValueSize: 100, Producers: producers, Keys: true, BatchBytes: 1024}
	pr, err := runProduceWire(ctx, clusterDeployment{cl}, spec, "produce")
	if err != nil {
		t.Fatalf("%v\n%s", err, cl.LogTails(2000))
	}
	if pr.Records != records || len(pr.Latencies) == 0 {
		t.Fatalf("produce result: %d records, %d latencies", pr.Records, len(pr.Latencies))
	}
	ps, err := cl.Describe(ctx, 1, "wire")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != partitions {
		t.Fatalf("%d partitions: %v", len(ps), ps)
	}
	leaders := map[int32]bool{}
	for _, p := range ps {
		if len(p.Replicas) != 3 || !p.Full() {
			t.Errorf("not replicated to all three: %v", p)
		}
		leaders[p.Leader] = true
	}
	// One connection per producer to each leader.
	if want := fmt.Sprintf("%d producer(s) on %d connection(s)", producers, producers*len(leaders)); !strings.Contains(pr.Note, want) {
		t.Errorf("produce result %q, want %q", pr.Note, want)
	}

	rd, err := kgo.NewClient(kgo.SeedBrokers(cl.Bootstrap()...), kgo.ConsumeTopics("wire"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	// Each producer's warm-up adds one record per partition.
	const want = records + producers*partitions
	partitioner := kgo.StickyKeyPartitioner(nil).ForTopic("wire")
	counts := map[int32]int64{}
	for n := 0; n < want; {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", n, err)
		}
		for it := fs.RecordIter(); !it.Done(); n++ {
			r := it.Next()
			if got := partitioner.Partition(r, partitions); got != int(r.Partition) || len(r.Value) != 100 {
				t.Fatalf("partition %d offset %d: key hashes to %d, %d-byte value", r.Partition, r.Offset, got, len(r.Value))
			}
			counts[r.Partition]++
		}
	}
	for p := range int32(partitions) {
		var share int64 = producers // the warm-ups
		for i := range int64(producers) {
			n := int64(records / producers)
			if i == 0 {
				n += records % producers
			}
			share += n / partitions
			if int64(p) < n%partitions {
				share++
			}
		}
		if counts[p] != share {
			t.Errorf("partition %d holds %d records, want %d", p, counts[p], share)
		}
	}
}

// TestCountBatchesChecksCRC flips one byte of a fetched batch.
func TestCountBatchesChecksCRC(t *testing.T) {
	tmpl := newBatchTemplate(nopRand{}, 50, 1024, nil)
	var data []byte
	data = tmpl.appendBatch(data, 3, 1, 0, 0, 1)
	data = tmpl.appendBatch(data, len(tmpl.ends), 1, 0, 3, 1)
	first := len(tmpl.records[:tmpl.ends[2]]) + batch.HeaderSize
	// appendBatch leaves the base offset 0; give the second batch its own.
	data[first+7] = 3
	next, n, complete, err := countBatches(data[:len(data)-1], 0)
	if err != nil || next != 3 || n != 3 || len(complete) != first {
		t.Fatalf("with a partial second batch: next %d, %d records, %d complete bytes, %v", next, n, len(complete), err)
	}
	next, n, complete, err = countBatches(data, 0)
	if err != nil || next != int64(3+len(tmpl.ends)) || n != int64(3+len(tmpl.ends)) || !bytes.Equal(complete, data) {
		t.Fatalf("both batches: next %d, %d records, %v", next, n, err)
	}
	if err := checkCRCs(complete); err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := checkCRCs(data); err == nil {
		t.Fatal("a flipped byte passed the CRC check")
	}
}

type nopRand struct{}

func (nopRand) IntN(int) int { return 0 }
