package storage

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/storage/vfs"
)

// TestAppendTimestampBounds: Kafka's message.timestamp.after.max.ms (1 h by
// default) and before.max.ms (unbounded by default) for CreateTime topics;
// a refused batch is INVALID_TIMESTAMP and writes nothing.
func TestAppendTimestampBounds(t *testing.T) {
	now := time.Now().UnixMilli()
	hour := int64(time.Hour / time.Millisecond)
	cases := []struct {
		name   string
		mutate func(*Config)
		ts     int64
		ok     bool
	}{
		{"now", nil, now, true},
		{"30 min ahead", nil, now + hour/2, true},
		{"2 h ahead", nil, now + 2*hour, false},
		{"year 2500", nil, 16725225600000, false},
		{"max int64", nil, math.MaxInt64 - 1, false},
		{"1970 with before unbounded", nil, 1000, true},
		{"no timestamp", nil, -1, true},
		{"very negative with before unbounded", nil, math.MinInt64 + 10, true},
		{"2 days back, before.max.ms 1 day", func(c *Config) { c.TimestampBeforeMaxMs = 24 * hour }, now - 48*hour, false},
		{"12 h back, before.max.ms 1 day", func(c *Config) { c.TimestampBeforeMaxMs = 24 * hour }, now - 12*hour, true},
		{"2 h ahead, after.max.ms unbounded", func(c *Config) { c.TimestampAfterMaxMs = math.MaxInt64 }, now + 2*hour, true},
		{"2 h ahead, LogAppendTime topic", func(c *Config) { c.CheckTimestamps = false }, now + 2*hour, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			l := openTestLog(t, vfs.Default, t.TempDir(), cfg, OpenOptions{RecoveryPoint: -1})
			defer l.Close()
			_, err := leaderAppend(l, makeBatch(batchOpts{ts: tc.ts}), 0)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("timestamp %d refused: %v", tc.ts, err)
			case !tc.ok && !errors.Is(err, kerr.InvalidTimestamp):
				t.Fatalf("timestamp %d: %v, want INVALID_TIMESTAMP", tc.ts, err)
			case !tc.ok && l.LogEndOffset() != 0:
				t.Fatalf("a refused batch moved the log end offset to %d", l.LogEndOffset())
			}
		})
	}
}
