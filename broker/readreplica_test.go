package broker

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// recordsEnd is the offset after the last record of batches; -1 for none.
func recordsEnd(batches []byte) int64 {
	end := int64(-1)
	for len(batches) >= 27 {
		base := int64(binary.BigEndian.Uint64(batches))
		size := 12 + int(binary.BigEndian.Uint32(batches[8:]))
		end = base + int64(binary.BigEndian.Uint32(batches[23:])) + 1
		if size > len(batches) {
			break
		}
		batches = batches[size:]
	}
	return end
}

// rackedCluster starts three brokers, in racks r1, r2 and r1, with
// replica.selector.class set to selector and replica.lag.time.max.ms 1 s,
// and a topic "a" led by node 1
// on replicas 1, 2, 3 holding 5 records in every replica.
func rackedCluster(t *testing.T, selector string) *testCluster {
	t.Helper()
	c := startTestCluster(t, 3, func(cfg *Config) {
		cfg.Cluster.Rack = map[int32]string{1: "r1", 2: "r2", 3: "r1"}[cfg.NodeID]
		cfg.Cluster.ReplicaSelector = selector
		cfg.Cluster.ReplicaLagTimeMax = time.Second
	})
	c.createTopic(t, "a", [][]int32{{1, 2, 3}})
	for _, n := range []int{3, 2} {
		if resp := produceTo(t, c, 1, "a", 0, -1, testBatch(t, n)); resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	c.waitInSync(t, "a", 0)
	return c
}

// TestFetchPreferredReadReplica checks KIP-392 as Kafka's
// RackAwareReplicaSelector: the leader (r1) answers a consumer in r2
// (v11+) with its follower there as preferred read replica, no records
// and the partition's offsets, at once; a consumer in the leader's rack
// (where a follower is too), in no rack or in a rack without a replica
// gets records from the leader; the follower serves the consumer from its
// log up to its high watermark (OFFSET_OUT_OF_RANGE past its log end);
// past the follower's log end the leader answers the r2 consumer
// itself (OFFSET_OUT_OF_RANGE), and so it does once the follower leaves
// the ISR. Without the selector the leader serves every consumer.
func TestFetchPreferredReadReplica(t *testing.T) {
	c := rackedCluster(t, RackAwareReplicaSelector)
	start := time.Now()
	p := consumerFetch(t, c, 1, 17, "a", "r2", 0, 0).Topics[0].Partitions[0]
	if took := time.Since(start); took >= fetchWait {
		t.Errorf("the preferred read replica took %v: the fetch waited for records", took)
	}
	if p.ErrorCode != 0 || p.PreferredReadReplica != 2 || len(p.RecordBatches) != 0 || p.HighWatermark != 5 || p.LastStableOffset != 5 || p.LogStartOffset != 0 {
		t.Fatalf("r2 consumer at the leader: %v, preferred %d, %d bytes, hw %d lso %d start %d; want replica 2, no records, offsets 5 5 0",
			kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
	}
	if p := consumerFetch(t, c, 1, 17, "a", "r2", 6, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.PreferredReadReplica != -1 {
		t.Errorf("r2 consumer at the leader past every log end: %v, preferred %d; want OFFSET_OUT_OF_RANGE from the leader",
			kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica)
	}
	for _, tc := range []struct{ name, rack string }{
		{"in the leader's rack, with a follower", "r1"},
		{"in no rack", ""},
		{"in a rack with no replica", "r9"},
	} {
		p := consumerFetch(t, c, 1, 17, "a", tc.rack, 0, -1).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.PreferredReadReplica != -1 || recordsEnd(p.RecordBatches) != 5 {
			t.Errorf("a consumer %s: %v, preferred %d, records to %d; want the leader's 5 records",
				tc.name, kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, recordsEnd(p.RecordBatches))
		}
	}

	// The follower serves the consumer up to its high watermark.
	for _, tc := range []struct {
		offset int64
		end    int64
	}{{0, 5}, {3, 5}, {5, -1}} {
		p := consumerFetch(t, c, 2, 17, "a", "r2", tc.offset, 0).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.PreferredReadReplica != -1 || recordsEnd(p.RecordBatches) != tc.end || p.HighWatermark != 5 {
			t.Errorf("r2 consumer at the follower from %d: %v, preferred %d, records to %d, hw %d; want records to %d, hw 5",
				tc.offset, kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, recordsEnd(p.RecordBatches), p.HighWatermark, tc.end)
		}
	}
	if p := consumerFetch(t, c, 2, 17, "a", "r2", 6, 0).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("r2 consumer at the follower past its log end: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(p.ErrorCode))
	}

	// Out of the ISR (stopped past replica.lag.time.max.ms), the follower
	// is no longer preferred, though the leader knows it held offset 0.
	c.stop(t, 2)
	if resp := produceTo(t, c, 1, "a", 0, 1, testBatch(t, 1)); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	waitUntil(t, 20*time.Second, func() (bool, string) {
		isr := c.registration(t, "a", 0).ISR
		return slices.Equal(isr, []int32{1, 3}), fmt.Sprint("isr ", isr)
	})
	p = consumerFetch(t, c, 1, 17, "a", "r2", 0, 0).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.PreferredReadReplica != -1 || recordsEnd(p.RecordBatches) != 6 {
		t.Errorf("r2 consumer at the leader, its follower out of the ISR: %v, preferred %d, records to %d; want the leader's 6 records",
			kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, recordsEnd(p.RecordBatches))
	}

	plain := rackedCluster(t, "")
	if p := consumerFetch(t, plain, 1, 17, "a", "r2", 0, 0).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.PreferredReadReplica != -1 || recordsEnd(p.RecordBatches) != 5 {
		t.Errorf("r2 consumer at the leader with no selector: %v, preferred %d, records to %d; want the leader's 5 records",
			kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, recordsEnd(p.RecordBatches))
	}
}
