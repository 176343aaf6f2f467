package metadata_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/strata-io/strata/metadata"
)

// TestClientQuotasReplay checks quotas are kept per entity and key, a
// second record replaces a value, a removal takes only that key, the last
// removal the entity, removing an unset quota changes nothing (as Kafka's
// ClientQuotaControlManager.replay), bad entities are refused, and the
// image's records rebuild it.
func TestClientQuotasReplay(t *testing.T) {
	alice := []metadata.QuotaEntityData{{EntityType: metadata.QuotaUser, EntityName: str("alice")}}
	aliceDefaultClient := []metadata.QuotaEntityData{{EntityType: metadata.QuotaUser, EntityName: str("alice")}, {EntityType: metadata.QuotaClientID}}
	img := replayAll(t, []metadata.Record{
		metadata.ClientQuotaRecord{Entity: alice, Key: "producer_byte_rate", Value: 1024},
		metadata.ClientQuotaRecord{Entity: alice, Key: "consumer_byte_rate", Value: 2048},
		metadata.ClientQuotaRecord{Entity: alice, Key: "producer_byte_rate", Value: 4096},
		metadata.ClientQuotaRecord{Entity: aliceDefaultClient, Key: "request_percentage", Value: 50},
	})
	aliceE := metadata.QuotaEntity{User: metadata.Named("alice")}
	pairE := metadata.QuotaEntity{User: metadata.Named("alice"), ClientID: metadata.DefaultName()}
	if got, want := img.Access.ClientQuotas.Of(aliceE), map[string]float64{"producer_byte_rate": 4096, "consumer_byte_rate": 2048}; !reflect.DeepEqual(got, want) {
		t.Fatalf("alice's quotas = %v, want %v", got, want)
	}
	d := metadata.NewDelta(img)
	for _, r := range []metadata.ClientQuotaRecord{
		{Entity: alice, Key: "producer_byte_rate", Remove: true},
		{Entity: aliceDefaultClient, Key: "request_percentage", Remove: true},
		{Entity: aliceDefaultClient, Key: "consumer_byte_rate", Remove: true},
	} {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	for name, bad := range map[string][]metadata.QuotaEntityData{
		"empty":        nil,
		"unknown type": {{EntityType: "group", EntityName: str("g")}},
		"type twice":   {{EntityType: metadata.QuotaUser}, {EntityType: metadata.QuotaUser, EntityName: str("a")}},
	} {
		if err := d.Replay(metadata.ClientQuotaRecord{Entity: bad, Key: "producer_byte_rate", Value: 1}); !errors.Is(err, metadata.ErrInvalidRecord) {
			t.Errorf("%s entity: %v, want ErrInvalidRecord", name, err)
		}
	}
	after := d.Apply()
	if got, want := after.Access.ClientQuotas.Entities(), []metadata.QuotaEntity{aliceE}; !reflect.DeepEqual(got, want) {
		t.Fatalf("entities = %v, want %v", got, want)
	}
	if got := after.Access.ClientQuotas.Of(aliceE); !reflect.DeepEqual(got, map[string]float64{"consumer_byte_rate": 2048}) {
		t.Fatalf("alice's quotas after the removal = %v", got)
	}
	if img.Access.ClientQuotas.Of(pairE) == nil {
		t.Fatal("the base image lost a quota")
	}
	if !sameImage(img, replayAll(t, metadata.ImageRecords(img))) {
		t.Fatal("the image's records do not rebuild its quotas")
	}
}
