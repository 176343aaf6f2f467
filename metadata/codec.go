package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
)

// batchVersion is the version of the batch encoding below; a batch of any
// other version is refused, so that a node never replays a record it may
// misread.
const batchVersion = 1

// A batch is one raft log entry (and a snapshot is one batch: the records
// that rebuild the whole image from the empty one); a single node keeps
// the access records (access.go) in one too. It is JSON:
//
//	{"v":1,"records":[{"type":"TopicRecord","data":{"Name":"a","TopicID":[...16 bytes]}}, ...]}
//
// "type" is the Kafka name of the record (TopicRecord is Kafka's
// TopicRecord, ...) and "data" its fields as the metadata package names
// them. Unknown types and unknown fields are refused.
type batch struct {
	Version int           `json:"v"`
	Records []batchRecord `json:"records"`
}

type batchRecord struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// ErrBadBatch wraps every batch that does not decode.
var ErrBadBatch = errors.New("bad metadata batch")

// EncodeBatch encodes records as one batch.
func EncodeBatch(records []Record) ([]byte, error) {
	b := batch{Version: batchVersion, Records: make([]batchRecord, 0, len(records))}
	for _, r := range records {
		name, err := recordType(r)
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", name, err)
		}
		b.Records = append(b.Records, batchRecord{Type: name, Data: data})
	}
	return json.Marshal(b)
}

// decoders decodes each record type, by its Go (and Kafka) name.
var decoders = map[string]func(json.RawMessage) (Record, error){
	"RegisterBrokerRecord":   decodeAs[RegisterBrokerRecord],
	"UnregisterBrokerRecord": decodeAs[UnregisterBrokerRecord],
	"FenceBrokerRecord":      decodeAs[FenceBrokerRecord],
	"UnfenceBrokerRecord":    decodeAs[UnfenceBrokerRecord],
	"TopicRecord":            decodeAs[TopicRecord],
	"PartitionRecord":        decodeAs[PartitionRecord],
	"PartitionChangeRecord":  decodeAs[PartitionChangeRecord],
	"RemoveTopicRecord":      decodeAs[RemoveTopicRecord],
	"ConfigRecord":           decodeAs[ConfigRecord],
	"ProducerIdsRecord":      decodeAs[ProducerIdsRecord],
	"FeatureLevelRecord":     decodeAs[FeatureLevelRecord],

	"UserScramCredentialRecord":       decodeAs[UserScramCredentialRecord],
	"RemoveUserScramCredentialRecord": decodeAs[RemoveUserScramCredentialRecord],
	"ClientQuotaRecord":               decodeAs[ClientQuotaRecord],
	"AccessControlEntryRecord":        decodeAs[AccessControlEntryRecord],
	"RemoveAccessControlEntryRecord":  decodeAs[RemoveAccessControlEntryRecord],
}

// recordType is r's name in a batch: its type's, if decoders knows it.
func recordType(r Record) (string, error) {
	name := reflect.TypeOf(r).Name()
	if _, ok := decoders[name]; !ok {
		return "", fmt.Errorf("%w: no encoding for record type %T", ErrInvalidRecord, r)
	}
	return name, nil
}

// DecodeBatch decodes one batch.
func DecodeBatch(data []byte) ([]Record, error) {
	var b batch
	if err := strict(data, &b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBatch, err)
	}
	if b.Version != batchVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrBadBatch, b.Version, batchVersion)
	}
	out := make([]Record, 0, len(b.Records))
	for i, br := range b.Records {
		r, err := decodeRecord(br)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d of %d: %w", ErrBadBatch, i+1, len(b.Records), err)
		}
		out = append(out, r)
	}
	return out, nil
}

func decodeRecord(br batchRecord) (Record, error) {
	decode, ok := decoders[br.Type]
	if !ok {
		return nil, fmt.Errorf("unknown record type %q", br.Type)
	}
	return decode(br.Data)
}

func decodeAs[R Record](data json.RawMessage) (Record, error) {
	var r R
	if err := strict(data, &r); err != nil {
		return nil, fmt.Errorf("%T: %w", r, err)
	}
	return r, nil
}

// strict decodes exactly one JSON value of known fields.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the value")
	}
	return nil
}

// ImageRecords lists the records that rebuild img from the empty image,
// as Kafka writes an image into a snapshot: the brokers, the topics each
// with its partitions, the configs, the producer ids, the finalized features, the access
// state.
func ImageRecords(img *Image) []Record {
	var out []Record
	for _, b := range img.Cluster.Brokers() {
		out = append(out, RegisterBrokerRecord{BrokerID: b.ID, IncarnationID: b.IncarnationID, BrokerEpoch: b.Epoch,
			Endpoints: b.Endpoints, Rack: b.Rack, Fenced: b.Fenced})
	}
	for _, t := range img.Topics.All() {
		out = append(out, TopicRecord{Name: t.Name, TopicID: t.ID})
		for i, p := range t.Partitions {
			out = append(out, PartitionRecord{PartitionID: int32(i), TopicID: t.ID, Replicas: p.Replicas, ISR: p.ISR,
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas,
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch})
		}
	}
	for _, res := range img.Configs.Resources() {
		configs := img.Configs.Of(res)
		for _, name := range slices.Sorted(maps.Keys(configs)) {
			v := configs[name]
			out = append(out, ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name, Value: &v})
		}
	}
	if next := img.ProducerIDs.NextProducerID; next != 0 {
		out = append(out, ProducerIdsRecord{NextProducerID: next})
	}
	out = append(out, FeatureRecords(img)...)
	return append(out, AccessRecords(img)...)
}
