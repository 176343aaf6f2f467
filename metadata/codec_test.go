package metadata_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/strata-io/strata/metadata"
)

func str(s string) *string { return &s }

// everyRecord is one record of each type, every field set.
var everyRecord = []metadata.Record{
	metadata.RegisterBrokerRecord{BrokerID: 2, IncarnationID: [16]byte{9}, BrokerEpoch: 12,
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 9092, SecurityProtocol: 0}}, Rack: "r1", Fenced: true},
	metadata.UnfenceBrokerRecord{ID: 2, Epoch: 12},
	metadata.FenceBrokerRecord{ID: 2, Epoch: 12},
	metadata.TopicRecord{Name: "a", TopicID: [16]byte{1, 2, 3}},
	metadata.PartitionRecord{PartitionID: 0, TopicID: [16]byte{1, 2, 3}, Replicas: []int32{2, 1}, ISR: []int32{2},
		AddingReplicas: []int32{1}, RemovingReplicas: []int32{3}, Leader: 2, LeaderEpoch: 3, PartitionEpoch: 4},
	metadata.PartitionChangeRecord{PartitionID: 0, TopicID: [16]byte{1, 2, 3}, Leader: metadata.NoLeaderChange, ISR: []int32{}, Replicas: []int32{1, 2},
		AddingReplicas: []int32{}, RemovingReplicas: []int32{4}},
	metadata.ConfigRecord{ResourceType: metadata.TopicResource, ResourceName: "a", Name: "retention.ms", Value: str("1")},
	metadata.ConfigRecord{ResourceType: metadata.BrokerResource, ResourceName: "", Name: "log.retention.ms"},
	metadata.ProducerIdsRecord{BrokerID: 2, BrokerEpoch: 7, NextProducerID: 1000},
	metadata.RemoveTopicRecord{TopicID: [16]byte{1, 2, 3}},
	metadata.UnregisterBrokerRecord{BrokerID: 2},
	metadata.UserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA512, Salt: []byte{1}, StoredKey: []byte{2}, ServerKey: []byte{3}, Iterations: 4096},
	metadata.RemoveUserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA512},
	metadata.DelegationTokenRecord{Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"}, IssueTimestamp: 1, MaxTimestamp: 3, ExpirationTimestamp: 2, TokenID: "t1"},
	metadata.RemoveDelegationTokenRecord{TokenID: "t1"},
	metadata.ClientQuotaRecord{Entity: []metadata.QuotaEntityData{{EntityType: "user", EntityName: str("alice")}, {EntityType: "client-id"}}, Key: "producer_byte_rate", Value: 1024, Remove: true},
	metadata.AccessControlEntryRecord{ID: [16]byte{7}, ResourceType: metadata.ACLResourceTopic, ResourceName: "t", PatternType: metadata.ACLPatternPrefixed,
		Principal: "User:alice", Host: "*", Operation: metadata.ACLOpRead, PermissionType: metadata.ACLAllow},
	metadata.RemoveAccessControlEntryRecord{ID: [16]byte{7}},
}

func TestBatchRoundTripsEveryRecordType(t *testing.T) {
	data, err := metadata.EncodeBatch(everyRecord)
	if err != nil {
		t.Fatal(err)
	}
	got, err := metadata.DecodeBatch(data)
	if err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	if !reflect.DeepEqual(got, everyRecord) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", got, everyRecord)
	}
}

func TestBatchRefusesWhatItDoesNotKnow(t *testing.T) {
	for name, data := range map[string]string{
		"newer version":  `{"v":2,"records":[]}`,
		"no version":     `{"records":[]}`,
		"unknown type":   `{"v":1,"records":[{"type":"NoSuchRecord","data":{}}]}`,
		"unknown field":  `{"v":1,"records":[{"type":"TopicRecord","data":{"Name":"a","Extra":1}}]}`,
		"wrong type":     `{"v":1,"records":[{"type":"TopicRecord","data":{"Name":5}}]}`,
		"trailing value": `{"v":1,"records":[]} {}`,
		"truncated":      `{"v":1,"records":[{"type":"TopicRecord"`,
		"batch field":    `{"v":1,"records":[],"x":0}`,
	} {
		if rs, err := metadata.DecodeBatch([]byte(data)); !errors.Is(err, metadata.ErrBadBatch) {
			t.Errorf("%s: metadata.DecodeBatch = %v, %v; want metadata.ErrBadBatch", name, rs, err)
		}
	}
}

func TestImageRecordsRebuildTheImage(t *testing.T) {
	d := metadata.NewDelta(metadata.Empty)
	for _, r := range everyRecord[:9] {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	img := d.Apply()
	rebuilt := replayAll(t, metadata.ImageRecords(img))
	if !sameImage(img, rebuilt) {
		t.Fatalf("rebuilt image differs:\n%#v\nwant\n%#v", metadata.ImageRecords(rebuilt), metadata.ImageRecords(img))
	}
	if p := rebuilt.Topics.ByName("a").Partitions[0]; p.LeaderEpoch != 3 || p.PartitionEpoch != 5 || len(p.ISR) != 0 {
		t.Fatalf("partition = %+v", p)
	}
}

func replayAll(t *testing.T, records []metadata.Record) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.Empty)
	for _, r := range records {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

// sameImage compares images by the records that make them.
func sameImage(a, b *metadata.Image) bool {
	return reflect.DeepEqual(metadata.ImageRecords(a), metadata.ImageRecords(b))
}

func FuzzDecodeBatch(f *testing.F) {
	data, err := metadata.EncodeBatch(everyRecord)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"v":1,"records":[{"type":"PartitionRecord","data":{"Replicas":[1,2],"TopicID":[1]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		records, err := metadata.DecodeBatch(data)
		if err != nil {
			return
		}
		again, err := metadata.EncodeBatch(records)
		if err != nil {
			t.Fatalf("re-encode %#v: %v", records, err)
		}
		back, err := metadata.DecodeBatch(again)
		if err != nil || !reflect.DeepEqual(back, records) {
			t.Fatalf("round trip of %s: %#v, %v; want %#v", again, back, err, records)
		}
	})
}
