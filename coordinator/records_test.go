package coordinator

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionForMatchesKafka(t *testing.T) {
	for _, tt := range []struct {
		group string
		hash  int32
		part  int32
	}{
		{"hello", 99162322, 22},
		{"", 0, 0},
		// Java's hashCode is Integer.MIN_VALUE here; Utils.abs maps it to 0.
		{"polygenelubricants", -2147483648, 0},
		{"héllo", 103094734, 34}, // non-ASCII: UTF-16 code units
		{"g😀", 1871882, 32},      // a surrogate pair counts as two units
	} {
		if h := javaStringHashCode(tt.group); h != tt.hash {
			t.Errorf("hashCode(%q) = %d, want %d", tt.group, h, tt.hash)
		}
		if p := partitionFor(tt.group, 50); p != tt.part {
			t.Errorf("partitionFor(%q, 50) = %d, want %d", tt.group, p, tt.part)
		}
	}
}

func TestBatchRoundTrip(t *testing.T) {
	o := committedOffset{offset: 42, leaderEpoch: 3, metadata: "m", commitTime: 1000, expireTime: -1}
	recs := []kv{
		{key: offsetCommitKey("g", "t", 1), value: offsetCommitValue(o)},
		{key: groupMetadataKey("g")}, // tombstone
	}
	batch := buildBatch(recs, time.UnixMilli(5000))
	var got []kv
	next, err := batchRecords(batch, func(k, v []byte) error {
		got = append(got, kv{key: k, value: v})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != 2 || len(got) != 2 || got[1].value != nil {
		t.Fatalf("next %d, records %v", next, got)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(got[0].value); err != nil {
		t.Fatal(err)
	}
	if v.Version != 3 || v.Offset != 42 || v.LeaderEpoch != 3 || v.Metadata != "m" || v.CommitTimestamp != 1000 {
		t.Fatalf("value %+v", v)
	}
	if ver, _ := keyVersion(got[1].key); ver != groupMetadataKeyVersion {
		t.Fatalf("group key version %d", ver)
	}
}
