package local

import (
	"errors"
	"testing"

	"github.com/strata-io/strata/metadata"
)

func TestProposeAppliesAndTellsSubscribersInOrder(t *testing.T) {
	s := New(metadata.Empty)
	var seen []int
	var olds []*metadata.Image
	cancel := s.Subscribe(func(old, new *metadata.Image) {
		olds = append(olds, old)
		seen = append(seen, new.Topics.Len())
	})
	first, err := s.Propose(metadata.TopicRecord{Name: "a", TopicID: [16]byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Image() != first || first.Topics.ByName("a") == nil {
		t.Fatalf("Image after propose = %+v", s.Image().Topics.All())
	}
	if _, err := s.Propose(metadata.TopicRecord{Name: "b", TopicID: [16]byte{2}}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 || olds[0] != metadata.Empty || olds[1] != first {
		t.Fatalf("subscriber saw %v (olds %v)", seen, olds)
	}
	cancel()
	if _, err := s.Propose(metadata.RemoveTopicRecord{TopicID: [16]byte{2}}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("a cancelled subscriber was called: %v", seen)
	}
}

func TestProposeRefusesTheWholeChange(t *testing.T) {
	s := New(metadata.Empty)
	called := false
	s.Subscribe(func(old, new *metadata.Image) { called = true })
	img, err := s.Propose(metadata.TopicRecord{Name: "a", TopicID: [16]byte{1}}, metadata.TopicRecord{Name: "a", TopicID: [16]byte{2}})
	if !errors.Is(err, metadata.ErrInvalidRecord) {
		t.Fatalf("Propose = %v, want ErrInvalidRecord", err)
	}
	if img != metadata.Empty || s.Image() != metadata.Empty || called {
		t.Fatalf("a refused change took effect: %+v, subscriber called %v", s.Image().Topics.All(), called)
	}
}
