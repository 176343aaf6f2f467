package storage

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/strata-io/strata/storage/vfs"
)

// TestSegmentMsRollsOnTheLogsClock appends batches without timestamps, so
// segment.ms counts from the segment's creation on the log's clock, and
// checks the log rolls only once the injected fake clock passes segment.ms.
func TestSegmentMsRollsOnTheLogsClock(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	cfg := testConfig()
	cfg.SegmentMs = int64(10 * time.Minute / time.Millisecond)
	l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1, Clock: clock})
	defer l.Close()
	noTimestamp := batchOpts{ts: -1}
	appendOK(t, l, makeBatch(noTimestamp))
	clock.Advance(9 * time.Minute)
	appendOK(t, l, makeBatch(noTimestamp))
	if len(l.segs) != 1 {
		t.Fatalf("%d segments 9 minutes into a segment.ms of 10", len(l.segs))
	}
	clock.Advance(2 * time.Minute)
	appendOK(t, l, makeBatch(noTimestamp))
	if len(l.segs) != 2 || l.active().base != 2 {
		t.Fatalf("%d segments, active base %d, 11 minutes into a segment.ms of 10; want a roll at 2", len(l.segs), l.active().base)
	}
}
