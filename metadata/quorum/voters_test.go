package quorum

import (
	"reflect"
	"testing"

	"github.com/strata-io/strata/metadata"
)

// sameImage tells whether a and b hold the same metadata.
func sameImage(a, b *metadata.Image) bool {
	return reflect.DeepEqual(metadata.ImageRecords(a), metadata.ImageRecords(b))
}

func TestParseVoters(t *testing.T) {
	got, err := ParseVoters("1@127.0.0.1:9093, 2@[::1]:9094,3@kafka-3:9095")
	want := []Voter{{1, "127.0.0.1:9093"}, {2, "[::1]:9094"}, {3, "kafka-3:9095"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseVoters = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1", "x@h:1", "-1@h:1", "1@h", "1@:9093", "1@h:0", "1@h:70000", "1@h:1,1@g:2"} {
		if v, err := ParseVoters(bad); err == nil {
			t.Errorf("ParseVoters(%q) = %v, want an error", bad, v)
		}
	}
}
