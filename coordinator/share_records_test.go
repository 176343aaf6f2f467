package coordinator

import (
	"bytes"
	"os"
	"testing"
)

// Segments Kafka 4.4.0 wrote (offsets.topic.num.partitions=1,
// share.coordinator.state.topic.num.partitions=1,
// share.coordinator.snapshot.update.records.per.snapshot=3) while two
// franz-go v1.22.3 share members of group sg read 40 records of a
// 2-partition topic with share.delivery.count.limit=2, releasing some
// records once, releasing offset 3 until it was archived and rejecting
// offset 7, then left; the group was deleted after.
const (
	kafkaShareGroupsLog     = "testdata/kafka-4.4.0-share-groups.log"      // __consumer_offsets-0
	kafkaShareGroupStateLog = "testdata/kafka-4.4.0-share-group-state.log" // __share_group_state-0
)

func decodeEncodeSG(typ int16, value []byte) ([]byte, error) {
	switch typ {
	case sgMemberType:
		v, err := decodeSGMember(value)
		return v.encode(), err
	case sgMetadataType:
		v, err := decodeSGMetadata(value)
		return v.encode(), err
	case sgTargetMetadataType:
		v, err := decodeSGTargetMetadata(value)
		return v.encode(), err
	case sgTargetMemberType:
		v, err := decodeSGTargetMember(value)
		return v.encode(), err
	case sgCurrentType:
		v, err := decodeSGCurrent(value)
		return v.encode(), err
	case sgStatePartsType:
		v, err := decodeSGStateParts(value)
		return v.encode(), err
	}
	return nil, nil
}

// TestShareGroupRecordsMatchKafka decodes every share group record Kafka
// 4.4.0 wrote to __consumer_offsets and encodes it again: the same bytes,
// key and value, for every record type, tombstones included.
func TestShareGroupRecordsMatchKafka(t *testing.T) {
	data, err := os.ReadFile(kafkaShareGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	seen, tombstones := map[int16]int{}, map[int16]int{}
	var initialized, deleting, assigned int
	if _, err := forEachRecord(data, func(b *batchInfo, key, value []byte) error {
		if b.control {
			return nil
		}
		k, err := decodeSGKey(key)
		if err != nil {
			t.Fatalf("offset %d: %v", b.offset, err)
		}
		if got := k.encode(); !bytes.Equal(got, key) {
			t.Fatalf("offset %d: key %x encodes again as %x", b.offset, key, got)
		}
		if k.group != "sg" || k.hasMember() && k.member == "" {
			t.Fatalf("offset %d: key %+v", b.offset, k)
		}
		if value == nil {
			tombstones[k.typ]++
			return nil
		}
		seen[k.typ]++
		got, err := decodeEncodeSG(k.typ, value)
		if err != nil {
			t.Fatalf("offset %d type %d: %v", b.offset, k.typ, err)
		}
		if !bytes.Equal(got, value) {
			t.Fatalf("offset %d type %d: value\n%x\nencodes again as\n%x", b.offset, k.typ, value, got)
		}
		switch k.typ {
		case sgStatePartsType:
			v, _ := decodeSGStateParts(value)
			if len(v.initialized) == 1 && v.initialized[0].name == "sq" && len(v.initialized[0].partitions) == 2 {
				initialized++
			}
			if len(v.deleting) == 1 && v.deleting[0].name == "sq" {
				deleting++
			}
		case sgCurrentType:
			if v, _ := decodeSGCurrent(value); len(v.assigned) == 1 && len(v.assigned[0].partitions) == 1 {
				assigned++
			}
		case sgMemberType:
			if v, _ := decodeSGMember(value); v.rackID != nil || len(v.topics) != 1 || v.topics[0] != "sq" || v.clientHost != "/127.0.0.1" {
				t.Errorf("offset %d: member %+v", b.offset, v)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for typ := int16(sgMemberType); typ <= sgStatePartsType; typ++ {
		if seen[typ] == 0 || tombstones[typ] == 0 {
			t.Errorf("type %d: %d records, %d tombstones", typ, seen[typ], tombstones[typ])
		}
	}
	if initialized == 0 || deleting == 0 || assigned != 2 {
		t.Errorf("state partition metadata initialized %d, deleting %d; %d members assigned one partition", initialized, deleting, assigned)
	}
}

// TestShareStateRecordsMatchKafka decodes every record Kafka 4.4.0 wrote
// to __share_group_state and encodes it again: snapshots (the first, with
// no state, and those that replaced three updates), updates, with and
// without the delivery-complete count, and the tombstones of deletion.
func TestShareStateRecordsMatchKafka(t *testing.T) {
	data, err := os.ReadFile(kafkaShareGroupStateLog)
	if err != nil {
		t.Fatal(err)
	}
	seen, tombstones := map[int16]int{}, map[int16]int{}
	archived, rewritten := 0, 0
	if _, err := forEachRecord(data, func(b *batchInfo, key, value []byte) error {
		k, err := decodeShareKey(key)
		if err != nil {
			t.Fatalf("offset %d: %v", b.offset, err)
		}
		if got := k.encode(); !bytes.Equal(got, key) {
			t.Fatalf("offset %d: key %x encodes again as %x", b.offset, key, got)
		}
		if k.group != "sg" || k.partition < 0 || k.partition > 1 {
			t.Fatalf("offset %d: key %+v", b.offset, k)
		}
		if value == nil {
			tombstones[k.typ]++
			return nil
		}
		seen[k.typ]++
		var got []byte
		var batches []shareStateBatch
		if k.typ == shareSnapshotType {
			v, err := decodeShareSnapshot(value)
			if err != nil {
				t.Fatalf("offset %d: %v", b.offset, err)
			}
			if v.stateEpoch != 2 || v.createTimestamp != v.writeStamp {
				t.Errorf("offset %d: snapshot %+v", b.offset, v)
			}
			if v.snapshotEpoch > 0 {
				rewritten++
				if v.startOffset != 16 || v.deliveryCompleteCount != 4 {
					t.Errorf("offset %d: snapshot %+v", b.offset, v)
				}
			} else if v.startOffset != -1 || v.deliveryCompleteCount != -1 || len(v.batches) != 0 {
				t.Errorf("offset %d: initial snapshot %+v", b.offset, v)
			}
			got, batches = v.encode(), v.batches
		} else {
			v, err := decodeShareUpdate(value)
			if err != nil {
				t.Fatalf("offset %d: %v", b.offset, err)
			}
			if v.deliveryCompleteCount < 0 {
				t.Errorf("offset %d: update %+v", b.offset, v)
			}
			got, batches = v.encode(), v.batches
		}
		if !bytes.Equal(got, value) {
			t.Fatalf("offset %d type %d: value\n%x\nencodes again as\n%x", b.offset, k.typ, value, got)
		}
		for _, sb := range batches {
			if sb.deliveryState == 4 && sb.first == 3 && sb.deliveryCount == 2 {
				archived++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen[shareSnapshotType] != 4 || seen[shareUpdateType] == 0 || tombstones[shareSnapshotType] != 2 || rewritten != 2 {
		t.Errorf("%d snapshots (%d rewritten), %d updates, %d snapshot tombstones", seen[shareSnapshotType], rewritten, seen[shareUpdateType], tombstones[shareSnapshotType])
	}
	if archived == 0 {
		t.Error("offset 3 is never archived at delivery count 2")
	}
}
