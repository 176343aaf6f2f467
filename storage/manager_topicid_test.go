package storage

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCreateTopicWithIDKeepsTheID checks that a topic created under the id
// the metadata image drew keeps it across a restart, and that a taken or
// zero id is refused.
func TestCreateTopicWithIDKeepsTheID(t *testing.T) {
	dir := t.TempDir()
	m, _ := openTestManager(t, dir, 1)
	id := [16]byte{0: 7, 15: 9}
	if _, err := m.CreateTopicWithID("orders", id, 2, map[string]string{"retention.ms": "5"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateTopicWithID("other", id, 1, nil, nil); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("a taken id: %v, want InvalidTopicException", err)
	}
	if _, err := m.CreateTopicWithID("other", [16]byte{}, 1, nil, nil); !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("the zero id: %v, want InvalidTopicException", err)
	}
	if _, err := m.CreateTopicWithID("orders", [16]byte{1}, 1, nil, nil); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("a taken name: %v, want TopicAlreadyExists", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, _ = openTestManager(t, dir, 1)
	defer m.Close()
	got := m.TopicByID(id)
	if got == nil || got.Name != "orders" || len(got.Partitions()) != 2 || got.ConfigMap()["retention.ms"] != "5" || m.Topic("other") != nil {
		t.Fatalf("after restart: %+v, other %v", got, m.Topic("other"))
	}
}
