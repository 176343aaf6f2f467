package chaos

import (
	"encoding/base64"
	"testing"
)

// TestKafkaClusterIDNeverLooksLikeAnOption: one in 64 raw IDs starts with
// '-', so 10,000 draws would almost surely hit one without the redraw.
func TestKafkaClusterIDNeverLooksLikeAnOption(t *testing.T) {
	for range 10_000 {
		id := kafkaClusterID()
		raw, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(raw) != 16 || id[0] == '-' {
			t.Fatalf("cluster ID %q: %d bytes, %v", id, len(raw), err)
		}
	}
}
