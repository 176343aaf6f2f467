package coordinator

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

func TestProducerIDsNeverRepeatAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	seen := map[int64]bool{}
	take := func(p *ProducerIDs, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			id, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			if id < 0 || seen[id] {
				t.Fatalf("id %d repeated or negative", id)
			}
			seen[id] = true
		}
	}
	for round, n := range []int{3, producerIDBlockSize + 5, 0, 1} {
		p, err := OpenProducerIDs(vfs.Default, dir)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		take(p, n)
	}
	data, err := os.ReadFile(filepath.Join(dir, producerIDsFile))
	if err != nil {
		t.Fatal(err)
	}
	// Rounds: block [0,1000); blocks [1000,2000),[2000,3000); none; [3000,4000).
	if string(data) != "1\n4000\n" {
		t.Fatalf("file %q", data)
	}
}

func TestProducerIDsConcurrent(t *testing.T) {
	p, err := OpenProducerIDs(vfs.Default, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 600; i++ {
				id, err := p.Next()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("duplicate id %d", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 2400 {
		t.Fatalf("%d distinct ids, want 2400", len(seen))
	}
}

func TestProducerIDsFailedPersistHandsOutNothing(t *testing.T) {
	dir := t.TempDir()
	efs := errorfs.Wrap(vfs.Default)
	p, err := OpenProducerIDs(efs, dir)
	if err != nil {
		t.Fatal(err)
	}
	efs.Inject(errorfs.Fault{Op: errorfs.OpSync, Nth: 1})
	if _, err := p.Next(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Next with failing fsync: %v", err)
	}
	id, err := p.Next()
	if err != nil || id != 0 {
		t.Fatalf("after recovery: %d %v", id, err)
	}
}

func TestProducerIDsMalformedFile(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "2\n5\n", "1\n-5\n", "1\nx\n", "1\n5\n6\n"} {
		if err := os.WriteFile(filepath.Join(dir, producerIDsFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenProducerIDs(vfs.Default, dir); err == nil {
			t.Errorf("accepted %q", content)
		}
	}
}

// Reserve (ids Apache Kafka handed out on an adopted log dir) is durable at
// once: neither this allocator nor one reopened later hands out an id below
// it, even if no id was handed out in between.
func TestProducerIDsReserve(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenProducerIDs(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reserve(1500); err != nil {
		t.Fatal(err)
	}
	reopened, err := OpenProducerIDs(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []*ProducerIDs{p, reopened} {
		if id, err := a.Next(); err != nil || id < 1500 {
			t.Errorf("id %d (%v) after reserving up to 1500", id, err)
		}
	}
	if err := p.Reserve(10); err != nil {
		t.Fatal(err)
	}
	if id, err := p.Next(); err != nil || id != 1501 {
		t.Errorf("id %d (%v) after a lower reserve, want 1501", id, err)
	}
}

// TestProducerIDsOnBlockTellsEachDurableEnd checks that OnBlock reports the
// current end at once, then each new block and reservation, and nothing
// while ids come from a block already reserved.
func TestProducerIDsOnBlockTellsEachDurableEnd(t *testing.T) {
	p, err := OpenProducerIDs(vfs.Default, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	p.OnBlock(func(end int64) { ends = append(ends, end) })
	for range producerIDBlockSize + 1 {
		if _, err := p.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Reserve(5000); err != nil {
		t.Fatal(err)
	}
	if err := p.Reserve(10); err != nil {
		t.Fatal(err)
	}
	want := []int64{0, producerIDBlockSize, 2 * producerIDBlockSize, 5000}
	if len(ends) != len(want) {
		t.Fatalf("OnBlock saw %v, want %v", ends, want)
	}
	for i := range want {
		if ends[i] != want[i] {
			t.Fatalf("OnBlock saw %v, want %v", ends, want)
		}
	}
}
