package local

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-io/strata/metadata"
)

func TestProposeAppliesAndTellsSubscribersInOrder(t *testing.T) {
	s := New(metadata.Empty, nil)
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
	s := New(metadata.Empty, nil)
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

func TestARefusedCommitLeavesTheImage(t *testing.T) {
	refused := errors.New("disk full")
	var committed []metadata.Record
	s := New(metadata.Empty, func(old, new *metadata.Image, records []metadata.Record) error {
		if new.Topics.ByName("full") != nil {
			return refused
		}
		committed = append(committed, records...)
		return nil
	})
	called := 0
	s.Subscribe(func(old, new *metadata.Image) { called++ })
	img, err := s.Propose(metadata.TopicRecord{Name: "full", TopicID: [16]byte{1}})
	if err != refused {
		t.Fatalf("Propose = %v, want the commit's error as it is", err)
	}
	if img != metadata.Empty || s.Image() != metadata.Empty || called != 0 {
		t.Fatalf("a refused commit took effect: %+v, subscriber called %d times", s.Image().Topics.All(), called)
	}
	if _, err := s.Propose(metadata.TopicRecord{Name: "ok", TopicID: [16]byte{2}}); err != nil {
		t.Fatal(err)
	}
	if len(committed) != 1 || s.Image().Topics.ByName("ok") == nil || called != 1 {
		t.Fatalf("committed %v, image %+v, subscriber called %d times", committed, s.Image().Topics.All(), called)
	}
}

func TestADurableErrorPublishesTheChange(t *testing.T) {
	late := errors.New("cleanup failed")
	s := New(metadata.Empty, func(old, new *metadata.Image, records []metadata.Record) error { return Durable(late) })
	img, err := s.Propose(metadata.TopicRecord{Name: "a", TopicID: [16]byte{1}})
	if err != late {
		t.Fatalf("Propose = %v, want the cause unwrapped", err)
	}
	if img.Topics.ByName("a") == nil || s.Image() != img {
		t.Fatalf("a durable change was not published: %+v", s.Image().Topics.All())
	}
}

func TestUpdateDecidesOnTheLatestImage(t *testing.T) {
	s := New(metadata.Empty, nil)
	var inside atomic.Int32
	var overlapped atomic.Bool
	create := func(img *metadata.Image) ([]metadata.Record, error) {
		// Stay a while, so that a decide not serialized with the others
		// would meet one.
		if inside.Add(1) > 1 {
			overlapped.Store(true)
		}
		for start := time.Now(); time.Since(start) < 20*time.Millisecond && !overlapped.Load(); {
			runtime.Gosched()
		}
		inside.Add(-1)
		if img.Topics.ByName("a") != nil {
			return nil, errExists
		}
		id, err := img.Topics.NewTopicID()
		return []metadata.Record{metadata.TopicRecord{Name: "a", TopicID: id}}, err
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() { _, err := s.Update(create); errs <- err }()
	}
	created := 0
	for range 8 {
		switch err := <-errs; err {
		case nil:
			created++
		case errExists:
		default:
			t.Fatalf("Update = %v", err)
		}
	}
	if overlapped.Load() {
		t.Fatal("two decides ran at once")
	}
	if created != 1 {
		t.Fatalf("%d of 8 concurrent creations of one topic succeeded, want 1", created)
	}
}

var errExists = errors.New("exists")
