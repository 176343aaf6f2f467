package broker

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// TestEncodeFetchMatchesKmsg checks the streaming fetch encoder against
// kmsg's own encoder at every served version, with a session id, records inlined, a
// diverging epoch (v12+) for a follower, a preferred read replica (v11+),
// and a current leader (v12+) with its endpoint (v16+).
func TestEncodeFetchMatchesKmsg(t *testing.T) {
	l, err := storage.OpenLog(vfs.Default, filepath.Join(t.TempDir(), "t-0"), storage.DefaultConfig(), storage.OpenOptions{RecoveryPoint: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if res, err := l.Append(testBatch(t, 3), 0); err != nil || l.AdvanceHighWatermark(res.EndOffset) != nil {
		t.Fatal(err)
	}
	for version := int16(4); version <= 18; version++ {
		res, err := l.Read(0, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		var records bytes.Buffer
		if _, err := res.Chunk.WriteTo(&records); err != nil {
			t.Fatal(err)
		}
		topics := []fetchTopic{
			{name: "a", id: [16]byte{1}, partitions: []fetchPartition{
				{partition: 0, highWatermark: 3, lastStableOffset: 3, logStartOffset: 0, chunk: res.Chunk},
				{partition: 1, errorCode: 1, highWatermark: 7, lastStableOffset: 7, logStartOffset: 2, readCommitted: true},
				{partition: 2, highWatermark: 9, lastStableOffset: 5, logStartOffset: 0, readCommitted: true,
					aborted: []storage.Aborted{{ProducerID: 7, FirstOffset: 1}, {ProducerID: 1 << 40, FirstOffset: 4}}},
				{partition: 3, highWatermark: 9, lastStableOffset: 9, logStartOffset: 0, diverged: true, divergingEpoch: 2, divergingEnd: 6},
				{partition: 5, highWatermark: 9, lastStableOffset: 9, logStartOffset: 0},
				{partition: 6, errorCode: 6, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1},
			}},
			{name: "bb", id: [16]byte{2}, partitions: []fetchPartition{{partition: 4, highWatermark: 0, lastStableOffset: 0}}},
		}
		for i := range topics {
			for j := range topics[i].partitions {
				fp := &topics[i].partitions[j]
				fp.preferredReadReplica, fp.leaderID, fp.leaderEpoch = -1, -1, -1
			}
		}
		topics[0].partitions[4].preferredReadReplica = 2
		topics[0].partitions[5].leaderID, topics[0].partitions[5].leaderEpoch = 3, 7
		topics[0].partitions[3].leaderID, topics[0].partitions[3].leaderEpoch = 0, 2
		nodes := []fetchNode{{id: 0, host: "h0", port: 9092}, {id: 3, host: "host-3", port: 19092, rack: "r3"}}
		e := encodeFetch(nil, version, 0, 1234567, 0, topics, nodes)
		var got []byte
		from := 0
		for i, hole := range e.holes {
			got = append(got, e.body[from:hole]...)
			var buf bytes.Buffer
			if _, err := e.chunks[i].WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			got = append(got, buf.Bytes()...)
			from = hole
		}
		got = append(got, e.body[from:]...)

		want := kmsg.NewPtrFetchResponse()
		want.Version, want.SessionID = version, 1234567
		for _, ft := range topics {
			kt := kmsg.NewFetchResponseTopic()
			kt.Topic, kt.TopicID = ft.name, ft.id
			for _, fp := range ft.partitions {
				kp := kmsg.NewFetchResponseTopicPartition()
				kp.Partition, kp.ErrorCode = fp.partition, fp.errorCode
				kp.HighWatermark, kp.LastStableOffset, kp.LogStartOffset = fp.highWatermark, fp.lastStableOffset, fp.logStartOffset
				if fp.readCommitted {
					kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
					for _, a := range fp.aborted {
						ka := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
						ka.ProducerID, ka.FirstOffset = a.ProducerID, a.FirstOffset
						kp.AbortedTransactions = append(kp.AbortedTransactions, ka)
					}
				}
				if fp.diverged {
					kp.DivergingEpoch.Epoch, kp.DivergingEpoch.EndOffset = fp.divergingEpoch, fp.divergingEnd
				}
				kp.PreferredReadReplica = fp.preferredReadReplica
				kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = fp.leaderID, fp.leaderEpoch
				kp.RecordBatches = []byte{}
				if fp.chunk.Len() > 0 {
					kp.RecordBatches = records.Bytes()
				}
				kt.Partitions = append(kt.Partitions, kp)
			}
			want.Topics = append(want.Topics, kt)
		}
		for _, n := range nodes {
			if version < 16 {
				break
			}
			kb := kmsg.NewFetchResponseBroker()
			kb.NodeID, kb.Host, kb.Port = n.id, n.host, n.port
			if n.rack != "" {
				kb.Rack = kmsg.StringPtr(n.rack)
			}
			want.Brokers = append(want.Brokers, kb)
		}
		if w := want.AppendTo(nil); !bytes.Equal(got, w) {
			t.Fatalf("v%d: encoder differs from kmsg\n got %x\nwant %x", version, got, w)
		}
		res.Chunk.Release()
	}
}
