package coordinator

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/strata-io/strata/coordinator/share"
)

// kafkaSharePartitionLog is __share_group_state-0 of a Kafka 4.4.0 broker
// driven by one share member over raw ShareGroupHeartbeat, ShareFetch v1
// and ShareAcknowledge v1 (group sg3, share.delivery.count.limit=3,
// share.record.lock.duration.ms=15000) on a topic of three 5-record
// batches: fetch 0-14; accept 0-4, accept/release/reject/accept/release
// 5-9, release 10-14; fetch (6 and 9-14 again, Kafka's answer 6-6#2
// 9-14#2); an acknowledgement Kafka refused (RENEW is ShareAcknowledge v2);
// 17s for the locks to expire; fetch (6 alone, on its last delivery);
// close the share session (epoch -1).
const kafkaSharePartitionLog = "testdata/kafka-4.4.0-share-partition.log"

// TestSharePartitionMatchesKafka makes the same requests of a
// share-partition and the share coordinator's machine: the same records
// acquired, and every record written to __share_group_state byte for byte
// what Kafka wrote, from the initial snapshot through the update of each
// acknowledgement, each expired lock (one per offset: Kafka times out each
// offset of a batch tracked by offset apart) and the release at session
// close, which archives the record at the delivery count limit.
func TestSharePartitionMatchesKafka(t *testing.T) {
	data, err := os.ReadFile(kafkaSharePartitionLog)
	if err != nil {
		t.Fatal(err)
	}
	var kafka []kv
	var key sharePartKey
	if _, err := forEachRecord(data, func(b *batchInfo, k, v []byte) error {
		sk, err := decodeShareKey(k)
		if err != nil || sk.group != "sg3" {
			return err
		}
		key = sharePartKey{group: sk.group, topicID: sk.topicID, partition: sk.partition}
		kafka = append(kafka, kv{key: k, value: v})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(kafka) != 10 {
		t.Fatalf("%d records of sg3", len(kafka))
	}
	init, err := decodeShareSnapshot(kafka[0].value)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(init.createTimestamp)
	coord := newShareStateShard(defaultSnapshotUpdateRecords, func([16]byte) int32 { return 1 })
	var wrote []kv
	apply := func(recs []kv) {
		for _, r := range recs {
			if err := coord.replay(int64(len(wrote)), r.key, r.value); err != nil {
				t.Fatal(err)
			}
			wrote = append(wrote, r)
		}
	}
	recs, serr := coord.initializeState(key, 2, -1, now)
	if serr != nil {
		t.Fatal(serr.msg)
	}
	apply(recs)
	recs, st, serr := coord.readState(key, 0, now)
	if serr != nil {
		t.Fatal(serr.msg)
	}
	apply(recs)
	p, err := share.Load(share.Config{MaxInFlightRecords: 2000, DeliveryCountLimit: 3, LockDuration: 15 * time.Second}, *st, 0)
	if err != nil {
		t.Fatal(err)
	}
	persist := func(ws ...*share.Write) {
		for _, w := range ws {
			recs, serr := coord.writeState(key, shareWrite{stateEpoch: w.StateEpoch, leaderEpoch: w.LeaderEpoch, startOffset: w.StartOffset,
				deliveryCompleteCount: w.DeliveryCompleteCount, batches: w.Batches}, now)
			if serr != nil {
				t.Fatal(serr.msg)
			}
			apply(recs)
			p.WriteDone(w.ID, true, now)
		}
	}
	log := []share.LogBatch{{Base: 0, Last: 4, ProducerID: 0}, {Base: 5, Last: 9, ProducerID: 0}, {Base: 10, Last: 14, ProducerID: 0}}
	fetch := func(want ...share.AcquiredRecords) {
		t.Helper()
		from := p.NextFetchOffset()
		var read []share.LogBatch
		for _, b := range log {
			if b.Last >= from {
				read = append(read, b)
			}
		}
		got, _ := p.Acquire(share.Acquire{Member: "m", MaxRecords: 500, BatchSize: 500, FetchOffset: from, Batches: read}, now)
		if !slices.Equal(got, want) {
			t.Fatalf("acquired %v, Kafka %v", got, want)
		}
	}
	fetch(share.AcquiredRecords{First: 0, Last: 14, DeliveryCount: 1})
	w, aerr := p.Acknowledge("m", []share.AckBatch{
		{First: 0, Last: 4, Types: []share.AckType{share.AckAccept}},
		{First: 5, Last: 9, Types: []share.AckType{share.AckAccept, share.AckRelease, share.AckReject, share.AckAccept, share.AckRelease}},
		{First: 10, Last: 14, Types: []share.AckType{share.AckRelease}},
	}, now)
	if aerr != nil {
		t.Fatal(aerr)
	}
	persist(w)
	fetch(share.AcquiredRecords{First: 6, Last: 6, DeliveryCount: 2}, share.AcquiredRecords{First: 9, Last: 14, DeliveryCount: 2})
	now = now.Add(17 * time.Second)
	persist(p.Tick(now)...)
	fetch(share.AcquiredRecords{First: 6, Last: 6, DeliveryCount: 3})
	w, aerr = p.ReleaseMember("m", now)
	if aerr != nil {
		t.Fatal(aerr)
	}
	persist(w)
	if len(wrote) != len(kafka) {
		t.Fatalf("%d records written, Kafka wrote %d:\n%s", len(wrote), len(kafka), formatRecords(wrote))
	}
	for i := range kafka {
		same := bytes.Equal(wrote[i].key, kafka[i].key) && bytes.Equal(wrote[i].value, kafka[i].value)
		if !same {
			t.Errorf("record %d: Kafka wrote\n%s\nStrata\n%s", i, formatShareRecord(kafka[i]), formatShareRecord(wrote[i]))
		}
	}
	if p.StartOffset() != 9 {
		t.Errorf("start offset %d after 6 was archived", p.StartOffset())
	}
}
