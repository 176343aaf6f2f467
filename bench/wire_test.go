package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWireGeneratorAgainstStrata runs the wire producer and consumer
// against the real strata binary, then reads the topic back with a
// kgo.Client: every record the generator counted must be there, in order
// per partition, with the template's value size.
func TestWireGeneratorAgainstStrata(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "strata")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/strata").CombinedOutput(); err != nil {
		t.Fatalf("build strata: %v\n%s", err, out)
	}
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
	pr, err := runProduceWire(ctx, b, ProduceSpec{Name: "W1", Topic: "wire", Partitions: partitions, Records: records, ValueSize: 100, BatchBytes: 4096}, "produce")
	if err != nil {
		t.Fatal(err)
	}
	if pr.Records != records || len(pr.Latencies) == 0 {
		t.Fatalf("produce result: %d records, %d latencies", pr.Records, len(pr.Latencies))
	}
	// The warm-up adds one record per partition.
	const want = records + partitions
	cr, err := runConsumeWire(ctx, b, "W4", "wire", partitions, records, 100, "consume")
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
