package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/vfs"
)

// TestSetConfigRacesNothing changes the config of a compacted log at run
// time (as AlterConfigs does) while producers, the transaction and group
// coordinators, the cleaner, retention, readers and the flush.ms ticker use
// it. Under -race any read of the config outside the log's locks (rather
// than the atomic view Append and AppendCoordinator use) is reported.
func TestSetConfigRacesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	base := compactConfig()
	base.FlushIntervalMs = 5 // runs the time-based flusher goroutine
	l := openTestLog(t, vfs.Default, dir, base, OpenOptions{})
	defer func() { _ = l.Close() }()

	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(name string, fn func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if err := fn(i); err != nil {
					errs <- fmt.Errorf("%s %d: %w", name, i, err)
					return
				}
			}
		}()
	}
	run("SetConfig", func(i int) error {
		c := base
		c.MaxMessageBytes = base.MaxMessageBytes + i%2
		c.SegmentBytes = []int64{2 << 10, 16 << 10}[i%2]
		c.FlushIntervalMessages = int64(1 + i%3)
		c.DeleteRetentionMs = int64(i)
		l.SetConfig(c)
		return nil
	})
	run("Append", func(i int) error {
		_, err := leaderAppend(l, keyedBatch(t, time.Now().UnixMilli(), batch.CodecNone, rec(fmt.Sprint("k", i%7), "v")), 0)
		return err
	})
	run("AppendCoordinator+AppendControl", func(i int) error {
		ts := time.Now().UnixMilli()
		if _, err := leaderAppendCoordinator(l, txnKeyedBatch(t, 9, 0, ts, rec(fmt.Sprint("g", i%5), "o")), 0); err != nil {
			return err
		}
		_, err := leaderAppendControl(l, 9, 0, i%3 != 0, 0, 0)
		return err
	})
	run("Clean+ApplyRetention", func(int) error {
		if _, err := l.Clean(true); err != nil {
			return err
		}
		_, err := l.ApplyRetention()
		return err
	})
	run("Read", func(i int) error {
		res, err := l.ReadIsolated(int64(i), 1<<16, true, i%2 == 0)
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return nil
		}
		if err != nil {
			return err
		}
		res.Chunk.Release()
		_ = l.AbortedTransactions(0, res.NextOffset)
		_ = l.Config()
		return nil
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := readCommittedView(t, l)
	if got := replayView(t, l); !reflect.DeepEqual(got, want) {
		t.Fatalf("replay %v, read_committed %v", got, want)
	}
}
